"""kdl apply / check / status / revert / export on real git repositories."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kdl import paths
from kdl.series.model import load
from tests.llvm_tree import (
    OFFLOAD_API,
    OFFLOAD_BINARY,
    USER,
    Edit,
    SeriesDir,
    apply_argv,
    default_edits,
    git,
    isolated_git,  # noqa: F401  (autouse fixture)
    kdl,
    make_series,
    replace,
    snapshot,
    synthesize_bases,
)

BRANCH = "kdl/test-series"
# git format-patch names, cut at 64 characters
P1 = "0001-Object-Offload-Add-standard-OffloadBinary-metadata-k.patch"
P2 = "0002-Object-Offload-Check-image-metadata-against-a-device.patch"
P3 = "0003-Offload-Load-the-best-ranked-image.patch"
P4 = "0004-Offload-Document-ranked-selection.patch"


def on_series(
    capsys: pytest.CaptureFixture[str],
    command: str,
    llvm: Path,
    series: SeriesDir,
    *extra: str,
) -> tuple[int, str, str]:
    """``kdl COMMAND --llvm LLVM --series SERIES [EXTRA...]``, in process."""
    return kdl(
        capsys, command, "--llvm", str(llvm), "--series", str(series.series), *extra
    )


def apply(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, *extra: str
) -> tuple[int, str, str]:
    return on_series(capsys, "apply", llvm, series, *extra)


def commit_on_main(
    llvm: Path,
    rel: str,
    change: str,
    old: str | None = None,
    message: str = "upstream change",
) -> None:
    path = llvm / rel
    text = path.read_text()
    path.write_text(replace(text, old, change) if old else change + text)
    git(llvm, "commit", "--quiet", "-am", message)


# --- apply ---------------------------------------------------------------------


def test_apply_makes_one_commit_per_patch(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert out.count(": applied\n") == 3
    assert f"{BRANCH}: 3 applied, 0 already applied; switched from main" in out
    assert git(llvm, "symbolic-ref", "--short", "HEAD").strip() == BRANCH
    log = git(
        llvm,
        "log",
        "--reverse",
        "--format=%an <%ae>%x1f%s%x1f%b%x1e",
        f"{series.base}..HEAD",
    )
    entries = [e.strip("\n").split("\x1f") for e in log.split("\x1e")[:-1]]
    edits = default_edits()
    assert [e[1] for e in entries] == [e.subject for e in edits]
    # Authored by the checkout's user (see the noreply test for another one).
    assert {e[0] for e in entries} == {USER}
    assert entries[0][2].strip() == edits[0].body
    assert git(llvm, "config", f"branch.{BRANCH}.kdlBase").strip() == series.base
    assert git(llvm, "config", f"branch.{BRANCH}.kdlBaseRef").strip() == "main"
    assert (llvm / "llvm/include/llvm/Object/OffloadMetadata.h").is_file()
    assert git(llvm, "status", "--porcelain") == ""


def test_reapply_changes_nothing(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    before = snapshot(llvm)
    reflog = git(llvm, "reflog", "--all")
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert out.count(": already applied\n") == 3
    assert f"{BRANCH}: 0 applied, 3 already applied\n" in out
    assert snapshot(llvm) == before
    assert git(llvm, "reflog", "--all") == reflog


def test_reapply_from_another_branch_switches_to_it(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    tip = git(llvm, "rev-parse", BRANCH)
    git(llvm, "checkout", "--quiet", "main")
    status, out, _ = apply(capsys, llvm, series)
    assert status == 0
    assert "0 applied, 3 already applied; switched from main" in out
    assert git(llvm, "rev-parse", "HEAD") == tip


def test_apply_is_detected_by_patch_id_not_subject(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """A branch commit with a patch's subject but other content is not 'applied'."""
    assert apply(capsys, llvm, series)[0] == 0
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + "// edited\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    status, out, _ = apply(capsys, llvm, series)
    assert status == 0
    assert f"{P3}: already applied (edited on the branch, not exported)" in out
    code, out, _ = on_series(capsys, "status", llvm, series, "--json")
    assert code == 0
    states = [p["state"] for p in json.loads(out)["patches"]]
    assert states == ["applied", "applied", "edited"]


