"""``kdl apply`` stopped between any two of its git commands.

The test hook ``KDL_TEST_SIGNAL_AFTER_GIT=N:SIG`` makes kdl send SIG to its
own process group (kdl and any git it runs) right after its Nth git command.
For every N of a whole apply: a kill -9 leaves the checkout for the next run
to restore (``kdl apply --recover`` gives back exactly the start), and the
next plain ``kdl apply`` completes; a SIGINT to the group ends in the
checkout exactly as before, exit status 130 and no traceback. A second apply
on the same checkout is refused while one runs.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
from pathlib import Path

import pytest

from kdl import paths
from tests.llvm_tree import (
    SeriesDir,
    apply_argv,
    git,
    snapshot,
)


def kdl(
    llvm: Path, series: SeriesDir, *extra: str, hook: str = ""
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(paths.ROOT))
    env.pop("KDL_TEST_SIGNAL_AFTER_GIT", None)
    if hook:
        env["KDL_TEST_SIGNAL_AFTER_GIT"] = hook
    return subprocess.run(
        apply_argv(llvm, series, *extra),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        # Its own process group, which the hook signals.
        start_new_session=True,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("first", [1, 2], ids=["odd", "even"])
def test_kill_after_every_git_command_is_recovered(
    llvm: Path, series: SeriesDir, first: int
) -> None:
    """Every other git command from *first* on: the two cases together stop
    the apply after each of its git commands (and can run side by side)."""
    before = snapshot(llvm)
    clean = kdl(llvm, series)
    assert clean.returncode == 0, clean.stderr
    done = snapshot(llvm)
    assert kdl(llvm, series, "--recover").returncode == 0
    git(
        llvm,
        "checkout",
        "--quiet",
        "main" if "main" in git(llvm, "branch") else "master",
    )
    git(llvm, "branch", "--quiet", "-D", "kdl/test-series")
    assert snapshot(llvm) == before

    total = 0
    for n in range(first, 200, 2):
        killed = kdl(llvm, series, hook=f"{n}:{signal.SIGKILL}")
        if killed.returncode != -signal.SIGKILL:
            total = n - 1
            assert killed.returncode == 0, killed.stderr
            break
        # --recover alone gives back exactly the start...
        recovered = kdl(llvm, series, "--recover")
        assert recovered.returncode == 0, (n, recovered.stderr)
        assert snapshot(llvm) == before, n
        assert "Traceback" not in recovered.stderr
        # ... and, every few steps, a plain apply after a kill completes.
        if n % 4 == 1:
            kdl(llvm, series, hook=f"{n}:{signal.SIGKILL}")
            again = kdl(llvm, series)
            assert again.returncode == 0, (n, again.stderr)
            assert snapshot(llvm) == done, n
            assert kdl(llvm, series, "--recover").returncode == 0
            git(llvm, "checkout", "--quiet", "-")
            git(llvm, "branch", "--quiet", "-D", "kdl/test-series")
            assert snapshot(llvm) == before, n
    assert total > 5  # the hook did stop it between many git steps
    # The last run completed: the same result as the clean apply.
    assert snapshot(llvm) == done


@pytest.mark.slow
def test_sigint_to_the_group_after_every_other_git_command(
    llvm: Path, series: SeriesDir
) -> None:
    before = snapshot(llvm)
    for n in range(1, 200, 2):
        run = kdl(llvm, series, hook=f"{n}:{signal.SIGINT}")
        if run.returncode == 0:
            break  # the apply ended before its nth git command
        assert run.returncode == 130, (n, run.stderr)
        assert "Traceback" not in run.stderr, n
        assert run.stderr.startswith("\ninterrupted") or "interrupted" in run.stderr
        assert snapshot(llvm) == before, n
    else:
        pytest.fail("the apply never ended")


def test_a_second_apply_is_refused_while_one_runs(
    llvm: Path, series: SeriesDir
) -> None:
    lock = llvm / ".git" / "kdl-apply.lock"
    before = snapshot(llvm)
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        run = kdl(llvm, series)
    assert run.returncode == 1
    assert run.stderr == (
        f"error: {llvm}: another kdl apply is running on this checkout "
        f"(it holds {lock}); wait for it to end\n"
    )
    lock.unlink()
    assert snapshot(llvm) == before


def _reset(llvm: Path, base: str) -> None:
    """The test's own clean-up between two cases: back to main at *base*,
    every branch but main gone."""
    git(llvm, "checkout", "--quiet", "-f", "main")
    git(llvm, "reset", "--quiet", "--hard", base)
    git(llvm, "clean", "-qfd")
    for branch in git(llvm, "branch", "--format=%(refname:short)").split():
        if branch != "main":
            git(llvm, "branch", "--quiet", "-D", branch)
    (llvm / ".git/kdl-apply.json").unlink(missing_ok=True)


@pytest.mark.slow
@pytest.mark.parametrize("first", [1, 2], ids=["odd", "even"])
def test_after_a_kill_at_every_step_the_users_edit_and_commit_are_kept(
    llvm: Path, series: SeriesDir, first: int
) -> None:
    """Kill -9 after git command N (every other N from *first*), then the
    user edits a tracked file on whatever is checked out: the next apply
    keeps the edit and says why it stops; the user commits it: the next
    apply finishes, or says how to keep the commit, and after that advice
    it finishes. The user's commit is on a branch at the end."""
    before = snapshot(llvm)
    edited = llvm / "llvm/CMakeLists.txt"
    total = 0
    for n in range(first, 200, 2):
        killed = kdl(llvm, series, hook=f"{n}:{signal.SIGKILL}")
        if killed.returncode == 0:
            total = n
            break
        assert killed.returncode == -signal.SIGKILL, (n, killed.stderr)
        mine = f"# mine {n}\n"
        edited.write_text(edited.read_text() + mine)
        refused = kdl(llvm, series)
        assert refused.returncode == 1, (n, refused.stdout, refused.stderr)
        assert refused.stderr.count("\n") == 1, (n, refused.stderr)
        assert "llvm/CMakeLists.txt" in refused.stderr, (n, refused.stderr)
        assert edited.read_text().endswith(mine), n
        git(llvm, "commit", "--quiet", "-am", f"Mine {n}")
        commit = git(llvm, "rev-parse", "HEAD").strip()
        on = git(llvm, "symbolic-ref", "--short", "HEAD").strip()
        run = kdl(llvm, series)
        if run.returncode != 0:
            assert run.returncode == 1, (n, on, run.stderr)
            assert "that the interrupted kdl apply" in run.stderr, (n, run.stderr)
            advice = run.stderr.split("('")[1].split("')")[0]
            for command in advice.split(" && "):
                git(llvm, *command.split()[1:])
            run = kdl(llvm, series)
        assert run.returncode == 0, (n, on, run.stderr)
        assert "Traceback" not in run.stderr
        holders = git(llvm, "branch", "--contains", commit)
        assert holders.strip(), (n, on)
        assert git(llvm, "show", f"{commit}:llvm/CMakeLists.txt").endswith(mine)
        _reset(llvm, series.base)
        assert snapshot(llvm) == before, n
    assert total > 5


@pytest.mark.slow
def test_ctrl_c_again_while_it_undoes_leaves_the_start(
    llvm: Path, series: SeriesDir
) -> None:
    """SIGINT to the group after git command N, and again after N+1 and N+2
    (while it undoes): exit 130 and the checkout as before. SIGINT, then a
    kill -9 while it undoes: the next run finishes the undo."""
    before = snapshot(llvm)
    for n in range(1, 200, 2):
        run = kdl(llvm, series, hook=f"{n}:2,{n + 1}:2,{n + 2}:2")
        if run.returncode == 0:
            break
        assert run.returncode == 130, (n, run.stderr)
        assert "Traceback" not in run.stderr, n
        assert snapshot(llvm) == before, n
        killed = kdl(llvm, series, hook=f"{n}:2,{n + 2}:9")
        if killed.returncode == -signal.SIGKILL:
            recovered = kdl(llvm, series, "--recover")
            assert recovered.returncode == 0, (n, recovered.stderr)
        assert snapshot(llvm) == before, n
    else:
        pytest.fail("the apply never ended")
