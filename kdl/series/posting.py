"""The posting plan: what ``kdl pr`` posts, in which order, as whom.

The series file says it (``post:`` lines, :mod:`kdl.series.model`): fixes
that stand alone, each an ordinary pull request into main; the RFC; the
stack of pull requests that follows up an open one; and, from the
proposals' series beside it, what is not posted and what it needs first. A
series without ``post:`` lines is one stack into main.

The patches are posted as the checkout's git user (``kdl apply`` authors
the commits so): an identity git would make up, or one that is a
placeholder (an address at a reserved domain, a no-reply address), stops
the plan before anything is pushed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kdl import paths
from kdl.errors import GitError
from kdl.series.checkout import Checkout
from kdl.series.model import PostStep, Series

#: Addresses no reviewer can write to: RFC 2606's reserved names and
#: no-reply addresses (LLVM asks contributors for a public address).
_PLACEHOLDER = re.compile(
    r"@(?:[^>]*\.)?(?:example(?:\.(?:com|net|org))?|invalid|test|localhost)>$"
    r"|noreply|no-reply|<>$",
    re.IGNORECASE,
)


@dataclass
class Step:
    """One line of the plan: a pull request, the RFC, or what is held."""

    number: int | None  # None: not posted
    what: str
    patches: list[str]
    title: str
    #: The branch pushed (users/LOGIN/TOPIC-N), or where the post is.
    branch: str
    base: str = "main"
    #: The branch of the pull request this one depends on (in its stack).
    after: str | None = None
    #: The open pull request a stack is stacked on.
    on: int | None = None
    #: The RFC step: the post's name.
    rfc: str = ""
    #: The patches' places in their series (what the plan shows: a
    #: backport's borrowed patch is named by another series' file).
    places: list[int] = field(default_factory=list)

    def line(self) -> str:
        where = self.branch
        if self.number and self.base:
            where += f" -> {self.base}"
        if self.on is not None and self.after is None:
            where += f" (depends on #{self.on})"
        number = f"{self.number:>2}." if self.number else " -"
        patches = ",".join(f"{n:04d}" for n in self.places) or "-"
        return f"{number} {self.what}: {patches}: {self.title} [{where}]"


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


def _steps(series: Series) -> list[PostStep]:
    return series.posting or [PostStep("stack", 1, len(series.patches))]


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


def plan(
    series: Series,
    proposals: Series | None,
    login: str,
    topic: str,
    root: Path | None = None,
) -> list[Step]:
    """The posting plan of *series*, then the held patches of *proposals*."""
    root = root or paths.ROOT
    out: list[Step] = []
    number = 0
    for step in _steps(series):
        if step.kind == "rfc":
            title, where = _rfc_title(step.rfc, root)
            number += 1
            where += f"; kdl rfc post --which {step.rfc}"
            what = "the RFC, on Discourse"
            out.append(Step(number, what, [], title, where, "", rfc=step.rfc))
            continue
        after: str | None = None
        count = len(step.numbers)
        for i, n in enumerate(step.numbers, 1):
            patch = series.patches[n - 1]
            branch = f"users/{login}/{topic}-{n}"
            if step.kind == "held":
                needs = f"needs {step.needs}"
                out.append(
                    Step(
                        None,
                        "not posted",
                        [patch.listed_as],
                        patch.subject,
                        needs,
                        places=[n],
                    )
                )
                continue
            number += 1
            if step.kind == "fix":
                what = "fix, its own PR"
            else:
                on = f" on #{step.on}" if step.on else ""
                what = f"stacked PR {i}/{count}{on}"
            out.append(
                Step(
                    number,
                    what,
                    [patch.listed_as],
                    patch.subject,
                    branch,
                    base=after or "main",
                    after=after,
                    on=step.on if step.kind == "stack" else None,
                    places=[n],
                )
            )
            after = branch if step.kind == "stack" else None
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


def print_plan(series: Series, who: str, steps: list[Step]) -> None:
    posted = sum(s.number is not None for s in steps)
    print(
        f"# posting plan of {series.name} v{series.version}: {posted} step(s), "
        f"authored by {who}"
    )
    for step in steps:
        print(step.line())
