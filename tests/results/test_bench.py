"""kdl.results.bench: the selection-cost inputs, the JSON it writes, the C++ harness."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from kdl import paths
from kdl.errors import CommandError
from kdl.results import bench
from tests.rfc_support import isolate

LLVM_BIN = Path("/usr/lib/llvm-22/bin")
HARNESS = paths.OVERLAY_BUILD / "bin" / "kdl-selection-bench"

needs_llvm = pytest.mark.skipif(
    not (LLVM_BIN / "llvm-offload-binary").is_file(), reason="needs LLVM 22 tools"
)
needs_harness = pytest.mark.skipif(
    not HARNESS.is_file(), reason="needs the overlay build (kdl build)"
)
STATS = {"median_ns", "p5_ns", "p95_ns", "q1_ns", "q3_ns", "min_ns", "mean_ns"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def test_cases_cover_sizes_and_positions() -> None:
    specs = bench.case_specs()
    names = [s.name for s in specs]
    assert len(names) == len(set(names))
    one = [s for s in specs if s.scenario == "one-compatible"]
    assert sorted({s.images for s in one}) == [1, 2, 8, 64, 256]
    for size in (8, 64, 256):
        assert {s.best for s in one if s.images == size} == {"first", "middle", "last"}
    assert {s.best for s in one if s.images == 2} == {"first", "last"}
    for spec in specs:
        assert len(spec.layout) == spec.images
        assert spec.layout[spec.best_index] is bench.BEST
        assert bench.BEST not in spec.layout[: spec.best_index]
        assert bench.BEST not in spec.layout[spec.best_index + 1 :]


def test_first_wins_scans_the_same_images_only_when_best_is_last() -> None:
    for spec in bench.case_specs():
        if spec.scenario == "one-compatible":
            assert spec.expect_first_wins == spec.best_index
            assert spec.first_wins_scans_same == (spec.best_index == spec.images - 1)
        else:
            assert spec.expect_first_wins == 0
            assert not spec.first_wins_scans_same


def test_incompatible_images_really_are() -> None:
    """Each 'incompatible' image fails sm_90 by the CUDA rule or the triple."""
    for image in bench.INCOMPATIBLE:
        if image["triple"] != bench.NV:
            continue
        sm = int(image["arch"].removeprefix("sm_"))
        assert sm // 10 != 9, image


def _case(
    images: int, scans_same: bool, ranked: float, first: float, r: float
) -> dict[str, Any]:
    return {
        "images": images,
        "first_wins_scans_same": scans_same,
        "ranked": {"median_ns": ranked},
        "first_wins": {"median_ns": first},
        "ratio": {"median": r},
    }


def test_goals_are_evaluated_not_assumed() -> None:
    cases = [
        _case(64, False, 1500.0, 20.0, 75.0),
        _case(64, True, 2100.0, 2000.0, 1.05),
        _case(8, True, 400.0, 300.0, 1.33),
    ]
    time_goal, ratio_goal = bench.goals(cases)
    assert time_goal["cases"] == [0, 1] and time_goal["worst_ns"] == 2100.0
    assert time_goal["met"] is False
    assert ratio_goal["cases"] == [1, 2] and ratio_goal["worst_ratio"] == 1.33
    assert ratio_goal["met"] is False
    cases[1]["ranked"]["median_ns"] = 1900.0
    cases[2]["ratio"]["median"] = 1.2
    time_goal, ratio_goal = bench.goals(cases)
    assert time_goal["met"] is True and ratio_goal["met"] is True


@needs_llvm
def test_pack_uses_llvm_offload_binary(tmp_path: Path) -> None:
    from kdl.offload import binary

    spec = next(s for s in bench.case_specs((8,)) if s.best == "middle")
    path, argv = bench.pack(spec, tmp_path, LLVM_BIN / "llvm-offload-binary")
    assert Path(argv[0]).name == "llvm-offload-binary"
    images = binary.read_file(path)
    assert len(images) == 8
    best = dict(images[spec.best_index].strings)
    assert best["arch"] == "sm_90" and best["variant_priority"] == "10"
    assert images[spec.best_index].image_kind == "cubin"
    assert dict(images[1].strings)["arch"] == "gfx90a:xnack+"
    assert all(len(im.image) == bench.PAYLOAD_BYTES for im in images)


FAKE_HARNESS = """\
import json, sys
args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
manifest = json.load(open(args["manifest"]))
def stats(x):
    return {k: x for k in ("median_ns", "p5_ns", "p95_ns", "q1_ns", "q3_ns",
            "min_ns", "mean_ns")} | {"samples": int(args["rounds"]),
            "calls_per_sample": 1}
cases = []
for i, c in enumerate(manifest["cases"]):
    n = int(c["name"].split("-")[2])
    cases.append({"name": c["name"], "file": c["file"], "file_bytes": 1,
        "images": n, "compatible_images": 1, "selected": c["expect"],
        "parse": stats(10.0 * n), "check": stats(5.0 * n),
        "ranked": stats(6.0 * n),
        "first_wins": stats(4.0 * (c["expect"]["first_wins"] + 1)),
        "ratio": {"median": 6.0 * n / (4.0 * (c["expect"]["first_wins"] + 1)),
                  "p5": 1, "p95": 2, "q1": 1, "q3": 2}})
