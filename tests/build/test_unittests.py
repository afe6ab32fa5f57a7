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
    nvptx, priority, rank = series_tests(load(), load(BACKPORT))
    assert nvptx.name == NVPTX
    assert nvptx.components == ("object",)
    assert "TEST(ELFObjectFileNVPTXTest, CPUNameABIV2)" in nvptx.text
    assert nvptx.fail_without == unittests.FAIL_WITHOUT[NVPTX]
    # A new API: it builds only with the series, so it shows no bug.
    assert priority.name == "OffloadBinaryVariantPriorityTest"
    assert priority.fail_without == ()
    # The plugins' utility: built from the series' source with its test, the
    # text the whole series leaves (0004 adds the priority case).
    assert rank.name == "OffloadEntryRankTest"
    assert rank.sources == (
        "offload/plugins-nextgen/common/src/Utils/OffloadEntryRank.cpp",
    )
    assert rank.include == "offload/plugins-nextgen/common/include"
    assert rank.components == ("object", "targetparser")
    assert "TEST(OffloadEntryRankTest, VariantPriority)" in rank.text


def test_main_sources_are_the_series_texts(tmp_path: Path) -> None:
    where = unittests.sources_for_main(load(), tmp_path / "src")
    source = where / "offload/plugins-nextgen/common/src/Utils/OffloadEntryRank.cpp"
    text = source.read_text()
    # Main's helpers, and 0004's change on top of 0002's file.
    assert "NVPTX::parseArch" in text
    assert "areTargetsEquivalent" in text
    assert "getVariantPriority" in text
    header = where / "offload/plugins-nextgen/common/include/Utils/OffloadEntryRank.h"
    assert "uint32_t Priority = 0;" in header.read_text()


def test_the_series_headers() -> None:
    assert unittests.changed_headers(load()) == [
        "llvm/include/llvm/Object/OffloadBinary.h"
    ]
    assert unittests.changed_headers(load(BACKPORT)) == [
        "llvm/include/llvm/Object/OffloadBinary.h"
    ]


def _prefix_with(tmp_path: Path, header: str) -> Path:
    prefix = tmp_path / "prefix"
    (prefix / "include" / "llvm" / "Object").mkdir(parents=True)
    (prefix / "include" / "llvm" / "Object" / "OffloadBinary.h").write_text(header)
    return prefix


def test_main_headers_are_the_installed_ones_with_the_hunks(tmp_path: Path) -> None:
    """Applied to LLVM 22's header the hunk applies too (same context); the
    result has the accessor and nothing else changed."""
    installed = Path("/usr/lib/llvm-22/include/llvm/Object/OffloadBinary.h")
    prefix = _prefix_with(tmp_path, installed.read_text())
    where = unittests.headers_for_main(load(), prefix, tmp_path / "include")
    assert where == tmp_path / "include"
    text = (where / "llvm" / "Object" / "OffloadBinary.h").read_text()
    assert "std::optional<uint32_t> getVariantPriority() const {" in text
    assert text != installed.read_text()


def test_a_hunk_that_does_not_apply_to_main_is_one_line(tmp_path: Path) -> None:
    prefix = _prefix_with(tmp_path, "// not main's OffloadBinary.h\n")
    with pytest.raises(WorkspaceError) as info:
        unittests.headers_for_main(load(), prefix, tmp_path / "include")
    message = str(info.value)
    assert message.startswith("0003-Object-Add-OffloadBinary-getVariantPriority.patch:")
    assert (
        "does not apply to main's llvm/include/llvm/Object/OffloadBinary.h" in message
    )
    assert "\n" not in message


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
