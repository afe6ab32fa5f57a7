"""apply's journal: what a later run may undo, and what it must leave alone.

The first tests check :func:`kdl.series.journal.judge` alone. The others
leave a checkout as a killed ``kdl apply`` leaves it (the journal written,
the git step made or half made by hand, as git leaves it), let the user
change something, and run ``kdl apply`` again: the user's change is kept,
and the next run either finishes or says in one line what is in the way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kdl import paths
from kdl.errors import GitError
from kdl.series.checkout import Checkout
from kdl.series.gitstate import GIT_AM, Interrupted
from kdl.series.journal import Facts, Journal, Start, judge
from kdl.series.undo import Undo
from tests.llvm_tree import (
    BRANCH,
    OFFLOAD_API,
    SeriesDir,
    apply,
    apply_argv,
    git,
    on_series,
    snapshot,
)

A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)
ROOT = Path("/llvm")


def journal(target_tip: str | None = None, *steps: dict[str, object]) -> Journal:
    return Journal(
        Path("/nowhere"), BRANCH, Start("main", A, target_tip), None, list(steps)
    )


# --- judge, alone -------------------------------------------------------------------


def test_a_clean_checkout_where_the_run_left_it_may_be_undone() -> None:
    j = journal(None, {"do": "create", "at": A}, {"do": "am", "from": A})
    assert judge(j, Facts(BRANCH, B, B, GIT_AM), ROOT) is None
    assert judge(j, Facts("main", A, None, None), ROOT) is None


def test_head_moved_elsewhere_stops_unless_the_branch_is_gone() -> None:
    j = journal(None, {"do": "create", "at": A})
    reason = judge(j, Facts("mine", C, A, None), ROOT)
    assert reason == (
        f"/llvm: HEAD is on mine, not where the interrupted kdl apply of {BRANCH} "
        f"left it ({BRANCH} or main); nothing was touched: check out main and run "
        "kdl apply again"
    )
    assert judge(j, Facts(None, C, A, None), ROOT) is not None
    # Renamed or deleted since: nothing of the run is left in the tree.
    assert judge(j, Facts("mine", C, None, None), ROOT) is None


def test_an_operation_the_run_did_not_start_stops() -> None:
    j = journal(None, {"do": "create", "at": A})
    reason = judge(j, Facts(BRANCH, A, A, "a rebase"), ROOT)
    assert (
        reason is not None and "a rebase is in progress that the interrupted" in reason
    )
    # An am the journal does not show as running is not the run's either.
    assert judge(j, Facts(BRANCH, A, A, GIT_AM), ROOT) is not None


def test_an_am_of_the_journals_patch_is_the_runs_wherever_head_is() -> None:
    j = journal(
        None, {"do": "create", "at": A}, {"do": "am", "from": A, "patch_id": "p"}
    )
    assert judge(j, Facts("main", A, None, GIT_AM, am_patch_id="p"), ROOT) is None
    other = judge(j, Facts("main", A, None, GIT_AM, am_patch_id="q"), ROOT)
    assert other is not None and "did not start" in other
    assert judge(j, Facts("main", A, None, GIT_AM), ROOT) is not None


def test_changed_files_and_commits_stop_with_the_way_on() -> None:
    j = journal(B, {"do": "switch", "to": BRANCH})
    files = judge(j, Facts(BRANCH, B, B, None, (), ("x", "y", "z", "w")), ROOT)
    assert files == (
        f"/llvm: x, y, z and 1 more changed since the interrupted kdl apply of "
        f"{BRANCH}; nothing was touched: commit or stash the changes "
        "('git stash -u'), then run kdl apply again"
    )
    commits = judge(j, Facts(BRANCH, D, D, None, ("d" * 12 + " Mine",)), ROOT)
    assert commits == (
        f"/llvm: {BRANCH} has 1 commit(s) that the interrupted kdl apply of "
        f"{BRANCH} did not make ({'d' * 12} Mine); nothing was touched: keep them "
        f"on a branch of your own ('git branch -m {BRANCH} {BRANCH}-mine && git "
        "checkout main'), then run kdl apply again"
    )


def test_the_journal_names_every_commit_the_run_knows(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.json", BRANCH, Start(None, A, B))
    j.record("switch", to=BRANCH)
    j.record(
        "am", patch="p", files=["f", "g"], subject="s", patch_id="i", **{"from": B}
    )
    assert j.running_am() is not None
    j.record("commit", patch="p", head=C)
    assert j.running_am() is None
    j.record(
        "am", patch="q", files=["g", "h"], subject="t", patch_id="k", **{"from": C}
    )
    assert j.known_commits() == [A, B, C]
    assert j.paths() == ["f", "g", "h"]
    (tmp_path / "kdl-apply.json").write_text((tmp_path / "j.json").read_text())
    loaded = Journal.load(tmp_path)
    assert loaded is not None and loaded.steps == j.steps and loaded.start == j.start


def test_a_journal_of_another_format_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kdl-apply.json").write_text(json.dumps({"branch": BRANCH}))
    with pytest.raises(GitError, match="format 1, not 2"):
        Journal.load(tmp_path)


def test_a_git_stopped_by_ctrl_c_is_interrupted(llvm: Path) -> None:
    # A run started in the background of a non-interactive shell inherits
    # SIGINT ignored, and so would git's shell; a handler here is reset to
    # the default in the children.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _stopped_by_ctrl_c(llvm)
    finally:
        signal.signal(signal.SIGINT, previous)


def _stopped_by_ctrl_c(llvm: Path) -> None:
    with Checkout(llvm) as co, pytest.raises(Interrupted) as caught:
        co.run("-c", "alias.stop=!kill -INT $$", "stop")
    assert caught.value.exit_code == 130
    assert str(caught.value).startswith("interrupted: git ")


# --- a killed run, then the user, then the next run ---------------------------------


def _begin(llvm: Path, branch_exists: bool) -> Undo:
    """The journal a run writes before its first change."""
    with Checkout(llvm) as co:
        tip = co.rev(BRANCH) if branch_exists else None
        return Undo.begin(co, Start(co.current_branch(), co.head(), tip), BRANCH)


def _applied_then_back_on_main(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    git(llvm, "checkout", "--quiet", "main")


def test_an_edit_after_a_run_killed_in_its_checkout_is_kept(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """The attack's 3b: a re-run killed in ``git checkout BRANCH``; the user
    edits a file on the branch they find; the next apply keeps the edit."""
    _applied_then_back_on_main(capsys, llvm, series)
    _begin(llvm, True).journal.record("switch", to=BRANCH)
    git(llvm, "checkout", "--quiet", BRANCH)
    (llvm / OFFLOAD_API).write_text("// my edit\n")
    before = snapshot(llvm)
    status, out, err = apply(capsys, llvm, series)
    assert status == 1
    assert err == (
        f"error: {llvm}: {OFFLOAD_API} changed since the interrupted kdl apply of "
        f"{BRANCH}; nothing was touched: commit or stash the changes "
        "('git stash -u'), then run kdl apply again\n"
    )
    assert snapshot(llvm) == before
    git(llvm, "stash", "--quiet")
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert "recovered from an interrupted kdl apply: nothing changed" in out
    git(llvm, "stash", "pop", "--quiet")
    assert (llvm / OFFLOAD_API).read_text() == "// my edit\n"


def test_a_commit_after_a_run_killed_once_it_made_the_branch_is_kept(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """The attack's 3c: killed right after ``git checkout -b``; the user
    commits there; the branch is never deleted under the commit."""
    _begin(llvm, False).journal.record("create", at=series.base)
    git(llvm, "checkout", "--quiet", "--no-track", "-b", BRANCH, series.base)
    (llvm / OFFLOAD_API).write_text("// my work\n")
    git(llvm, "commit", "--quiet", "-am", "My work")
    mine = git(llvm, "rev-parse", "HEAD").strip()
    before = snapshot(llvm)
    status, _, err = apply(capsys, llvm, series)
    assert status == 1
    assert f"{BRANCH} has 1 commit(s) that the interrupted kdl apply" in err
    assert f"({mine[:12]} My work)" in err and err.count("\n") == 1
    assert snapshot(llvm) == before
    # The way on it gives:
    git(llvm, "branch", "-m", BRANCH, f"{BRANCH}-mine")
    git(llvm, "checkout", "--quiet", "main")
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert "3 applied" in out
    assert git(llvm, "rev-parse", f"{BRANCH}-mine").strip() == mine


def test_a_half_done_checkout_is_undone(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """``git checkout BRANCH`` killed after it wrote some files: HEAD and the
    index still main's, the files the branch's. They are the run's."""
    _applied_then_back_on_main(capsys, llvm, series)
    before = snapshot(llvm)
    _begin(llvm, True).journal.record("switch", to=BRANCH)
    new = "llvm/include/llvm/Object/OffloadMetadata.h"
    for rel in (OFFLOAD_API, new):
        path = llvm / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(git(llvm, "show", f"{BRANCH}:{rel}"))
    assert git(llvm, "status", "--porcelain")
    status, out, err = apply(capsys, llvm, series, "--recover")
    assert status == 0, err
    # After the line that names the series kdl chose.
    recovered = out.splitlines()[-1]
    assert recovered.startswith(
        "recovered from an interrupted kdl apply: nothing changed"
    )
    assert snapshot(llvm) == before


