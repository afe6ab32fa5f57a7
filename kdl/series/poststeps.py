"""The ``post:`` lines of a series file: how its patches go upstream.

Every pull request is posted from the poster's fork of llvm/llvm-project
into its main (a branch of llvm/llvm-project itself needs commit access),
so a pull request cannot be based on another one's branch; a patch that
needs an earlier one says so (``after``), and its pull request carries
that patch's commit, "Depends on" its pull request, until it lands::

    post: fix 1-5, 3 after 1, 5 after 2   each its own pull request into main;
                                          3's carries 1's commit, 5's 2's
    post: rfc ranked-selection            the post rfc/out/ranked-selection.md
    post: pr 6-8 after 3                  one pull request of commits 6-8
    post: stack 6-8                       one pull request each, each after
                                          the one before (and carrying it)
    post: held 9 on 186088 needs TEXT     not posted until #186088 lands
    post: comment 186088 FILE             a comment on #186088, FILE beside
                                          the series file
    post: never TEXT                      the series is not posted (a
                                          backport): the only post: line

A fix, pr or stack line may end in ``why TEXT``, which the plan prints
under its step (the reason it is posted so). ``#`` starts a comment in a
series file, so a pull request is named by its bare number here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kdl.errors import FormatError

#: The kinds of ``post:`` step.
POST_KINDS = ("fix", "pr", "stack", "held", "rfc", "comment", "never")
#: The kinds that open pull requests.
POSTED = ("fix", "pr", "stack")

_WHY = r"(?:\s+why\s+(?P<{}>\S.*))?"
_POST = re.compile(
    r"^(?P<kind>fix|pr|stack|held)\s+(?P<first>\d+)(?:-(?P<last>\d+))?"
    r"(?P<pairs>(?:\s*,\s*\d+\s+after\s+\d+)*)"
    r"(?:\s+after\s+(?P<after>\d+(?:\s*,\s*\d+)*))?"
    r"(?:\s+on\s+(?P<on>\d+))?"
    r"(?:\s+needs\s+(?P<needs>\S.*?))?" + _WHY.format("why") + "$"
    r"|^rfc\s+(?P<rfc>[a-z0-9][a-z0-9-]*)$"
    r"|^comment\s+(?P<topr>\d+)\s+(?P<file>[^\s#]+)" + _WHY.format("cwhy") + "$"
    r"|^never\s+(?P<never>\S.*)$"
)
_PAIR = re.compile(r"(\d+)\s+after\s+(\d+)")
_EXPECTED = (
    "expected 'post: fix|pr|stack|held N[-M][, N after K ...] [after K] "
    "[on PR] [needs TEXT] [why TEXT]', 'post: rfc NAME', "
    "'post: comment PR FILE' or 'post: never TEXT'"
)


@dataclass(frozen=True)
class PostStep:
    """One ``post:`` line: patches *first*..*last* (1-based), the RFC, a
    comment, or that the series is never posted."""

    kind: str
    first: int = 0
    last: int = 0
    #: held: the open pull request it waits for; comment: the one it is on.
    on: int | None = None
    #: A held step: what it needs before it can be posted.
    needs: str = ""
    #: An rfc step: the post's name (rfc/out/NAME.md).
    rfc: str = ""
    #: (patch, earlier patch its pull request carries until that one lands).
    after: tuple[tuple[int, int], ...] = ()
    #: Why it is posted so (fix, pr, stack, held, comment), or why never.
    why: str = ""
    #: A comment step: its Markdown, relative to the series file's folder.
    file: str = ""

    @property
    def numbers(self) -> range:
        return range(self.first, self.last + 1) if self.first else range(0)

    @property
    def posted(self) -> bool:
        return self.kind in POSTED


def parse(line: str, where: str, lineno: int) -> PostStep:
    """The step of one ``post:`` line (its comment already cut)."""
    value = line.partition(":")[2].strip()
    m = _POST.match(value)
    if not m:
        raise FormatError(where, f"line {lineno}: {_EXPECTED}")
    if m["rfc"]:
        return PostStep("rfc", rfc=m["rfc"])
    if m["never"]:
        return PostStep("never", why=m["never"].strip())
    if m["topr"]:
        why = (m["cwhy"] or "").strip()
        return PostStep("comment", on=int(m["topr"]), file=m["file"], why=why)
    kind = m["kind"]
    first = int(m["first"])
    last = int(m["last"] or first)
    at = f"line {lineno}: post: {kind}"
    if first < 1 or last < first:
        raise FormatError(where, f"{at}: bad patch range {first}-{last}")
    if kind == "held" and not m["needs"]:
        raise FormatError(where, f"{at}: held needs 'needs TEXT'")
    if kind != "held" and m["needs"]:
        raise FormatError(where, f"{at}: only a held step 'needs' something")
    if kind != "held" and m["on"]:
        raise FormatError(
            where,
            f"{at} {first}: 'on {m['on']}': a pull request from a fork goes into "
            f"main, never onto another's branch; hold it until #{m['on']} lands "
            f"('post: held {first} on {m['on']} needs ...')",
        )
    numbers = range(first, last + 1)
    pairs = [(int(a), int(b)) for a, b in _PAIR.findall(m["pairs"] or "")]
    for n, k in pairs:
        if n not in numbers:
            raise FormatError(where, f"{at}: '{n} after {k}': {n} is not in {kind}")
    plain = [int(k) for k in re.findall(r"\d+", m["after"] or "")]
    pairs += [(n, k) for n in numbers for k in plain]
    if kind == "stack":
        pairs += [(n, n - 1) for n in numbers if n > first]
    for n, k in pairs:
        if k >= n:
            raise FormatError(
                where, f"{at}: '{n} after {k}': a patch comes after earlier ones"
            )
    return PostStep(
        kind,
        first,
        last,
        int(m["on"]) if m["on"] else None,
        (m["needs"] or "").strip(),
        after=tuple(sorted(set(pairs))),
        why=(m["why"] or "").strip(),
    )


def check(steps: list[PostStep], count: int, where: str) -> None:
    """Each patch in exactly one step, every range within the series, and a
    pull request after only patches posted before it; ``never`` alone."""
    if any(s.kind == "never" for s in steps):
        if len(steps) > 1:
            raise FormatError(where, "post: never: the only post: line of a series")
        return
    seen: dict[int, PostStep] = {}
    for step in steps:
        for n in step.numbers:
            if n > count:
                raise FormatError(where, f"post: patch {n}: the series has {count}")
            if n in seen:
                raise FormatError(where, f"post: patch {n} is in two steps")
            seen[n] = step
        for n, k in step.after:
            earlier = seen.get(k)
            if earlier is None or (earlier is step and step.kind == "pr"):
                raise FormatError(
                    where,
                    f"post: {n} after {k}: {k} is not posted before {n} "
                    "(each patch a pull request needs is posted first)",
                )
            if not earlier.posted:
                raise FormatError(
                    where,
                    f"post: {n} after {k}: {k} is {earlier.kind}, not posted",
                )
    if steps and len(seen) != count:
        left = sorted(set(range(1, count + 1)) - set(seen))
        raise FormatError(
            where, f"post: patch {left[0]} is in no step (each patch is in one)"
        )


def carried(steps: list[PostStep], numbers: range | list[int]) -> list[int]:
    """The patches the pull request of *numbers* carries: those they come
    after, and theirs, in series order, less its own."""
    after: dict[int, set[int]] = {}
    for step in steps:
        for n, k in step.after:
            after.setdefault(n, set()).add(k)
    own = set(numbers)
    found: set[int] = set()
    todo = [k for n in own for k in after.get(n, ())]
    while todo:
        k = todo.pop()
        if k in found or k in own:
            continue
        found.add(k)
        todo.extend(after.get(k, ()))
    return sorted(found)
