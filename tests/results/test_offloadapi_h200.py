"""results/gpu/offloadapi-h200, -v9: upstream's OffloadAPI unit tests on an
H200.

The tests of the 22.1.8 tree as released and with the backport (v8; then v8
and v9), gpu/offloadapi/offloadapi.sh run on the device machine. GPU-free:
the committed gtest XML must say what the log and NOTES.md say.
"""

from __future__ import annotations

import re
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

from kdl import paths

RUN = paths.ROOT / "results" / "gpu" / "offloadapi-h200"
RUN_V9 = paths.ROOT / "results" / "gpu" / "offloadapi-h200-v9"
RUN_V10 = paths.ROOT / "results" / "gpu" / "offloadapi-h100-v10"
#: What v9 adds: main's compute unit kind (release-22.x 0015) and the loop's
#: OffloadAPI tests (0016, main's 0008).
V9_TESTS = {
    "device:olGetDeviceInfoTest.SuccessComputeUnitKind",
    "device:olGetDeviceInfoTest.HostComputeUnitKind",
    "device:olGetDeviceInfoSizeTest.SuccessComputeUnitKind",
    *(
        f"program:olCreateProgramOffloadBinaryTest.{name}"
        for name in (
            "OneEntry",
            "EntryForAnotherDeviceIsSkipped",
            "EntryForAnotherDeviceIsNotLoaded",
            "DeviceTargetBeforeOtherTargets",
            "NativeCodeBeforePTX",
            "PTXIsCompiledAtLoad",
            "FailedEntryFallsBackToTheNext",
            "FailureOfEveryEntryIsReported",
        )
    ),
}
#: Those that fail without 0016's change to the plugins (the negative control).
NEED_THE_LOOP = {
    f"program:olCreateProgramOffloadBinaryTest.{name}"
    for name in (
        "DeviceTargetBeforeOtherTargets",
        "NativeCodeBeforePTX",
        "FailedEntryFallsBackToTheNext",
        "FailureOfEveryEntryIsReported",
    )
}
LINE = re.compile(
    r"^== build (\w+) binary (\w+)\.unittests exit (\d+): "
    r"\[  PASSED  \] (\d+) tests\. $"
)


def cases(build: str, run: Path = RUN) -> dict[str, str]:
    """Every test case of *build*'s XML files: its full name (without the
    device's suffix) and result."""
    found: dict[str, str] = {}
    with tarfile.open(run / "offloadapi.tar.xz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            of, _, binary = name.removesuffix(".xml").rpartition("-")
            if of != build or not name.endswith(".xml"):
                continue
            data = tar.extractfile(member)
            assert data is not None
            for case in ET.fromstring(data.read()).iter("testcase"):
                failed = case.find("failure") is not None
                skipped = case.find("skipped") is not None
                test = str(case.get("name")).split("/")[0]
                key = f"{binary}:{case.get('classname')}.{test}"
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
    assert (
        "| 22.1.8 as released | 9 | 289 | 289 | 0 | 0 |"
        in (RUN / "NOTES.md").read_text()
    )


def test_v9_adds_its_tests_and_changes_no_other() -> None:
    base, v9 = (cases(b, RUN_V9) for b in ("base", "v9"))
    assert base == cases("base")
    assert set(v9) - set(base) == V9_TESTS
    assert set(base) <= set(v9)
    assert set(v9.values()) == {"passed"}
    lines = (RUN_V9 / "offloadapi.log").read_text().splitlines()
    assert lines[0].startswith("device: NVIDIA H200, ")
    v9_head = "build v9: 93ee0697f [Offload] Load the OffloadBinary entry"
    assert any(line.startswith(v9_head) for line in lines)
    notes = (RUN_V9 / "NOTES.md").read_text()
    assert "| with the backport v9 | 9 | 300 | 300 | 0 | 0 |" in notes
    assert "| v9 without its loop | 9 | 300 | 296 | 4 | 0 |" in notes


def test_without_the_loop_the_tests_of_the_loop_fail() -> None:
    """The negative control: v9's tests over the first-compatible stand-in."""
    noloop = cases("v9-noloop", RUN_V9)
    failed = {name for name, state in noloop.items() if state == "failed"}
    assert failed == NEED_THE_LOOP
    assert set(noloop) == set(cases("v9", RUN_V9))


def test_v10_passes_every_test_v9_ran() -> None:
    """v10's backport on an H100: the same 300 tests as v9's, all passed."""
    v10 = cases("series", RUN_V10)
    assert v10.keys() == cases("v9", RUN_V9).keys()
    assert set(v10.values()) == {"passed"}
    lines = (RUN_V10 / "offloadapi.log").read_text().splitlines()
    assert lines[0].startswith("device: NVIDIA H100 80GB HBM3, ")
    head = "build series: acae6f972 [Offload] Load the OffloadBinary entry"
    assert any(line.startswith(head) for line in lines)
    counts = sum(int(m[4]) for line in lines if (m := LINE.match(line)))
    assert counts == 300
    notes = (RUN_V10 / "NOTES.md").read_text()
    assert "| with the backport v10 | 9 | 300 | 300 | 0 | 0 |" in notes
