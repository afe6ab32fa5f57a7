"""kdl.build.litmain: the lit suite with LLVM main's tools in the sid root."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kdl import trees
from kdl.build import lit, litmain, mlirmain
from kdl.errors import WorkspaceError
from kdl.trees.common import Tree

from .test_lit import tiny_suite


def fake_tree(root: Path, tools: tuple[str, ...] = litmain.TOOLS) -> Tree:
    bin_dir = root / "usr" / "lib" / "llvm-24" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in tools:
        (bin_dir / tool).write_text("")
    mlir_bin = root / "opt" / "kdl-mlir" / "bin"
    mlir_bin.mkdir(parents=True)
    for tool in mlirmain.TOOLS:
        (mlir_bin / tool).write_text("")
    record = {"major": 24, "prefix": "/usr/lib/llvm-24", "version": "1:24~x"}
    return Tree("main", root, record)


def test_each_tool_is_a_script_that_runs_it_in_the_root(tmp_path: Path) -> None:
    tree = fake_tree(tmp_path / "root")
    bin_dir = litmain.write_wrappers(tree, tmp_path / "bin")
    assert sorted(p.name for p in bin_dir.iterdir()) == sorted(litmain.TOOLS)
    # The main series' MLIR tools, built in the root, when asked for.
    litmain.write_wrappers(tree, bin_dir, mlir=True)
    assert sorted(p.name for p in bin_dir.iterdir()) == sorted(
        litmain.TOOLS + mlirmain.TOOLS
    )
    assert "/opt/kdl-mlir/bin/kdl-mlir-translate" in (
        (bin_dir / "kdl-mlir-translate").read_text()
    )
    script = (bin_dir / "llvm-offload-binary").read_text()
    assert f"exec chroot {tmp_path / 'root'} " in script
    assert "/usr/lib/llvm-24/bin/llvm-offload-binary" in script
    assert "TMPDIR=/tmp" in script
    # lit's builtin `not` runs the next command here, not in the root.
    assert not (bin_dir / "not").exists()
    # A second call leaves unchanged scripts alone.
    before = (bin_dir / "clang").stat().st_mtime_ns
    litmain.write_wrappers(tree, bin_dir)
    assert (bin_dir / "clang").stat().st_mtime_ns == before


def test_a_root_without_a_tool_is_one_line(tmp_path: Path) -> None:
    tree = fake_tree(tmp_path / "root", tools=("FileCheck",))
    with pytest.raises(WorkspaceError, match=r"/usr/lib/llvm-24/bin/count is missing"):
        litmain.write_wrappers(tree, tmp_path / "bin")


def _run_with(
    tmp_path: Path, tests: dict[str, str], not_run: dict[str, str]
) -> lit.LitResult:
    """The passing test of the tiny suite, *tests* (path: RUN line) beside
    it, run with *not_run*."""
    suite = tiny_suite(tmp_path)
    (suite / "fail.test").unlink()
    (suite / "skip.test").unlink()
    for name, run_line in tests.items():
        (suite / name).parent.mkdir(parents=True, exist_ok=True)
        (suite / name).write_text(run_line + "\n")
    return lit.run_lit(
        suite=suite,
        results_dir=tmp_path / "r",
        dirs=lit.ToolDirs(tmp_path, tmp_path),
        not_run=not_run,
    )


def test_not_run_directories_are_left_out_and_named(tmp_path: Path) -> None:
    why = {"elsewhere": "needs what this configuration lacks"}
    result = _run_with(tmp_path, {"elsewhere/broken.test": "RUN: false"}, why)
    assert result.ok and result.summary() == "1 passed, 0 failed"
    assert result.summary_file is not None
    summary = json.loads(result.summary_file.read_text())
    assert summary["not_run"] == why


def test_a_not_run_test_is_left_out_alone(tmp_path: Path) -> None:
    """A test named in not_run is left out; its neighbours run."""
    tests = {"more/broken.test": "RUN: false", "more/fine.test": "RUN: true"}
    result = _run_with(tmp_path, tests, {"more/broken.test": "not here"})
    assert result.ok and result.summary() == "2 passed, 0 failed"


@pytest.mark.slow
def test_main_tools_see_the_workspace_only_inside_the_namespace(
    tmp_path: Path,
) -> None:
    """The real root (selftest --full makes it before pytest runs)."""
    tree = trees.ensure("main")
    bin_dir = litmain.write_wrappers(tree, tmp_path / "bin")
    version = subprocess.run(
        [bin_dir / "llvm-offload-binary", "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "LLVM version 24" in version
    # This file, by its own path: FileCheck reads it only where the bind
    # mount is.  KDL-PROBE: seen in the root
    check = Path(__file__)
    argv = [str(bin_dir / "FileCheck"), "--check-prefix=KDL-PROBE", str(check)]
    inside = subprocess.run(
        [*litmain.namespace_prefix(tree.path), *argv],
        input="seen in the root\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert inside.returncode == 0, inside.stderr
    outside = subprocess.run(
        argv, input="x\n", capture_output=True, text=True, check=False
    )
    assert "Could not open check file" in outside.stderr
    mounts = Path("/proc/mounts").read_text()
    assert str(tree.path / str(check.parents[2]).lstrip("/")) not in mounts
