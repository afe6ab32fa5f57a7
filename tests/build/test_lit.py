"""kdl.build.lit: running lit, counting its results, the FileCheck fallback."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import pytest

from kdl import paths
from kdl.build import lit
from kdl.errors import UsageError

LLVM_BIN = Path("/usr/lib/llvm-22/bin")

TINY_CFG = """\
import os
import lit.formats

config.name = "tiny"
config.suffixes = [".test"]
config.test_format = lit.formats.ShTest(execute_external=False)
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(__file__), "..", "out")
"""


def tiny_suite(root: Path) -> Path:
    suite = root / "tiny"
    suite.mkdir()
    (suite / "lit.cfg.py").write_text(TINY_CFG)
    (suite / "pass.test").write_text("RUN: true\n")
    (suite / "fail.test").write_text("RUN: false\n")
    (suite / "skip.test").write_text("REQUIRES: no-such-feature\nRUN: true\n")
    return suite


def test_run_lit_counts_results_and_writes_summary(tmp_path: Path) -> None:
    suite = tiny_suite(tmp_path)
    results = tmp_path / "results"
    dirs = lit.ToolDirs(tmp_path, tmp_path)
    result = lit.run_lit(suite=suite, results_dir=results, dirs=dirs)
    assert (result.passed, result.failed, result.unsupported) == (1, 1, 1)
    assert not result.ok
    assert result.summary() == "1 passed, 1 failed, 1 unsupported"
    assert result.failures == ["tiny :: fail.test"]
    assert result.results_file == results / "tiny.json"
    report = json.loads(result.results_file.read_text())
    assert {t["name"] for t in report["tests"]} == {
        "tiny :: pass.test",
        "tiny :: fail.test",
        "tiny :: skip.test",
    }
    assert result.summary_file is not None
    summary = json.loads(result.summary_file.read_text())
    assert summary["counts"] == {
        "passed": 1,
        "failed": 1,
        "unsupported": 1,
        "total": 3,
        "by_code": {"FAIL": 1, "PASS": 1, "UNSUPPORTED": 1},
    }
    assert summary["params"]["llvm_tools_dir"] == str(tmp_path)
    assert summary["tools"]["llvm-offload-binary"] is None  # not in tmp_path
    assert summary["example"] is None  # only the real suite has it


def test_run_lit_filter(tmp_path: Path) -> None:
    suite = tiny_suite(tmp_path)
    dirs = lit.ToolDirs(tmp_path, tmp_path)
    result = lit.run_lit(
        filter="pass", suite=suite, results_dir=tmp_path / "r", dirs=dirs
    )
    assert result.ok
    assert result.summary() == "1 passed, 0 failed"


def test_run_lit_filter_matching_nothing_is_a_usage_error(tmp_path: Path) -> None:
    suite = tiny_suite(tmp_path)
    dirs = lit.ToolDirs(tmp_path, tmp_path)
    with pytest.raises(UsageError, match="matched no test"):
        lit.run_lit(
            filter="nothing-like-this", suite=suite, results_dir=tmp_path, dirs=dirs
        )


def test_dry_run_prints_the_lit_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lit.proc, "DRY_RUN", True)
    suite = tiny_suite(tmp_path)
    dirs = lit.ToolDirs(tmp_path, tmp_path)
    result = lit.run_lit(suite=suite, results_dir=tmp_path / "r", dirs=dirs)
    assert "would run: " in capsys.readouterr().out
    assert not (tmp_path / "r").exists()
    assert (result.passed, result.failed) == (0, 0)


def test_lit_argv_passes_tool_dirs_as_params(tmp_path: Path) -> None:
    dirs = lit.ToolDirs(Path("/llvm/bin"), Path("/kdl/bin"))
    argv = lit.lit_argv(paths.LLVM_TESTS, dirs, tmp_path / "o.json", "nvptx")
    assert "--param=llvm_tools_dir=/llvm/bin" in argv
    assert "--param=kdl_tools_dir=/kdl/bin" in argv
    assert argv[argv.index("--output") + 1] == str(tmp_path / "o.json")
    assert argv[argv.index("--filter") + 1] == "nvptx"
    assert argv[-1] == str(paths.LLVM_TESTS)


def test_build_dir_without_llvm_tools_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not an LLVM build"):
        lit.tool_dirs(build_dir=tmp_path)


def test_build_dir_with_kdl_select_uses_it_for_both(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("llvm-offload-binary", "kdl-select"):
        (bin_dir / tool).write_text("")
    dirs = lit.tool_dirs(build_dir=tmp_path)
    assert dirs == lit.ToolDirs(bin_dir, bin_dir)


def test_cmd_test_runs_lit_then_check_offload(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check-offload runs check-offload and the series' tests after lit."""
    from kdl.build import checkoffload

    calls: list[tuple[object, ...]] = []
    lit_result = lit.LitResult(True, 3, 0, Path("r.json"))

    class Offload:
        ok = False

        def summary(self) -> str:
            return "1 passed, 1 failed"

    def fake_lit(**kwargs: object) -> lit.LitResult:
        calls.append(("lit", kwargs["build_dir"], kwargs["filter"]))
        return lit_result

    def fake_offload(build_dir: Path | None, lit_filter: str | None) -> Offload:
        calls.append(("check-offload", build_dir, lit_filter))
        return Offload()

    def fake_series(
        build_dir: Path | None,
    ) -> tuple[bool, list[checkoffload.SeriesStep]]:
        calls.append(("series", build_dir))
        return True, [checkoffload.SeriesStep("unit tests X", ["x"], 0)]

    monkeypatch.setattr(lit, "run_lit", fake_lit)
    monkeypatch.setattr(checkoffload, "run_check_offload", fake_offload)
    monkeypatch.setattr(checkoffload, "run_series_tests", fake_series)
    args = argparse.Namespace(build_dir=None, check_offload=False, filter="nvptx")
    assert lit.cmd_test(args) == 0
    args.check_offload = True
    assert lit.cmd_test(args) == 1
    assert calls == [
        ("lit", None, "nvptx"),
        ("lit", None, "nvptx"),
        ("check-offload", None, "nvptx"),
        ("series", None),
    ]
    out = capsys.readouterr().out
    assert "series: unit tests X: passed" in out
    assert "llvm-tests: 3 passed, 0 failed" in out
    assert "check-offload: 1 passed, 1 failed" in out


