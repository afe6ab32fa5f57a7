"""kdl apply on real git repositories: commits, conflicts, refusals, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kdl import paths
from tests.llvm_tree import (
    BRANCH,
    OFFLOAD_API,
    OFFLOAD_BINARY,
    P1,
    P2,
    P3,
    USER,
    SeriesDir,
    apply,
    apply_argv,
    commit_on_main,
    default_edits,
    git,
    kdl,
    make_series,
    move_hunks_and_change_context,
    on_series,
    snapshot,
)

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


#: How long the hook of _slow_apply keeps git am (and so kdl) busy: the
#: tests signal kdl within a tenth of a second of the hook starting.
HOOK_SECONDS = 1.5


def _slow_apply(
    llvm: Path, series: SeriesDir, tmp_path: Path, **popen: object
) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / "in-hook"
    hook = llvm / ".git/hooks/applypatch-msg"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\nsleep {HOOK_SECONDS}\n")
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
@pytest.mark.parametrize("group", [False, True], ids=["kdl", "terminal"])
def test_more_ctrl_c_never_stop_the_undo_halfway(
    llvm: Path, series: SeriesDir, tmp_path: Path, group: bool
) -> None:
    """Three Ctrl-Cs 0.3 s apart, to kdl alone or to the whole group (the
    terminal's): the running git step ends whole, the undo goes on, and the
    checkout is as it was."""
    before = snapshot(llvm)
    child, hook = _slow_apply(llvm, series, tmp_path, start_new_session=group)
    for _ in range(3):
        if group:
            os.killpg(child.pid, signal.SIGINT)
        else:
            child.send_signal(signal.SIGINT)
        time.sleep(0.3)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "still undoing the apply" in err
    assert err.endswith(
        f"error: interrupted: nothing changed: {BRANCH} was removed, "
        "main is checked out again\n"
    )
    assert "Traceback" not in err
    hook.unlink()
    assert snapshot(llvm) == before


def test_a_tree_without_the_base_blobs_says_so(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, tmp_path: Path
) -> None:
    """A one-commit tree (an unpacked tarball, a shallow clone) whose context
    differs: one line that names the cause, not git's hint."""
    commit_on_main(
        llvm,
        OFFLOAD_BINARY,
        "/// A plain binary serialization of an offloading file.",
        old="/// A simple binary serialization of an offloading file.",
    )
    one = tmp_path / "one-commit"
    subprocess.run(["cp", "-a", str(llvm), str(one)], check=True, capture_output=True)
    subprocess.run(["rm", "-rf", str(one / ".git")], check=True)
    git(one, "init", "--quiet")
    git(one, "add", "-A")
    git(one, "commit", "--quiet", "-m", "one commit, from a tarball")
    before = snapshot(one)
    status, _, err = apply(capsys, one, series)
    assert status == 1
    first = err.splitlines()[0]
    assert first.startswith(f"error: {P2} does not apply to ")
    assert "git cannot merge: the blobs the patch was made against" in first
    assert f"base commit(s) {series.base[:12]} are not in this clone" in first
    assert "(a one-commit tree or another fork?)" in first
    assert "hint:" not in err and "--keep-conflicts" not in err
    assert snapshot(one) == before


def test_a_folded_from_header_is_replaced_whole() -> None:
    """format-patch folds a long From: header; the continuation goes too."""
    from kdl.series.apply import as_authored_by

    mail = (
        "From 0000 Mon Sep 17 00:00:00 2001\n"
        "From: A Long Name Of Someone\n"
        " <someone@example.org>\n"
        "Subject: [PATCH] x\n\nbody\n"
    )
    assert as_authored_by(mail, "Kdl Tester <tester@example.org>") == (
        "From 0000 Mon Sep 17 00:00:00 2001\n"
        "From: Kdl Tester <tester@example.org>\n"
        "Subject: [PATCH] x\n\nbody\n"
    )
