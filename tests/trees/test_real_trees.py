"""The real trees (slow: selftest --full makes them before pytest runs)."""

from __future__ import annotations

import json

import pytest

from kdl import trees
from kdl.build.standalone import installed_prefix
from kdl.cli import main
from kdl.errors import WorkspaceError
from kdl.series.choose import tree_version
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