def test_a_stale_index_lock_is_named_and_nothing_touched(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    _begin(llvm, False).journal.record("create", at=series.base)
    git(llvm, "checkout", "--quiet", "--no-track", "-b", BRANCH, series.base)
    lock = llvm / ".git/index.lock"
    lock.write_text("")
    old = time.time() - 300
    os.utime(lock, (old, old))
    before = snapshot(llvm)
    status, _, err = apply(capsys, llvm, series)
    assert status == 1
    assert err == (
        f"error: {llvm}: {lock} is a stale lock, 5 min old, left by a git that was "
        "killed (no git process runs in this checkout); remove it "
        f"('rm {lock}') and run the command again\n"
    )
    assert snapshot(llvm) == before
    lock.unlink()
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert f"nothing changed: {BRANCH} was removed, main is checked out again" in out


def _kill_in_pre_applypatch(llvm: Path, series: SeriesDir, nth: int) -> None:
    """Run apply and kill kdl and its git am (kill -9) once the *nth* patch is
    applied to the index and files, before its commit."""
    hook = llvm / ".git/hooks/pre-applypatch"
    count = llvm / ".git/am-count"
    hook.write_text(
        "#!/bin/sh\n"
        f"n=$(( $(cat '{count}' 2>/dev/null || echo 0) + 1 ))\n"
        f"echo $n > '{count}'\n"
        # kdl is git am's parent; git am runs in a session of its own.
        f"[ $n -eq {nth} ] && kill -KILL $(cut -d' ' -f4 /proc/$PPID/stat) 0\n"
        "exit 0\n"
    )
    hook.chmod(0o755)
    child = subprocess.Popen(
        apply_argv(llvm, series),
        env=dict(os.environ, PYTHONPATH=str(paths.ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    hook.unlink()
    count.unlink()


def test_a_run_killed_inside_git_am_is_undone(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """The attack's 3d: killed while ``git am`` of patch 2 had written its
    files; then a killed git's index.lock. The lock is named; once it is
    gone the next run undoes the half-applied patch and applies the series."""
    before = snapshot(llvm)
    _kill_in_pre_applypatch(llvm, series, 2)
    assert (llvm / ".git/rebase-apply").is_dir()
    assert git(llvm, "status", "--porcelain", "--untracked-files=all")
    status, _, err = apply(capsys, llvm, series, "--recover")
    assert status == 0, err
    assert snapshot(llvm) == before


def test_an_edit_during_a_killed_git_am_is_kept(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    _kill_in_pre_applypatch(llvm, series, 2)
    target = llvm / "llvm/include/llvm/Object/OffloadMetadata.h"  # patch 2 made it
    target.write_text(target.read_text() + "// mine\n")
    before = snapshot(llvm)
    status, _, err = apply(capsys, llvm, series)
    assert status == 1
    assert "OffloadMetadata.h changed since the interrupted kdl apply" in err
    assert snapshot(llvm) == before


def test_revert_waits_for_the_journal_to_be_undone(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """kdl revert takes apply's lock, and leaves a killed run's journal to
    apply --recover."""
    assert apply(capsys, llvm, series)[0] == 0
    _begin(llvm, True)
    before = snapshot(llvm)
    status, _, err = on_series(capsys, "revert", llvm, series)
    assert status == 1
    assert "an interrupted kdl apply left" in err and "kdl apply --recover" in err
    assert snapshot(llvm) == before
    assert apply(capsys, llvm, series, "--recover")[0] == 0
    assert on_series(capsys, "revert", llvm, series)[0] == 0


def test_an_index_lock_a_running_git_holds_says_wait(llvm: Path) -> None:
    """index.lock while a git runs in the checkout: its pid, and wait."""
    from kdl.series.gitstate import index_lock_problem

    lock = llvm / ".git/index.lock"
    lock.write_text("")
    running = subprocess.Popen(
        ["git", "-c", "alias.wait=!sleep 30", "wait"],
        cwd=llvm,
        start_new_session=True,  # its sleep goes with it
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            problem = index_lock_problem(llvm, llvm / ".git") or ""
            if "another git process" in problem or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert problem.startswith(
            f"{llvm}: another git process is running in this checkout (pid "
            f"{running.pid}: git -c alias.wait=!sleep 30 wait) and holds {lock}"
        ), problem
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()
    lock.unlink()
    assert index_lock_problem(llvm, llvm / ".git") is None


def test_ctrl_c_while_it_recovers_still_ends_as_it_was(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """SIGINT after the first and the third git command of the next run,
    while it undoes a killed run's half-done checkout: the undo ends whole,
    then the run stops with exit status 130."""
    _applied_then_back_on_main(capsys, llvm, series)
    before = snapshot(llvm)
    _begin(llvm, True).journal.record("switch", to=BRANCH)
    path = llvm / OFFLOAD_API
    path.write_text(git(llvm, "show", f"{BRANCH}:{OFFLOAD_API}"))
    run = subprocess.run(
        apply_argv(llvm, series),
        env=dict(
            os.environ,
            PYTHONPATH=str(paths.ROOT),
            KDL_TEST_SIGNAL_AFTER_GIT=f"1:{signal.SIGINT},3:{signal.SIGINT}",
        ),
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 130, run.stderr
    assert "recovered from an interrupted kdl apply: nothing changed" in run.stdout
    assert run.stderr.endswith("error: interrupted after the recovery\n")
    assert snapshot(llvm) == before


# --- A journal edited by hand (the attack of 2026-12-07, 3g and 3h) -----------------


def _killed_in_am(llvm: Path, series: SeriesDir) -> Path:
    """The journal a run killed in its first ``git am`` leaves (the branch
    made and checked out), written by the real journal; its path."""
    undo = _begin(llvm, False)
    undo.journal.record("create", at=series.base)
    git(llvm, "checkout", "--quiet", "--no-track", "-b", BRANCH, series.base)
    undo.journal.record(
        "am",
        patch="0001-x.patch",
        subject="x",
        patch_id="e" * 40,
        files=[OFFLOAD_API],
        **{"from": series.base},
    )
    return undo.journal.path


def _edit(doc: dict[str, Any], how: str) -> None:
    steps = doc["steps"]
    if how == "start-is-the-series-branch":
        doc["start"]["branch"] = doc["branch"]
    elif how == "no-do":
        del steps[-1]["do"]
    elif how == "no-files":
        del steps[-1]["files"]
    elif how == "files-not-a-list":
        steps[-1]["files"] = 7
    elif how == "steps-a-dict":
        doc["steps"] = {"do": "create"}
    elif how == "step-a-string":
        doc["steps"] = ["create"]
    elif how == "unknown-step":
        steps[-1]["do"] = "rebase"
    elif how == "no-start-head":
        del doc["start"]["head"]
    elif how == "start-a-list":
        doc["start"] = [None, "a" * 40, None]
    elif how == "branch-a-number":
        doc["branch"] = 3
    elif how == "head-not-a-sha":
        doc["start"]["head"] = "HEAD~1; rm -rf /"
    elif how == "meta-before-a-string":
        doc["meta_before"] = "x"


EDITS = [
    (
        "start-is-the-series-branch",
        f"its start is the series branch {BRANCH} itself, which the run created",
    ),
    ("no-do", "step 2 has no 'do'"),
    ("no-files", "step 2 (am) has no 'files'"),
    ("files-not-a-list", "step 2 (am): 'files' is not a list of paths"),
    ("steps-a-dict", "'steps' is not a list"),
    ("step-a-string", "step 1 is not an object"),
    ("unknown-step", "step 2: unknown step 'rebase'"),
    ("no-start-head", "'start' has no 'head'"),
    ("start-a-list", "'start' is not an object"),
    ("branch-a-number", "'branch' is not a branch name"),
    ("head-not-a-sha", "'start.head' is not a commit id"),
    ("meta-before-a-string", "'meta_before' is not an object"),
]


@pytest.mark.parametrize(("how", "what"), EDITS, ids=[e[0] for e in EDITS])
def test_a_journal_edited_by_hand_is_refused_and_nothing_touched(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    how: str,
    what: str,
) -> None:
    """The attack's 3h: with its start set to the series branch, the undo
    deleted the branch HEAD was on (HEAD unborn; every later apply failed
    "unknown revision 'HEAD'"); 3g: steps without a key, or of another type,
    gave tracebacks. Each is one line; the checkout is as it was."""
    path = _killed_in_am(llvm, series)
    doc = json.loads(path.read_text())
    _edit(doc, how)
    path.write_text(json.dumps(doc))
    before = snapshot(llvm)
    status, _, err = apply(capsys, llvm, series)
    assert status == 1
    assert err == (
        f"error: {path}: an interrupted kdl apply left a journal that cannot be "
        f"read ({what}); remove it after restoring the checkout by hand\n"
    )
    assert snapshot(llvm) == before


def test_a_killed_git_am_is_still_the_runs_after_the_way_on_it_gave(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """The attack's 3k: killed in ``git am`` of patch 2; the user commits on
    the branch; apply says to keep the commit on a branch of their own and
    check out main; the user does. The ``git am`` left in progress is still
    the run's (the patch it applies is the journal's), not "one it did not
    start": the next apply undoes it and applies the series."""
    _kill_in_pre_applypatch(llvm, series, 2)
    assert (llvm / ".git/rebase-apply").is_dir()
    (llvm / OFFLOAD_API).write_text("// my work\n")
    git(llvm, "commit", "--quiet", "-am", "My work")
    mine = git(llvm, "rev-parse", "HEAD").strip()
    status, _, err = apply(capsys, llvm, series)
    assert status == 1
    way_on = f"git branch -m {BRANCH} {BRANCH}-mine && git checkout main"
    assert f"({mine[:12]} My work)" in err and way_on in err
    git(llvm, "branch", "-m", BRANCH, f"{BRANCH}-mine")
    git(llvm, "checkout", "--quiet", "main")
    assert (llvm / ".git/rebase-apply").is_dir()
    status, out, err = apply(capsys, llvm, series)
    assert status == 0, err
    assert "recovered from an interrupted kdl apply: nothing changed" in out
    assert "3 applied" in out
    assert not (llvm / ".git/rebase-apply").exists()
    assert git(llvm, "rev-parse", f"{BRANCH}-mine").strip() == mine
