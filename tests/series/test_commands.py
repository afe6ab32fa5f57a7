"""kdl status on real git repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kdl import paths
from tests.llvm_tree import (
    BRANCH,
    SeriesDir,
    apply,
    commit_on_main,
    git,
    kdl,
    on_series,
    status_json,
)

# --- status ------------------------------------------------------------------------


def test_status_reports_patches_and_distance(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    git(llvm, "checkout", "--quiet", "main")
    commit_on_main(llvm, "llvm/CMakeLists.txt", "# one\n")
    commit_on_main(llvm, "llvm/CMakeLists.txt", "# two\n")
    git(llvm, "checkout", "--quiet", BRANCH)
    _, out, _ = on_series(capsys, "status", llvm, series, "--json")
    doc = json.loads(out)
    assert doc["branch"] == BRANCH and doc["kdl_branch"] is True
    assert doc["base"] == {
        "commit": series.base,
        "recorded": series.base,
        "ref": "main",
    }
    assert (doc["ahead"], doc["behind"]) == (3, 2)
    assert [p["state"] for p in doc["patches"]] == ["applied"] * 3
    assert doc["other_commits"] == []
    _, out, _ = on_series(capsys, "status", llvm, series)
    assert f"{BRANCH}: base {series.base[:12]}, 3 commit(s) ahead, 2 behind main" in out
    assert "status: 3 applied" in out
    # Rebased onto the new main: the base follows.
    git(llvm, "rebase", "--quiet", "main")
    doc = status_json(capsys, llvm, series)
    assert doc["base"]["commit"] == git(llvm, "rev-parse", "main").strip()
    assert (doc["ahead"], doc["behind"]) == (3, 0)
    assert on_series(capsys, "revert", llvm, series)[0] == 0
    assert git(llvm, "rev-parse", "HEAD") == git(llvm, "rev-parse", "main")


def test_status_off_a_kdl_branch(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    status, out, _ = on_series(capsys, "status", llvm, series)
    assert status == 0
    assert "main: not a branch made by kdl apply" in out
    assert "status: 3 missing" in out
    git(llvm, "am", "--keep-non-patch", str(series.dir / series.names[0]))
    doc = status_json(capsys, llvm, series)
    assert [p["state"] for p in doc["patches"]] == ["applied", "missing", "missing"]


# --- A --series file that is no series file -------------------------------------------


@pytest.mark.parametrize("command", ["check", "apply", "status"])
def test_a_series_file_that_is_not_utf8_is_one_line(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    tmp_path: Path,
    command: str,
) -> None:
    """The attack's 5c: a UnicodeDecodeError traceback."""
    bad = tmp_path / "series"
    text = series.series.read_bytes().replace(b"\n", b"\n\xff\xfe garbage\n", 1)
    bad.write_bytes(text)
    status, out, err = kdl(capsys, command, "--llvm", str(llvm), "--series", str(bad))
    assert (status, out) == (1, "")
    assert err == f"error: {bad}: line 2 is not UTF-8 (byte 0xff)\n"


def test_a_series_file_that_is_a_fifo_is_refused_at_once(
    llvm: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "series"
    os.mkfifo(fifo)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kdl",
            "check",
            "--llvm",
            str(llvm),
            "--series",
            str(fifo),
        ],
        env=dict(os.environ, PYTHONPATH=str(paths.ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == f"error: {fifo}: not a regular file (a FIFO)\n"
