"""Every failure of upstream's check-offload nvptx64 suites in the committed GPU
runs has its cause in FAILURES.md, and the latest run with the harness's
fixes fails only what the table says stays failing."""

from __future__ import annotations

import json
import lzma
import re
import xml.etree.ElementTree as ET
from pathlib import Path

DIR = (
    Path(__file__).resolve().parents[2]
    / "results/gpu/real-runtimes/check-offload-nvptx"
)
LATEST = DIR / "v7-rerun"
SUITE = r"nvptx64-nvidia-cuda(?:-LTO)?"
#: lit's result lines (-v logs, the fails-*.txt and *.fails lists).
LINE = re.compile(rf"^(FAIL|XPASS): libomptarget :: ({SUITE}) :: (\S+)", re.M)
CLASS = re.compile(rf"^libomptarget :: ({SUITE})\.(.+)$")
#: A table row: | `test` | targets | cause | status |
ROW = re.compile(r"^\| `([^`]+)` \|([^|]*)\|([^|]*)\|([^|]*)\|$", re.M)


def _text(path: Path) -> str:
    if path.suffix == ".xz":
        return lzma.decompress(path.read_bytes()).decode(errors="replace")
    return path.read_text(errors="replace")


def failures(where: Path) -> dict[str, set[tuple[str, str]]]:
    """Test path -> the (file, suite) pairs in which it failed or XPASSed."""
    found: dict[str, set[tuple[str, str]]] = {}

    def add(test: str, path: Path, suite: str) -> None:
        found.setdefault(test, set()).add((str(path.relative_to(DIR)), suite))

    for xml in sorted(where.rglob("*.xml")):
        for case in ET.parse(xml).getroot().iter("testcase"):
            if case.find("failure") is None:
                continue
            match = CLASS.match(case.get("classname", ""))
            assert match, (xml, case.attrib)
            add(f"{match[2]}/{case.get('name')}", xml, match[1])
    logs = [*where.rglob("*.log"), *where.rglob("*.log.xz"), *where.rglob("*.fails")]
    logs += where.rglob("fails-*.txt")
    for log in sorted(logs):
        for _, suite, test in LINE.findall(_text(log)):
            add(test, log, suite)
    return found


def table() -> dict[str, tuple[str, str]]:
    """Test path -> (cause, status) from FAILURES.md."""
    rows = ROW.findall((DIR / "FAILURES.md").read_text())
    assert len({r[0] for r in rows}) == len(rows), "a test listed twice"
    return {test: (cause.strip(), status.strip()) for test, _, cause, status in rows}


def test_every_failure_in_the_committed_runs_has_a_cause() -> None:
    seen, rows = failures(DIR), table()
    # The runs are there: four full runs' and two reruns' xunit files.
    assert len(list(DIR.rglob("*.xml"))) >= 10
    assert len(seen) >= 25
    missing = sorted(set(seen) - set(rows))
    assert not missing, f"failures without a row in FAILURES.md: {missing}"
    for test, (cause, status) in rows.items():
        assert cause.split(":")[0] in {
            "set-up",
            "set-up (`v4/` only)",
            "build",
            "upstream",
        }, test
        assert status.split(":")[0] in {"fixed", "fails", "XPASS"}, test
    stale = sorted(set(rows) - set(seen))
    assert not stale, f"rows for tests no committed run failed: {stale}"


def test_the_latest_run_fails_only_what_stays_failing() -> None:
    latest = failures(LATEST)
    rows = table()
    for test in latest:
        status = rows[test][1]
        assert not status.startswith("fixed"), f"{test} failed with the fix: {status}"
    # The two variants alike, each test on both targets.
    for test in latest:
        files = {f for f, _ in latest[test]}
        assert any("base" in f for f in files) and any("series" in f for f in files)
    assert sorted(latest) == sorted(
        t for t, (_, s) in rows.items() if not s.startswith("fixed")
    )


def test_the_nowait_cause_as_measured() -> None:
    runs = [
        json.loads(line) for line in (LATEST / "nowait.jsonl").read_text().splitlines()
    ]
    assert {(r["variant"], r["test"]) for r in runs} == {
        (v, f"offloading/{t}")
        for v in ("base", "series")
        for t in ("target_depend_nowait.cpp", "taskloop_offload_nowait.cpp")
    }
    for run in runs:
        if run["libomp"] == "build":
            # Cut at the limit, the kernels launched again and again.
            assert run["exit"] == 124 and run["kernel_launches"] > 1000, run
            assert run["libomp_path"].startswith("/tmp/nv/omp-orig/")
        else:
            assert run["exit"] == 0 and run["kernel_launches"] == 2, run
    device = (LATEST / "run-check.txt").read_text()
    for variant in ("base", "series"):
        assert (
            f"libomp ({variant}) has __tgt_target_nowait_query: 1 (the build's own: 0"
            in device
        )
