"""Posts from Markdown templates with figure slots, and their source sidecar.

A post is written by hand as ``rfc/templates/<name>.md``; every figure in it
is a slot that names where the number comes from::

    ran in {{results/gpu/gpu-results.json#/gemm/kernel/sm_90a/median | ms}}

A slot is ``{{EXPR | FORMAT}}``. EXPR is a reference (``FILE#SELECTOR``, see
:mod:`kdl.rfc.figures`), or two joined by `` / `` (a ratio) or `` - `` (a
difference), which the post must call computed. FORMAT is

``ns``, ``us``, ``ms``, ``s``
    a duration in that unit, three significant digits; the source's unit comes
    from its field name or a ``unit`` key beside it, or is given as
    ``ms src=us``;
``x``
    a ratio (``2.39x``);
``n``
    an integer count;
``text``
    the source's text as it is.

A line that is only ``{{quote REF}}`` becomes the block the quote renderer
gives for REF (a table copied from a patch).

Lines that are only ``{{if REF}}``, ``{{else}}`` and ``{{end}}`` keep the
lines between them where REF resolves to a value (not null, false or empty),
the lines after ``{{else}}`` where it does not (its file must exist): the
base comparison a build directory may lack (``kdl rfc --build-dir``).

Rendering writes the post with the values in place (no markers: Discourse
posts them raw; with *marks*, a figure of a GPU run of another series
version than the checkout's is followed by its mark, :mod:`kdl.rfc.runs`)
and a sidecar, ``<name>.sources.json``, that lists each
figure and quote with its line, column and expression. ``kdl rfc --check``
reads the sidecar, renders every expression again from the files, and
requires the post to show exactly that text there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kdl.rfc.figures import _UNIT_NS, Resolver, SourceError

SLOT = re.compile(r"\{\{\s*(?P<body>.*?)\s*\}\}")
QUOTE_LINE = re.compile(r"^\{\{\s*quote\s+(?P<ref>\S+)\s*\}\}$")
IF_LINE = re.compile(r"^\{\{\s*if\s+(?P<ref>\S+)\s*\}\}$")
ELSE_LINE = re.compile(r"^\{\{\s*else\s*\}\}$")
END_LINE = re.compile(r"^\{\{\s*end\s*\}\}$")
#: Closing characters a mark goes after (the figure is quoted or code).
_CLOSERS = '`"'
OPERATORS = (" / ", " - ")
FORMATS = ("ns", "us", "ms", "s", "x", "n", "text")


@dataclass
class Figure:
    line: int  # 1-based, in the post
    col: int  # 0-based offset in that line
    text: str  # as the post shows it
    expr: str
    format: str
    computed: bool
    #: What follows the figure after *mark_skip* characters: the mark of a
    #: GPU run of another series version (``kdl rfc --build-dir``).
    mark: str = ""
    mark_skip: int = 0


@dataclass
class Quote:
    start: int  # first line of the block, 1-based
    end: int  # last line, inclusive
    ref: str


@dataclass
class Rendered:
    text: str
    figures: list[Figure]
    quotes: list[Quote]

    def sidecar(self, post: str, template: str) -> dict[str, Any]:
        return {
            "post": post,
            "template": template,
            "figures": [asdict(f) for f in self.figures],
            "quotes": [asdict(q) for q in self.quotes],
        }


def _sig(value: float, digits: int = 3) -> str:
    """*value* with about *digits* significant digits, no exponent."""
    if value == 0:
        return "0"
    if abs(value) < 1:
        return f"{value:.{digits}f}"
    magnitude = len(str(int(abs(value))))
    return f"{value:.{max(0, digits - magnitude)}f}"


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SourceError(f"{what}: not a number ({value!r})")
    return float(value)


def evaluate(expr: str, fmt: str, resolver: Resolver) -> tuple[str, bool]:
    """The text a slot shows, and whether it is computed from two sources."""
    display, _, option = fmt.partition(" ")
    if display not in FORMATS:
        raise SourceError(f"{expr}: unknown format {display!r} ({', '.join(FORMATS)})")
    source_unit = option.removeprefix("src=") if option.startswith("src=") else None
    if option and source_unit not in _UNIT_NS:
        raise SourceError(f"{expr}: unknown option {option!r} (src=ns|us|ms|s)")

    def scale(ref: str) -> float | None:
        return _UNIT_NS[source_unit] if source_unit else resolver.scale_ns(ref)

    operator = next((op for op in OPERATORS if op in expr), None)
    if operator:
        left, right = (part.strip() for part in expr.split(operator, 1))
        a = _number(resolver.value(left), left)
        b = _number(resolver.value(right), right)
        if scale(left) != scale(right):
            raise SourceError(f"{expr}: the two sides have different units")
        if operator == " / ":
            if b == 0:
                raise SourceError(f"{expr}: division by zero")
            value, unit_ns = a / b, None
        else:
            value, unit_ns = a - b, scale(left)
    else:
        raw = resolver.value(expr)
        if display == "text":
            if isinstance(raw, dict | list) or raw is None:
                raise SourceError(f"{expr}: not a text ({type(raw).__name__})")
            return str(raw), False
        value, unit_ns = _number(raw, expr), scale(expr)

    if display == "text":
        raise SourceError(f"{expr}: a computed value cannot be shown as text")
    if display == "x":
        decimals = 2 if value < 10 else 1 if value < 100 else 0
        return f"{value:.{decimals}f}x", bool(operator)
    if display == "n":
        if value != int(value):
            raise SourceError(f"{expr}: {value} is not a count")
        return str(int(value)), bool(operator)
    if unit_ns is None:
        raise SourceError(
            f"{expr}: shown as {display} but the source has no time unit "
            f"(write '| {display} src=UNIT')"
        )
    return f"{_sig(value * unit_ns / _UNIT_NS[display])} {display}", bool(operator)


_BLOCK_START = re.compile(r"^(#|\||\{\{\s*quote\b|[-*] |\d+\. |```|\[/?details)")


def unwrap(template: str) -> list[tuple[int, str]]:
    """Join each paragraph and list item onto one line, as Discourse wants.

    Discourse turns a single newline into a line break, so a paragraph the
    template wraps at 80 columns is posted as one line. Headings, tables,
    fences and quote slots are kept as they are. Each line comes with the
    template line it starts on.
    """
    out: list[tuple[int, str]] = []
    fenced = False
    joinable = False
    for lineno, line in enumerate(template.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            out.append((lineno, line))
            joinable = False
            continue
        if fenced or not stripped:
            out.append((lineno, line))
            joinable = False
            continue
        if joinable and not _BLOCK_START.match(stripped):
            start, text = out[-1]
            out[-1] = (start, f"{text} {stripped}")
            continue
        out.append((lineno, line))
        joinable = not stripped.startswith(("#", "|", "{{"))
    return out


def _source_line(template: str, first: int, needle: str) -> int:
    """The template line, from *first* on, where *needle* (a slot) starts."""
    for lineno, line in enumerate(template.splitlines()[first - 1 :], first):
        if needle.split(maxsplit=1)[0] in line:
            return lineno
    return first


def traced(expr: str, resolver: Resolver) -> str:
    """*expr* naming the files *resolver* reads for it (a run's record where
    it stands in for ``results/``), so that the sidecar traces each figure to
    the file it came from."""
    operator = next((op for op in OPERATORS if op in expr), None)
    refs = [p.strip() for p in expr.split(operator, 1)] if operator else [expr]
    read = []
    for ref in refs:
        file_part, sep, selector = ref.partition("#")
        read.append(resolver.source(file_part) + sep + selector)
    if read == refs:
        return expr
    return operator.join(read) if operator else read[0]


def _present(resolver: Resolver, ref: str) -> bool:
    """Whether *ref* names a value (``{{if REF}}``); its file must exist."""
    file_part = ref.partition("#")[0]
    if not (resolver.root / resolver.source(file_part)).is_file():
        raise SourceError(f"{ref}: no such file")
    try:
        value = resolver.value(ref)
    except SourceError:
        return False
    return value not in (None, False, "", [], {})


def select(template: str, resolver: Resolver, where: str) -> tuple[str, list[int]]:
    """*template* with each ``{{if}}`` block reduced to the lines its
    condition keeps, and the template line of each line kept."""
    kept: list[str] = []
    lines: list[int] = []
    open_: list[list[Any]] = []  # [condition, in else, line of the if]
    for lineno, line in enumerate(template.splitlines(), 1):
        stripped = line.strip()
        cond = IF_LINE.match(stripped)
        if cond:
            try:
                open_.append([_present(resolver, cond["ref"]), False, lineno])
            except SourceError as exc:
                raise SourceError(f"{where}:{lineno}: {exc}") from None
        elif ELSE_LINE.match(stripped):
            if not open_ or open_[-1][1]:
                raise SourceError(f"{where}:{lineno}: {{{{else}}}} without {{{{if}}}}")
            open_[-1][1] = True
        elif END_LINE.match(stripped):
            if not open_:
                raise SourceError(f"{where}:{lineno}: {{{{end}}}} without {{{{if}}}}")
            open_.pop()
        elif all(c != in_else for c, in_else, _ in open_):
            kept.append(line)
            lines.append(lineno)
    if open_:
        raise SourceError(f"{where}:{open_[-1][2]}: {{{{if}}}} without {{{{end}}}}")
    return "\n".join(kept) + "\n", lines


def render(
    template: str,
    resolver: Resolver,
    where: str,
    marks: Callable[[str], str] | None = None,
) -> Rendered:
    """Fill every slot of *template*; errors name ``WHERE:LINE``. *marks*
    gives the mark that follows a figure, from its traced expression."""
    template, origin = select(template, resolver, where)

    def at(lineno: int) -> int:
        return origin[lineno - 1] if 0 < lineno <= len(origin) else lineno

    out: list[str] = []
    figures: list[Figure] = []
    quotes: list[Quote] = []
    for lineno, line in unwrap(template):
        quote = QUOTE_LINE.match(line.strip())
        if quote:
            try:
                block = resolver.quote(quote["ref"]).rstrip("\n").splitlines()
            except (SourceError, OSError, ValueError, KeyError, IndexError) as exc:
                raise SourceError(f"{where}:{at(lineno)}: {exc}") from None
            ref = traced(quote["ref"], resolver)
            quotes.append(Quote(len(out) + 1, len(out) + len(block), ref))
            out += block
            continue
        text = ""
        last = 0
        for m in SLOT.finditer(line):
            text += line[last : m.start()]
            expr, _, fmt = (p.strip() for p in m["body"].rpartition("|"))
            if not expr:
                expr, fmt = fmt, "text"
            try:
                shown, computed = evaluate(expr, fmt, resolver)
            except SourceError as exc:
                found = _source_line(template, lineno, m.group(0))
                raise SourceError(f"{where}:{at(found)}: {exc}") from None
            read = traced(expr, resolver)
            figure = Figure(len(out) + 1, len(text), shown, read, fmt, computed)
            figure.mark = marks(read) if marks else ""
            text += shown
            last = m.end()
            if figure.mark:
                # After the quote or code span the figure closes, if any.
                closer = line[last : last + 1]
                if closer and closer in _CLOSERS and text.count(closer) % 2:
                    figure.mark_skip = 1
                    text += closer
                    last += 1
                text += figure.mark
            figures.append(figure)
        text += line[last:]
        if "{{" in text or "}}" in text:
            found = _source_line(template, lineno, "{{" if "{{" in text else "}}")
            raise SourceError(f"{where}:{at(found)}: an unclosed or empty slot")
        out.append(text)
    return Rendered("\n".join(out) + "\n", figures, quotes)


def sidecar_path(post: Path) -> Path:
    return post.with_suffix(".sources.json")


def read_sidecar(post: Path) -> tuple[list[Figure], list[Quote]]:
    path = sidecar_path(post)
    try:
        doc = json.loads(path.read_text())
        return (
            [Figure(**f) for f in doc["figures"]],
            [Quote(**q) for q in doc["quotes"]],
        )
    except OSError:
        raise SourceError(f"{path}: no sidecar (run 'kdl rfc' to draft)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"{path}: not a sources sidecar ({exc})") from None


def read_context(post: Path) -> dict[str, Any] | None:
    """The sidecar's ``context`` (a draft from a build directory), if any."""
    try:
        doc = json.loads(sidecar_path(post).read_text())
    except (OSError, ValueError):
        return None
    context = doc.get("context") if isinstance(doc, dict) else None
    return context if isinstance(context, dict) else None
