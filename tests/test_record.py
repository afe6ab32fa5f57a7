"""A run's record goes under build/ and leaves the checkout clean; recording
it (``kdl results record``, what ``kdl all --record`` does after a run that
passed) is what changes results/.

The workspace here is a git repository with this workspace's package, its
.gitignore and its recorded real-tree results, committed; every step runs
as a user runs it (``python -m kdl`` in that repository) and git says what
changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kdl import paths, record
from tests.llvm_tree import git

pytestmark = pytest.mark.usefixtures("isolated_git")


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(
        paths.ROOT / "kdl", ws / "kdl", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(paths.REAL_TREE_RESULTS, ws / "results" / "real-trees")
    shutil.copy(paths.ROOT / ".gitignore", ws / ".gitignore")
    git(ws, "init", "--quiet")
    git(ws, "add", "--all")
    git(ws, "commit", "--quiet", "-m", "the recorded run")
    return ws


def _python(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in *ws*, importing *ws*'s kdl (its paths are *ws*'s)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ws,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ws), "PYTHONPATH": str(ws)},
        capture_output=True,
        text=True,
        check=False,
    )


def _status(ws: Path) -> list[str]:
    return git(ws, "status", "--porcelain", "--untracked-files=all").splitlines()


# What the real-tree stage writes, through the writer its steps call
# (check-offload-22.json, unittests.json, rank.json, timings.json).
_A_RUN = """
from kdl import paths, record
for name in ("check-offload-22.json", "unittests.json", "rank.json", "timings.json"):
    out = record.write(name, {"run": "this one"})
    assert out.is_relative_to(paths.BUILD), out
print(record.RUN)
"""


def test_a_run_changes_no_tracked_file_and_recording_it_does(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    done = _python(ws, "-c", _A_RUN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(ws / "build" / "record")
    assert _status(ws) == []

    # A dry run says what it would copy and copies nothing.
    done = _python(ws, "-m", "kdl", "--dry-run", "results", "record")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("would record: ") == 4, done.stdout
    assert _status(ws) == []

    done = _python(ws, "-m", "kdl", "results", "record")
    assert done.returncode == 0, done.stderr
    names = ("check-offload-22", "rank", "timings", "unittests")
    assert done.stdout.splitlines() == [
        f"recorded: results/real-trees/{n}.json" for n in names
    ]
    assert _status(ws) == [f" M results/real-trees/{n}.json" for n in names]
    recorded = json.loads((ws / "results/real-trees/rank.json").read_text())
    assert recorded == {"run": "this one"}


def test_recording_without_a_run_is_one_line(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    done = _python(ws, "-m", "kdl", "results", "record")
    assert done.returncode == 1
    assert done.stderr == (
        f"error: {ws / 'build' / 'record'}: no run's record to record "
        "(run 'kdl all' first)\n"
    )
    assert _status(ws) == []


def test_a_later_run_keeps_the_last_record_of_what_it_did_not_measure(
    tmp_path: Path,
) -> None:
    run = tmp_path / "record" / "real-trees"
    assert record.last("rank.json", run) == paths.REAL_TREE_RESULTS / "rank.json"
    record.write("rank.json", {"bench": 1}, run)
    assert record.last("rank.json", run) == run / "rank.json"
