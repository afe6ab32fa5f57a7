"""Undoing a ``kdl apply`` run: Ctrl-C, conflicts, errors, and a run killed outright.

:class:`Undo` keeps the run's :class:`~kdl.series.journal.Journal` and
undoes only what the journal says the run did. First it gathers the
checkout's :class:`~kdl.series.journal.Facts` and lets
:func:`~kdl.series.journal.judge` decide whether anything of the user's
changed since (a file, a commit, HEAD, an operation); if so it stops with one
line and touches nothing, the journal kept for the next run. Otherwise, in
order: the run's ``git am`` is dropped (``git am --quit``), the files the run
wrote are put back as HEAD has them (only those, each checked to hold what a
step of the run wrote), the start is checked out again, and the series branch
is deleted or moved back with ``git update-ref`` against the commit just
checked, so a branch that moved in between is never lost. Nothing runs
``reset --hard``, ``checkout -f`` or ``branch -D``.

Every step is safe to run twice: a run killed while it undoes leaves the
journal, and the next run finishes the job. Signals never stop the undo
halfway (:func:`deferred_sigint`); ``kill -9`` does, and the journal remains.
"""

from __future__ import annotations

import fcntl
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from types import FrameType

from kdl.errors import GitError
from kdl.series.checkout import Checkout
from kdl.series.gitstate import GIT_AM, Interrupted
from kdl.series.journal import JOURNAL, Facts, Journal, Start, judge, tree_is_ours

__all__ = ["JOURNAL", "LOCK", "Start", "Undo", "apply_lock", "deferred_sigint"]

#: The lock one apply per checkout holds; the kernel drops it with the process.
LOCK = "kdl-apply.lock"
_ZERO = "0" * 40


