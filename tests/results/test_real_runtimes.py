"""The real runtimes' GPU results: the reports regenerate from the raw lines,
and the raw lines say what the README and the RFC quote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kdl.results import realruntimes

DIR = realruntimes.DIR


def test_reports_regenerate_from_the_raw_lines() -> None:
    for name, text in realruntimes.generate().items():
        assert (DIR / name).read_text() == text, f"{name} was edited by hand"


def test_what_each_runtime_loads() -> None:
    doc = realruntimes.report()
    assert doc["device"].startswith("NVIDIA H200")
    rows = doc["choices"]
    containers = [n for n in rows if n.startswith(("v1-", "v3-"))]
    for name in containers:
        # Main's liboffload and 22.1.8 as released refuse every container.
        for key in ("main", "22-base"):
            assert rows[name][key]["outcome"].startswith("refused"), (name, key)
    # The loop loads the first compatible entry, the series the best one.
    for name, loop, series in (
        ("v1-80-90-90a.bin", "sm_90", "sm_90a"),
        ("v1-90-90a.bin", "sm_90", "sm_90a"),
        ("v1-90a-90-80.bin", "sm_90a", "sm_90a"),
        ("v1-ptx-90.bin", "sm_90", "sm_90"),
        # Two sm_90 builds: variant_priority 5 over 1 (release-22.x 0005).
        ("v1-90p1-90p5.bin", "sm_90", "sm_90-prio5"),
    ):
        assert rows[name]["22-loop"]["outcome"] == f"loads {loop}, ran"
        assert rows[name]["22-series"]["outcome"] == f"loads {series}, ran"
    # An image whose header lies loads and fails later: no fallback catches it.
    assert rows["v1-90-relabel90a.bin"]["22-loop"]["outcome"] == "loads sm_90, ran"
    assert "did not run" in rows["v1-90-relabel90a.bin"]["22-series"]["outcome"]
    # 22.1.8 reads format 1 only; main writes format 3.
    assert rows["v3-90-90a.bin"]["22-series"]["outcome"] == (
        "refused: failed to read the offload binary"
    )
    # Raw PTX: olIsValidBinary says no, olCreateProgram JIT-loads it.
    ptx = rows["compute_80.ptx"]["main"]
    assert ptx["valid"] is False and ptx["outcome"] == "loads compute_80, ran"


def test_the_cost_goal_is_not_claimed() -> None:
    doc = realruntimes.report()
    for run in doc["cost"].values():
        assert run["goal_4_entries"].startswith("not resolved"), run


def test_libomptarget_is_unchanged_by_the_series() -> None:
    """Each image of a clang-built program is its own descriptor image: the
    plugin's entry loop never sees them together, so the order decides."""
    ran = realruntimes.report()["openmp"]
    assert ran["mark"] == {"base": "sm_90a", "series": "sm_90a"}
    assert ran["mark-90-first"] == {"base": "sm_90", "series": "sm_90"}


def test_upstream_nvptx_tests_do_not_change_with_the_series() -> None:
    nv = realruntimes.report()["check_offload_nvptx"]
    assert nv["device"].startswith("NVIDIA H200")
    assert nv["base"] == nv["series"]
    assert nv["base"]["pass"] > 400 and nv["base"]["unsupported"] > 0
    assert nv["differ"] == [] and nv["regressions"] == []


