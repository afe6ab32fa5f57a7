"""``kdl rfc --check``: find what a maintainer would object to in a draft.

One problem per line, ``FILE:LINE: what``. Problems:

* anything Discourse would post raw or refuse: an HTML comment, a post over
  32,000 characters;
* placeholders (TODO, TBD, XXX, FIXME, unformatted ``{name}``, a leaked
  Python ``None``, an unfilled ``{{slot}}``);
* a figure the sidecar (``<post>.sources.json``) does not trace, or one whose
  source now gives another value, or that is not where the sidecar says;
* a quoted block that no longer matches what it quotes;
* a link to ``#anchor`` that no heading provides;
* broken Markdown (an unclosed code fence or ``[details]``, a table row with
  the wrong number of cells), more than two tables;
* an upstream claim without its source: a PR named (``#N``) that the post
  never links, or a quotation in a paragraph that names no PR and links
  nothing;
* prose outside the length of a Discourse RFC;
* the claims :mod:`kdl.rfc.claims` knows: what a runtime or driver does, or
  what a PR says, with no source in its paragraph; a count of patches the
  series does not have; a patch named for what it does not add; a version
  label beside figures that measured another; a cause of failures given as
  certain; test outcomes counted in words; a setting the figures ran with
  left unsaid; the main post not in the first person, or not asking first;
* what the review of RFC v4 found: a defect of upstream code claimed with no
  source in its clause; what a tool of main's writes or names, unsourced; a
  result put on a GPU no figure beside it ran on (a unit test read as a
  device result); a case the results hold listed as not run; a claim a
  result contradicts; the open PR a post follows up without its state and
  the date of its last review; an upstream thread a maintainer would raise
  not cited; figures measured on another series version than the one posted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

from kdl.rfc import claims, runs
from kdl.rfc.figures import Resolver, SourceError
from kdl.rfc.template import Figure, Quote, evaluate, read_context, read_sidecar

#: Prose words (outside code and tables) each post may have; others get
#: DEFAULT_WORDS. The RFC is read to the end; the vocabulary post is shorter.
WORDS = {
    "ranked-selection": (500, 900),
    "metadata-vocabulary": (250, 600),
    "runtime-select": (250, 600),
}
DEFAULT_WORDS = (250, 900)
#: Discourse's default maximum post length, in characters.
MAX_CHARS = 32_000
MAX_TABLES = 2

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
    r"|^\s*\d+\.\s"
    r"|\bcompute capability \d+\.\d+"
    r"|\b\d+% CI\b",
    re.MULTILINE,
)
#: Upstream sources: a PR named in prose, a link to one, a quotation of four
#: words or more, a paragraph.
_PR_NUMBER = re.compile(r"(?<![\w/])#(\d{5,7})\b")
_PR_LINK = re.compile(
    r"\]\(https://github\.com/llvm/llvm-project/(?:pull|issues)/(\d+)\)"
)
_QUOTATION = re.compile(r'"[^"\n]*(?:\s+[^"\s]+){3,}[^"\n]*"')
_PARAGRAPH = re.compile(r"[^\n]+(?:\n[^\n]+)*")
_NUMBER = re.compile(r"(?<![\w\-./])\d+(?:\.\d+)?(?!\w|\.\d)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
_ANCHOR = re.compile(r'<a\s+name="([^"]+)"')
#: The result files a figure's expression reads (relative to the root: a
#: build's counts, kdl rfc --build-dir, lie under rfc/out/build/).
_SOURCE = re.compile(r"[^#\s|]*results/[^#\s|]+|rfc/out/[^#\s|]+")


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


def _offset(lines: list[str], line: int, col: int) -> int:
    return sum(len(ln) + 1 for ln in lines[: line - 1]) + col


def check_text(
    text: str,
    name: str,
    resolver: Resolver,
    figures: list[Figure],
    quotes: list[Quote],
    *,
    series: claims.Series | None = None,
    marks: Callable[[str], str] | None = None,
) -> list[str]:
    """Every problem of one post, as ``NAME:LINE: what`` lines (*series*:
    what the claims about patches are checked against; *marks*: the mark
    each figure must carry, from its expression, in a draft from a build
    directory)."""
    problems: list[str] = []

    def problem(offset: int, what: str) -> None:
        problems.append(f"{name}:{_line(text, offset)}: {what}")

    if not text.startswith("# "):
        problem(0, "the post must start with its title as '# ...'")
    if len(text) > MAX_CHARS:
        problem(0, f"{len(text)} characters; Discourse takes at most {MAX_CHARS}")
    for m in _COMMENT.finditer(text):
        problem(m.start(), "an HTML comment (Discourse would post it raw)")
    lines = text.split("\n")
    masked = text

    # Quoted blocks must still equal what they quote (checked first: a quote
    # may hold a code fence or a table).
    for q in quotes:
        start = _offset(lines, q.start, 0)
        end = _offset(lines, q.end + 1, 0) - 1
        try:
            expected = resolver.quote(q.ref)
        except (SourceError, OSError, ValueError, KeyError, IndexError) as exc:
            problem(start, f"quote {q.ref}: does not resolve ({exc})")
        else:
            if text[start:end].rstrip("\n") != expected.rstrip("\n"):
                problem(start, f"quote {q.ref}: differs from its source")
        masked = _blank(masked, start, end)

    # Figures: where the sidecar says, and what their sources give now.
    spans: list[tuple[int, int, str]] = []
    marked: list[tuple[int, int]] = []  # the marks of figures (not prose)
    for f in figures:
        start = _offset(lines, f.line, f.col)
        shown = text[start : start + len(f.text)]
        if shown != f.text:
            problem(
                start, f"expected {f.text!r} here ({f.expr}); the post has {shown!r}"
            )
            continue
        # Only a figure where the sidecar says it is sources a claim.
        for ref in _SOURCE.findall(f.expr):
            spans.append((start, start + len(f.text), str(resolver.root / ref)))
        try:
            again, _ = evaluate(f.expr, f.format, resolver)
        except SourceError as exc:
            problem(start, f"source does not resolve: {exc}")
        else:
            if again != f.text:
                problem(
                    start,
                    f"figure {f.text!r}: its source now gives {again!r} ({f.expr})",
                )
        masked = _blank(masked, start, start + len(f.text))
        masked = _check_mark(text, masked, f, start, marks=marks, problem=problem)
        if f.mark:
            at = start + len(f.text) + f.mark_skip
            marked.append((at, at + len(f.mark)))

    # Placeholders, outside figures and quotes.
    for m in _PLACEHOLDER.finditer(masked):
        problem(m.start(), f"placeholder {m.group(0)!r}")
    for m in re.finditer(r"\{\{.*?\}\}", masked):
        problem(m.start(), f"unfilled slot {m.group(0)!r}")
    for m in _LEAKED_NONE.finditer(masked):
        problem(m.start(), "placeholder 'None'")

    # Structure: fences, details, tables.
    for m in _FENCE.finditer(masked):
        masked = _blank(masked, m.start(), m.end())
    for m in re.finditer(r"^`{3,}", masked, re.MULTILINE):
        problem(m.start(), "unclosed code fence")
    opens = len(re.findall(r"^\[details=", masked, re.MULTILINE))
    closes = len(re.findall(r"^\[/details\]", masked, re.MULTILINE))
    if opens != closes:
        problem(0, f"[details] opened {opens} times, closed {closes} times")
    tables = _check_tables(text, problem)
    if tables > MAX_TABLES:
        problem(0, f"{tables} tables; a post keeps at most {MAX_TABLES}")

    # Internal links.
    anchors = {slug(h.group(2)) for h in _HEADING.finditer(masked)}
    anchors |= set(_ANCHOR.findall(text))
    for m in _LINK_TARGET.finditer(masked):
        target = m.group("target")
        if target.startswith("#") and target[1:] not in anchors:
            problem(m.start(), f"link to {target}: no such heading")

    # Upstream claims without a source: a PR named but never linked, and a
    # quotation in a paragraph that names no PR and links nothing.
    prose = _FENCE.sub(lambda m: " " * len(m.group(0)), masked)
    linked = {int(n) for n in _PR_LINK.findall(text)}
    for m in _PR_NUMBER.finditer(prose):
        if int(m.group(1)) not in linked:
            problem(m.start(), f"#{m.group(1)} is named but the post never links it")
    for para in _PARAGRAPH.finditer(prose):
        body = para.group(0)
        if body.startswith("#") or _PR_NUMBER.search(body) or "](http" in body:
            continue  # a heading, or a paragraph that names its source
        for quotation in _QUOTATION.finditer(body):
            problem(
                para.start() + quotation.start(),
                f"quotation {quotation.group(0)[:40]!r}... names no source in its "
                "paragraph (a PR or a link)",
            )

    found = claims.check_claims(prose, text, name, spans, series)
    sources = sorted({Path(s) for _, _, s in spans})
    found += claims.check_post(prose, text, name, sources)
    found += claims.check_upstream(
        prose,
        text,
        name,
        root=resolver.root,
        value=resolver.value,
        sources=sources,
        series=series,
    )
    for offset, what in found:
        problem(offset, what)

    # Numbers without a source.
    for pattern in (_INLINE_CODE, _LINK_TARGET, _URL, _EXEMPT):
        for m in pattern.finditer(masked):
            masked = _blank(masked, m.start(), m.end())
    for m in _NUMBER.finditer(masked):
        problem(m.start(), f"number {m.group(0)} is not a traced figure")

    low, high = WORDS.get(Path(name).stem, DEFAULT_WORDS)
    unmarked = text
    for begin, end in reversed(marked):
        unmarked = unmarked[:begin] + unmarked[end:]
    words = prose_words(unmarked)
    if words < low or words > high:
        problem(0, f"{words} words of prose; this post has {low}-{high}")
    return problems


def _check_mark(
    text: str,
    masked: str,
    f: Figure,
    start: int,
    *,
    marks: Callable[[str], str] | None,
    problem: Callable[[int, str], None],
) -> str:
    """The figure's mark: where the sidecar says, and the one its run gives
    (:mod:`kdl.rfc.runs`); *masked* with the mark blanked."""
    at = start + len(f.text) + f.mark_skip
    wanted = marks(f.expr) if marks is not None else f.mark
    if wanted != f.mark:
        said = f"marked {f.mark.strip()!r}" if f.mark else "not marked"
        now = f"{wanted.strip()!r}" if wanted else "no mark"
        problem(start, f"figure {f.text!r} is {said}; its run now gives {now}")
    if f.mark:
        if text[at : at + len(f.mark)] != f.mark:
            problem(start, f"figure {f.text!r}: its mark {f.mark.strip()!r} is gone")
        else:
            masked = _blank(masked, at, at + len(f.mark))
    return masked


def _check_tables(text: str, problem: object) -> int:
    """Check each table's rows; return how many tables *text* has."""
    report = problem  # typed loosely: a closure from check_text
    offset = 0
    width: int | None = None
    tables = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            cells = len(re.findall(r"(?<!\\)\|", stripped)) - 1
            if width is None:
                width = cells
                tables += 1
            elif cells != width:
                report(offset, f"table row has {cells} cells, the header {width}")  # type: ignore[operator]
        else:
            width = None
        offset += len(line)
    return tables


def check_files(files: list[Path], root: Path) -> list[str]:
    """Check each draft against its sidecar; problems name files relative to *root*."""
    from kdl.rfc.quotes import QUOTE_RENDERERS

    resolver = Resolver(root, QUOTE_RENDERERS)
    series = claims.load_series(root)
    problems: list[str] = []
    for path in files:
        try:
            name = path.resolve().relative_to(root).as_posix()
        except ValueError:
            name = str(path)
        try:
            figures, quotes = read_sidecar(path)
        except SourceError as exc:
            problems.append(f"{name}:1: {exc}")
            continue
        text = path.read_text()
        context = read_context(path)
        marks = None
        if context is not None:
            version = context.get("series_version")
            marks = partial(runs.mark_of, root, version=version)
        problems += check_text(
            text, name, resolver, figures, quotes, series=series, marks=marks
        )
    return problems
