"""results/gpu/offloadapi-h200: upstream's OffloadAPI unit tests on an H200.

The tests of the 22.1.8 tree as released and with the backport
(gpu/offloadapi/offloadapi.sh run on the device machine). GPU-free: the
committed gtest XML must say what the log and NOTES.md say.
"""

from __future__ import annotations

import re
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

from kdl import paths

RUN = paths.ROOT / "results" / "gpu" / "offloadapi-h200"
LINE = re.compile(
    r"^== build (\w+) binary (\w+)\.unittests exit (\d+): \[  PASSED  \] (\d+) tests\. $"
)


def cases(build: str) -> dict[str, str]:
    """Every test case of *build*'s XML files: its full name and result."""
    found: dict[str, str] = {}
    with tarfile.open(RUN / "offloadapi.tar.xz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if not (name.startswith(f"{build}-") and name.endswith(".xml")):
                continue
            data = tar.extractfile(member)
            assert data is not None
            for case in ET.fromstring(data.read()).iter("testcase"):
                failed = case.find("failure") is not None
                skipped = case.find("skipped") is not None
                key = f"{name[len(build) + 1 : -4]}:{case.get('classname')}.{case.get('name')}"
                found[key] = "failed" if failed else "skipped" if skipped else "passed"
    return found


def test_every_test_passes_in_both_builds_alike() -> None:
    base, series = cases("base"), cases("series")
    assert len(base) == 289
    assert base.keys() == series.keys()
    assert set(base.values()) == set(series.values()) == {"passed"}


def test_the_log_agrees_with_the_xml() -> None:
    lines = (RUN / "offloadapi.log").read_text().splitlines()
    assert lines[0].startswith("device: NVIDIA H200, ")
    counts: dict[str, int] = {}
    for line in lines:
        if m := LINE.match(line):
            assert m[3] == "0", line
            counts[m[1]] = counts.get(m[1], 0) + int(m[4])
    assert counts == {"base": 289, "series": 289}
    assert "| 22.1.8 as released | 9 | 289 | 289 | 0 | 0 |" in (
        RUN / "NOTES.md"
    ).read_text()