def _loaded(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What each runtime loaded from each image, in short."""
    return {
        name: {k: row[k]["short"] for k in ("22-base", "22-loop", "22-series")}
        for name, row in doc["choices"].items()
    }


def _ptx_from_a_container(loaded: dict[str, dict[str, str]]) -> None:
    """PTX from a container: only the series loads it; a refused PTX entry
    ranked first is followed by the next candidate, which loads and runs."""
    for name in ("v1-80-ptx.bin", "v1-ptx.bin"):
        assert loaded[name] == {
            "22-base": "refused",
            "22-loop": "refused",
            "22-series": "compute_80",
        }
    assert loaded["v1-ptx-bad90.bin"]["22-series"] == "compute_80"


def test_series_v6_on_the_gpu() -> None:
    """Series v6's run: PTX from a container, a fallback that happens, what
    refused images leave behind, as the raw lines say."""
    for name, text in realruntimes.generate(realruntimes.DIR_V6).items():
        assert (realruntimes.DIR_V6 / name).read_text() == text, f"{name} edited"
    doc = realruntimes.report(realruntimes.DIR_V6)
    assert doc["runtimes"]["22-series"].startswith("22.1.8 + series v6 ")
    loaded = _loaded(doc)
    _ptx_from_a_container(loaded)
    assert (
        "unsupported toolchain"
        in doc["choices"]["bad-version-90.ptx"]["22-series"]["outcome"]
    )
    # PTX ranks after a cubin that runs, when its entry says it is PTX; an
    # entry of image kind IMG_None (packed from a .ptx file) does not say so.
    assert loaded["v1-ptx90-90.bin"]["22-series"] == "sm_90"
    assert loaded["v1-ptxnone90-90.bin"]["22-series"] == "compute_90"
    leaks = {(r["variant"], r["file"]): r for r in doc["leaks"]}
    # Unloaded images: 22.1.8 as released keeps each copy, the fix does not.
    assert leaks[("base", "sm_90.cubin")]["rss_growth_kib"] > 3_000
    assert leaks[("series", "sm_90.cubin")]["rss_growth_kib"] < 1_000
    assert leaks[("series", "v1-ptx-bad90.bin")]["failed"] == 0
    # Refused images: 22.1.8 as released keeps each copy, the fix does not.
    assert leaks[("base", "bad-version-90.ptx")]["rss_growth_kib"] > 60_000
    assert leaks[("series", "bad-version-90.ptx")]["rss_growth_kib"] < 1_000
    assert all(r["device_free_drop_kib"] == 0 for r in doc["leaks"])
    assert doc["cost"]["alternating"]["goal_4_entries"].startswith("not resolved")


def _series_run(where: Path, version: int, commits: int) -> dict[str, Any]:
    """The report of series *version*'s H200 run in *where*: its generated
    files as committed, the H200, the series runtime built from *commits*
    commits of the backport, and the selection timers' runtimes."""
    for name, text in realruntimes.generate(where).items():
        assert (where / name).read_text() == text, f"{name} edited"
    doc = realruntimes.report(where)
    assert doc["device"].startswith("NVIDIA H200")
    assert doc["runtimes"]["22-series"].startswith(f"22.1.8 + series v{version} ")
    harness = doc["harness"]
    assert sum(" [" in line for line in harness) == commits, harness
    assert any(
        line.startswith("timers: gpu/realrt/selection-timer.patch") for line in harness
    )
    return doc


def _best_entry_where_the_loop_takes_the_first(loaded: dict[str, Any]) -> None:
    """The loop loads the first compatible cubin, the series sm_90a."""
    for name, loop, series in (
        ("v1-80-90-90a.bin", "sm_90", "sm_90a"),
        ("v1-90-90a.bin", "sm_90", "sm_90a"),
        ("v1-90a-90-80.bin", "sm_90a", "sm_90a"),
    ):
        assert loaded[name]["22-loop"] == loop and loaded[name]["22-series"] == series


def test_series_v7_on_the_gpu() -> None:
    """Series v7's run: the choices and leaks of v6's run again, the error
    when every candidate fails, and the selection timed inside the runtime."""
    # The runtimes were built from v7's 14 commits, the loop at 0011.
    doc = _series_run(realruntimes.DIR_V7, 7, 14)
    loaded = _loaded(doc)
    _ptx_from_a_container(loaded)
    assert loaded["v1-ptx90-90.bin"]["22-series"] == "sm_90"
    _best_entry_where_the_loop_takes_the_first(loaded)
    # Every candidate fails: 0014 joins each one's error, best first, but
    # liboffload's olCreateProgram keeps one message of an ErrorList (its
    # llvmErrorToOffloadError: the last, here the candidate ranked second).
    error = doc["choices"]["v1-badjit80-bad90.bin"]["22-series"]["error"]
    assert error == "error in cuModuleLoadDataEx: a PTX JIT compilation failed"
    assert (
        "unsupported toolchain"
        in (doc["choices"]["bad-version-90.ptx"]["22-series"]["error"])
    )
    leaks = {(r["variant"], r["file"]): r for r in doc["leaks"]}
    assert len(doc["leaks"]) == 17
    assert leaks[("series", "v1-ptx-bad90.bin")]["failed"] == 0
    assert leaks[("base", "bad-version-90.ptx")]["rss_growth_kib"] > 60_000
    assert leaks[("series", "bad-version-90.ptx")]["rss_growth_kib"] < 1_000
    assert leaks[("series", "sm_90.cubin")]["rss_growth_kib"] < 1_000
    assert all(r["device_free_drop_kib"] == 0 for r in doc["leaks"])
    # The selection, timed inside both runtimes: every container read as
    # packed, every cell a sample per process (cold) and per call (warm).
    sel = doc["selection"]
    assert {n: c["entries"] for n, c in sel["containers"].items()} == {
        "cost-1.bin": 1,
        "cost-4.bin": 4,
        "cost-64.bin": 64,
        "cost-64-last.bin": 64,
    }
    for box in sel["containers"].values():
        for variant in ("loop", "series"):
            assert box["cold"][variant]["selection_ns"]["n"] >= 30
            assert box["warm"][variant]["selection_ns"]["n"] >= 1000
    # The goal is missed, cold: the series' selection of 4 entries takes
    # more than 5 us or 2% of a cold load, and more than the loop's for 64.
    goal = sel["goal"]
    assert goal["4_entries_cold"]["verdict"] == "missed"
    assert goal["4_entries_cold"]["added_to_loop_ns"]["ci95"][0] > 0
    assert goal["64_entries_cold_cost-64.bin"]["verdict"].startswith("missed")
    assert doc["selection_bind_now"]["goal"]["4_entries_cold"]["verdict"] == "missed"


def test_series_v8_on_the_gpu() -> None:
    """Series v8's run: v7's choices, the one error with every candidate's
    message when all fail, PTX programs destroyed, the selection timed."""
    # The runtimes were built from v8's 15 commits, at a clean checkout.
    doc = _series_run(realruntimes.DIR_V8, 8, 15)
    assert not doc["harness"][0].endswith("-dirty"), doc["harness"][0]
    loaded = _loaded(doc)
    _ptx_from_a_container(loaded)
    _best_entry_where_the_loop_takes_the_first(loaded)
    # Every candidate fails: one error, the best candidate's message first.
    error = doc["choices"]["v1-badjit80-bad90.bin"]["22-series"]["error"]
    assert error.startswith("no entry of the offload binary could be loaded")
    assert error.index("unsupported toolchain") < error.index("PTX JIT compilation")
    leaks = {(r["variant"], r["file"]): r for r in doc["leaks"]}
    # A PTX program is destroyed: 1,000 loads keep next to nothing (v7: 13 MB).
    assert leaks[("series", "compute_80.ptx")]["rss_growth_kib"] < 1_000
    assert leaks[("base", "compute_80.ptx")]["rss_growth_kib"] > 10_000
    assert leaks[("series", "bad-version-90.ptx")]["rss_growth_kib"] < 1_000
    assert all(r["device_free_drop_kib"] == 0 for r in doc["leaks"])
    sel = doc["selection"]
    for box in sel["containers"].values():
        for variant in ("loop", "series"):
            assert box["cold"][variant]["selection_ns"]["n"] >= 30
    assert sel["goal"]["4_entries_cold"]["verdict"] == "missed"


def _h100_report(where: Path, *, previous: str, series: str) -> dict[str, Any]:
    """The report of the H100 run in *where*, its files as generated from
    its raw files, beside the earlier series *previous* and *series*."""
    for name, text in realruntimes.generate(where).items():
        assert (where / name).read_text() == text, f"{name} edited"
    doc = realruntimes.report(where)
    assert doc["device"].startswith("NVIDIA H100 80GB HBM3")
    assert doc["runtimes"]["22-previous"].startswith(f"22.1.8 + series {previous} ")
    assert doc["runtimes"]["22-series"].startswith(f"22.1.8 + series {series} ")
    return doc


def test_series_v10_beside_v9_and_the_loop() -> None:
    """Series v10's first run (an H100): every image and container loads the
    entry v9 loads; the whole of loadBinary's work before the load at 64
    entries is at most half of v9's; the selection targets are recorded with
    their verdicts, as the report gives them."""
    where = realruntimes.DIR_V10_RUN1
    doc = _h100_report(where, previous="v9", series="v10")
    assert any(line.startswith("previous: 3eca9e650") for line in doc["harness"])
    # The same choices as v9, PTX and the fallback among them.
    for image, row in doc["choices"].items():
        assert row["22-series"]["outcome"] == row["22-previous"]["outcome"], image
    loaded = _loaded(doc)
    _ptx_from_a_container(loaded)
    _best_entry_where_the_loop_takes_the_first(loaded)
    leaks = {(r["variant"], r["file"]): r for r in doc["leaks"]}
    assert leaks[("series", "v1-ptx-bad90.bin")]["failed"] == 0
    assert leaks[("series", "compute_80.ptx")]["rss_growth_kib"] < 1_000
    sel = doc["selection"]
    for box in sel["containers"].values():
        for variant in ("loop", "previous", "series"):
            assert box["cold"][variant]["selection_ns"]["n"] == 30
            assert box["warm"][variant]["selection_ns"]["n"] == 3000
    targets = sel["targets"]
    assert {r["verdict"] for r in targets["total"]} == {"met"}
    assert all(r["ratio"] < 0.4 for r in targets["total"])
    verdicts = {
        (r["container"], r["phase"]): r["verdict"] for r in targets["selection"]
    }
    assert verdicts == {
        ("cost-4.bin", "warm"): "missed",
        ("cost-4.bin", "cold"): "missed",
        ("cost-64.bin", "warm"): "missed",
        ("cost-64-last.bin", "warm"): "met",
    }
    # Beside the loop, the whole of it is less at 4 and 64 entries, warm.
    whole = {(r["container"], r["phase"]): r for r in targets["total_vs_loop"]}
    for name in ("cost-4.bin", "cost-64.bin", "cost-64-first.bin", "cost-64-last.bin"):
        assert whole[(name, "warm")]["verdict"] == "met"
    assert "built without the fixes' LLVM code" in (where / "NOTES.md").read_text()


def test_series_v10_beside_a_loop_built_alike() -> None:
    """Series v10's second run, the loop built with the fixes' LLVM code: the
    choices are v9's; the targets' verdicts are the report's."""
    where = realruntimes.DIR_V10
    for name, text in realruntimes.generate(where).items():
        assert (where / name).read_text() == text, f"{name} edited"
    doc = realruntimes.report(where)
    assert doc["device"].startswith("NVIDIA H100 80GB HBM3")
    for image, row in doc["choices"].items():
        assert row["22-series"]["outcome"] == row["22-previous"]["outcome"], image
    targets = doc["selection"]["targets"]
    verdicts = {
        (r["container"], r["phase"]): r["verdict"] for r in targets["selection"]
    }
    assert verdicts == {
        ("cost-4.bin", "warm"): "met",
        ("cost-4.bin", "cold"): "not resolved",
        ("cost-64.bin", "warm"): "missed",
        ("cost-64-last.bin", "warm"): "met",
    }
    assert {r["verdict"] for r in targets["total"]} == {"met"}
    assert {r["verdict"] for r in targets["total_vs_loop"]} == {"met"}
    notes = (where / "NOTES.md").read_text()
    assert "**missed by\n    0.34 us**" in notes and "**met**, +0.12 us" in notes


def test_series_v11_beside_v10_and_the_loop() -> None:
    """Series v11's run (an H100): the choices are v10's; where the device's
    own most specific entry is first, v11 chooses at the loop's cost and
    below v10's; the targets' verdicts are the report's."""
    where = realruntimes.DIR_V11
    doc = _h100_report(where, previous="v10", series="v11")
    for image, row in doc["choices"].items():
        assert row["22-series"]["outcome"] == row["22-previous"]["outcome"], image
    first = doc["selection"]["containers"]["cost-64-first.bin"]["warm"]
    median = {v: first[v]["selection_ns"]["median"] for v in first}
    assert median["series"] < 0.5 * median["previous"]
    assert median["series"] < median["loop"]
    verdicts = {
        (r["container"], r["phase"]): r["verdict"]
        for r in doc["selection"]["targets"]["selection"]
    }
    assert verdicts == {
        ("cost-4.bin", "warm"): "missed",
        ("cost-4.bin", "cold"): "missed",
        ("cost-64.bin", "warm"): "missed",
        ("cost-64-last.bin", "warm"): "met",
    }
    assert {r["verdict"] for r in doc["selection"]["targets"]["total_vs_loop"]} == {
        "met"
    }
