"""Undoing a ``kdl apply`` run: Ctrl-C, conflicts and errors.

:class:`Undo` knows where the checkout was (:class:`Start`) and brings it
back: ``git am --abort``, the series branch deleted (if the run made it) or
reset to its old commit with its recorded metadata, the original HEAD
checked out, and then checks that all of it holds. When it cannot, or when
a second Ctrl-C stops it, it says which commands finish the job.
"""

from __future__ import annotations

import fcntl
import json
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from kdl.errors import GitError, WorkspaceError
from kdl.series.checkout import Checkout, Interrupted


@contextmanager
def deferred_sigint() -> Iterator[Callable[[], bool]]:
    """Turn the first Ctrl-C or SIGTERM into a flag the caller checks between
    git steps.

    The git command that is running (it may have got the signal too, from
    the terminal) is left to finish or fail; a second signal raises
    KeyboardInterrupt at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    fired: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if fired:
            raise KeyboardInterrupt
        fired.append(signum)
        print(
            "\ninterrupted: undoing the apply once the running git command "
            "ends (Ctrl-C again to stop at once)",
            file=sys.stderr,
            flush=True,
        )

    previous = {
        sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield lambda: bool(fired)
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


#: Where a running apply records what it would undo: a run killed outright
#: (kill -9, a lost machine) leaves it behind, and the next apply undoes it.
JOURNAL = "kdl-apply.json"
#: The lock one apply per checkout holds; the kernel drops it with the process.
LOCK = "kdl-apply.lock"


@contextmanager
def apply_lock(co: Checkout) -> Iterator[None]:
    """Hold the checkout's apply lock, or refuse at once."""
    path = co.git_dir / LOCK
    with path.open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise GitError(
                f"{co.root}: another kdl apply is running on this checkout "
                f"(it holds {path}); wait for it to end"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Start:
    """Where the checkout was before apply, to go back to."""

    branch: str | None  # None: detached
    head: str
    target_tip: str | None  # the series branch's commit, None if apply creates it

    @property
    def label(self) -> str:
        return self.branch or self.head


class Undo:
    """One apply run and how to undo it."""

    def __init__(
        self,
        co: Checkout,
        start: Start,
        branch: str,
        applied_before: tuple[tuple[str, str], ...] | None = None,
    ) -> None:
        self.co = co
        self.start = start
        self.branch = branch
        self.created = start.target_tip is None
        if applied_before is None:
            meta = None if self.created else co.meta(branch)
            applied_before = meta.applied if meta else ()
        self.applied_before = applied_before

    # --- the journal --------------------------------------------------------------
    def record(self) -> None:
        """Write the journal before the first change to the checkout."""
        doc = {
            "branch": self.branch,
            "start": {
                "branch": self.start.branch,
                "head": self.start.head,
                "target_tip": self.start.target_tip,
            },
            "applied_before": [list(pair) for pair in self.applied_before],
        }
        path = self.co.git_dir / JOURNAL
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc) + "\n")
        tmp.replace(path)

    def forget(self) -> None:
        """Drop the journal: the run ended, done or undone."""
        (self.co.git_dir / JOURNAL).unlink(missing_ok=True)

    @classmethod
    def left_behind(cls, co: Checkout) -> Undo | None:
        """The run whose journal a killed apply left, if any."""
        path = co.git_dir / JOURNAL
        try:
            doc = json.loads(path.read_text())
            start = Start(**doc["start"])
            pairs = tuple((a, b) for a, b in doc["applied_before"])
            return cls(co, start, doc["branch"], pairs)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise GitError(
                f"{path}: an interrupted kdl apply left a journal that cannot be "
                f"read ({exc}); remove it after restoring the checkout by hand"
            ) from exc

    def recovery(self) -> list[str]:
        """The commands that restore the start state by hand."""
        cmds = []
        if self.co.in_progress():
            cmds.append("git am --abort")
        if self.created:
            cmds += [f"git checkout {self.start.label}", f"git branch -D {self.branch}"]
        else:
            cmds += [
                f"git checkout {self.branch}",
                f"git reset --hard {self.start.target_tip}",
            ]
            if self.start.branch != self.branch:
                cmds.append(f"git checkout {self.start.label}")
        return cmds

    def interrupted(self) -> Interrupted:
        return Interrupted(
            "interrupted; to restore the checkout, once no git command runs in "
            f"{self.co.root}, run there:\n    "
            + "\n    ".join(
                c.replace("--abort", "--abort  # if 'git status' still shows an am")
                for c in self.recovery()
            )
        )

    def undo(self) -> str:
        """:meth:`rollback`, where a second Ctrl-C prints the way back."""
        try:
            return self.rollback()
        except KeyboardInterrupt:
            raise self.interrupted() from None

    def rollback(self) -> str:
        """Undo everything; return what the user should know, or raise."""
        co = self.co
        manual = self.recovery()
        try:
            if co.in_progress():
                co.run("am", "--abort")
            if self.created:
                if co.current_branch() == self.branch:
                    co.run("checkout", "--quiet", *self._start_spec())
                if co.branch_exists(self.branch):
                    co.run("branch", "--quiet", "-D", self.branch)
            else:
                assert self.start.target_tip is not None
                if co.current_branch() == self.branch:
                    co.run("reset", "--quiet", "--hard", self.start.target_tip)
                if self.start.branch != self.branch:
                    co.run("checkout", "--quiet", *self._start_spec())
                meta = co.meta(self.branch)
                if meta and meta.applied != self.applied_before:
                    co.clear_applied(self.branch)
                    for file_id, commit_id in self.applied_before:
                        co.add_applied(self.branch, file_id, commit_id)
            self._verify()
        except WorkspaceError as exc:
            raise GitError(
                f"could not undo the apply ({exc}); to restore the checkout run, "
                f"in {co.root}:\n    " + "\n    ".join(manual)
            ) from exc
        if self.created:
            return (
                f"nothing changed: {self.branch} was removed, "
                f"{self.start.label} is checked out again"
            )
        tip = co.short(self.start.target_tip or "")
        return f"nothing changed: {self.branch} is back at {tip}"

    def _start_spec(self) -> list[str]:
        return (
            [self.start.branch] if self.start.branch else ["--detach", self.start.head]
        )

    def _verify(self) -> None:
        co = self.co
        if co.current_branch() != self.start.branch or co.head() != self.start.head:
            raise GitError(f"HEAD is {co.describe_head()}")
        if self.created and co.branch_exists(self.branch):
            raise GitError(f"{self.branch} still exists")
        if not self.created and co.rev(self.branch) != self.start.target_tip:
            raise GitError(f"{self.branch} is at {co.short(co.rev(self.branch))}")
