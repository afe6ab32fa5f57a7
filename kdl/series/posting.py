"""The posting plan: what ``kdl pr`` posts, in which order, as whom.

The series file says it (``post:`` lines, :mod:`kdl.series.poststeps`):
fixes that stand alone, each its own pull request; the RFC; the pull
requests after it; what is held until an open pull request lands; a
comment on that one; and, from the proposals' series beside it, what is not
posted and what it needs first.

Every pull request goes from the poster's fork into llvm/llvm-project's
main (head ``LOGIN:BRANCH``): a contributor without commit access can push
no branch to llvm/llvm-project, so no pull request is based on another
one's branch. A pull request whose patch needs an earlier one carries that
patch's commit first and says "Depends on #N" (LLVM's GitHub guide, for
stacked changes from a fork); it lands after #N. Patches posted together
are one pull request of several commits, which LLVM lands as one (it
squashes every pull request).

A series marked ``post: never`` (the release/22.x backport) and a series
without ``post:`` lines have no plan: asking for one is an error, so no
run can open their pull requests into main.

The patches are posted as the checkout's git user (``kdl apply`` authors
the commits so): an identity git would make up, or one that is a
placeholder (an address at a reserved domain, a no-reply address), stops
the plan before anything is pushed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kdl import paths
from kdl.errors import GitError, UsageError
from kdl.series.checkout import Checkout
from kdl.series.model import Series
from kdl.series.poststeps import PostStep, carried

#: Addresses no reviewer can write to: RFC 2606's reserved names and
#: no-reply addresses (LLVM asks contributors for a public address).
_PLACEHOLDER = re.compile(
    r"@(?:[^>]*\.)?(?:example(?:\.(?:com|net|org))?|invalid|test|localhost)>$"
    r"|noreply|no-reply|<>$",
    re.IGNORECASE,
)


@dataclass
class Step:
    """One line of the plan: a pull request, the RFC, a comment, or what is
    held."""

    number: int | None  # None: not posted
    what: str
    #: The posted patches' names as the series lists them (own, in order).
    patches: list[str]
    title: str
    #: A pull request's branch on the poster's fork; else where it is.
    branch: str
    #: The fork's owner (a pull request's head is OWNER:BRANCH).
    login: str = ""
    base: str = "main"
    #: The patches' places in their series (what the plan shows: a
    #: backport's borrowed patch is named by another series' file).
    places: list[int] = field(default_factory=list)
    #: Earlier patches whose commits the pull request carries first.
    carries: list[int] = field(default_factory=list)
    #: The branches of the pull requests it depends on.
    after: list[str] = field(default_factory=list)
    #: The RFC step: the post's name.
    rfc: str = ""
    #: A held step: the open pull request it waits for; a comment: its PR.
    on: int | None = None
    #: A comment step: its Markdown file.
    file: Path | None = None
    why: str = ""

    @property
    def head(self) -> str:
        return f"{self.login}:{self.branch}"

    @property
    def is_pr(self) -> bool:
        return self.number is not None and bool(self.patches)

    def line(self) -> str:
        if self.is_pr:
            where = f"{self.head} -> {self.base}"
            if self.carries:
                first = ", ".join(f"{n:04d}" for n in self.carries)
                they = "that lands" if len(self.carries) == 1 else "they land"
                where += f"; carries {first} first, until {they}"
        else:
            where = self.branch
        number = f"{self.number:>2}." if self.number else " -"
        patches = ",".join(f"{n:04d}" for n in self.places) or "-"
        text = f"{number} {self.what}: {patches}: {self.title} [{where}]"
        if self.why:
            text += f"\n      why: {self.why}"
        return text


def author(co: Checkout) -> str:
    """``Name <email>`` the patches are posted as: the checkout's configured
    git identity; an error for none or a placeholder."""
    who = co.require_configured_identity()
    if _PLACEHOLDER.search(who):
        raise GitError(
            f"{co.root}: the patches would be authored by {who}, a placeholder: "
            "set user.name and user.email to your own public address "
            "('git config user.email ...')"
        )
    return who


def shown(path: Path) -> str:
    """*path* relative to the workspace where it is inside it."""
    if path.is_absolute() and path.is_relative_to(paths.ROOT):
        return os.path.relpath(path, paths.ROOT)
    return str(path)


def refuse_unposted(series: Series) -> None:
    """An error for a series that has no posting plan: ``post: never`` (a
    backport) or no ``post:`` lines at all."""
    where = shown(series.path)
    never = series.never_posted
    if never is not None:
        raise UsageError(
            f"{where}: never posted to llvm/llvm-project main ({never}); "
            "kdl pr posts only a series whose post: lines plan it"
        )
    if not series.posting:
        raise UsageError(
            f"{where}: no post: lines, so no posting plan; kdl pr posts only a "
            "series whose post: lines say how (docs/series.md#posting)"
        )


def _rfc_title(name: str, root: Path) -> tuple[str, str]:
    """The post's title line and its file (the draft, else the template)."""
    rfc = root / "rfc"
    for path in (rfc / "out" / f"{name}.md", rfc / "templates" / f"{name}.md"):
        try:
            first = path.read_text().splitlines()[0]
        except (OSError, IndexError):
            continue
        return first.removeprefix("# ").strip(), path.relative_to(root).as_posix()
    return f"(no draft {name}: run 'kdl rfc')", f"rfc/out/{name}.md"


