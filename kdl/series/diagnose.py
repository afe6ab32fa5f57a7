"""Why a patch does not apply to a checkout, in words that fit the case.

``git am -3`` and ``git apply --3way`` fail in two different ways: the
patch's context differs and the 3-way merge conflicts (a conflict: a merge
left in place can be finished by hand), or the merge cannot even start
because the repository lacks the blobs the patch's ``index`` lines name.
The second has several causes, each with its own way out:

- the patch was made against a text that is no commit of llvm-project (a
  reconstruction of a file, or a release tarball's text: the series file
  says so in the base's REPO field), so only a tree with exactly that text
  has the blobs;
- a shallow clone, whose history stops before the recorded base commit;
- a clone without the base commit (a one-commit tree, another fork).

:func:`explain` says which, and whether ``--keep-conflicts`` can help (it
cannot without the blobs: git leaves no conflict markers then).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kdl.series.checkout import Checkout
from kdl.series.model import FileBase, Patch

#: What ``git am -3`` / ``git apply --3way`` say when the index lines' blobs
#: are not in the repository (git 2.39: "sha1 information is lacking or
#: useless (PATH)"; later: "Repository lacks necessary blobs to fall back on
#: 3-way merge"; ``git apply``: "repository lacks the necessary blob").
NO_BLOBS = re.compile(
    r"lacks (?:the )?necessary blobs?|sha1 information is lacking or useless"
)

UPSTREAM = "llvm/llvm-project"
UPSTREAM_URL = "https://github.com/llvm/llvm-project"


@dataclass(frozen=True)
class Cause:
    """What went wrong, and whether a 3-way merge left in place can help."""

    text: str
    merge_helps: bool


def explain(co: Checkout, patch: Patch, files: list[str], git_output: str) -> Cause:
    """The cause of *patch* not applying to the checkout's *files*."""
    listed = ", ".join(files) or "its files"
    if not NO_BLOBS.search(git_output):
        return Cause(f"conflict in {listed}", True)
    recorded = {f.path: f for f in patch.files if not f.is_new}
    bases = [recorded[p] for p in files if p in recorded] or list(recorded.values())
    not_commits = [b for b in bases if b.repo != UPSTREAM]
    head = (
        f"the context of {listed} differs here and git cannot merge: the blobs "
        "the patch was made against are not in this repository"
    )
    by_hand = (
        f"'git apply --reject {patch.path}' leaves what does not fit in .rej files"
    )
    if not_commits:
        return Cause(
            f"{head}; {_not_a_commit(not_commits)}: port it by hand "
            f"({by_hand}), or use a checkout of the version the series "
            "is made for",
            False,
        )
    if co.attempt("rev-parse", "--is-shallow-repository")[1].strip() == "true":
        return Cause(
            f"{head}: this is a shallow clone; 'git fetch --unshallow' (or 'git "
            "fetch --deepen=N' until the base commits are in) fetches them, then "
            "apply again",
            False,
        )
    missing = sorted(
        {
            b.commit
            for b in bases
            if b.commit and co.attempt("cat-file", "-e", f"{b.commit}^{{commit}}")[0]
        }
    )
    if missing:
        fetch = " ".join(c[:12] for c in missing)
        return Cause(
            f"{head}: the recorded base commit(s) {fetch} are not in this clone "
            f"(a one-commit tree or another fork?); 'git fetch {UPSTREAM_URL} "
            f"{missing[0]}' fetches one, then apply again",
            False,
        )
    return Cause(
        f"{head}, although its recorded base commits are (were those files "
        f"rewritten?); port it by hand: {by_hand}",
        False,
    )


def _not_a_commit(bases: list[FileBase]) -> str:
    """Why bases recorded outside llvm/llvm-project have no blobs here."""
    parts = []
    for b in bases:
        at = (b.commit or "")[:12]
        if b.repo == "reconstructed":
            parts.append(
                f"{b.path} was made against a reconstruction of main's text at "
                f"{at}, not a commit of llvm-project, so no clone has those blobs"
            )
        else:
            parts.append(
                f"{b.path} was made against {b.repo} ({at}), not a commit of "
                "llvm-project; a checkout whose text of it differs cannot merge it"
            )
    return "; ".join(parts)


def made_against(base: FileBase) -> str:
    """What a file's recorded base is, for a message."""
    if base.commit is None:
        return "a file the series creates"
    if base.repo == "reconstructed":
        return f"a reconstruction of main's text at {base.commit[:12]} (no commit)"
    return f"{base.repo} {base.commit}"
