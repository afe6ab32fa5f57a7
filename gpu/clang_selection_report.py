"""Turn the log of ``gpu/clang_selection.sh run`` into one JSON document.

usage: clang_selection_report.py LOG SELDIR > clang-selection.json

Each ``== NAME`` section of the log becomes a run: which image the program
says ran (``ran image: ...``, or the ``kdl_image`` global that kdl-ol-probe
read), and the shim's report lines. SELDIR supplies the versions and what
kdl-select chose for the same files on the CPU.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from logsections import sections


def parse(log: str) -> dict[str, object]:
    runs: list[dict[str, object]] = []
    device, named = sections(log)
    for name, body in named:
        ran = re.findall(r"^ran image: (\S+)", body, re.MULTILINE)
        ran += re.findall(r"^\s+kdl_image: (\S+)", body, re.MULTILINE)
        runs.append(
            {
                "run": name,
                "ran": ran[0] if ran else None,
                "valid": re.findall(r"valid: (\S+)", body),
                "shim": [
                    line for line in body.splitlines() if line.startswith("kdl: ")
                ],
                "output": body.strip().splitlines()[:12],
            }
        )
    return {"device": device, "runs": runs}


def main() -> int:
    log, sel = Path(sys.argv[1]), Path(sys.argv[2])
    doc = parse(log.read_text())
    doc["harness_version"] = (sel / "VERSION").read_text().strip()
    doc["clang"] = (sel / "CLANG_VERSION").read_text().strip()
    doc["ptxas"] = (sel / "PTXAS_VERSION").read_text().strip()
    doc["clang_descriptor_order"] = re.findall(
        r"^arch\s+(\S+)", (sel / "mark.offloading.txt").read_text(), re.MULTILINE
    )
    doc["kdl_select"] = {
        f.name.removesuffix(".kdl-select.json"): {
            k: json.loads(f.read_text())[k] for k in ("selected", "first_compatible")
        }
        for f in sorted(sel.glob("*.kdl-select.json"))
    }
    json.dump(doc, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
