"""The series' unit tests against installed LLVMs: which tests, the drift
check between the series and its backport, and how runs are judged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kdl import paths
from kdl.build import unittests
from kdl.build.unittests import SeriesTest, judge, series_tests
from kdl.errors import WorkspaceError
from kdl.series.model import load

BACKPORT = paths.PATCHES / "release-22.x" / "series"
NVPTX = "ELFObjectFileNVPTXTest"


def test_the_series_tests_and_what_they_show() -> None:
    (test,) = series_tests(load(), load(BACKPORT))
    assert test.name == NVPTX
    assert test.components == ("object",)
    assert "TEST(ELFObjectFileNVPTXTest, CPUNameABIV2)" in test.text
    assert test.fail_without == unittests.FAIL_WITHOUT[NVPTX]


def test_the_backport_must_carry_the_same_test(tmp_path: Path) -> None:
    copy = tmp_path / "release-22.x"
    shutil.copytree(BACKPORT.parent, copy)
    patch = next(copy.glob("0001-*.patch"))
    text = patch.read_text()
    assert text.count('+  checkNVPTXCPUName(V2, 0x06005a04, "sm_90");\n') == 1
    patch.write_text(
        text.replace(
            '+  checkNVPTXCPUName(V2, 0x06005a04, "sm_90");\n',
            '+  checkNVPTXCPUName(V2, 0x06005a04, "sm_90a");\n',
        )
    )
    with pytest.raises(WorkspaceError, match="does not carry the main series' text"):
        series_tests(load(), load(copy / "series"))


def _test(*fail_without: str) -> SeriesTest:
    return SeriesTest("T", "", ("object",), fail_without)


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