def refused(capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir) -> str:
    """Run apply, expect a refusal (exit 1) that left the checkout untouched."""
    before = snapshot(llvm)
    status, _, err = apply(capsys, llvm, series)
    assert status == 1, err
    assert snapshot(llvm) == before
    return err


def move_hunks_and_change_context(llvm: Path) -> None:
    """Commit lines that move every hunk, and a context change that needs 3-way."""
    commit_on_main(llvm, OFFLOAD_BINARY, "// Local note.\n// Another one.\n")
    commit_on_main(
        llvm,
        OFFLOAD_BINARY,
        "/// and used by the linker later.",
        old="/// and used by the linker.",
    )


def test_apply_on_a_base_with_offsets_and_3way(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    move_hunks_and_change_context(llvm)
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert f"{P2}: applied (3-way merge)" in out
    assert "3 applied" in out


def test_patch_already_in_the_base_makes_no_commit(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    path = llvm / OFFLOAD_API
    path.write_text(path.read_text() + "// Images are ranked by variant_priority.\n")
    git(llvm, "commit", "--quiet", "-am", "Upstreamed")
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert f"  {P3}: already in the base, no commit made" in out
    assert "2 applied, 0 already applied, 1 already in the base" in out
    assert git(llvm, "rev-list", "--count", "main..HEAD").strip() == "2"


def test_conflict_restores_everything(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    commit_on_main(
        llvm,
        OFFLOAD_BINARY,
        "/// A plain binary serialization of an offloading file.",
        old="/// A simple binary serialization of an offloading file.",
    )
    (llvm / "notes.txt").write_text("untracked, must survive\n")
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + "// stashed\n")
    git(llvm, "stash", "--quiet")
    before = snapshot(llvm)
    status, out, err = apply(capsys, llvm, series)
    assert status == 1
    assert f"  {P1}: applied" in out
    assert f"  {P2}: conflict" in out
    first = err.splitlines()[0]
    assert first.startswith(f"error: {P2} does not apply to ")
    assert f"conflict in {OFFLOAD_BINARY}" in first
    assert (
        f"{OFFLOAD_BINARY}: the patch was made against llvm/llvm-project {series.base}"
        in err
    )
    assert f"nothing changed: {BRANCH} was removed, main is checked out again" in err
    assert "--keep-conflicts" in err
    assert snapshot(llvm) == before


def test_conflict_on_an_existing_branch_restores_it(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, tmp_path: Path
) -> None:
    # The branch holds patch 1 only, edited so that patch 3 conflicts with it.
    one = make_series(llvm, tmp_path / "one", default_edits()[:1])
    assert apply(capsys, llvm, one)[0] == 0
    (llvm / OFFLOAD_API).write_text(
        (llvm / OFFLOAD_API).read_text() + "// other tail\n"
    )
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    git(llvm, "checkout", "--quiet", "main")
    before = snapshot(llvm)
    status, out, err = apply(capsys, llvm, series)
    assert status == 1, out
    assert f"{P1}: already applied (edited on the branch, not exported)" in out
    assert f"{P2}: applied" in out  # then undone, with what apply recorded for it
    assert f"{P3}: conflict" in out
    assert f"nothing changed: {BRANCH} is back at " in err
    assert snapshot(llvm) == before


def test_patch_laid_out_differently_by_git_still_counts_as_applied(
    capsys: pytest.CaptureFixture[str], llvm: Path, tmp_path: Path
) -> None:
    """A patch with more context than git writes: the commit's patch-id differs."""
    made = make_series(llvm, tmp_path / "u5", context=5)
    assert apply(capsys, llvm, made)[0] == 0
    of_file = git(
        llvm, "patch-id", "--stable", input=(made.dir / made.names[0]).read_text()
    )
    of_commit = git(llvm, "patch-id", "--stable", input=git(llvm, "show", "HEAD~2"))
    assert of_file.split()[0] != of_commit.split()[0]
    doc = json.loads(
        kdl(
            capsys,
            "status",
            "--llvm",
            str(llvm),
            "--series",
            str(made.series),
            "--json",
        )[1]
    )
    assert [p["state"] for p in doc["patches"]] == ["applied"] * 3
    assert "0 applied, 3 already applied" in apply(capsys, llvm, made)[1]
    status, out, _ = kdl(
        capsys, "revert", "--llvm", str(llvm), "--series", str(made.series)
    )
    assert status == 0 and out.count("  dropped ") == 3


def test_keep_conflicts_leaves_the_merge_and_apply_resumes(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    commit_on_main(
        llvm,
        OFFLOAD_BINARY,
        "/// A plain binary serialization of an offloading file.",
        old="/// A simple binary serialization of an offloading file.",
    )
    status, _, err = apply(capsys, llvm, series, "--keep-conflicts")
    assert status == 1
    assert "left in place" in err
    assert f"conflict markers are in {OFFLOAD_BINARY}" in err
    assert "git am --abort && git checkout main && git branch -D kdl/test-series" in err
    assert (llvm / ".git/rebase-apply").is_dir()
    text = (llvm / OFFLOAD_BINARY).read_text()
    assert "<<<<<<<" in text
    # Resolve: keep both changes.
    resolved = []
    for line in text.splitlines(keepends=True):
        if line.startswith(("<<<<<<<", "=======", ">>>>>>>", "|||||||")):
            continue
        if "/// A simple binary serialization" in line:
            continue
        resolved.append(line)
    (llvm / OFFLOAD_BINARY).write_text("".join(resolved))
    git(llvm, "add", OFFLOAD_BINARY)
    git(llvm, "am", "--continue")
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert f"{P2}: already applied (edited on the branch" in out
    assert f"{P3}: applied" in out


def test_dirty_tree_is_refused(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    (llvm / OFFLOAD_API).write_text("changed\n")
    err = refused(capsys, llvm, series)
    assert f"uncommitted changes to tracked files ({OFFLOAD_API})" in err
    git(llvm, "checkout", OFFLOAD_API)
    git(llvm, "rm", "--quiet", "--cached", "llvm/CMakeLists.txt")  # staged only
    status, _, err = apply(capsys, llvm, series)
    assert status == 1
    assert "llvm/CMakeLists.txt" in err


def test_untracked_files_are_kept_unless_the_series_creates_them(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    (llvm / "scratch.txt").write_text("mine\n")
    (llvm / "llvm/docs").mkdir()
    (llvm / "llvm/docs/OffloadBinaryMetadata.rst").write_text("mine too\n")
    before = snapshot(llvm)
    status, _, err = apply(capsys, llvm, series)
    assert status == 1
    assert (
        "creates llvm/docs/OffloadBinaryMetadata.rst, which already exist(s) untracked"
        in err
    )
    assert snapshot(llvm) == before
    (llvm / "llvm/docs/OffloadBinaryMetadata.rst").unlink()
    assert apply(capsys, llvm, series)[0] == 0
    assert (llvm / "scratch.txt").read_text() == "mine\n"


@pytest.mark.parametrize("operation", ["am", "merge", "cherry-pick"])
def test_operation_in_progress_is_refused(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, operation: str
) -> None:
    if operation == "am":
        commit_on_main(
            llvm, OFFLOAD_BINARY, "/// A plain binary", old="/// A simple binary"
        )
        git(llvm, "am", str(series.dir / series.names[1]), check=False)
        expected = (
            "a 'git am' is in progress; finish it ('git am --continue') "
            "or drop it ('git am --abort')"
        )
    else:
        git(llvm, "checkout", "--quiet", "-b", "side")
        commit_on_main(llvm, OFFLOAD_API, "// side\n")
        git(llvm, "checkout", "--quiet", "main")
        commit_on_main(llvm, OFFLOAD_API, "// main\n")
        git(llvm, operation, "side", check=False)
        expected = f"a {operation} is in progress"
    err = refused(capsys, llvm, series)
    assert expected in err


def test_foreign_branch_of_the_same_name_is_refused(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    git(llvm, "branch", BRANCH)
    status, _, err = apply(capsys, llvm, series)
    assert status == 1
    assert f"branch {BRANCH} exists and was not made by kdl apply" in err
    # One kdl made, with someone else's commit on it.
    git(llvm, "branch", "-D", BRANCH)
    assert apply(capsys, llvm, series)[0] == 0
    commit_on_main(llvm, OFFLOAD_API, "// mine\n", message="My own work")
    git(llvm, "checkout", "--quiet", "main")
    err = refused(capsys, llvm, series)
    assert "has commits that are not the series'" in err and "My own work" in err


def test_detached_head_with_unreachable_commits_is_refused(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    git(llvm, "checkout", "--quiet", "--detach")
    commit_on_main(llvm, OFFLOAD_API, "// detached work\n")
    err = refused(capsys, llvm, series)
    assert "commits that no branch holds" in err


def test_detached_head_that_a_branch_holds_is_fine(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    git(llvm, "checkout", "--quiet", "--detach")
    head = git(llvm, "rev-parse", "HEAD").strip()
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert f"3 applied, 0 already applied; switched from {head}" in out
    assert git(llvm, "config", f"branch.{BRANCH}.kdlBaseRef", check=False) == ""


def test_conflict_returns_to_a_detached_head(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    git(llvm, "checkout", "--quiet", "--detach")
    commit_on_main(
        llvm, OFFLOAD_BINARY, "/// A plain binary", old="/// A simple binary"
    )
    git(llvm, "branch", "keep")
    head = git(llvm, "rev-parse", "HEAD").strip()
    err = refused(capsys, llvm, series)
    assert f"nothing changed: {BRANCH} was removed, {head} is checked out again" in err
    assert git(llvm, "rev-parse", "HEAD").strip() == head
    assert git(llvm, "symbolic-ref", "-q", "HEAD", check=False) == ""


def test_a_noreply_author_is_warned_about(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "1234+jd@users.noreply.github.com")
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert "warning: commits are authored by Kdl Tester <1234+jd@users" in out
    author = git(llvm, "log", "-1", "--format=%ae").strip()
    assert author == "1234+jd@users.noreply.github.com"


def test_unknown_identity_is_refused(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{who}_NAME")
        monkeypatch.delenv(f"GIT_{who}_EMAIL")
    monkeypatch.setenv("EMAIL", "")
    err = refused(capsys, llvm, series)
    assert "git cannot commit here" in err and "set user.name and user.email" in err


def test_failing_hook_is_not_called_a_conflict(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    hook = llvm / ".git/hooks/pre-applypatch"
    hook.write_text("#!/bin/sh\necho 'policy says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = snapshot(llvm)
    status, out, err = apply(capsys, llvm, series)
    assert status == 1
    assert "conflict" not in out + err
    assert err.startswith(f"error: git am of {P1} failed: ")
    assert f"nothing changed: {BRANCH} was removed" in err
    assert snapshot(llvm) == before


def test_not_an_llvm_checkout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, series: SeriesDir
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "--quiet")
    status, _, err = kdl(
        capsys, "apply", "--llvm", str(other), "--series", str(series.series)
    )
    assert status == 1
    assert "not an llvm-project checkout (no llvm, offload" in err
    status, _, err = kdl(
        capsys,
        "apply",
        "--llvm",
        str(tmp_path / "nope"),
        "--series",
        str(series.series),
    )
    assert "no such directory" in err


# --- Ctrl-C ----------------------------------------------------------------------


def _slow_apply(
    llvm: Path, series: SeriesDir, tmp_path: Path, **popen: object
) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / "in-hook"
    hook = llvm / ".git/hooks/applypatch-msg"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\nsleep 3\n")
    hook.chmod(0o755)
    child = subprocess.Popen(
        apply_argv(llvm, series),
        cwd=paths.ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,  # type: ignore[call-overload]
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the hook never ran"
        time.sleep(0.05)
    return child, hook


@pytest.mark.slow
def test_ctrl_c_to_kdl_rolls_back(
    llvm: Path, series: SeriesDir, tmp_path: Path
) -> None:
    before = snapshot(llvm)
    child, hook = _slow_apply(llvm, series, tmp_path)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "interrupted: undoing the apply" in err
    assert (
        f"error: interrupted: nothing changed: {BRANCH} was removed, "
        "main is checked out again" in err
    )
    hook.unlink()
    assert snapshot(llvm) == before


@pytest.mark.slow
def test_ctrl_c_from_the_terminal_rolls_back(
    llvm: Path, series: SeriesDir, tmp_path: Path
) -> None:
    """SIGINT to the whole process group: git am and its hook die too."""
    before = snapshot(llvm)
    child, hook = _slow_apply(llvm, series, tmp_path, start_new_session=True)
    os.killpg(child.pid, signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "error: interrupted: nothing changed" in err
    hook.unlink()
    assert snapshot(llvm) == before


@pytest.mark.slow
def test_second_ctrl_c_prints_the_way_back(
    llvm: Path, series: SeriesDir, tmp_path: Path
) -> None:
    child, hook = _slow_apply(llvm, series, tmp_path)
    child.send_signal(signal.SIGINT)
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "to restore the checkout, once no git command runs in" in err
    time.sleep(3.5)  # git am may outlive kdl: let its hook (3 s) end first
    # Follow the printed commands once git is done: the checkout comes back.
    hook.unlink()
    commands = [
        line.split("#")[0].split()
        for line in err.splitlines()
        if line.startswith("    git ")
    ]
    assert commands[-1] == ["git", "branch", "-D", BRANCH]
    for command in commands:
        if (
            command[1:] == ["am", "--abort"]
            and not (llvm / ".git/rebase-apply").exists()
        ):
            continue  # git am finished after kdl stopped: nothing to abort
        git(llvm, *command[1:])
    assert git(llvm, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(llvm, "status", "--porcelain") == ""


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
    doc = json.loads(
        on_series(
            capsys,
            "status",
            llvm,
            series,
            "--json",
        )[1]
    )
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
    doc = json.loads(
        on_series(
            capsys,
            "status",
            llvm,
            series,
            "--json",
        )[1]
    )
    assert [p["state"] for p in doc["patches"]] == ["applied", "missing", "missing"]


# --- check ---------------------------------------------------------------------------


def test_check_classifies_without_touching_anything(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    move_hunks_and_change_context(llvm)
    before = snapshot(llvm)
    index = (llvm / ".git/index").read_bytes()
    status, out, err = on_series(capsys, "check", llvm, series)
    assert status == 0, out + err
    assert f"{P1}: offset: hunks moved by up to 2 lines" in out
    assert f"{P2}: 3-way: context changed in" in out
    assert f"{P3}: applies cleanly" in out
    assert (
        "check: 3 of 3 patches apply with kdl apply; the checkout was not changed"
        in out
    )
    assert snapshot(llvm) == before
    assert (llvm / ".git/index").read_bytes() == index


def test_check_reports_failures_fuzz_and_applied(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    commit_on_main(
        llvm, OFFLOAD_BINARY, "/// A plain binary", old="/// A simple binary"
    )
    status, out, _ = on_series(capsys, "check", llvm, series)
    assert status == 1
    assert f"{P2}: fails: 3-way merge conflicts in {OFFLOAD_BINARY}" in out
    assert f"{OFFLOAD_BINARY}: made against llvm/llvm-project {series.base}" in out
    assert "check: 2 of 3 patches apply" in out
    # On the applied branch, the default base is the branch's base; HEAD has them all.
    git(llvm, "reset", "--quiet", "--hard", "HEAD~1")
    assert apply(capsys, llvm, series)[0] == 0
    status, out, _ = on_series(capsys, "check", llvm, series)
    assert status == 0 and f"(the base of {BRANCH})" in out
    status, out, _ = on_series(
        capsys,
        "check",
        llvm,
        series,
        "--base",
        "HEAD",
    )
    assert status == 0 and out.count(": already applied") == 3


def test_check_fuzz(
    capsys: pytest.CaptureFixture[str], llvm: Path, tmp_path: Path
) -> None:
    # A hunk whose outer context changed on a base where 3-way cannot help
    # (the patch's preimage blob is not in the repository).
    edits = [
        Edit(
            "Touch OffloadAPI",
            "body",
            {
                OFFLOAD_API: lambda t: replace(
                    t or "", "#pragma once\n", "#pragma once\n// kdl\n"
                )
            },
        )
    ]
    text = (llvm / OFFLOAD_API).read_text()
    if "#pragma once\n" not in text:
        pytest.skip("OffloadAPI.h has no '#pragma once'")
    made = make_series(llvm, tmp_path / "fuzz", edits)
    patch = made.dir / made.names[0]
    # Replace the blob ids so that no 3-way base exists.
    data = patch.read_text().splitlines(keepends=True)
    data = [
        ("index " + "1" * 40 + ".." + "2" * 40 + " 100644\n")
        if ln.startswith("index ")
        else ln
        for ln in data
    ]
    patch.write_text("".join(data))
    lines = text.splitlines(keepends=True)
    at = lines.index("#pragma once\n")
    lines[at + 3] = "// changed outer context\n"
    (llvm / OFFLOAD_API).write_text("".join(lines))
    git(llvm, "commit", "--quiet", "-am", "change outer context")
    status, out, _ = kdl(
        capsys, "check", "--llvm", str(llvm), "--series", str(made.series)
    )
    assert status == 1
    assert ": fuzz 1: only with 1 context line(s) ignored" in out


# --- export ---------------------------------------------------------------------------


def _tree(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_export_round_trip_is_byte_identical(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    text = series.series.read_text().replace(
        "name: test-series", "# kept comment\nname: test-series"
    )
    series.series.write_text(text.replace("0002-", "# about 0002\n0002-", 1))
    before = _tree(series.dir)
    assert apply(capsys, llvm, series)[0] == 0
    status, out, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert out.count(": unchanged") == 3
    assert "0 file(s) changed" in out
    assert _tree(series.dir) == before


def test_export_round_trip_ignores_user_config(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
) -> None:
    before = _tree(series.dir)
    settings = {
        "format": "signature=sig numbered=false suffix=.txt headers=X-Foo:bar "
        "thread=shallow signOff=true coverLetter=auto from=true",
        "diff": "noprefix=true algorithm=histogram context=5 renames=copies "
        "mnemonicPrefix=true interHunkContext=10 suppressBlankEmpty=true",
        "am": "messageid=true keepcr=true threeWay=false",
        "core": "abbrev=7",
    }
    with (Path(os.environ["HOME"]) / ".gitconfig").open("a") as f:
        for section, pairs in settings.items():
            f.write(f"[{section}]\n")
            f.writelines(f"\t{pair.replace('=', ' = ', 1)}\n" for pair in pairs.split())
    assert apply(capsys, llvm, series)[0] == 0
    assert "Message-Id" not in git(llvm, "log", "-1", "--format=%B")
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert _tree(series.dir) == before


def test_export_writes_edits_and_new_commits(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    before = _tree(series.dir)
    assert apply(capsys, llvm, series)[0] == 0
    # Edit patch 3 on the branch and add a fourth commit touching a new and an old file.
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + "// refined\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    (llvm / "offload/NEWS.txt").write_text("ranked selection\n")
    (llvm / "llvm/include/llvm/Object/Binary.h").write_text(
        (llvm / "llvm/include/llvm/Object/Binary.h").read_text() + "// binary\n"
    )
    git(llvm, "add", "-A")
    git(llvm, "commit", "--quiet", "-m", "[Offload] Document ranked selection")
    status, out, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert f"{P3}: updated" in out
    assert f"{P4}: new" in out
    after = _tree(series.dir)
    assert {n for n in after if after[n] != before.get(n)} == {
        P1,
        P2,
        P3,
        P4,
        "series",
        "CHANGELOG.md",
    }
    for name in (P1, P2):  # only the numbering moved: [PATCH n/3] -> [PATCH n/4]
        assert after[name].replace(b"/4] ", b"/3] ", 1) == before[name]
    for name in series.names:  # numbering moved from n/3 to n/4
        assert b"Subject: [PATCH " in after[name] and b"/4]" in after[name]
    text = after["series"].decode()
    assert text.endswith(
        f"{P4}\n"
        f"    base llvm/include/llvm/Object/Binary.h {series.base}\n"
        "    new  offload/NEWS.txt\n"
    )
    assert b"+// refined" in after[P3]
    # The refreshed series is what the branch holds: status agrees, revert is allowed.
    doc = json.loads(
        on_series(
            capsys,
            "status",
            llvm,
            series,
            "--json",
        )[1]
    )
    assert [p["state"] for p in doc["patches"]] == ["applied"] * 4
    # Dropping a commit on the branch removes its patch file.
    git(llvm, "reset", "--quiet", "--hard", "HEAD~1")
    status, out, _ = on_series(capsys, "export", llvm, series)
    assert f"{P4}: removed" in out
    assert not (series.dir / P4).exists()


def test_export_keeps_each_version_with_a_range_diff_and_changelog(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    before = _tree(series.dir)
    assert apply(capsys, llvm, series)[0] == 0
    # Nothing changed: no new version.
    assert on_series(capsys, "export", llvm, series)[0] == 0
    assert not (series.dir / "versions").exists()
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + "// refined\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    status, _, err = on_series(
        capsys, "export", llvm, series, "-m", "Rank by fit, not by key"
    )
    assert status == 0, err
    v1 = series.dir / "versions" / "v1"
    assert _tree(v1) == before  # the old patches and series, byte for byte
    assert "version: 2\n" in (series.dir / "series").read_text()
    # git range-diff of v1 (applied in a scratch worktree) against the branch.
    diff = (series.dir / "versions" / "v2.range-diff").read_text().splitlines()
    assert [line.split(":", 1)[0].strip() for line in diff if ":  " in line][:3] == [
        "1",
        "2",
        "3",
    ]
    assert " = 1:" in diff[0] and " = 2:" in diff[1] and " ! 3:" in diff[2]
    assert any("+// refined" in line for line in diff)
    assert git(llvm, "worktree", "list").count("\n") == 1  # scratch tree removed
    log = (series.dir / "CHANGELOG.md").read_text()
    assert re.search(
        r"^- v2 \(\d{4}-\d{2}-\d{2}\): Rank by fit, not by key$", log, re.M
    )
    # A second change: v2 is kept, v3 written; the default line says what changed.
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + "// again\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    assert on_series(capsys, "export", llvm, series)[0] == 0
    assert (series.dir / "versions" / "v2" / "series").read_text().count("version: 2")
    assert "version: 3\n" in (series.dir / "series").read_text()
    lines = (series.dir / "CHANGELOG.md").read_text().splitlines()
    assert lines[2].startswith("- v3 (") and lines[2].endswith(": changed 0003")
    assert lines[3].startswith("- v2 (")


def test_export_refuses_to_overwrite_uncommitted_patches(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    git(series.dir, "init", "--quiet")
    git(series.dir, "add", "-A")
    git(series.dir, "commit", "--quiet", "-m", "series")
    assert apply(capsys, llvm, series)[0] == 0
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + "// refined\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    patch = series.dir / series.names[2]
    patch.write_text(patch.read_text() + "\n")
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 1
    assert f"uncommitted changes to {series.names[2]} would be overwritten" in err


def test_export_needs_a_kdl_branch(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 1
    assert "HEAD is main at" in err and "not a branch made by kdl apply" in err


# --- the real series, on bases synthesized from its hunks --------------------------


def _synthetic_checkout(root: Path, patches: list[bytes]) -> Path:
    bases = synthesize_bases(patches)
    bases.setdefault(OFFLOAD_BINARY, "// placeholder\n")
    bases.setdefault("offload/CMakeLists.txt", "# placeholder\n")
    for rel, text in bases.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "--quiet")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "synthetic base")
    return root


def _without_index_lines(data: bytes) -> list[bytes]:
    return [ln for ln in data.splitlines() if not ln.startswith(b"index ")]


def test_synthesized_bases_reproduce_a_series(
    capsys: pytest.CaptureFixture[str], series: SeriesDir, tmp_path: Path
) -> None:
    patches = [(series.dir / n).read_bytes() for n in series.names]
    repo = _synthetic_checkout(tmp_path / "synthetic", patches)
    status, out, _ = kdl(
        capsys, "check", "--llvm", str(repo), "--series", str(series.series)
    )
    assert status == 0 and out.count(": applies cleanly") == 3
    before = _tree(series.dir)
    assert apply(capsys, llvm=repo, series=series)[0] == 0
    assert (
        kdl(capsys, "export", "--llvm", str(repo), "--series", str(series.series))[0]
        == 0
    )
    after = _tree(series.dir)
    for name in series.names:
        assert _without_index_lines(after[name]) == _without_index_lines(before[name])


@pytest.mark.skipif(not paths.SERIES.is_file(), reason="patches/series does not exist")
def test_the_real_series_round_trips(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """patches/ through apply, status, export and revert on synthesized bases."""
    shutil.copytree(paths.PATCHES, tmp_path / "patches")
    series_file = tmp_path / "patches" / "series"
    original = load(series_file)
    repo = _synthetic_checkout(
        tmp_path / "llvm-project", [p.read() for p in original.patches]
    )
    args = ["--llvm", str(repo), "--series", str(series_file)]
    status, out, err = kdl(capsys, "check", *args)
    assert status == 0, out + err
    assert out.count(": applies cleanly") == len(original.patches)
    status, out, err = kdl(capsys, "apply", *args)
    assert status == 0, err
    branch = f"kdl/{original.name}"
    log = git(
        repo,
        "log",
        "--reverse",
        "--format=%s%x1f%an <%ae>%x1e",
        f"{branch}~{len(original.patches)}..{branch}",
    )
    assert [e.strip("\n").split("\x1f") for e in log.split("\x1e")[:-1]] == [
        [p.subject, USER] for p in original.patches
    ]  # [Object][Offload] tags survive git am; the user authors the commits
    doc = json.loads(kdl(capsys, "status", *args, "--json")[1])
    assert [p["state"] for p in doc["patches"]] == ["applied"] * len(original.patches)
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    # Export: the same messages, authors and file lists (hunk layout and blob
    # ids may differ: the bases are synthetic), and the same tree again.
    assert kdl(capsys, "export", *args)[0] == 0
    exported = load(series_file)
    assert [p.name for p in exported.patches] == [p.name for p in original.patches]
    for new, old in zip(exported.patches, original.patches, strict=True):
        assert (new.subject, new.author, new.body()) == (
            old.subject,
            USER,
            old.body(),
        )
        assert new.files == old.files
    assert kdl(capsys, "revert", *args)[0] == 0
    assert kdl(capsys, "apply", *args)[0] == 0
    assert git(repo, "rev-parse", "HEAD^{tree}") == tree


def test_dry_run_changes_nothing(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    args = ["--llvm", str(llvm), "--series", str(series.series)]
    before = snapshot(llvm)
    status, out, _ = kdl(capsys, "--dry-run", "apply", *args)
    assert status == 0
    assert f"would run: git checkout --no-track -b {BRANCH} {series.base}" in out
    assert out.count("would run: git am --3way --keep-non-patch") == 3
    assert snapshot(llvm) == before
    assert apply(capsys, llvm, series)[0] == 0
    patches = _tree(series.dir)
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + "// more\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    before = snapshot(llvm)
    status, out, _ = kdl(capsys, "--dry-run", "export", *args)
    assert status == 0 and f"  {P3}: updated" in out and "would write" in out
    assert _tree(series.dir) == patches
    status, out, _ = kdl(capsys, "--dry-run", "revert", *args, "--force")
    assert status == 0 and f"would run: git reset --keep {series.base}" in out
    assert snapshot(llvm) == before
