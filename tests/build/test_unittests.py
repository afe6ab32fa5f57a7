"""The series' unit tests against installed LLVMs: which tests, the drift
check between the series and its backport, and how runs are judged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kdl import paths, trees
from kdl.build import unittests
from kdl.build.unittests import SeriesTest, judge, series_cases, series_tests
from kdl.errors import WorkspaceError
from kdl.series.model import load
from kdl.trees.common import Tree


@pytest.fixture(scope="module")
def tree22() -> Tree:
    """The 22.1.8 tree (made by the real-tree stage, or here): the base
    texts of the test files the series changes."""
    return trees.ensure("22")


def test_the_changed_tests_are_the_llvm_test_files_not_the_new_ones() -> None:
    assert unittests.changed_tests(load()) == [
        "llvm/unittests/Object/ELFObjectFileTest.cpp",
        "llvm/unittests/Object/OffloadingTest.cpp",
    ]


@pytest.mark.slow
def test_the_series_tests_and_what_they_show(tree22: Tree) -> None:
    tests = series_tests(load(), load(paths.BACKPORT_SERIES), tree22)
    main = {t.name: t for t in tests["main"]}
    ours = {t.name: t for t in tests["22.1.8"]}
    assert sorted(main) == sorted(ours) == ["ELFObjectFileTest", "OffloadingTest"]
    elf = main["ELFObjectFileTest"]
    assert {"object", "objectyaml"} <= set(elf.components)
    # Against main, the cases the series adds or changes alone: the file's
    # other cases are 22.1.8's text.
    assert "TEST(ELFObjectFileTest, CPUNameForCUDA)" in elf.text
    assert "TEST(ELFObjectFileTest, ReadBBAddrMap)" not in elf.text
    assert "TEST(ELFObjectFileTest, ReadBBAddrMap)" in ours["ELFObjectFileTest"].text
    assert elf.fail_without == unittests.FAIL_WITHOUT["main"]["ELFObjectFileTest"]
    # OffloadingTest tests each tree's own reader.
    assert "BinariesOrErr" in main["OffloadingTest"].text
    assert "checkImageOutOfBounds" in ours["OffloadingTest"].text
    assert (
        ours["OffloadingTest"].fail_without
        == (unittests.FAIL_WITHOUT["22.1.8"]["OffloadingTest"])
    )


@pytest.mark.slow
def test_the_backport_must_carry_the_same_test(tmp_path: Path, tree22: Tree) -> None:
    # All of patches/: the backport names some of the main series' files.
    shutil.copytree(paths.PATCHES, tmp_path / "patches")
    copy = tmp_path / "patches" / "release-22.x"
    patch = next(copy.glob("0001-*.patch"))
    text = patch.read_text()
    line = '+  Check(V2, SM(ELF::EF_CUDA_SM90), "sm_90");\n'
    assert text.count(line) == 1
    patch.write_text(text.replace(line, line.replace("sm_90", "sm_90a")))
    with pytest.raises(WorkspaceError, match="does not carry the main series' text"):
        series_tests(load(), load(copy / "series"), tree22)


def test_series_cases_keeps_the_cases_the_series_adds_or_changes() -> None:
    base = "#include <x>\nTEST(A, kept) {\n  a();\n}\n\nTEST(A, changed) {\n  b();\n}\n"
    text = (
        "#include <x>\n"
        "TEST(A, kept) {\n  a();\n}\n\n"
        "TEST(A, changed) {\n  c();\n}\n\n"
        "TEST(A, added) {\n  d();\n}\n"
    )
    out = series_cases(text, base)
    assert "TEST(A, kept)" not in out
    assert "TEST(A, changed) {\n  c();\n}" in out
    assert "TEST(A, added)" in out
    assert out.startswith("#include <x>\n")


def test_the_series_changes_one_installed_llvm_header() -> None:
    """The rank's headers are new files; of main's installed headers only
    OffloadBinary.h changes (0005: the in-place reader), and its new cases
    do not run against main's unpatched library."""
    assert unittests.changed_headers(load()) == [
        "llvm/include/llvm/Object/OffloadBinary.h"
    ]
    assert unittests.NEW_API == {
        "OffloadingTest": ("OffloadingTest.readOffloadBinariesInPlace",)
    }


def _test(*fail_without: str) -> SeriesTest:
    return SeriesTest("T", "", ("object",), fail_without)


def test_a_new_api_counts_its_run_with_the_series() -> None:
    runs = {"main+series": {"T.a": "pass", "T.b": "pass"}}
    result = judge(_test(), runs, "main")
    assert (result.passed, result.failed, result.problems) == (2, 0, [])


def test_main_counts_the_bug_shown() -> None:
    runs = {"main": {"T.a": "fail", "T.b": "crash", "T.c": "pass"}}
    result = judge(_test("T.a", "T.b"), runs, "main")
    assert (result.passed, result.failed, result.problems) == (3, 0, [])


def test_main_where_the_bug_is_not_shown_fails() -> None:
    runs = {"main": {"T.a": "pass", "T.b": "crash"}}
    result = judge(_test("T.a", "T.b"), runs, "main")
    assert (result.passed, result.failed) == (0, 1)
    assert result.problems == [
        "T on main as packaged: T.b failed; the series says T.a, T.b"
    ]


def test_with_the_series_every_case_must_pass() -> None:
    runs = {
        "22.1.8": {"T.a": "fail", "T.b": "pass"},
        "22.1.8+series": {"T.a": "pass", "T.b": "crash"},
    }
    result = judge(_test("T.a"), runs, "22.1.8")
    assert (result.passed, result.failed) == (1, 1)
    assert result.problems == ["T: T.b did not pass with the series (crash)"]
