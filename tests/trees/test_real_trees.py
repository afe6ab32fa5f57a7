"""The real trees (slow: selftest --full makes them before pytest runs)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kdl import paths, trees
from kdl.build.standalone import installed_prefix
from kdl.cli import main
from kdl.errors import WorkspaceError
from kdl.series.choose import tree_version
from kdl.series.model import load
from kdl.trees import common, sidroot

pytestmark = pytest.mark.slow


def test_kdl_tree_reports_both_records(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tree", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert records["main"]["commit"] == common.pin("main")["commit"]
    assert records["main"]["version"] == common.pin("main")["version"]
    assert records["22"]["sha256"] == common.pin("22")["sha256"]
    assert len(records["22"]["commit"]) == 40


def test_a_snapshot_the_registry_dropped_names_the_one_it_carries() -> None:
    main_tree = trees.ensure("main")
    gone = dict(common.pin("main"), version="1:24~++20000101000000+0123456789ab-1~exp1")
    with pytest.raises(WorkspaceError) as info:
        sidroot._check_pinned(main_tree.path, gone)
    message = str(info.value)
    assert "no longer carries llvm-toolchain-snapshot 1:24~++20000101" in message
    assert "it carries 1:" in message and "kdl tree main --pin 1:" in message
    assert "\n" not in message


def test_the_22_tree_is_the_installed_llvm() -> None:
    tree = trees.ensure("22")
    assert tree_version(tree.path) == "22.1.8"
    prefix = installed_prefix("22.1.8")
    assert prefix is not None and prefix.name == "llvm-22"
    assert installed_prefix("22.1.7") is None


def test_the_backport_round_trips_and_range_diffs_on_the_22_tree(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """On kdl's 22.1.8 tree: apply and export give patches/release-22.x back
    byte for byte, main's files it borrows (../0005-...) untouched and still
    borrowed; kdl range-diff makes v9's range-diff from v8 (this repository's
    history) and the files on disk."""
    tree = trees.ensure("22")
    shutil.copytree(paths.PATCHES, tmp_path / "patches")
    copy = tmp_path / "patches" / "release-22.x" / "series"
    before = {
        p: p.read_bytes() for p in (tmp_path / "patches").rglob("*") if p.is_file()
    }
    args = ["--llvm", str(tree.path), "--series", str(copy)]
    assert main(["apply", *args]) == 0
    assert main(["export", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("unchanged (another series' file)") == 3
    after = {
        p: p.read_bytes() for p in (tmp_path / "patches").rglob("*") if p.is_file()
    }
    assert after == before
    borrowed = [p for p in load(copy).patches if p.borrowed]
    assert [p.path.resolve().parent for p in borrowed] == [copy.parent.parent] * 3

    argv = ["range-diff", "--llvm", str(tree.path)]
    assert main([*argv, "--series", str(paths.BACKPORT_SERIES), "v8", "v9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith(
        "# offload-ranked-selection-22 v8 -> v9, on 0118941f7851"
    )
    pairs = [
        ln.split()[:4] for ln in lines if re.match(r"\s*(\d+|-):\s+\S+ [=!<>] ", ln)
    ]
    # v9 adds 15 (OL_DEVICE_INFO_COMPUTE_UNIT_KIND); the rank (10) is v8's.
    assert [(p[0], p[2], p[3]) for p in pairs if p[2] != "="] == [
        ("-:", ">", "15:"),
        ("15:", "!", "16:"),
    ]
    assert any(p[0] == "10:" and p[2] == "=" for p in pairs)
