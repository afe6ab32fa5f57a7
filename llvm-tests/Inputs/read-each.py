"""Read each file of a hostile corpus with an LLVM reader and with kdl's.

usage: read-each.py DIR -- READER [ARGS...]

Writes the hostile corpus (kdl.offload.hostile, its small part) into DIR,
then runs READER ARGS FILE (llvm-objdump --offloading: LLVM's own reader,
22's or main's) on every file, each in a process of its own with a time
limit, and reads the same file with kdl's reader (kdl.offload.binary). A
crash of the LLVM reader (main's llvm-objdump dies of SIGSEGV on string
offsets past the end) is that input's failure, reported on one line: the
run goes on with the next file. The one thing that fails this script: a
file kdl reads that the LLVM reader crashes on, as kdl would then hand on
something LLVM's unchecked path cannot take.
"""

import signal
import subprocess
import sys
from pathlib import Path

from kdl.errors import FormatError
from kdl.offload import binary, hostile


def main():
    where = Path(sys.argv[1])
    reader = sys.argv[sys.argv.index("--") + 1 :]
    where.mkdir(parents=True, exist_ok=True)
    files = {
        name: data
        for name, data in hostile.small().items()
        if not name.startswith("trunc-")
    }
    counts = {"read": 0, "refused": 0, "crashed": 0, "timed out": 0}
    standing = []
    for path in map(Path, hostile.write(where, files)):
        try:
            run = subprocess.run(
                [*reader, str(path)], capture_output=True, timeout=60, check=False
            )
            code = run.returncode
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            verdict = "timed out"
        elif code < 0 or code >= 128:
            verdict = "crashed"
        else:
            verdict = "read" if code == 0 else "refused"
        counts[verdict] += 1
        try:
            binary.scan(path.read_bytes(), path.name)
            kdl = "reads it"
        except FormatError:
            kdl = "refuses it"
        if verdict in ("crashed", "timed out"):
            number = -code if code is not None and code < 0 else (code or 0) - 128
            how = verdict
            if verdict == "crashed" and number > 0:
                how += f" ({signal.Signals(number).name})"
            print(f"{path.stem}: the LLVM reader {how}; kdl {kdl}")
            if kdl == "reads it":
                standing.append(path.stem)
    summary = ", ".join(f"{n} {what}" for what, n in counts.items())
    print(f"{len(files)} inputs: the LLVM reader {summary}")
    if standing:
        print(f"FAIL: kdl reads {', '.join(standing)}, which the LLVM reader cannot")
        return 1
    print("kdl reads no input the LLVM reader crashes on")
    return 0


sys.exit(main())
