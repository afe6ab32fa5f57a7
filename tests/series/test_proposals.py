"""``kdl apply --proposals``: the proposals on top of the stack, on the
stack's branch, which then carries both."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kdl import paths
from tests.llvm_tree import BRANCH, P3, SeriesDir, git, kdl


def _split(series: SeriesDir) -> Path:
    """The generated series as a stack of its first two patches (in place)
    and proposals of its third (returned)."""
    lines = series.series.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.strip() == P3)
    series.series.write_text("".join(lines[:cut]))
    proposals = series.dir / "proposals"
    proposals.mkdir()
    shutil.move(series.dir / P3, proposals / P3)
    (proposals / "series").write_text("name: test-proposals\n" + "".join(lines[cut:]))
    return proposals / "series"


def test_the_proposals_go_on_the_stack_branch_and_stay_with_it(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(paths, "PATCHES", series.dir)
    monkeypatch.setattr(paths, "PROPOSALS_SERIES", _split(series))
    given = ["--llvm", str(llvm), "--series", str(series.series)]
    status, out, _ = kdl(capsys, "apply", *given)
    assert status == 0, out
    assert f"{BRANCH}: 2 applied" in out
    # On the stack's branch, the proposals on top.
    status, out, _ = kdl(capsys, "apply", "--proposals", *given)
    assert status == 0, out
    assert out.splitlines()[0].endswith("(test-series): given with --series")
    assert "proposals/series" in out.splitlines()[0]
    assert f"{BRANCH}: 1 applied, 2 already applied" in out
    assert git(llvm, "config", f"branch.{BRANCH}.kdlSeries").strip() == (
        "test-series+proposals"
    )
    # Later commands take both from the branch, without flags.
    status, out, _ = kdl(capsys, "status", "--llvm", str(llvm))
    assert status == 0, out
    assert out.splitlines()[0].endswith(f"{BRANCH} carries it")
    assert "status: 3 applied" in out
    # What works on one series file refuses, in one line.
    status, _, err = kdl(capsys, "export", "--llvm", str(llvm))
    assert status != 0
    assert "export works on one series" in err
    assert len(err.strip().splitlines()) == 1
    status, out, _ = kdl(capsys, "revert", "--llvm", str(llvm))
    assert status == 0, out
    assert git(llvm, "rev-parse", "HEAD") == git(llvm, "rev-parse", series.base)
