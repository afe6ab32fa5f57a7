"""A git work tree (an llvm-project checkout above all) and what kdl may do to it.

:class:`Checkout` is the one way kdl uses GitPython: no other module opens a
repository. It wraps a ``git.Repo`` with the checks every mutating ``kdl``
command makes before it touches the user's tree (no operation in progress,
no uncommitted changes to tracked files, no commits that only a detached
HEAD holds), the per-branch metadata ``kdl apply`` records in ``git config``
(``branch.<name>.kdlBase`` and friends), and the patch-id bookkeeping that
tells which commits of a branch are the series'. Opened with
``require_llvm=False`` it serves any work tree: ``git describe`` of the
workspace or of the checkout a build came from (:meth:`Checkout.describe`,
:func:`describe_tree`), the state of a few paths (:meth:`Checkout.status_paths`).

Every diff kdl compares or writes uses :data:`DIFF_OPTS`, so a user's
``diff.*`` settings can change neither a patch-id nor an exported patch.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import git
from git.compat import safe_decode

from kdl.errors import GitError, WorkspaceError
from kdl.series import gitstate
from kdl.series.gitstate import STOPPED, Interrupted, last_line
from kdl.series.match import (
    BranchMeta,
    Commit,
    PatchInfo,
    diff_files,
)
from kdl.series.model import Series, normalize_subject

log = logging.getLogger("kdl")

#: What makes a directory an llvm-project checkout for kdl.
LLVM_MARKERS = ("llvm", "offload", "llvm/include/llvm/Object/OffloadBinary.h")

#: Fixed diff settings for patch-ids and exported patches.
DIFF_OPTS = [
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--no-relative",
    "--no-renames",
    "--diff-algorithm=myers",
    "--unified=3",
    "--inter-hunk-context=0",
    "--indent-heuristic",
    "-O/dev/null",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--full-index",
    "--binary",
]

#: Git commands run so far, for the test hook below.
_GIT_CALLS = [0]


def _after_git() -> None:
    """Test hook: KDL_TEST_SIGNAL_AFTER_GIT=N:SIG[,M:SIG...] sends signal SIG
    (9 kills, 2 interrupts) to this process's group after its Nth git
    command (and its Mth), so the tests can stop an apply between any two of
    its git steps, or interrupt it again while it undoes."""
    hook = os.environ.get("KDL_TEST_SIGNAL_AFTER_GIT")
    if not hook:
        return
    _GIT_CALLS[0] += 1
    for item in hook.split(","):
        count, _, sig = item.partition(":")
        if int(count) == _GIT_CALLS[0]:
            os.killpg(os.getpgrp(), int(sig or signal.SIGKILL))


class Checkout:
    """A git work tree opened with GitPython.

    *path* may be anywhere in the tree. By default it must be an llvm-project
    checkout (:data:`LLVM_MARKERS`); ``require_llvm=False`` takes any work tree.
    """

    def __init__(
        self, path: Path, *, require_llvm: bool = True, shield: bool = False
    ) -> None:
        where = str(path)
        #: Run git in a session of its own, out of reach of the terminal's
        #: Ctrl-C: a step of ``kdl apply`` then always ends whole, and kdl
        #: decides what happens next.
        self._popen: dict[str, Any] = {"start_new_session": True} if shield else {}
        if not path.is_dir():
            raise WorkspaceError(f"{where}: no such directory")
        try:
            self.repo = git.Repo(path, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise WorkspaceError(f"{where}: not a git checkout") from exc
        if self.repo.bare or self.repo.working_tree_dir is None:
            self.repo.close()
            raise WorkspaceError(f"{where}: a bare repository has no work tree")
        self.root = Path(self.repo.working_tree_dir)
        self.git_dir = Path(self.repo.git_dir)
        self.git = self.repo.git
        if require_llvm:
            missing = [m for m in LLVM_MARKERS if not (self.root / m).exists()]
            if missing:
                self.repo.close()
                raise WorkspaceError(
                    f"{self.root}: not an llvm-project checkout "
                    f"(no {', '.join(missing)})"
                )

    @classmethod
    def find(cls, path: Path) -> Checkout | None:
        """The work tree *path* is in, or None where there is none.

        None for a path that does not exist, is not in a git work tree, or is
        in a bare repository; the tree need not be an llvm-project checkout.
        """
        try:
            return cls(path, require_llvm=False)
        except WorkspaceError as exc:
            log.debug("%s", exc)
            return None

    def __enter__(self) -> Checkout:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.repo.close()

    # --- running git ----------------------------------------------------------
    def run(self, *args: str, **kwargs: Any) -> str:
        """``git ARGS`` in the work tree; a failure becomes a GitError."""
        try:
            out: str = self.git.execute(["git", *args], **self._popen, **kwargs)
        except git.GitCommandError as exc:
            raise self._failed(args, exc) from exc
        finally:
            _after_git()
        return out

    def _failed(self, args: Sequence[str], exc: git.GitCommandError) -> WorkspaceError:
        """The one-line error for a git command that failed."""
        if exc.status in STOPPED:
            return Interrupted(f"interrupted: git {args[0]} was stopped")
        detail = last_line(exc.stderr) or last_line(exc.stdout)
        return GitError(f"{self.root}: git {args[0]} failed: {detail}")

    def attempt(self, *args: str, **kwargs: Any) -> tuple[int, str, str]:
        """``git ARGS`` returning (status, stdout, stderr), never raising."""
        try:
            status, out, err = self.git.execute(
                ["git", *args],
                with_extended_output=True,
                with_exceptions=False,
                **self._popen,
                **kwargs,
            )
        finally:
            _after_git()
        if status in STOPPED:
            raise Interrupted(f"interrupted: git {args[0]} was stopped")
        return int(status), str(out), str(err)

    def run_with_input(self, args: list[str], data: bytes) -> str:
        """``git ARGS`` with *data* on stdin, through a pipe; like :meth:`run`.

        GitPython's ``execute`` only passes a stream through as stdin, so the
        command is started as a process with a pipe there (``as_process``) and
        *data* written to it by ``communicate``, which also reads stdout and
        stderr as they come (no deadlock however large either side is).
        """
        command = ["git", *args]
        try:
            process = self.git.execute(
                command, istream=subprocess.PIPE, as_process=True, **self._popen
            )
            popen = process.proc
            assert popen is not None  # set until the process is terminated
            out: bytes
            err: bytes
            out, err = popen.communicate(data)
            # As execute() gives them: the final newline of each dropped.
            out, err = out.removesuffix(b"\n"), err.removesuffix(b"\n")
            if popen.returncode != 0:
                raise git.GitCommandError(command, popen.returncode, err, out)
        except git.GitCommandError as exc:
            raise self._failed(args, exc) from exc
        finally:
            _after_git()
        return safe_decode(out)

    # --- refs -------------------------------------------------------------------
    def rev(self, rev: str) -> str:
        """The full commit id of *rev*."""
        status, out, _ = self.attempt(
            "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"
        )
        if status != 0:
            raise WorkspaceError(f"{self.root}: unknown revision '{rev}'")
        return out.strip()

    def head(self) -> str:
        return self.rev("HEAD")

    def current_branch(self) -> str | None:
        status, out, _ = self.attempt("symbolic-ref", "--quiet", "--short", "HEAD")
        return out.strip() if status == 0 else None

    def branch_exists(self, name: str) -> bool:
        status, _, _ = self.attempt(
            "show-ref", "--verify", "--quiet", f"refs/heads/{name}"
        )
        return status == 0

    def check_branch_name(self, name: str) -> None:
        status, _, _ = self.attempt("check-ref-format", "--branch", name)
        if status != 0:
            raise WorkspaceError(f"'{name}' is not a valid branch name")

    def short(self, sha: str) -> str:
        return sha[:12]

    def describe(self, *extra: str) -> str:
        """``git describe --always --dirty --tags EXTRA`` of the work tree."""
        return self.run("describe", "--always", "--dirty", "--tags", *extra)

    def describe_head(self) -> str:
        """``main at 0123456789ab`` or ``detached HEAD at 0123456789ab``."""
        branch = self.current_branch()
        where = branch if branch else "detached HEAD"
        return f"{where} at {self.short(self.head())}"

    # --- safety checks ------------------------------------------------------------
    def in_progress(self) -> tuple[str, str, str] | None:
        """(what, continue command, abort command) of an unfinished operation."""
        return gitstate.in_progress(self.git_dir)

    def refuse_in_progress(self) -> None:
        state = self.in_progress()
        if state:
            what, cont, abort = state
            raise GitError(
                f"{self.root}: {what} is in progress; finish it ('{cont}') "
                f"or drop it ('{abort}') first"
            )
        self.refuse_index_lock()

    def refuse_index_lock(self) -> None:
        """Refuse while ``index.lock`` exists, naming whose it is."""
        problem = gitstate.index_lock_problem(self.root, self.git_dir)
        if problem:
            raise GitError(problem)

    def refuse_unknown_identity(self) -> None:
        """Refuse to start what git cannot commit (no user.name/user.email)."""
        status, _, err = self.attempt("var", "GIT_COMMITTER_IDENT")
        if status != 0:
            raise GitError(
                f"{self.root}: git cannot commit here ({last_line(err)}); set "
                "user.name and user.email ('git config --global user.email ...')"
            )

    def require_configured_identity(self) -> str:
        """The identity a patch is authored with: the one the user gave git
        (user.name and user.email, or GIT_AUTHOR_NAME/EMAIL); an error when
        git would make one up from the host's names (user.useConfigOnly)."""
        status, out, err = self.attempt(
            "-c", "user.useConfigOnly=true", "var", "GIT_AUTHOR_IDENT"
        )
        if status != 0:
            raise GitError(
                f"{self.root}: no git identity is configured ({last_line(err)}); "
                "patches are authored by whoever exports them: set user.name "
                "and user.email ('git config --global user.email ...')"
            )
        return out.rsplit(">", 1)[0] + ">"

    def tracked_changes(self) -> list[str]:
        """Tracked files that differ from HEAD (staged or not).

        Untracked files are not scanned (``-uno``): on a 150,000-file tree
        that scan costs more than everything else kdl does.
        """
        return self._status("--untracked-files=no")

    def status_paths(self, paths: Sequence[Path | str]) -> list[str]:
        """Of *paths*, those with uncommitted changes or untracked.

        Relative to the top of the work tree; only the given paths are
        looked at. Nothing for no paths.
        """
        if not paths:
            return []
        return self._status("--untracked-files=all", "--", *map(str, paths))

    def _status(self, *args: str) -> list[str]:
        """The paths ``git status --porcelain -z ARGS`` lists (a rename: its
        new path)."""
        out = self.run(
            "status", "--porcelain=v1", "-z", *args, strip_newline_in_stdout=False
        )
        entries = iter(out.split("\0"))
        paths = []
        for entry in entries:
            if len(entry) > 3:
                paths.append(entry[3:])
                if entry[0] in "RC":
                    next(entries, None)  # the rename's source path
        return paths

    def refuse_dirty(self, action: str) -> None:
        names = self.tracked_changes()
        if names:
            shown = ", ".join(names[:5]) + (
                f" and {len(names) - 5} more" if len(names) > 5 else ""
            )
            raise GitError(
                f"{self.root}: uncommitted changes to tracked files ({shown}); "
                f"commit or stash them ('git stash') before {action}"
            )

    def refuse_lost_detached_head(self) -> None:
        """Refuse a detached HEAD whose commits no branch, tag or remote holds."""
        if self.current_branch() is not None:
            return
        status, out, _ = self.attempt(
            "rev-list", "-n", "1", "HEAD", "--not", "--branches", "--tags", "--remotes"
        )
        if status == 0 and out.strip():
            raise GitError(
                f"{self.root}: HEAD is detached at {self.short(self.head())} with "
                "commits that no branch holds; keep them first ('git branch NAME')"
            )

    def untracked_in_the_way(self, paths: list[str]) -> list[str]:
        """Of *paths*, those in the work tree that git does not track.

        Only the given paths are looked at: no scan of the whole tree.
        """
        present = [p for p in paths if os.path.lexists(self.root / p)]
        if not present:
            return []
        tracked = set(self.run("ls-files", "-z", "--", *present).split("\0"))
        return [p for p in present if p not in tracked]

    # --- branch metadata ------------------------------------------------------------
    def kdl_branch(self) -> tuple[str, BranchMeta]:
        """The current branch and its metadata; it must be one kdl apply made."""
        branch = self.current_branch()
        meta = self.meta(branch) if branch else None
        if branch is None or meta is None:
            raise WorkspaceError(
                f"{self.root}: HEAD is {self.describe_head()}, "
                "not a branch made by kdl apply"
            )
        return branch, meta

    def meta(self, branch: str) -> BranchMeta | None:
        """What ``kdl apply`` recorded for *branch*, or None."""
        prefix = f"branch.{branch}."
        values: dict[str, list[str]] = {}
        for entry in self.run("config", "--local", "--list", "-z").split("\0"):
            key, _, value = entry.partition("\n")
            name = key[len(prefix) :] if key.startswith(prefix) else ""
            if name.startswith("kdl") and "." not in name:
                values.setdefault(name, []).append(value)
        if "kdlbase" not in values:
            return None
        return BranchMeta(
            branch=branch,
            base=values["kdlbase"][-1],
            base_ref=values["kdlbaseref"][-1] if "kdlbaseref" in values else None,
            series=(values.get("kdlseries") or [""])[-1],
            applied=tuple(
                (pair[0], pair[-1])
                for pair in (v.split() for v in values.get("kdlapplied", []))
                if pair
            ),
        )

    def write_meta(
        self, branch: str, base: str, base_ref: str | None, series: str
    ) -> None:
        prefix = f"branch.{branch}"
        self.run("config", "--local", f"{prefix}.kdlBase", base)
        self.run("config", "--local", f"{prefix}.kdlSeries", series)
        if base_ref:
            self.run("config", "--local", f"{prefix}.kdlBaseRef", base_ref)

    def add_applied(self, branch: str, file_id: str, commit_id: str) -> None:
        self.run(
            "config",
            "--local",
            "--add",
            f"branch.{branch}.kdlApplied",
            f"{file_id} {commit_id}",
        )

    def clear_applied(self, branch: str) -> None:
        self.attempt("config", "--local", "--unset-all", f"branch.{branch}.kdlApplied")

    def effective_base(self, meta: BranchMeta) -> str:
        """The branch's base: as recorded, or newer if it was rebased since.

        A branch rebased onto a newer commit of its base ref (``git rebase
        main``) now forks from ``merge-base(branch, ref)``; that is its base.
        """
        if not meta.base_ref:
            return meta.base
        status, out, _ = self.attempt("merge-base", meta.branch, meta.base_ref)
        fork = out.strip()
        if status != 0 or fork in (meta.base, self.rev(meta.branch)):
            return meta.base
        status, _, _ = self.attempt("merge-base", "--is-ancestor", meta.base, fork)
        return fork if status == 0 else meta.base

    # --- commits and patch-ids ------------------------------------------------------
    def commits(self, base: str, tip: str) -> list[Commit]:
        """The commits in base..tip, oldest first, with their patch-ids."""
        listing = self.run(
            "log", "--reverse", "--format=%H%x00%P%x00%s", f"{base}..{tip}"
        )
        rows = [line.split("\0") for line in listing.splitlines() if line]
        if not rows:
            return []
        diffs = self.git.execute(
            [
                "git",
                "log",
                "-p",
                "--reverse",
                "--format=commit %H",
                *DIFF_OPTS,
                f"{base}..{tip}",
            ],
            stdout_as_string=False,
            strip_newline_in_stdout=False,
            **self._popen,
        )
        ids: dict[str, str] = {}
        for line in self.run_with_input(["patch-id", "--stable"], diffs).splitlines():
            pid, _, sha = line.partition(" ")
            ids[sha] = pid
        return [
            Commit(
                sha, normalize_subject(subject), ids.get(sha), len(parents.split()) > 1
            )
            for sha, parents, subject in rows
        ]

    def patch_id_of(self, data: bytes) -> str:
        out = self.run_with_input(["patch-id", "--stable"], data)
        return out.split(" ", 1)[0] if out else ""

    def patch_infos(self, series: Series) -> list[PatchInfo]:
        infos = []
        for patch in series.patches:
            data = patch.read()
            creates = tuple(p for p, new in diff_files(data).items() if new)
            infos.append(
                PatchInfo(
                    patch,
                    self.patch_id_of(data),
                    normalize_subject(patch.subject),
                    creates,
                )
            )
        return infos


def describe_tree(path: Path, *extra: str) -> str | None:
    """``git describe --always --dirty --tags EXTRA`` of the work tree at *path*.

    None where there is nothing to describe (no work tree, no commit) or git
    fails: provenance says "unknown" rather than stopping what records it.
    """
    checkout = Checkout.find(path)
    if checkout is None:
        return None
    with checkout:
        try:
            return checkout.describe(*extra)
        except GitError as exc:
            log.debug("git describe: %s", exc)
            return None
