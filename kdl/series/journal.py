"""The journal of a ``kdl apply`` run, and what it lets a later run undo.

As ``git am`` keeps ``.git/rebase-apply``, apply keeps ``.git/kdl-apply.json``:
where the checkout started (:class:`Start`), what the series branch held
before, and then every change in order, each written *before* it is made:

- ``create``: the branch is made at ``at`` and checked out;
- ``switch``: the existing branch is checked out;
- ``am``: ``git am`` of ``patch`` on top of ``from`` (its ``files``, its
  ``subject``), and ``commit`` once it made commit ``head``.

A run that ends (done, or undone) removes the journal; a run killed outright
leaves it. A journal is checked whole when it is loaded (:func:`checked`):
each key there with its type, each step one of the four with its keys, and a
start that is not the branch the run created; one edited by hand is refused
in one line before anything is undone.

Whatever the journal names is the run's; anything else in the checkout is
the user's. :func:`judge` decides, from :class:`Facts` gathered by
:mod:`kdl.series.undo`, whether undoing the run would touch anything of the
user's (a changed file, a commit, HEAD somewhere else, an operation of their
own); if so it says what, in one line, and how to go on, and nothing is
touched. It is a pure function, tested on its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdl.errors import GitError
from kdl.series.gitstate import GIT_AM

#: The journal's file in the git directory.
JOURNAL = "kdl-apply.json"
#: Its format; another one is refused with a line that says so.
VERSION = 2
#: The keys of each kind of step besides "do", and what each holds.
STEPS: dict[str, dict[str, str]] = {
    "create": {"at": "commit"},
    "switch": {"to": "name"},
    "am": {
        "patch": "text",
        "subject": "text",
        "patch_id": "text",
        "files": "paths",
        "from": "commit",
    },
    "commit": {"patch": "text", "head": "commit"},
}
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass(frozen=True)
class Start:
    """Where the checkout was before apply, to go back to."""

    branch: str | None  # None: detached
    head: str
    target_tip: str | None  # the series branch's commit, None if apply creates it

    @property
    def label(self) -> str:
        return self.branch or self.head


@dataclass
class Journal:
    """What one apply run set out to do and has done so far."""

    path: Path
    branch: str
    start: Start
    #: The series branch's metadata before the run (an existing branch):
    #: base, base_ref, series and the applied pairs.
    meta_before: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def created(self) -> bool:
        return self.start.target_tip is None

    # --- the file -------------------------------------------------------------------
    def save(self) -> None:
        doc = {
            "version": VERSION,
            "branch": self.branch,
            "start": {
                "branch": self.start.branch,
                "head": self.start.head,
                "target_tip": self.start.target_tip,
            },
            "meta_before": self.meta_before,
            "steps": self.steps,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(self.path)

    def record(self, do: str, **fields: Any) -> None:
        """Add step *do* and write the journal, before the step is made."""
        self.steps.append({"do": do, **fields})
        self.save()

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)

    @classmethod
    def load(cls, git_dir: Path) -> Journal | None:
        """The journal a killed run left in *git_dir*, or None."""
        path = git_dir / JOURNAL
        try:
            doc = json.loads(path.read_text())
            if not isinstance(doc, dict):
                raise ValueError("not an object")
            if doc.get("version") != VERSION:
                raise ValueError(f"format {doc.get('version', 1)}, not {VERSION}")
            return cls(path, *checked(doc))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise GitError(
                f"{path}: an interrupted kdl apply left a journal that cannot be "
                f"read ({exc}); remove it after restoring the checkout by hand"
            ) from exc

    # --- what the run did -----------------------------------------------------------
    def known_commits(self) -> list[str]:
        """Every commit the run started from or made, first to last."""
        found = [self.start.head]
        if self.start.target_tip:
            found.append(self.start.target_tip)
        for step in self.steps:
            found += [step[k] for k in ("at", "from", "head") if step.get(k)]
        return list(dict.fromkeys(found))

    def running_am(self) -> dict[str, Any] | None:
        """The last ``am`` step, if the run had not seen it end."""
        if self.steps and self.steps[-1]["do"] == "am":
            return self.steps[-1]
        return None

    def paths(self) -> list[str]:
        """The files the run's patches touch."""
        return list(
            dict.fromkeys(p for s in self.steps if s["do"] == "am" for p in s["files"])
        )


def _holds(value: object, kind: str) -> bool:
    """Whether *value* is a *kind* of :data:`STEPS` ("commit", "name",
    "text", "paths"), or "name?"/"commit?" (or None)."""
    if kind.endswith("?"):
        return value is None or _holds(value, kind[:-1])
    if kind == "commit":
        return isinstance(value, str) and _COMMIT.fullmatch(value) is not None
    if kind == "name":
        return isinstance(value, str) and value != ""
    if kind == "paths":
        return isinstance(value, list) and all(isinstance(p, str) and p for p in value)
    return isinstance(value, str)


_WHAT = {
    "commit": "a commit id",
    "name": "a branch name",
    "text": "text",
    "paths": "a list of paths",
}


