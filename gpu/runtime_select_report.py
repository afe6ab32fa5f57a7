"""Turn the log of ``gpu/runtime_select.sh run`` into one JSON document.

usage: runtime_select_report.py LOG RSDIR > runtime-select.json

Each ``== VARIANT, STACK`` section of the log becomes a run: the marker each
``run`` line reports (which object ran: 80 sm_80, 90 sm_90, 91 sm_90a, 8 the
sm_80 PTX), olCreateProgram's time (the first run cold, the median of the
others warm), the launch-to-synchronize time, and the one-line error of a
run that could not load. RSDIR supplies the versions and what kdl-select
chose for the same container on the CPU.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

OBJECTS = {80: "sm_80 cubin", 90: "sm_90 cubin", 91: "sm_90a cubin", 8: "sm_80 PTX"}
RUN = re.compile(
    r"^run (\d+) marker (-?\d+) load_us ([\d.]+) launch_us ([\d.]+)$", re.MULTILINE
)


def summarize(body: str) -> dict[str, object]:
    rows = [(int(m[1]), float(m[2]), float(m[3])) for m in RUN.findall(body)]
    errors = [line for line in body.splitlines() if line.startswith("kdl-mgpu: ")]
    out: dict[str, object] = {
        "runs": len(rows),
        "markers": sorted({r[0] for r in rows}),
        "ran": sorted({OBJECTS.get(r[0], f"marker {r[0]}") for r in rows}),
        "error": errors[0] if errors else None,
    }
    if rows:
        out["load_us_cold"] = rows[0][1]
        out["launch_us_cold"] = rows[0][2]
    if len(rows) > 1:
        out["load_us_warm_median"] = statistics.median(r[1] for r in rows[1:])
        out["launch_us_warm_median"] = statistics.median(r[2] for r in rows[1:])
    return out


def parse(log: str) -> dict[str, object]:
    runs: dict[str, dict[str, object]] = {}
    device = ""
    for block in re.split(r"^== ", log, flags=re.MULTILINE)[1:]:
        name, _, body = block.partition("\n")
        if name == "device":
            device = body.strip()
            continue
        variant, _, stack = name.partition(", ")
        runs.setdefault(variant, {})["shim" if "shim" in stack else "llvm22"] = (
            summarize(body)
        )
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
    doc["objects"] = ["sm_80 cubin", "sm_90 cubin", "sm_90a cubin", "sm_80 PTX"]
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