print(json.dumps({"rounds": int(args["rounds"]), "sample_us": int(args["sample-us"]),
                  "device": "x", "cases": cases}))
"""


@needs_llvm
def test_run_bench_assembles_the_json(tmp_path: Path) -> None:
    """The Python side, with a stand-in for the C++ harness."""
    fake = tmp_path / "fake-bench"
    fake.write_text(f"#!{sys.executable}\n{FAKE_HARNESS}")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "out.json"
    doc = bench.run_bench(
        out,
        binary=fake,
        sizes=(1, 2, 64),
        rounds=3,
        sample_us=1,
        workdir=tmp_path / "w",
    )
    assert json.loads(out.read_text()) == doc
    for key in (
        "date",
        "machine",
        "compiler",
        "llvm_version",
        "device",
        "method",
        "goals",
    ):
        assert key in doc
    assert doc["machine"]["cpu_model"] and doc["machine"]["cpus"] >= 1
    assert doc["llvm_version"].startswith("22.")
    assert doc["pack_example"][0] == "llvm-offload-binary"
    last64 = next(c for c in doc["cases"] if c["name"] == "one-compatible-64-last")
    assert last64["first_wins_scans_same"] is True and last64["first_wins_scans"] == 64
    assert last64["ranked"]["per_image_ns"] == pytest.approx(6.0)
    assert last64["first_wins"]["per_image_ns"] == pytest.approx(4.0)
    first64 = next(c for c in doc["cases"] if c["name"] == "one-compatible-64-first")
    assert (
        first64["first_wins_scans"] == 1 and first64["first_wins_scans_same"] is False
    )
    assert [g["id"] for g in doc["goals"]] == [
        "ranked-64-under-2us",
        "ranked-within-1.2x-same-scan",
    ]


@needs_llvm
@needs_harness
def test_harness_with_a_tiny_budget(tmp_path: Path) -> None:
    """The real C++ harness: JSON shape, sane statistics, checked choices."""
    out = tmp_path / "bench.json"
    doc = bench.run_bench(
        out,
        binary=HARNESS,
        build_dir=paths.OVERLAY_BUILD,
        sizes=(1, 2, 8),
        rounds=5,
        sample_us=2,
        workdir=tmp_path / "w",
    )
    assert doc["method"]["rounds"] == 5
    assert doc["compiler"] != "unknown"
    assert len(doc["cases"]) == len(bench.case_specs((1, 2, 8)))
    for case in doc["cases"]:
        for what in ("parse", "check", "ranked", "first_wins"):
            s = case[what]
            assert set(s) >= STATS and s["samples"] == 5 and s["calls_per_sample"] >= 1
            assert 0 < s["min_ns"] <= s["p5_ns"] <= s["median_ns"] <= s["p95_ns"]
        assert case["selected"]["ranked"] == case["best_index"]
        assert case["ratio"]["p5"] <= case["ratio"]["median"] <= case["ratio"]["p95"]
    assert [g["id"] for g in doc["goals"]] == ["ranked-within-1.2x-same-scan"]


@needs_llvm
@needs_harness
def test_harness_refuses_a_wrong_expectation(tmp_path: Path) -> None:
    spec = bench.case_specs((2,))[0]
    path, _ = bench.pack(spec, tmp_path, LLVM_BIN / "llvm-offload-binary")
    manifest = tmp_path / "m.json"
    manifest.write_text(
        json.dumps(
            {
                "device": bench.DEVICE,
                "cases": [
                    {
                        "name": "wrong",
                        "file": str(path),
                        "expect": {"ranked": 1, "first_wins": 0},
                    }
                ],
            }
        )
    )
    from kdl import proc

    with pytest.raises(CommandError) as err:
        proc.run([HARNESS, f"--manifest={manifest}", "--rounds=1", "--sample-us=1"])
    assert "wrong: ranked selection chose 0, expected 1" in err.value.stderr


def test_committed_results_are_consistent() -> None:
    """results/selection-bench.json as committed: every statistic is ordered
    (p5 <= median <= p95) and every goal's verdict is recomputed from the
    cases, so a hand edit of a median or a verdict fails here."""
    doc = json.loads((paths.RESULTS / "selection-bench.json").read_text())
    for case in doc["cases"]:
        for what in ("parse", "check", "ranked", "first_wins"):
            s = case[what]
            assert s["p5_ns"] <= s["median_ns"] <= s["p95_ns"], (case["name"], what)
            assert s["min_ns"] <= s["p5_ns"], (case["name"], what)
        r = case["ratio"]
        assert r["p5"] <= r["median"] <= r["p95"], case["name"]
    assert doc["repeats"][0] == bench.repeat_medians(doc["cases"])
    assert bench.goals(doc["cases"], doc["repeats"]) == doc["goals"]
