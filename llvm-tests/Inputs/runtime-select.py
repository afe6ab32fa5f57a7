"""Run kdl's MLIR tools on a test written for the patched tree.

In llvm-project, ``#gpu.runtime_select`` is an attribute of the GPU dialect.
kdl/build/mlirmain.py builds it against main's packaged MLIR, whose GPU
dialect cannot gain attributes, so there it belongs to the ``kdl_gpu``
dialect (overlay/mlir/RuntimeSelectCompat.h). This script feeds TOOL the input with
the attribute respelled, and respells it back in what TOOL prints, so that
the series' own tests (their CHECK lines and expected diagnostics) run
unchanged::

    runtime-select.py TOOL [OPTION...] [INPUT]

INPUT (the one argument not starting with "-") is read here; without it,
stdin is. Diagnostics keep their line numbers; only columns after the
attribute move.
"""

import subprocess
import sys

UPSTREAM = "#gpu.runtime_select"
OVERLAY = "#kdl_gpu.runtime_select"


def main(argv: list[str]) -> int:
    if not argv:
        print("runtime-select.py: usage: TOOL [OPTION...] [INPUT]", file=sys.stderr)
        return 2
    tool, args = argv[0], argv[1:]
    inputs = [a for a in args if not a.startswith("-")]
    if len(inputs) > 1:
        print(f"runtime-select.py: more than one input: {inputs}", file=sys.stderr)
        return 2
    try:
        text = open(inputs[0], encoding="utf-8").read() if inputs else sys.stdin.read()
    except OSError as err:
        print(f"runtime-select.py: {inputs[0]}: {err.strerror}", file=sys.stderr)
        return 2
    options = [a for a in args if a not in inputs]
    try:
        run = subprocess.run(
            [tool, *options, "-"],
            input=text.replace(UPSTREAM, OVERLAY),
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as err:
        print(f"runtime-select.py: {tool}: {err.strerror}", file=sys.stderr)
        return 2
    sys.stdout.write(run.stdout.replace(OVERLAY, UPSTREAM))
    sys.stderr.write(run.stderr.replace(OVERLAY, UPSTREAM))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
