"""Turn the log of ``gpu/runtime_select.sh run`` into one JSON document.

usage: runtime_select_report.py LOG RSDIR > runtime-select.json

Each ``== VARIANT, STACK, process P`` section of the log is one process: the
marker each ``run`` line reports (which object ran: 80 sm_80, 90 sm_90, 91
sm_90a, 8 the sm_80 PTX), olCreateProgram's time (once per process, in
MLIR's global constructor), the launch-to-synchronize times (the first of a
process, and the others), and the one-line errors of a process that could
not load. Per variant and stack the processes are summarized together.
RSDIR supplies the versions and what kdl-select chose for the same
container on the CPU.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

from logsections import sections

#: Marker -> object, in the order gpu/runtime_select.sh packs them.
OBJECTS = {80: "sm_80 cubin", 90: "sm_90 cubin", 91: "sm_90a cubin", 8: "sm_80 PTX"}
RUN = re.compile(
    r"^run (\d+) marker (-?\d+) load_us ([\d.]+) launch_us ([\d.]+)$", re.MULTILINE
)


def summarize(bodies: list[str]) -> dict[str, object]:
    """One variant on one stack, over its processes (one module load each)."""
    loads: list[float] = []
    cold: list[float] = []
    warm: list[float] = []
    markers: set[int] = set()
    errors: list[str] = []
    for body in bodies:
        rows = [(int(m[1]), float(m[2]), float(m[3])) for m in RUN.findall(body)]
        errors += [line for line in body.splitlines() if line.startswith("kdl-mgpu: ")]
        markers |= {r[0] for r in rows}
        if rows:
            loads.append(rows[0][1])
            cold.append(rows[0][2])
            warm += [r[2] for r in rows[1:]]
    out: dict[str, object] = {
        "processes": len(bodies),
        "launches": len(cold) + len(warm),
        "markers": sorted(markers),
        "ran": sorted(OBJECTS.get(m, f"marker {m}") for m in markers),
        "errors": sorted(set(errors)),
    }
    if loads:
        out["load_us_median"] = statistics.median(loads)
        out["load_us"] = loads
        out["launch_us_first_median"] = statistics.median(cold)
    if warm:
        out["launch_us_warm_median"] = statistics.median(warm)
    return out


def parse(log: str) -> dict[str, object]:
    bodies: dict[tuple[str, str], list[str]] = {}
    device, named = sections(log)
    for name, body in named:
        variant, stack, *_ = name.split(", ")
        key = (variant, "shim" if "shim" in stack else "llvm22")
        bodies.setdefault(key, []).append(body)
    runs: dict[str, dict[str, object]] = {}
    for (variant, stack), parts in bodies.items():
        runs.setdefault(variant, {})[stack] = summarize(parts)
    return {"device": device, "variants": runs}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    log, rs = Path(argv[0]), Path(argv[1])
    doc = parse(log.read_text())

    def version(name: str) -> str:
        path = rs / name
        return path.read_text().strip() if path.is_file() else "unknown"

    doc["harness"] = version("VERSION")
    doc["clang"] = version("CLANG_VERSION")
    doc["ptxas"] = version("PTXAS_VERSION")
    doc["objects"] = list(OBJECTS.values())  # in the binary's order
    select = rs / "rs.kdl-select.json"
    if select.is_file():
        chosen = json.loads(select.read_text())
        doc["kdl_select_sm_90"] = {
            "first_compatible": chosen.get("first_compatible"),
            "selected": chosen.get("selected"),
        }
    json.dump(doc, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