@contextmanager
def deferred_sigint() -> Iterator[Callable[[], bool]]:
    """Turn Ctrl-C and SIGTERM into a flag the caller checks between git steps.

    The checkout's git commands run in a session of their own (a shielded
    :class:`Checkout`), so the terminal's Ctrl-C does not reach them: the
    running step ends whole. Further signals only say that the undo goes on;
    it stops where the checkout is as it was (``kill -9`` stops it at once,
    and the next run finishes it from the journal).
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    fired: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if fired:
            print(
                "\nstill undoing the apply; it stops once the checkout is as it "
                "was (kill -9 stops it at once: the next kdl apply then finishes "
                "the undo)",
                file=sys.stderr,
                flush=True,
            )
            return
        fired.append(signum)
        print(
            "\ninterrupted: undoing the apply once the running git command ends",
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


class Undo:
    """One apply run, its journal, and how to undo it."""

    def __init__(self, co: Checkout, journal: Journal) -> None:
        self.co = co
        self.journal = journal

    @classmethod
    def begin(cls, co: Checkout, start: Start, branch: str) -> Undo:
        """Write the journal of a run about to change the checkout."""
        meta = None if start.target_tip is None else co.meta(branch)
        before = None
        if meta is not None:
            before = {
                "base": meta.base,
                "base_ref": meta.base_ref,
                "series": meta.series,
                "applied": [list(p) for p in meta.applied],
            }
        journal = Journal(co.git_dir / JOURNAL, branch, start, before)
        journal.save()
        return cls(co, journal)

    @classmethod
    def left_behind(cls, co: Checkout) -> Undo | None:
        """The run whose journal a killed apply left, if any."""
        journal = Journal.load(co.git_dir)
        return None if journal is None else cls(co, journal)

    @property
    def branch(self) -> str:
        return self.journal.branch

    @property
    def start(self) -> Start:
        return self.journal.start

    @property
    def created(self) -> bool:
        return self.journal.created

    def forget(self) -> None:
        """Drop the journal: the run ended, done or undone."""
        self.journal.forget()

    def recovery(self) -> list[str]:
        """The commands that give up a merge the user took over (--keep-conflicts)."""
        cmds = ["git am --abort"] if self.co.in_progress() else []
        if self.created:
            cmds += [f"git checkout {self.start.label}", f"git branch -D {self.branch}"]
        else:
            cmds += [
                f"git checkout {self.branch}",
                f"git reset --keep {self.start.target_tip}",
            ]
            if self.start.branch != self.branch:
                cmds.append(f"git checkout {self.start.label}")
        return cmds

    # --- undo ---------------------------------------------------------------------
    def undo(self, written: Iterable[str] = ()) -> str:
        """Undo the run; return what the user should know.

        *written*: files this very process saw its last ``git am`` write
        (a conflict), the run's own however they look. Raises GitError with
        one line, touching nothing, when something of the user's is in the
        way; the journal is kept then, and on any other failure.
        """
        facts, ours = self._facts(set(written))
        reason = judge(self.journal, facts, self.co.root)
        if reason:
            raise GitError(reason)
        try:
            self._undo(facts, ours)
            message = self._verify(facts)
        except Interrupted:
            raise
        except GitError as exc:
            raise GitError(
                f"could not undo the apply ({exc}); the journal is kept: run "
                "kdl apply again once that is fixed"
            ) from exc
        self.forget()
        return message

    def _facts(self, written: set[str]) -> tuple[Facts, list[str]]:
        co, j = self.co, self.journal
        co.refuse_index_lock()
        head_branch, head = co.current_branch(), co.head()
        tip = co.rev(j.branch) if co.branch_exists(j.branch) else None
        op = co.in_progress()
        known = j.known_commits()
        am = j.running_am()
        if tip and tip not in known and am and self._made_by(am, tip):
            known.append(tip)  # the am ended; the run was killed before saying so
        foreign: tuple[str, ...] = ()
        if tip and tip not in known:
            log = co.run("log", "--format=%H %s", tip, "--not", *known)
            foreign = tuple(f"{ln[:12]} {ln[41:]}" for ln in log.splitlines())
        facts = Facts(
            head_branch,
            head,
            tip,
            op[0] if op else None,
            foreign,
            am_patch_id=self._am_patch_id() if op and op[0] == GIT_AM else None,
        )
        if not tree_is_ours(j, facts):
            return facts, []
        mine, ours = self._changed_paths(known, am if op else None, written)
        return replace(facts, foreign_paths=tuple(mine)), ours

    def _am_patch_id(self) -> str | None:
        """The patch-id of the patch the ``git am`` in progress applies (its
        ``rebase-apply/patch``, or the mail it is at), None when none is
        there to read."""
        state = self.co.git_dir / "rebase-apply"
        candidates = [state / "patch"]
        with suppress(OSError, ValueError):
            candidates.append(state / f"{int((state / 'next').read_text()):04d}")
        for path in candidates:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            found = self.co.patch_id_of(data)
            if found:
                return found
        return None

    def _made_by(self, am: dict[str, str], tip: str) -> bool:
        """Whether *tip* is the commit the journal's last ``git am`` made."""
        status, parent, _ = self.co.attempt("rev-parse", "--verify", "-q", f"{tip}^")
        if status != 0 or parent.strip() != am["from"]:
            return False
        made = self.co.commits(am["from"], tip)
        return len(made) == 1 and (
            made[0].patch_id == am["patch_id"] or made[0].subject == am["subject"]
        )

    def _changed_paths(
        self, known: list[str], am: dict[str, str] | None, written: set[str]
    ) -> tuple[list[str], list[str]]:
        """(the user's, the run's) changed files: a file is the run's when its
        work-tree content and its index entries are what some commit the run
        knows, or the patch ``git am`` was applying, has at that path."""
        co = self.co
        candidates = set(co.tracked_changes())
        touched = set(self.journal.paths())
        for commit in known[1:]:
            diff = co.run("diff", "--no-renames", "--name-only", "-z", known[0], commit)
            touched.update(p for p in diff.split("\0") if p)
        candidates.update(co.status_paths(sorted(touched)))
        if not candidates:
            return [], []
        paths = sorted(candidates)
        allowed: dict[str, set[str | None]] = {p: set() for p in paths}
        for commit in known:
            blobs = self._tree_blobs(commit, paths)
            for p in paths:
                allowed[p].add(blobs.get(p))
        if am is not None:
            for p, blob in self._post_image(paths).items():
                allowed[p].add(blob)
        index = self._index_blobs(paths)
        work = self._work_blobs(paths)
        mine, ours = [], []
        for p in paths:
            states = {work[p], *index.get(p, {None})}
            conflict = am is not None and p in am["files"] and len(index.get(p, ())) > 1
            if p in written or (not conflict and states <= allowed[p]):
                ours.append(p)
            else:
                mine.append(p)
        return mine, ours

    def _tree_blobs(self, commit: str, paths: list[str]) -> dict[str, str]:
        out = self.co.run("ls-tree", "-r", "-z", "--full-tree", commit, "--", *paths)
        found = {}
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            if path:
                found[path] = meta.split()[2]
        return found

    def _index_blobs(self, paths: list[str]) -> dict[str, set[str | None]]:
        out = self.co.run("ls-files", "-s", "-z", "--", *paths)
        found: dict[str, set[str | None]] = {}
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            if path:
                found.setdefault(path, set()).add(meta.split()[1])
        return found

    def _work_blobs(self, paths: list[str]) -> dict[str, str | None]:
        """Each path's content as git would store it; None where there is no
        file, "" where something else is (a directory)."""
        found: dict[str, str | None] = {}
        files = []
        for p in paths:
            full = self.co.root / p
            if full.is_symlink():
                found[p] = self.co.run_with_input(
                    ["hash-object", "--stdin"], os.readlink(full).encode()
                )
            elif full.is_file():
                files.append(p)
            else:
                found[p] = "" if full.exists() else None
        if files:
            out = self.co.run("hash-object", "--", *files).split()
            found.update(zip(files, out, strict=True))
        return found

    def _post_image(self, paths: list[str]) -> dict[str, str | None]:
        """Each path as the patch ``git am`` was applying leaves it on HEAD,
        worked out in a temporary index; nothing when it does not apply."""
        patch = self.co.git_dir / "rebase-apply" / "patch"
        if not patch.is_file():
            return {}
        with tempfile.TemporaryDirectory(prefix="kdl-undo-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self.co.run("read-tree", "HEAD", env=env)
            for extra in ([], ["--3way"]):
                status, _, _ = self.co.attempt(
                    "apply", "--cached", *extra, str(patch), env=env
                )
                if status == 0:
                    break
            else:
                return {}
            out = self.co.run("ls-files", "-s", "-z", "--", *paths, env=env)
        found: dict[str, str | None] = dict.fromkeys(paths)
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            if path:
                found[path] = meta.split()[1]
        return found

    def _undo(self, facts: Facts, ours: list[str]) -> None:
        co, j = self.co, self.journal
        if facts.operation is not None:
            co.run("am", "--quit")  # leaves HEAD, the index and the files alone
        self._restore(ours)
        spec = [j.start.branch] if j.start.branch else ["--detach", j.start.head]
        ref = f"refs/heads/{j.branch}"
        if j.created:
            if facts.head_branch == j.branch:
                co.run("checkout", "--quiet", *spec)
            if facts.tip is not None:
                if co.current_branch() == j.branch:  # never leave HEAD unborn
                    raise GitError(f"HEAD is still on {j.branch}, which is kept")
                co.run("update-ref", "-d", ref, facts.tip)
                co.attempt(
                    "config", "--local", "--remove-section", f"branch.{j.branch}"
                )
            return
        target = j.start.target_tip
        assert target is not None
        if facts.head_branch == j.branch and j.start.branch == j.branch:
            if facts.tip != target:
                co.run("reset", "--quiet", "--keep", target)
        else:
            if facts.head_branch == j.branch:
                co.run("checkout", "--quiet", *spec)
            if facts.tip != target:
                co.run("update-ref", ref, target, facts.tip or _ZERO)
        self._restore_meta()

    def _restore(self, paths: list[str]) -> None:
        """Put *paths* (the run's, checked) back as HEAD and its index have them."""
        if not paths:
            return
        co = self.co
        in_index = set(co.run("ls-files", "-z", "--", *paths).split("\0"))
        in_head = set(
            co.run("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *paths).split(
                "\0"
            )
        )
        known = [p for p in paths if p in in_index or p in in_head]
        if known:
            co.run("restore", "--source=HEAD", "--staged", "--worktree", "--", *known)
        for p in paths:
            full = co.root / p
            if p not in in_head and (full.is_file() or full.is_symlink()):
                full.unlink()
                parent = full.parent
                while parent != co.root and not any(parent.iterdir()):
                    parent.rmdir()
                    parent = parent.parent

    def _restore_meta(self) -> None:
        co, before = self.co, self.journal.meta_before
        if before is None:
            return
        applied = tuple((a, b) for a, b in before["applied"])
        meta = co.meta(self.branch)
        if (
            meta is not None
            and meta.applied == applied
            and (meta.base, meta.base_ref, meta.series)
            == (before["base"], before["base_ref"], before["series"])
        ):
            return
        co.clear_applied(self.branch)
        co.write_meta(self.branch, before["base"], before["base_ref"], before["series"])
        for file_id, commit_id in applied:
            co.add_applied(self.branch, file_id, commit_id)

    def _verify(self, facts: Facts) -> str:
        co, j = self.co, self.journal
        tip = co.rev(j.branch) if co.branch_exists(j.branch) else None
        if j.created and tip is not None:
            raise GitError(f"{j.branch} still exists")
        if not j.created and tip != j.start.target_tip:
            raise GitError(f"{j.branch} is at {co.short(tip or '')}")
        if not tree_is_ours(j, facts):
            gone = "was removed" if j.created else "is back at " + co.short(tip or "")
            return (
                f"nothing changed: {j.branch} {gone}; HEAD stays on "
                f"{co.describe_head()}, where it was moved since"
            )
        branch, head = co.current_branch(), co.head()
        if branch != j.start.branch or (branch is None and head != j.start.head):
            raise GitError(f"HEAD is {co.describe_head()}")
        left = co.tracked_changes()
        if left:
            raise GitError(f"{', '.join(left[:3])} still differ from HEAD")
        if j.created:
            return (
                f"nothing changed: {j.branch} was removed, "
                f"{j.start.label} is checked out again"
            )
        return f"nothing changed: {j.branch} is back at {co.short(tip or '')}"
