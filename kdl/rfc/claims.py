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
from collections.abc import Iterator
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


def load_series(root: Path) -> Series | None:
    """The series under *root*/patches, or None where there is none."""
    from kdl.series.model import load

    found = Series()
    try:
        stack = load(root / "patches" / "series")
        proposals = load(root / "patches" / "proposals" / "series")
    except WorkspaceError:
        return None
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
        linked = {int(n) for n in re.findall(r"/pull/(\d+)\)", raw)}
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
