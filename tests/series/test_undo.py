"""kdl revert on real git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdl.errors import GitError
from kdl.series.apply import apply_series
from kdl.series.model import load
from tests.llvm_tree import (
    BRANCH,
    OFFLOAD_API,
    OFFLOAD_BINARY,
    P3,
    SeriesDir,
    apply,
    commit_on_main,
    git,
    on_series,
    snapshot,
)

# --- revert ------------------------------------------------------------------------


def test_revert_returns_to_the_base(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    old = git(llvm, "rev-parse", "HEAD").strip()
    status, out, err = on_series(capsys, "revert", llvm, series)
    assert status == 0, err
    assert out.count("  dropped ") == 3
    assert (
        f"{BRANCH} is back at its base {series.base[:12]} (it was at {old[:12]}" in out
    )
    assert git(llvm, "rev-parse", "HEAD").strip() == series.base
    assert git(llvm, "status", "--porcelain") == ""
    status, out, _ = on_series(capsys, "revert", llvm, series)
    assert status == 0 and "nothing to revert" in out
    status, out, _ = apply(capsys, llvm, series)
    assert status == 0 and "3 applied, 0 already applied\n" in out


def test_revert_refuses_foreign_commits_unless_forced(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    commit_on_main(llvm, OFFLOAD_API, "// mine\n", message="My own work")
    before = snapshot(llvm)
    status, _, err = on_series(capsys, "revert", llvm, series)
    assert status == 1
    assert "commits that are not the series'" in err and "My own work" in err
    assert snapshot(llvm) == before
    status, out, _ = on_series(capsys, "revert", llvm, series, "--force")
    assert status == 0
    assert "My own work (not in the series)" in out
    assert git(llvm, "rev-parse", "HEAD").strip() == series.base


def test_revert_keeps_unexported_edits_but_not_stale_patches(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    # patches/ edited after apply: the branch holds an old version, safe to drop.
    patch = series.dir / series.names[2]
    patch.write_text(
        patch.read_text().replace(
            "+// Images are ranked by variant_priority.", "+// Images are ranked."
        )
    )
    _, out, _ = on_series(capsys, "status", llvm, series)
    assert f"  stale    {P3}" in out
    # An edit on the branch that was not exported is kept unless --force.
    git(llvm, "checkout", "--quiet", "HEAD~1")
    (llvm / OFFLOAD_BINARY).write_text(
        (llvm / OFFLOAD_BINARY).read_text() + "// edit\n"
    )
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    git(llvm, "cherry-pick", f"{BRANCH}")
    git(llvm, "branch", "-f", BRANCH, "HEAD")
    git(llvm, "checkout", "--quiet", BRANCH)
    status, _, err = on_series(capsys, "revert", llvm, series)
    assert status == 1
    assert "edits not exported" in err and "Check image metadata" in err
    assert (
        on_series(
            capsys,
            "revert",
            llvm,
            series,
            "--force",
        )[0]
        == 0
    )


def test_the_main_job_replaces_a_stale_patch_instead_of_building_it(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """kdl's own tree: a patch whose file changed since it was applied, under
    the same name and series version, is refused, so that the main job
    reverts and applies again (a plain apply keeps the user's branch)."""
    assert apply(capsys, llvm, series)[0] == 0
    patch = series.dir / series.names[2]
    patch.write_text(
        patch.read_text().replace(
            "+// Images are ranked by variant_priority.", "+// Images are ranked."
        )
    )
    head = git(llvm, "rev-parse", "HEAD")
    with pytest.raises(GitError, match=f"older text of {P3}"):
        apply_series(llvm, load(series.series), replace_stale=True)
    assert git(llvm, "rev-parse", "HEAD") == head
    status, out, _ = apply(capsys, llvm, series)
    assert status == 0 and "an older version: patches/ changed since" in out
