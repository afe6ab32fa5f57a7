"""Trees: a half-made tree is never used; the pins move in one place."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kdl import trees
from kdl.errors import UsageError
from kdl.trees import common, sidroot


@pytest.fixture
def trees_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "trees"
    monkeypatch.setattr(common, "TREES_DIR", where)
    pins = tmp_path / "trees.json"
    shutil.copy(common.PINS_FILE, pins)
    monkeypatch.setattr(common, "PINS_FILE", pins)
    return where


def test_a_tree_counts_only_with_its_record(trees_dir: Path) -> None:
    partial = common.staging("22")
    (partial / "offload").mkdir()
    assert common.current("22") is None
    pinned = common.pin("22")
    record = {"tree": "22", "version": pinned["version"], "sha256": pinned["sha256"]}
    tree = common.finish("22", partial, record)
    assert tree.path == trees_dir / "22" and not partial.exists()
    assert common.current("22") == common.Tree("22", tree.path, record)
    assert common.current("22", "offload") is not None
    assert common.current("22", "offload/CMakeLists.txt") is None  # not made
    # Another tarball under the same version string is not the pinned tree.
    common.record_file(tree.path).write_text(
        json.dumps(dict(record, sha256="0" * 64)) + "\n"
    )
    assert common.current("22") is None
    common.record_file(tree.path).write_text(json.dumps(record) + "\n")
    # Killed between the rename and the record: not a tree.
    common.record_file(tree.path).unlink()
    assert common.current("22") is None


def test_an_interrupted_make_is_removed(trees_dir: Path) -> None:
    left = trees_dir / "main.partial" / "usr" / "lib"
    left.mkdir(parents=True)
    (left / "half.so").write_bytes(b"\0" * 10)
    fresh = common.staging("main")
    assert fresh.is_dir() and list(fresh.iterdir()) == []


def test_a_record_of_another_version_is_not_current(trees_dir: Path) -> None:
    tree = common.finish("main", common.staging("main"), {"version": "1:23~old"})
    assert tree.path.is_dir()
    assert common.current("main") is None


def test_a_broken_record_is_not_a_tree(trees_dir: Path) -> None:
    tree = common.finish("22", common.staging("22"), {})
    common.record_file(tree.path).write_text("{not json")
    assert common.read_record(tree.path) is None


def test_commit_of_a_snapshot_version() -> None:
    version = "1:24~++20261025103442+7e3c57157096-1~exp1"
    assert sidroot.commit_of(version) == "7e3c57157096"
    assert sidroot.commit_of("1:22.1.8-1") is None


def test_package_names_carry_the_major() -> None:
    names = sidroot.package_names(24)
    assert "clang-24" in names and "llvm-24-dev" in names
    assert "liboffload-24-dev" in names and "mlir-24-tools" in names


def test_pin_moves_main_in_trees_json(trees_dir: Path) -> None:
    trees._pin_main("1:25~++20270101000000+0123456789ab-1~exp1")
    entry = json.loads(common.PINS_FILE.read_text())["main"]
    assert entry["version"].startswith("1:25~++")
    assert (entry["commit"], entry["major"]) == ("0123456789ab", 25)


def test_pin_refuses_a_release_version(trees_dir: Path) -> None:
    with pytest.raises(UsageError, match="not a snapshot version"):
        trees._pin_main("1:22.1.8-1")


def test_unknown_tree_is_a_usage_error(trees_dir: Path) -> None:
    with pytest.raises(UsageError, match="no tree named 'x'"):
        common.pin("x")


def test_what_a_maker_mounted_is_unmounted_before_removal(trees_dir: Path) -> None:
    # debootstrap mounts /proc in the root; rmtree must not walk into it.
    where = trees_dir / "main.partial"
    (where / "proc").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(where / "proc")], check=True)
    (where / "proc" / "inside").write_text("a file of the mounted file system")
    assert common.mounts_under(where) == [str((where / "proc").resolve())]
    common.remove(where)
    assert not where.exists()
    assert common.mounts_under(trees_dir) == []
