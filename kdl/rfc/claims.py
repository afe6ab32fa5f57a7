"""Claims a reviewer checks: each upstream claim sourced, each figure labelled
with the code it measured, each patch named for what it is.

The rules are data (the tables below); :func:`check_claims` applies them to a
post's prose (code, quotes and figures masked by the caller) and reports
``(offset, what)``. A claim's *source* is a link, a ``results/`` path or a
traced figure in its sentence or the one before or after it. What a rule
knows of the series (how many fixes, what each patch adds) comes from
``patches/series`` and ``patches/proposals/series`` of the workspace, not
from here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kdl.errors import WorkspaceError

_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve".split()  # noqa: SIM905
)
_WORD = "|".join(_NUMBER_WORDS)

#: Who does something upstream: a sentence that says what one of them does
#: needs a source in its paragraph (what the CUDA driver picks, what main's
#: registration does, what no runtime reads).
UPSTREAM = re.compile(
    r"\b(?:the CUDA driver|CUDA's driver|no (?:upstream )?runtime|every runtime"
    r"|libomptarget|registerLib|liboffload|the Level Zero plugin|the HIP runtime)\b",
    re.IGNORECASE,
)
#: What a pull request says or does, in our words: the paragraph must link it.
PARAPHRASE = re.compile(
    r"#(\d{5,7})'s (?:author|description|review|code)\b"
    r"|#(\d{5,7})\b[^.]*\bits (?:author|description|review)\b"
    r"|\b(?:behaves|works|loads) (?:exactly |just )?(?:as|like) #(\d{5,7})"
    r"|\bthe author of #(\d{5,7})"
)
#: A cause given for failures: only with a hedge or its evidence.
CAUSE = re.compile(
    r"\bfail(?:ures?|s|ed)?\b[^.;]*\b(?:are|come from|caused by|due to)\b[^.;]*"
    r"\b(?:our|my|the) (?:set-?up|environment|machine)",
    re.IGNORECASE,
)
HEDGE = re.compile(r"\bnot all\b|\binvestigat|\bsome of\b|results/|\]\(http", re.I)
#: A count of patches in words: it must be one of the series' counts.
PATCH_COUNT = re.compile(
    rf"\b({_WORD})\s+(?:[a-z-]+\s+)?(patches|fixes|commits|pull requests|PRs)\b",
    re.IGNORECASE,
)
#: Test outcomes counted in words: a figure, so it must be traced.
OUTCOME_IN_WORDS = re.compile(
    rf"\b({_WORD})\b(?:\s+of them)?\s+(?:an?\s+)?(?:expected failures?|XFAILs?"
    r"|unexpected pass(?:es)?|failures?\b|tests? (?:failed|passed))",
    re.IGNORECASE,
)
#: A patch named by its number (0001-9999).
PATCH_NUMBER = re.compile(r"(?<![\w/.-])(\d{4})(?![\w.-])")
_CODE = re.compile(r"`([^`\n]+)`")
ADDS = re.compile(r"\b(?:adds|add|introduces|defines)\b", re.IGNORECASE)
#: A version label in prose (series v7, v6, version 7).
VERSION_LABEL = re.compile(r"(?<![\w-])(?:v|version )(\d+)\b", re.IGNORECASE)
#: What a result file says it measured.
MEASURED_VERSION = re.compile(r"\bseries v(\d+)\b")
#: Settings a figure depends on, recorded in its source: the post shows them.
SETTINGS = re.compile(r'"(CHECK_OPENMP_ENV|OMP_\w+|KMP_\w+)": "([^"]+)"')
FIRST_PERSON = re.compile(r"\b(?:I|I'd|I'll|I'm|I've|my|me)\b")
ASK = re.compile(r"\?|\bI'd like\b|\bI ask\b|\bplease\b", re.IGNORECASE)
#: Posts that speak in the first person (at least this many times) and ask
#: in their first paragraph.
SPEAKS = {"ranked-selection": 5}

#: A defect claimed in upstream code (a crash, a trap, a misreading, a leak,
#: code accepted where it does not run): each clause that claims one needs
#: its own source, a link, a results/ path or a traced figure.
DEFECT = re.compile(
    r"\b(?:crash(?:es|ed)?|traps?|segfaults?|misreads?|leaks?|never unloads?"
    r"|does not check|without destroying|copies every"
    r"|reads every\b[^;.]*\bas\b|accepts?\b[^;.]*\bon an?\b)",
    re.IGNORECASE,
)
#: What a tool of main's writes, reads, names or prints: a source in the
#: same sentence.
TOOL_CLAIM = re.compile(
    r"(?:\bmain's (?:ELF reader|reader|clang|linker wrapper|`[\w-]+`)"
    r"|`clang-linker-wrapper`|\bclang-linker-wrapper\b|\bthe linker wrapper\b)"
    r"[^.;]*?\b(?:reads?|names?|writes?|prints?|lists?|emits?|sorts?)\b",
    re.IGNORECASE,
)
#: A GPU a result is put on: some figure in the paragraph must have run there.
DEVICE = re.compile(
    r"\b(?:on|an?|the) (?:NVIDIA |AMD )?(MI\d{2,3}[A-Z]?|[A-H]\d{2,3}|GH200)\b"
)
#: Words that say a device result is not one: a question, a plan, a test
#: without the device.
NOT_A_RESULT = re.compile(
    r"\?|\bwould\b|\bnot run\b|\bdid not\b|\bunit test|\bmodel", re.I
)
#: Headings of what a post did not run.
NOT_RUN_HEADING = re.compile(r"\b(?:not run|did not run|not measured)\b", re.I)


@dataclass(frozen=True)
class Measured:
    """A case a result file holds: listing it as not run is wrong."""

    pattern: re.Pattern[str]
    results: str  # a glob under results/
    pointer: str  # a JSON pointer that exists where it was measured
    what: str


#: Cases that were run, whatever a draft says (the review of RFC v4, #17).
MEASURED = (
    Measured(
        re.compile(r"`?IMG_None`?"),
        "results/gpu/real-runtimes*/report.json",
        "/choices/v1-ptxnone90-90.bin/22-series/short",
        "PTX in an entry of image kind IMG_None beside a cubin",
    ),
)


@dataclass(frozen=True)
class Contradicted:
    """A claim a result contradicts: *pattern* in prose while *ref* gives
    *value*."""

    pattern: re.Pattern[str]
    ref: str
    value: object
    what: str


#: Claims the results show wrong (the review of RFC v4, #18).
CONTRADICTED = (
    Contradicted(
        re.compile(
            r"\bas (?:it|the CUDA plugin|the plugin) does(?: with)? raw PTX"
            r"|\b(?:accepts?|accepted)\b[^.?;]*\braw PTX\b",
            re.I,
        ),
        "results/gpu/real-runtimes/report.json#/choices/compute_80.ptx/main/valid",
        False,
        "main's plugins do not accept raw PTX (olIsValidBinary says no); "
        "olCreateProgram hands it to the CUDA driver, which compiles it",
    ),
)

_PARAGRAPH = re.compile(r"[^\n]+(?:\n[^\n]+)*")
_SENTENCE = re.compile(r"(?:[^.!?]|[.!?](?=[\w`]))+(?:[.!?]+|$)")


@dataclass
class Series:
    """What the rules know of the series: the counts a post may say and the
    text of each numbered patch (stack and proposals)."""

    counts: set[int] = field(default_factory=set)
    #: A post the series names (``post: rfc NAME``) speaks of its patches
    #: only: the counts of that series.
    own: dict[str, set[int]] = field(default_factory=dict)
    #: "0003" -> (subject, text) of each patch of that number.
    patches: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: The version of the series that would be posted (``version: N``).
    version: int | None = None


def load_series(root: Path) -> Series | None:
    """The series under *root*/patches, or None where there is none."""
    from kdl.series.model import load

    found = Series()
    try:
        stack = load(root / "patches" / "series")
        proposals = load(root / "patches" / "proposals" / "series")
    except WorkspaceError:
        return None
    found.version = stack.version
    for series in (stack, proposals):
        for patch in series.patches:
            entry = (patch.subject, patch.read().decode(errors="replace"))
            found.patches.setdefault(patch.name[:4], []).append(entry)
        counts = {len(series.patches)} | {len(s.numbers) for s in series.posting}
        found.counts |= counts
        for step in series.posting:
            if step.rfc:
                found.own[step.rfc] = counts
    return found


def _sentences(body: str) -> Iterator[tuple[int, str]]:
    for m in _SENTENCE.finditer(body):
        yield m.start(), m.group(0)


def check_claims(
    prose: str,
    text: str,
    name: str,
    figure_spans: list[tuple[int, int, str]],
    series: Series | None,
) -> list[tuple[int, str]]:
    """Problems of *prose* (the post with code, quotes and figures blanked;
    offsets as in *text*). *figure_spans*: (start, end, source file) of
    each traced figure."""
    out: list[tuple[int, str]] = []
    for para in _PARAGRAPH.finditer(prose):
        body, at = para.group(0), para.start()
        if re.match(r"#{1,6}\s", body.lstrip()):
            continue  # a heading
        raw = text[at : para.end()]
        figures = [f for f in figure_spans if at <= f[0] < para.end()]
        linked = {int(n) for n in re.findall(r"/(?:pull|issues)/(\d+)\)", raw)}
        sentences = list(_sentences(body))
        # A source: a link, a results/ path or a traced figure in the
        # sentence or the one before or after it.
        has = [
            "](http" in raw[a : a + len(x)]
            or "results/" in raw[a : a + len(x)]
            or any(at + a <= f[0] < at + a + len(x) for f in figures)
            for a, x in sentences
        ]
        for i, (start, sentence) in enumerate(sentences):
            where = at + start
            sourced = any(has[max(i - 1, 0) : i + 2])
            m = UPSTREAM.search(sentence)
            if m and not sourced and not sentence.rstrip().endswith("?"):
                out.append(
                    (
                        where + m.start(),
                        f"what {m.group(0)} does is claimed with no source beside "
                        "it (a link, a results/ path or a traced figure)",
                    )
                )
            for p in PARAPHRASE.finditer(sentence):
                number = int(next(g for g in p.groups() if g))
                if number not in linked:
                    out.append(
                        (
                            where + p.start(),
                            f"#{number} paraphrased without its link in the paragraph",
                        )
                    )
            out += _defects(
                sentence, raw[start : start + len(sentence)], where, figures
            )
            m = TOOL_CLAIM.search(sentence)
            if m and not has[i]:
                out.append(
                    (
                        where + m.start(),
                        f"what {m.group(0)[:40]!r}... does is claimed with no "
                        "source beside it (a link, a results/ path or a traced "
                        "figure)",
                    )
                )
            m = DEVICE.search(sentence)
            if m and not NOT_A_RESULT.search(sentence):
                ran = any(_names(f[2], m.group(1)) for f in figures)
                if not ran:
                    out.append(
                        (
                            where + m.start(),
                            f"a result put on {m.group(1)}, where no figure of "
                            "its paragraph ran (a unit test is not a device "
                            "result)",
                        )
                    )
            m = CAUSE.search(sentence)
            if m and not HEDGE.search(sentence):
                out.append(
                    (
                        where + m.start(),
                        "a cause of failures stated as certain, with no evidence",
                    )
                )
            m = OUTCOME_IN_WORDS.search(sentence)
            if m:
                out.append(
                    (
                        where + m.start(),
                        f"{m.group(0)!r}: a count in words, not a traced figure",
                    )
                )
            out += _patches(
                sentence, raw[start : start + len(sentence)], where, series, name
            )
        out += _versions(body, at, figures)
    return out


def _defects(
    sentence: str, raw: str, where: int, figures: list[tuple[int, int, str]]
) -> list[tuple[int, str]]:
    """Each clause (``;``-separated) that claims a defect in upstream code
    needs a source in that clause."""
    out = []
    offset = 0
    for clause in sentence.split(";"):
        m = DEFECT.search(clause)
        part = raw[offset : offset + len(clause)]
        if m and "](http" not in part and "results/" not in part:
            start = where + offset
            if not any(start <= f[0] < start + len(clause) for f in figures):
                out.append(
                    (
                        start + m.start(),
                        f"a defect of upstream code ({m.group(0)[:30]!r}) "
                        "claimed with no source in its clause (a link, a "
                        "results/ path or a traced figure)",
                    )
                )
        offset += len(clause) + 1
    return out


def _names(source: str, device: str) -> bool:
    """Whether the result file *source* names *device* (where it ran)."""
    try:
        return device in Path(source).read_text(errors="replace")
    except OSError:
        return False


def _patches(
    sentence: str, raw: str, where: int, series: Series | None, name: str
) -> list[tuple[int, str]]:
    """Counts of patches and patches named by number, against the series."""
    if series is None:
        return []
    out: list[tuple[int, str]] = []
    counts = series.own.get(Path(name).stem, series.counts)
    for m in PATCH_COUNT.finditer(sentence):
        count = _NUMBER_WORDS.index(m.group(1).lower()) + 1
        if count not in counts:
            out.append(
                (
                    where + m.start(),
                    f"{m.group(0)!r}: the series has no step of {count} "
                    f"(its counts: {', '.join(map(str, sorted(counts)))})",
                )
            )
    names = [c for c in _CODE.findall(raw) if not PATCH_NUMBER.fullmatch(c)]
    for m in PATCH_NUMBER.finditer(raw):
        texts = series.patches.get(m.group(1))
        if texts is None:
            continue
        if not names:
            if re.search(r"\bfix", sentence, re.IGNORECASE):
                out.append(
                    (where + m.start(), f"{m.group(1)}: a fix named only by its number")
                )
            continue
        wanted = [n.rsplit("::", 1)[-1].rstrip("()") for n in names]
        # "adds X": X is what the patch is about (its subject); otherwise
        # the patch at least touches X.
        adds = ADDS.search(sentence)
        where_ = [subject if adds else text for subject, text in texts]
        if not any(w in t for w in wanted for t in where_):
            out.append(
                (
                    where + m.start(),
                    f"patch {m.group(1)} does not add {', '.join(names)}",
                )
            )
    return out


def _measured(source: str) -> frozenset[str]:
    """The series versions a result file says it measured."""
    try:
        return frozenset(MEASURED_VERSION.findall(Path(source).read_text()))
    except OSError:
        return frozenset()


def _versions(
    body: str, at: int, figures: list[tuple[int, int, str]]
) -> list[tuple[int, str]]:
    """A version label beside figures must be the version they measured."""
    measured: set[str] = set()
    for source in {f[2] for f in figures}:
        measured |= _measured(source)
    out = []
    if measured:
        for m in VERSION_LABEL.finditer(body):
            if m.group(1) not in measured:
                out.append(
                    (
                        at + m.start(),
                        f"{m.group(0)!r} labels figures that measured series "
                        f"v{', v'.join(sorted(measured))}",
                    )
                )
    return out


def check_post(
    prose: str, text: str, name: str, sources: list[Path]
) -> list[tuple[int, str]]:
    """The post as a whole: first person and its ask first (where
    :data:`SPEAKS` says), and the settings its figures depend on shown."""
    out: list[tuple[int, str]] = []
    least = SPEAKS.get(Path(name).stem)
    if least is not None:
        said = len(FIRST_PERSON.findall(prose))
        if said < least:
            out.append(
                (0, f"first person {said} times; this post speaks as its author")
            )
        paras = [
            p
            for p in _PARAGRAPH.finditer(prose)
            if p.group(0).strip() and not p.group(0).lstrip().startswith("#")
        ]
        if paras and not ASK.search(paras[0].group(0)):
            out.append((paras[0].start(), "the first paragraph asks nothing"))
    for source in sorted(set(sources)):
        try:
            settings = SETTINGS.findall(source.read_text())
        except OSError:
            continue
        for key, value in settings:
            if value not in text:
                out.append(
                    (0, f"its figures ran with {key}={value}, which it never says")
                )
    return out


_BULLET = re.compile(r"^\s*(?:[-*]|\d+\.)\s+(?P<item>.*)$", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.*)$", re.MULTILINE)
_LINKED = re.compile(r"\]\(https://github\.com/llvm/llvm-project/(?:pull|issues)/(\d+)")


def _sections(prose: str) -> Iterator[tuple[str, int, str]]:
    """(heading, offset of the body, body) of each section of *prose*."""
    heads = list(_HEADING.finditer(prose))
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(prose)
        yield head.group("title"), head.end(), prose[head.end() : end]


def check_upstream(
    prose: str,
    text: str,
    name: str,
    *,
    root: Path,
    value: Callable[[str], object],
    sources: list[Path],
    series: Series | None,
) -> list[tuple[int, str]]:
    """What the review of RFC v4 found: a measured case filed as not run, a
    claim a result contradicts, the followed-up PR's state unsaid, upstream
    threads a maintainer would raise not cited. *value* resolves a figure
    reference (``FILE#SELECTOR``)."""
    out: list[tuple[int, str]] = []
    stem = Path(name).stem
    for heading, at, body in _sections(prose):
        if not NOT_RUN_HEADING.search(heading):
            continue
        for item in _BULLET.finditer(body):
            for case in MEASURED:
                m = case.pattern.search(item.group("item"))
                if m is None:
                    continue
                ran = [
                    p
                    for p in sorted(root.glob(case.results))
                    if _has(value, p.relative_to(root).as_posix(), case.pointer)
                ]
                if ran:
                    where = ran[-1].relative_to(root).as_posix()
                    out.append(
                        (
                            at + item.start("item") + m.start(),
                            f"{case.what} was run ({where}#{case.pointer}): "
                            f"under {heading!r}, a result reads as not run",
                        )
                    )
    for claim in CONTRADICTED:
        for m in claim.pattern.finditer(prose):
            if _has(value, *claim.ref.split("#", 1), equal=claim.value):
                out.append(
                    (
                        m.start(),
                        f"{m.group(0)!r}: {claim.ref} contradicts it ({claim.what})",
                    )
                )
    out += _followed_up(prose, text)
    linked = {int(n) for n in _LINKED.findall(text)}
    from kdl.rfc import facts

    for number, why in facts.CITES.get(stem, ()):
        if number not in linked:
            out.append((0, f"#{number} is not cited ({why})"))
    return out


def check_posted_version(
    name: str, root: Path, sources: list[Path], series: Series | None
) -> list[tuple[int, str]]:
    """A post the series posts (``post: rfc NAME``) shows figures of the
    version it posts: the newest series version each result file says it
    measured must be that one. (``kdl rfc --check`` calls it once the RFC's
    cost figures are the posted version's; see docs/rfc.md.)"""
    if series is None or series.version is None:
        return []
    if Path(name).stem not in series.own:
        return []
    out: list[tuple[int, str]] = []
    for source in sorted(set(sources)):
        try:
            said = {int(v) for v in MEASURED_VERSION.findall(source.read_text())}
        except OSError:
            continue
        if said and max(said) != series.version:
            shown = source.relative_to(root) if source.is_relative_to(root) else source
            out.append(
                (
                    0,
                    f"its figures from {shown} measured series v{max(said)}; "
                    f"the series it posts is v{series.version}",
                )
            )
    return out


def _has(
    value: Callable[[str], object], file: str, pointer: str, *, equal: object = ...
) -> bool:
    """Whether *file* has *pointer* (and, with *equal*, that value)."""
    try:
        got = value(f"{file}#{pointer}")
    except WorkspaceError:
        return False
    return equal is ... or got == equal


def _followed_up(prose: str, text: str) -> list[tuple[int, str]]:
    """An open PR the title names: the post says it is open, and since when
    it has had no review (its latest date in the thread)."""
    from kdl.rfc import facts

    title = text.split("\n", 1)[0]
    out: list[tuple[int, str]] = []
    for number in (int(n) for n in re.findall(r"#(\d{5,7})", title)):
        try:
            pr = facts.pr(number)
        except KeyError:
            continue
        if pr.state != "open" or pr.last_seen is None:
            continue
        said = [
            p
            for p in _PARAGRAPH.finditer(prose)
            if pr.last_seen in p.group(0) and re.search(r"\bopen\b", p.group(0))
        ]
        if not said:
            out.append(
                (
                    0,
                    f"#{number} is followed up, but the post never says it is "
                    f"open with no review since {pr.last_seen} (its thread, as "
                    "read)",
                )
            )
    return out
