"""One check of a standalone build directory, with lit's results kept in it.

``kdl build --llvm`` copies this file into the build directory as
``kdl-check.py``, and the directory's ``build.ninja``
(:func:`kdl.build.standalone.write_top_ninja`) runs ``check-offload`` and
``check-offload-unit`` through it. So the user's own ``ninja -C BUILD_DIR
check-offload`` leaves what lit found in ``BUILD_DIR/results/``:

``SUITE.xml``
    lit's xunit file (``--xunit-xml-output``, added to ``LIT_OPTS`` after
    the user's own options): every lit test, and for ``check-offload-unit``
    every gtest case of the unit-test binaries;
``SUITE.run.json``
    when it ran, the checkout's HEAD and branch, lit's exit status and the
    test environment given (``LIT_OPTS``, ``LIT_FILTER``, ``CHECK_OPENMP_ENV``).

Both are also kept under ``results/by-head/HEAD/``, so a run on the series'
base (after ``kdl revert``) and one with the series stand side by side.
``kdl rfc --build-dir BUILD_DIR`` reads them (:mod:`kdl.rfc.buildresults`).

The standard library only: the build directory does not need the workspace.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

#: Where the results go, under the build directory.
RESULTS = "results"
#: Per checkout HEAD, under RESULTS.
BY_HEAD = "by-head"


def _git(source: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(source), *args],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def run(suite: str, build: Path, source: Path, results: Path) -> int:
    """``ninja -C BUILD SUITE`` with lit writing ``RESULTS/SUITE.xml``; the
    exit status of ninja. *source* is the llvm-project checkout."""
    results.mkdir(parents=True, exist_ok=True)
    xml = results / f"{suite}.xml"
    record = results / f"{suite}.run.json"
    for stale in (xml, record):
        stale.unlink(missing_ok=True)
    head = _git(source, "rev-parse", "HEAD")
    given = os.environ.get("LIT_OPTS", "")
    opts = [*shlex.split(given), "--xunit-xml-output", str(xml)]
    argv = ["ninja", "-C", str(build), suite]
    doc: dict[str, object] = {
        "suite": suite,
        "command": argv,
        "checkout": str(source),
        "head": head,
        "branch": _git(source, "symbolic-ref", "--short", "-q", "HEAD"),
        "started": _now(),
        "env": {
            k: os.environ[k]
            for k in ("LIT_OPTS", "LIT_FILTER", "CHECK_OPENMP_ENV")
            if k in os.environ
        },
    }
    status = subprocess.call(argv, env={**os.environ, "LIT_OPTS": shlex.join(opts)})
    doc.update(
        finished=_now(),
        returncode=status,
        xunit=xml.name if xml.is_file() else None,
    )
    record.write_text(json.dumps(doc, indent=1) + "\n")
    if head and xml.is_file():
        keep = results / BY_HEAD / head
        keep.mkdir(parents=True, exist_ok=True)
        for path in (xml, record):
            shutil.copy2(path, keep / path.name)
    return status


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: kdl-check.py SUITE BUILD SOURCE RESULTS", file=sys.stderr)
        return 2
    suite, build, source, results = argv
    return run(suite, Path(build), Path(source), Path(results))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