def test_read_results_rejects_a_non_lit_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("[]")
    with pytest.raises(lit.WorkspaceError, match="not a lit JSON report"):
        lit.read_results(bad)


def overlay_bin() -> Path:
    """The directory of the kdl-select to test ($KDL_SELECT or the overlay's)."""
    tool = Path(
        os.environ.get("KDL_SELECT", paths.OVERLAY_BUILD / "bin" / "kdl-select")
    )
    if not tool.is_file():
        pytest.skip(f"{tool} not built (kdl build)")
    return tool.parent


@pytest.mark.llvm
@pytest.mark.overlay
@pytest.mark.slow
def test_filecheck_falls_back_to_the_python_port(tmp_path: Path) -> None:
    """With no FileCheck, not or count in llvm_tools_dir the suite still runs.

    The tool dir mirrors Debian's LLVM 22 minus the three test utilities, so
    FileCheck is pip's filecheck, `not` lit's builtin and `count` the
    Python one-liner. The NVPTX tests must pass, and a deliberately wrong
    CHECK must still fail (the fallback checks something).
    """
    if not (LLVM_BIN / "llvm-offload-binary").is_file():
        pytest.skip("no LLVM 22 under /usr/lib/llvm-22")
    kdl_bin = overlay_bin()
    tools = tmp_path / "llvm-bin"
    tools.mkdir()
    for entry in LLVM_BIN.iterdir():
        if entry.name not in ("FileCheck", "not", "count"):
            (tools / entry.name).symlink_to(entry)
    suite = tmp_path / "suite"
    shutil.copytree(paths.LLVM_TESTS / "nvptx", suite / "nvptx")
    shutil.copytree(paths.LLVM_TESTS / "Inputs", suite / "Inputs")
    shutil.copy(paths.LLVM_TESTS / "lit.cfg.py", suite / "lit.cfg.py")
    (suite / "nvptx" / "wrong-check.test").write_text(
        "RUN: echo selected: image 1 | FileCheck %s\nCHECK: selected: image 0\n"
    )
    (suite / "nvptx" / "count.test").write_text("RUN: printf 'a\\nb\\n' | count 2\n")
    (suite / "nvptx" / "wrong-count.test").write_text("RUN: printf 'a\\n' | count 2\n")
    # lit.cfg.py finds the repository from its own location; point it back.
    cfg = suite / "lit.cfg.py"
    cfg.write_text(
        cfg.read_text().replace(
            "repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))",
            f"repo_root = {str(paths.ROOT)!r}",
        )
    )
    dirs = lit.ToolDirs(tools, kdl_bin)
    result = lit.run_lit(
        suite=suite,
        results_dir=tmp_path / "results",
        dirs=dirs,
        extra_params={"test_exec_root": str(tmp_path / "exec")},
    )
    # lit's own output goes to the run's log, which the summary names.
    assert result.summary_file is not None
    log_file = Path(json.loads(result.summary_file.read_text())["log"])
    assert "using filecheck (Python port)" in log_file.read_text()
    assert result.failures == [
        "kdl :: nvptx/wrong-check.test",
        "kdl :: nvptx/wrong-count.test",
    ]
    assert result.passed >= 5
    assert os.path.isfile(result.results_file)
