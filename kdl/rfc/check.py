"""``kdl rfc --check``: find what a maintainer would object to in a draft.

One problem per line, ``FILE:LINE: what``. Problems:

* placeholders (TODO, TBD, XXX, FIXME, unformatted ``{name}``, a leaked
  Python ``None``);
* a number in the prose without a source marker, a marker that does not
  resolve, or a figure that differs from its source;
* a quoted block that no longer matches what it quotes;
* a link to ``#anchor`` that no heading provides;
* broken Markdown (an unclosed code fence or ``[details]``, a table row with
  the wrong number of cells);
* a post far outside the length of a Discourse RFC (prose words).
"""

from __future__ import annotations

import re
from pathlib import Path

from kdl.rfc.figures import FIGURE_RE, QUOTE_RE, Resolver, SourceError, matches

#: Prose words (outside code, tables and comments) a post may have.
MIN_WORDS = 500
MAX_WORDS = 1600

_PLACEHOLDER = re.compile(
    r"\b(TODO|TBD|XXX|FIXME)\b|\{[a-z_][a-z0-9_]*\}|<(?:placeholder|insert)[^>]*>"
    r"|\?\?\?|lorem ipsum",
    re.IGNORECASE,
)
#: A Python None that leaked into prose (quoted text may say "None").
_LEAKED_NONE = re.compile(r"\bNone\b")
_FENCE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_LINK_TARGET = re.compile(r"\]\((?P<target>[^)\s]*)\)")
_URL = re.compile(r"https?://\S+")
#: Numbers that are names, not figures: PR numbers, dates, versions.
_EXEMPT = re.compile(
    r"#\d+"
    r"|\b\d{4}-\d{2}(?:-\d{2})?\b"
    r"|\b\d+\.\d+\.\d+\b"
    r"|\b(?:LLVM|CUDA|ROCm|GCC|Clang|C\+\+|[Vv]ersions?|v)\s?\d+(?:\.\d+)*"
    r"|^\s*\d+\.\s",
    re.MULTILINE,
)
_NUMBER = re.compile(r"(?<![\w\-./])\d+(?:\.\d+)?(?!\w|\.\d)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
_ANCHOR = re.compile(r'<a\s+name="([^"]+)"')


def slug(heading: str) -> str:
    """The anchor Discourse (and GitHub) give a heading, without a post prefix."""
    text = re.sub(r"[`*_\[\]()]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s]+", "-", text)


def _blank(text: str, start: int, end: int) -> str:
    """Replace text[start:end] by spaces, keeping newlines (offsets stay)."""
    chunk = re.sub(r"[^\n]", " ", text[start:end])
    return text[:start] + chunk + text[end:]


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


_DETAILS = re.compile(r"^\[details=.*?^\[/details\]", re.MULTILINE | re.DOTALL)


def prose_words(text: str) -> int:
    """Words a reader reads: not code, comments, tables, collapsed details."""
    body = _DETAILS.sub("", _FENCE.sub("", _COMMENT.sub("", text)))
    lines = [
        ln
        for ln in body.splitlines()
        if not ln.lstrip().startswith(("|", "[details", "[/details"))
    ]
    return len(re.findall(r"[A-Za-z0-9][\w'\u2019-]*", "\n".join(lines)))


def check_text(text: str, name: str, resolver: Resolver) -> list[str]:
    """Every problem of one post, as ``NAME:LINE: what`` lines."""
    problems: list[str] = []

    def problem(offset: int, what: str) -> None:
        problems.append(f"{name}:{_line(text, offset)}: {what}")

    if not text.startswith("# "):
        problem(0, "the post must start with its title as '# ...'")

    # Placeholders, anywhere except inside source markers.
    scan = text
    for m in _COMMENT.finditer(text):
        scan = _blank(scan, m.start(), m.end())
    for m in _PLACEHOLDER.finditer(scan):
        problem(m.start(), f"placeholder {m.group(0)!r}")
    for m in QUOTE_RE.finditer(text):
        scan = _blank(scan, m.start(), m.end())
    for m in _LEAKED_NONE.finditer(scan):
        problem(m.start(), "placeholder 'None'")

    # Quoted blocks must still equal what they quote (checked first: a quote
    # may hold a code fence).
    masked = text
    for m in QUOTE_RE.finditer(text):
        ref = m.group("ref")
        try:
            expected = resolver.quote(ref)
        except (SourceError, OSError, ValueError, KeyError, IndexError) as exc:
            problem(m.start(), f"quote {ref}: does not resolve ({exc})")
        else:
            if m.group("body").rstrip("\n") != expected.rstrip("\n"):
                problem(m.start(), f"quote {ref}: differs from its source")
        masked = _blank(masked, m.start(), m.end())

    # Structure: fences, details, tables.
    for m in _FENCE.finditer(masked):
        masked = _blank(masked, m.start(), m.end())
    for m in re.finditer(r"^`{3,}", masked, re.MULTILINE):
        problem(m.start(), "unclosed code fence")
    opens = len(re.findall(r"^\[details=", masked, re.MULTILINE))
    closes = len(re.findall(r"^\[/details\]", masked, re.MULTILINE))
    if opens != closes:
        problem(0, f"[details] opened {opens} times, closed {closes} times")
    _check_tables(masked, problem)

    # Sourced figures.
    for m in FIGURE_RE.finditer(masked):
        ref = m.group("ref")
        try:
            value = resolver.value(ref)
            scale = resolver.scale_ns(ref)
        except SourceError as exc:
            problem(m.start(), f"source does not resolve: {exc}")
        else:
            why = matches(m.group("num"), m.group("unit"), value, scale)
            if why:
                problem(
                    m.start(), f"figure {m.group(0).split('<')[0]!r}: {why} ({ref})"
                )
        masked = _blank(masked, m.start(), m.end())
    for m in _COMMENT.finditer(masked):
        if "src:" in m.group(0):
            problem(m.start(), "source marker without a number right before it")
        masked = _blank(masked, m.start(), m.end())

    # Internal links.
    anchors = {slug(h.group(2)) for h in _HEADING.finditer(masked)}
    anchors |= set(_ANCHOR.findall(text))
    for m in _LINK_TARGET.finditer(masked):
        target = m.group("target")
        if target.startswith("#") and target[1:] not in anchors:
            problem(m.start(), f"link to {target}: no such heading")

    # Numbers without a source.
    for pattern in (_INLINE_CODE, _LINK_TARGET, _URL, _EXEMPT):
        for m in pattern.finditer(masked):
            masked = _blank(masked, m.start(), m.end())
    for m in _NUMBER.finditer(masked):
        problem(m.start(), f"number {m.group(0)} has no source marker")

    words = prose_words(text)
    if words < MIN_WORDS or words > MAX_WORDS:
        problem(
            0, f"{words} words of prose; a Discourse RFC has {MIN_WORDS}-{MAX_WORDS}"
        )
    return problems


def _check_tables(masked: str, problem: object) -> None:
    report = problem  # typed loosely: a closure from check_text
    lines = masked.splitlines(keepends=True)
    offset = 0
    width: int | None = None
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            cells = len(re.findall(r"(?<!\\)\|", stripped)) - 1
            if width is None:
                width = cells
            elif cells != width:
                report(offset, f"table row has {cells} cells, the header {width}")  # type: ignore[operator]
        else:
            width = None
        offset += len(line)


def check_files(files: list[Path], root: Path) -> list[str]:
    """Check each draft; problems name files relative to *root* if possible."""
    from kdl.rfc.markdown import QUOTE_RENDERERS

    resolver = Resolver(root, QUOTE_RENDERERS)
    problems: list[str] = []
    for path in files:
        try:
            name = path.resolve().relative_to(root).as_posix()
        except ValueError:
            name = str(path)
        problems += check_text(path.read_text(), name, resolver)
    return problems
