"""``kdl bench-readers``: the readers' peak memory on the hostile corpus."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kdl import proc
from kdl.offload import hostile
from kdl.results import readers


def test_measure_reports_the_childs_own_peak() -> None:
    """100 MB allocated by the child is seen; an exit status comes back."""
    got = proc.measure(
        [sys.executable, "-c", "b = bytearray(100 << 20); raise SystemExit(3)"]
    )
    assert got.returncode == 3
    assert 100 < got.peak_rss_mb < 200


@pytest.mark.slow
@pytest.mark.overlay
def test_both_readers_stay_under_256_mb_on_the_bombs(tmp_path: Path) -> None:
    from kdl.build.overlay import build_overlay

    overlay = build_overlay(report=False, targets=["kdl-select"])
    files = hostile.corpus(large_files=True)
    result = readers.run_bench(overlay.select_tool, files)
    assert result["over"] == [] and result["failed"] == []
    assert result["met"]
    rows = {(r["file"], r["reader"]): r for r in result["rows"]}
    for name in ("bomb-zlib-1g", "bomb-zstd-1g", "concat-v3-1m-x5000"):
        for reader in readers.READERS:
            assert rows[(name, reader)]["verdict"] == "refused", (name, reader)
    # Within the budget: 60 MiB inflated, read by both.
    for reader in readers.READERS:
        assert rows[("concat-v3-1m-x60", reader)]["verdict"] == "read"
    # The report of a value of 60 MiB (from 64 KB) and of a plain 15.7 MB
    # file, in either format (the attack of 2026-12-07: up to 4.83 GB).
    for name in hostile.reports():
        for reader in readers.READERS:
            row = rows[(name, reader)]
            assert row["verdict"] == "read", (name, reader)
            assert row["peak_rss_mb"] <= readers.MAX_RSS_MB, (name, reader)


def test_the_recorded_run_met_the_goal() -> None:
    """results/readers/peak-rss.json, as kdl bench-readers wrote it."""
    import json

    doc = json.loads(readers.OUTPUT.read_text())
    assert doc["met"] and doc["over"] == [] and doc["failed"] == []
    bounded = [r for r in doc["rows"] if r["bytes"] <= readers.MAX_INPUT]
    assert max(r["peak_rss_mb"] for r in bounded) <= readers.MAX_RSS_MB
    names = {r["file"] for r in doc["rows"]}
    assert {"bomb-zlib-1g", "bomb-zstd-1g", "elf-64-sections-over-1g-bomb"} <= names
