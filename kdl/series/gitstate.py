"""What a git directory says about the work going on in it.

An operation in progress (``git am``, a rebase, a merge ...) leaves a marker in
the git directory; a git process that was killed leaves ``index.lock``, which
every later git command that writes the index trips over ("Unable to create
'.../index.lock': File exists"). :func:`in_progress` names the first, and
:func:`index_lock_problem` tells a lock held by a git that still runs from one
that nothing will ever remove, in one line either way.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from kdl.errors import WorkspaceError

#: Operations that leave state in the git dir, and how to get out of them.
IN_PROGRESS = [
    ("rebase-apply/applying", "a 'git am'", "git am --continue", "git am --abort"),
    ("rebase-apply", "a rebase", "git rebase --continue", "git rebase --abort"),
    ("rebase-merge", "a rebase", "git rebase --continue", "git rebase --abort"),
    ("MERGE_HEAD", "a merge", "git commit", "git merge --abort"),
    (
        "CHERRY_PICK_HEAD",
        "a cherry-pick",
        "git cherry-pick --continue",
        "git cherry-pick --abort",
    ),
    ("REVERT_HEAD", "a revert", "git revert --continue", "git revert --abort"),
    (
        "sequencer",
        "a cherry-pick or revert",
        "git cherry-pick --continue",
        "git cherry-pick --abort",
    ),
    ("BISECT_LOG", "a bisect", "git bisect good/bad", "git bisect reset"),
]


class Interrupted(WorkspaceError):  # noqa: N818 (reads as "error: interrupted")
    """Ctrl-C: the message says what state the checkout was left in."""

    exit_code = 130


#: Exit statuses of a git that a Ctrl-C or SIGTERM stopped (GitPython gives
#: a signal as its negative number; a shell-run git exits 128 + N).
STOPPED = {-signal.SIGINT, -signal.SIGTERM, 128 + signal.SIGINT, 128 + signal.SIGTERM}


#: What an operation of ``git am`` is called in :data:`IN_PROGRESS`.
GIT_AM = "a 'git am'"


def in_progress(git_dir: Path) -> tuple[str, str, str] | None:
    """(what, continue command, abort command) of an unfinished operation."""
    for marker, what, cont, abort in IN_PROGRESS:
        if (git_dir / marker).exists():
            return what, cont, abort
    return None


def git_processes(root: Path) -> list[tuple[int, str]]:
    """(pid, command line) of the git processes working in *root*.

    A git process is one whose program is ``git`` or ``git-*``; it works in
    *root* when its current directory is *root* or below it (git runs every
    command from the top of the work tree). Read from /proc: elsewhere,
    nothing is found.
    """
    found = []
    top = os.path.realpath(root)
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:  # gone, or not ours to look at
            continue
        if not argv:
            continue
        program = os.path.basename(argv[0])
        if program != "git" and not program.startswith("git-"):
            continue
        if cwd == top or cwd.startswith(top + os.sep):
            found.append((int(entry), " ".join(argv)[:80]))
    return sorted(found)


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{max(seconds, 0):.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def index_lock_problem(root: Path, git_dir: Path) -> str | None:
    """One line about ``index.lock`` in *git_dir*, or None when there is none.

    A lock that a running git holds means: wait. A lock that no git process
    working in *root* holds was left by a git that was killed; git never
    removes it, so the line says how old it is and that it can go.
    """
    lock = git_dir / "index.lock"
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{root}: {lock} cannot be read ({exc.strerror})"
    running = git_processes(root)
    if running:
        pid, argv = running[0]
        return (
            f"{root}: another git process is running in this checkout (pid {pid}: "
            f"{argv}) and holds {lock}; wait for it to end"
        )
    return (
        f"{root}: {lock} is a stale lock, {_age(age)} old, left by a git that was "
        "killed (no git process runs in this checkout); remove it "
        f"('rm {lock}') and run the command again"
    )


def last_line(text: object) -> str:
    """The last line of git's output (GitPython's quoting removed)."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [ln.strip() for ln in str(text or "").splitlines() if ln.strip()]
    # GitPython quotes the stream: "  stderr: 'fatal: ...'"
    last = lines[-1] if lines else ""
    return last.removeprefix("stderr: ").removeprefix("stdout: ").strip("'")