def checked(
    doc: dict[str, Any],
) -> tuple[str, Start, dict[str, Any] | None, list[dict[str, Any]]]:
    """(branch, start, meta_before, steps) of a journal's document; a
    ValueError saying what is wrong with one edited by hand."""
    if "branch" not in doc:
        raise ValueError("it has no 'branch'")
    if not _holds(doc["branch"], "name"):
        raise ValueError("'branch' is not a branch name")
    branch: str = doc["branch"]
    start = doc.get("start")
    if not isinstance(start, dict):
        raise ValueError("'start' is not an object" if "start" in doc else "no 'start'")
    for key, kind in (
        ("branch", "name?"),
        ("head", "commit"),
        ("target_tip", "commit?"),
    ):
        if key not in start:
            raise ValueError(f"'start' has no '{key}'")
        if not _holds(start[key], kind):
            raise ValueError(f"'start.{key}' is not {_WHAT[kind.rstrip('?')]}")
    if start["target_tip"] is None and start["branch"] == branch:
        raise ValueError(
            f"its start is the series branch {branch} itself, which the run created"
        )
    meta = doc.get("meta_before")
    if meta is not None:
        if not isinstance(meta, dict):
            raise ValueError("'meta_before' is not an object")
        for key, kind in (
            ("base", "commit"),
            ("base_ref", "name?"),
            ("series", "text"),
        ):
            if key not in meta or not _holds(meta[key], kind):
                what = _WHAT[kind.rstrip("?")]
                raise ValueError(f"'meta_before.{key}' is missing or not {what}")
        applied = meta.get("applied")
        if not isinstance(applied, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            for p in applied
        ):
            raise ValueError("'meta_before.applied' is not a list of pairs")
    steps = doc.get("steps")
    if not isinstance(steps, list):
        raise ValueError("'steps' is not a list" if "steps" in doc else "no 'steps'")
    for n, step in enumerate(steps, 1):
        if not isinstance(step, dict):
            raise ValueError(f"step {n} is not an object")
        if "do" not in step:
            raise ValueError(f"step {n} has no 'do'")
        keys = STEPS.get(step["do"]) if isinstance(step["do"], str) else None
        if keys is None:
            raise ValueError(f"step {n}: unknown step {step['do']!r}")
        for key, kind in keys.items():
            if key not in step:
                raise ValueError(f"step {n} ({step['do']}) has no '{key}'")
            if not _holds(step[key], kind):
                raise ValueError(
                    f"step {n} ({step['do']}): '{key}' is not {_WHAT[kind]}"
                )
    return (
        branch,
        Start(start["branch"], start["head"], start["target_tip"]),
        meta,
        steps,
    )


@dataclass(frozen=True)
class Facts:
    """The checkout as a later run finds it."""

    head_branch: str | None  # None: detached
    head: str
    tip: str | None  # the series branch's commit, None if it does not exist
    operation: str | None  # an operation in progress (gitstate's name for it)
    #: "sha subject" of the branch's commits that no step accounts for
    foreign_commits: tuple[str, ...] = ()
    #: changed or untracked files whose content no step accounts for
    foreign_paths: tuple[str, ...] = ()
    #: the patch-id of the patch a ``git am`` in progress applies, if known
    am_patch_id: str | None = None


def tree_is_ours(j: Journal, f: Facts) -> bool:
    """Whether HEAD is where the run left it: on the series branch, or still
    at the start."""
    if f.head_branch is not None:
        return f.head_branch in (j.branch, j.start.branch)
    return j.start.branch is None and f.head == j.start.head


def _listed(items: tuple[str, ...], limit: int = 3) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def judge(j: Journal, f: Facts, root: Path) -> str | None:
    """Why undoing the run would touch something of the user's, or None.

    The line says what changed since the run and how to go on; the caller
    then touches nothing. Checked in order: HEAD, an operation in progress,
    changed files, commits on the series branch.
    """
    where = f"the interrupted kdl apply of {j.branch}"
    keep = "nothing was touched"
    if not tree_is_ours(j, f):
        if f.tip is None:
            return None  # the branch is gone; nothing of the run is in the tree
        head = f.head_branch or f"a detached HEAD at {f.head[:12]}"
        return (
            f"{root}: HEAD is on {head}, not where {where} left it ({j.branch} or "
            f"{j.start.label}); {keep}: check out {j.start.label} and run kdl "
            "apply again"
        )
    if f.operation is not None:
        # The run's am: the journal shows it running, and HEAD is still on the
        # branch, or the am applies the journal's patch (HEAD moved since,
        # as the way on for a commit of the user's below moves it).
        am = j.running_am()
        ours = (
            f.operation == GIT_AM
            and am is not None
            and (
                f.head_branch == j.branch
                or (f.am_patch_id is not None and f.am_patch_id == am["patch_id"])
            )
        )
        if not ours:
            return (
                f"{root}: {f.operation} is in progress that {where} did not start; "
                f"{keep}: finish or abort it, then run kdl apply again"
            )
    if f.foreign_paths:
        return (
            f"{root}: {_listed(f.foreign_paths)} changed since {where}; {keep}: "
            "commit or stash the changes ('git stash -u'), then run kdl apply again"
        )
    if f.foreign_commits:
        new = f"{j.branch}-mine"
        back = f" && git checkout {j.start.label}" if j.start.branch != j.branch else ""
        return (
            f"{root}: {j.branch} has {len(f.foreign_commits)} commit(s) that "
            f"{where} did not make ({_listed(f.foreign_commits, 2)}); {keep}: keep "
            f"them on a branch of your own ('git branch -m {j.branch} {new}{back}'), "
            "then run kdl apply again"
        )
    return None