def _pr_steps(
    series: Series, step: PostStep, login: str, topic: str
) -> list[tuple[list[int], str, str]]:
    """(own patches, what, branch) of each pull request of *step*."""
    numbers = list(step.numbers)
    if step.kind == "pr":
        what = (
            f"one PR of {len(numbers)} commits, landing as one"
            if len(numbers) > 1
            else "a PR"
        )
        span = f"{numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else f"{numbers[0]}"
        return [(numbers, what, f"{topic}-{span}")]
    out = []
    for i, n in enumerate(numbers, 1):
        if step.kind == "fix":
            what = "fix, its own PR"
        else:
            what = f"PR {i}/{len(numbers)} of a stack, each after the one before"
        out.append(([n], what, f"{topic}-{n}"))
    return out


def plan(
    series: Series,
    proposals: Series | None,
    login: str,
    topic: str,
    root: Path | None = None,
) -> list[Step]:
    """The posting plan of *series*, then the held patches of *proposals*."""
    refuse_unposted(series)
    root = root or paths.ROOT
    out: list[Step] = []
    number = 0
    #: patch number -> the branch of the pull request that posts it
    posted_in: dict[int, str] = {}
    for step in series.posting:
        if step.kind == "rfc":
            title, where = _rfc_title(step.rfc, root)
            number += 1
            where += f"; kdl rfc post --which {step.rfc}"
            what = "the RFC, on Discourse"
            out.append(Step(number, what, [], title, where, "", rfc=step.rfc))
            continue
        if step.kind == "comment":
            number += 1
            path = series.path.parent / step.file
            out.append(
                Step(
                    number,
                    f"comment on #{step.on}",
                    [],
                    shown(path),
                    f"POST /repos/llvm/llvm-project/issues/{step.on}/comments",
                    on=step.on,
                    file=path,
                    why=step.why,
                )
            )
            continue
        if step.kind == "held":
            what = f"held until #{step.on} lands" if step.on else "not posted"
            for n in step.numbers:
                patch = series.patches[n - 1]
                out.append(
                    Step(
                        None,
                        what,
                        [patch.listed_as],
                        patch.subject,
                        f"needs {step.needs}",
                        places=[n],
                        on=step.on,
                        why=step.why if n == step.first else "",
                    )
                )
            continue
        prs = _pr_steps(series, step, login, topic)
        for i, (own, what, branch) in enumerate(prs, 1):
            number += 1
            carries = carried(series.posting, own)
            direct = {k for n, k in step.after if n in own and k not in own}
            patches = [series.patches[n - 1] for n in own]
            out.append(
                Step(
                    number,
                    what,
                    [p.listed_as for p in patches],
                    patches[-1].subject,
                    branch,
                    login,
                    places=own,
                    carries=carries,
                    after=sorted({posted_in[k] for k in direct}),
                    why=step.why if i == len(prs) else "",
                )
            )
            for n in own:
                posted_in[n] = branch
    if proposals is None:
        return out
    for step in proposals.posting or [PostStep("held", 1, len(proposals.patches))]:
        needs = f"needs {step.needs}" if step.needs else "a proposal"
        for n in step.numbers:
            patch = proposals.patches[n - 1]
            what = "not posted, a proposal"
            out.append(
                Step(None, what, [patch.listed_as], patch.subject, needs, places=[n])
            )
    return out


def print_plan(
    series: Series, who: str, steps: list[Step], repo: str, fork: str
) -> None:
    posted = sum(s.number is not None for s in steps)
    print(
        f"# posting plan of {series.name} v{series.version}: {posted} step(s), "
        f"authored by {who}"
    )
    print(
        f"# every pull request: from {fork} into {repo} main (head LOGIN:BRANCH); "
        "one that carries earlier commits says 'Depends on #N' and lands after it"
    )
    for step in steps:
        print(step.line())
