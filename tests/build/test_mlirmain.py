"""kdl.build.mlirmain: the main series' #gpu.runtime_select on main's MLIR."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdl import paths
from kdl.build import mlirmain
from kdl.errors import WorkspaceError
from kdl.series.model import load
from kdl.trees.common import Tree


def test_the_patch_files_it_builds_and_tests() -> None:
    changed, new = mlirmain._patch_files(load(paths.PROPOSALS_SERIES))
    assert changed == [
        "mlir/include/mlir/Dialect/GPU/IR/CompilationAttrs.td",
        "mlir/include/mlir/Target/LLVMIR/Dialect/All.h",
        "mlir/include/mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h",
    ]
    assert mlirmain.SOURCE in new
    assert "mlir/test/Target/LLVMIR/gpu-runtime-select.mlir" in new


def test_a_root_without_main_s_headers_is_one_line(tmp_path: Path) -> None:
    tree = Tree("main", tmp_path, {"major": 24, "prefix": "/usr/lib/llvm-24"})
    with pytest.raises(WorkspaceError) as info:
        mlirmain.build(tree, load(paths.PROPOSALS_SERIES))
    assert "CompilationAttrs.td" in str(info.value)
    assert "is not installed" in str(info.value)
    assert "\n" not in str(info.value)


def test_a_hunk_that_does_not_apply_to_main_is_one_line(tmp_path: Path) -> None:
    include = tmp_path / "usr/lib/llvm-24/include"
    for name in mlirmain._patch_files(load(paths.PROPOSALS_SERIES))[0]:
        header = include / name[len(mlirmain.MLIR_INCLUDE) :]
        header.parent.mkdir(parents=True, exist_ok=True)
        header.write_text("// not main's header\n")
    tree = Tree("main", tmp_path, {"major": 24, "prefix": "/usr/lib/llvm-24"})
    with pytest.raises(WorkspaceError) as info:
        mlirmain.build(tree, load(paths.PROPOSALS_SERIES))
    message = str(info.value)
    assert message.startswith("0003-mlir-gpu-Add-gpu.runtime_select")
    assert "does not apply to main's" in message
