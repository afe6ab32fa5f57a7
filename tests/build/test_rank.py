"""The series' rank: one source in both series, the differential corpus,
and how the two builds' answers are judged."""

from __future__ import annotations

import re

from kdl import paths
from kdl.build import rank, rankcorpus, ranktexts
from kdl.build.unittests import series_texts
from kdl.series.model import load

RANK_FILES = [rank.RANK_HEADER, rank.RANK_SOURCE, rank.RANK_TEST]


def test_the_backport_carries_the_main_series_rank_byte_for_byte() -> None:
    main = series_texts(load(rank.MAIN_SERIES), RANK_FILES)
    backport = series_texts(load(rank.BACKPORT_SERIES), RANK_FILES)
    assert sorted(main) == sorted(RANK_FILES)
    # One file: the backport names the main series' patch of the rank.
    (owner,) = {
        p.path.resolve()
        for series in (load(rank.MAIN_SERIES), load(rank.BACKPORT_SERIES))
        for p in series.patches
        if rank.RANK_SOURCE in p.diff_files() and rank.RANK_HEADER in p.diff_files()
    }
    assert owner.parent == rank.MAIN_SERIES.parent
    for name in (rank.RANK_HEADER, rank.RANK_SOURCE):
        assert main[name] == backport[name], name
    # The backport's test lacks exactly the case of main's triple spelling.
    dropped = "TEST(OffloadTargetRankTest, AMDGPUTripleSpellings)"
    assert dropped in main[rank.RANK_TEST] and dropped not in backport[rank.RANK_TEST]
    cases = re.compile(r"^TEST\((\w+), (\w+)\)", re.M)
    assert set(cases.findall(main[rank.RANK_TEST])) - set(
        cases.findall(backport[rank.RANK_TEST])
    ) == {("OffloadTargetRankTest", "AMDGPUTripleSpellings")}


def test_the_backport_builds_main_helpers_the_rank_uses() -> None:
    backport = load(rank.BACKPORT_SERIES)
    units = ranktexts.llvm_files(backport, "llvm/lib/", ".cpp")
    assert "llvm/lib/TargetParser/NVPTXTargetParser.cpp" in units
    assert "llvm/lib/TargetParser/AMDGPUTargetParser.cpp" in units
    assert "llvm/lib/Object/OffloadBinary.cpp" in units
    assert rank.RANK_SOURCE in units


def test_the_corpus_is_large_fixed_and_covers_every_kind_of_target() -> None:
    pairs = list(rankcorpus.pairs())
    assert len(pairs) >= 1000
    assert pairs == list(rankcorpus.pairs())
    assert len(set(pairs)) == len(pairs)
    archs = {p[1] for p in pairs}
    # NVPTX plain, arch- and family-specific, PTX; every generic 22.1.8
    # knows; AMDGPU modes in either order; empty and garbled names.
    assert {"sm_90", "sm_90a", "sm_100f"} <= archs
    nvptx = {p[2] for p in pairs if p[0] == p[3] == rankcorpus.NVPTX}
    assert {"cubin", "s"} <= nvptx
    assert {a for a in archs if a.endswith("-generic")} >= {
        "gfx9-generic",
        "gfx9-4-generic",
        "gfx10-1-generic",
        "gfx10-3-generic",
        "gfx11-generic",
        "gfx12-generic",
    }
    assert {"gfx942:sramecc+:xnack-", "gfx942:xnack-:sramecc+"} <= archs
    assert {"", "garbage", "GFX90A"} <= archs
    assert {p[0] for p in pairs} >= {"x86_64-unknown-linux-gnu", "spirv64-intel", ""}
    assert all(len(p) == 5 and "\t" not in "".join(p) for p in pairs)


def test_a_failing_or_empty_unit_test_run_counts_as_failed() -> None:
    ok = rank.judge_states("main", {"A.b": "pass", "A.c": "pass"})
    assert (ok.passed, ok.failed) == (2, 0)
    bad = rank.judge_states("22.1.8", {"A.b": "crash"})
    assert (bad.passed, bad.failed) == (0, 1)
    assert bad.problems == ["A.b on 22.1.8: crash"]
    empty = rank.judge_states("main", {})
    assert empty.failed == 1


def test_the_series_patches_are_authored_and_short() -> None:
    proposals = paths.PROPOSALS_SERIES
    for series in map(load, (rank.MAIN_SERIES, rank.BACKPORT_SERIES, proposals)):
        for patch in series.patches:
            assert len(patch.subject) <= 72, patch.name
            assert not re.search(r"dev@localhost|kdl v6", patch.author), patch.name
            # Numbered as the series orders them, out of its length (a
            # borrowed patch as its own series does).
            if patch.borrowed:
                continue
            n, total = series.patches.index(patch) + 1, len(series.patches)
            head = patch.path.read_text().split("\n\n", 1)[0]
            assert re.search(rf"^Subject: \[PATCH 0?{n}/{total}\]", head, re.M)


def test_the_loop_cases_are_the_tests_containers_as_loopchoice_reads_them() -> None:
    lines = rankcorpus.loop_text().splitlines()
    assert len(lines) == len(rankcorpus.LOOP_CASES) >= 8
    names = {c[0] for c in rankcorpus.LOOP_CASES}
    # Every rank-dependent test of OffloadBinarySelection.cpp is among them.
    assert {
        "DeviceTargetBeatsEarlierEntries",
        "CompatibleCodeBeatsCodeOfAnotherTarget",
        "EqualRanksKeepContainerOrder",
        "FailedCandidateFallsBackToTheNext",
    } <= names
    device, target, *entries = lines[0].split("\t")
    assert (device, target) == (rankcorpus.HOST, "generic-64bit")
    assert entries[0] == f"{rankcorpus.HOST},x86-64,o"
    assert all(len(e.split(",")) == 3 for e in entries)


def test_a_loop_order_other_than_the_tests_fails() -> None:
    expected = [c[4] for c in rankcorpus.LOOP_CASES]
    ok = rank.judge_orders("main", expected)
    assert (ok.passed, ok.failed) == (len(expected), 0)
    wrong = ["0 1 2", *expected[1:]]
    bad = rank.judge_orders("22.1.8", wrong)
    assert (bad.passed, bad.failed) == (len(expected) - 1, 1)
    assert bad.problems == [
        "DeviceTargetBeatsEarlierEntries on 22.1.8: the loop would try 0 1 2, "
        "the test expects 2 1 0"
    ]
    short = rank.judge_orders("main", expected[:-1])
    assert short.failed == 1
