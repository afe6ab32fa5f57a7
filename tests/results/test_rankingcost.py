"""results/gpu/ranking-cost/: regenerated from the committed raw files, checked."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from kdl.errors import WorkspaceError
from kdl.results import rankingcost


def test_committed_files_are_what_the_raw_files_give() -> None:
    for name, text in rankingcost.generate().items():
        path = rankingcost.DIR / name
        assert path.read_text() == text, (
            f"{path} differs from what `kdl results report` makes"
        )


def test_verdicts_recomputed_from_the_raw_samples() -> None:
    doc = json.loads(rankingcost.SUMMARY.read_text())
    devices = set()
    for run in doc["runs"]:
        raw = json.loads((rankingcost.DIR / run["raw"]).read_text())
        cold = raw["cost"]["cold"]
        base = statistics.median(d["module_load_cold"] for d in cold["raw"])
        allowed = max(5000.0, 0.02 * base)
        for verdict in run["goal"]["verdicts"]:
            samples = cold[f"container-{verdict['images']}+shim"]
            added = statistics.median(d["module_load_cold"] for d in samples) - base
            assert verdict["added_ns"] == pytest.approx(added, rel=1e-5)
            assert verdict["met"] == (added <= allowed)
        # Every process ran the image the ranking chose (the sm_90a marker).
        for docs in cold.values():
            assert {d["marker_variant"] for d in docs} == {4}
        devices.add(run["device"])
    assert any("H100" in d for d in devices) and any("H200" in d for d in devices)


def test_each_run_names_its_device_and_harness() -> None:
    for run in json.loads(rankingcost.SUMMARY.read_text())["runs"]:
        assert run["device"].startswith("NVIDIA ")
        assert run["harness"]["version"] in run["raw"]
        assert run["raw"].startswith("raw-h")


def test_import_refuses_a_raw_file_of_another_section(tmp_path: Path) -> None:
    other = tmp_path / "raw-layers.json"
    other.write_text(json.dumps({"harness": {}, "environment": {}, "layers": {}}))
    with pytest.raises(WorkspaceError, match="not a raw file of the cost section"):
        rankingcost.import_raw(other, tmp_path)


def test_register_lib_runs_ran_the_chosen_image() -> None:
    """With the choice the program ran sm_90a, without it sm_90 (listed first)."""
    doc = json.loads(rankingcost.SUMMARY.read_text())
    (reg,) = doc["register_lib"]
    assert reg["ranked"]["ran"] == ["sm_90a"] and reg["bypass"]["ran"] == ["sm_90"]
    raw = json.loads((rankingcost.DIR / reg["raw"]).read_text())
    totals = {
        v: statistics.median(s["choose_ns"] + s["register_ns"] for s in samples)
        for v, samples in raw["runs"].items()
    }
    assert reg["total_added"]["median"] == pytest.approx(
        totals["ranked"] - totals["bypass"], rel=1e-5
    )


def test_kdl_results_import_of_a_missing_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kdl.cli import main

    assert main(["results", "import", str(tmp_path / "nope.json")]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "nope.json: not a raw JSON file" in line
