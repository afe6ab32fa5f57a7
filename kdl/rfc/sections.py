"""Sections both posts share: the example, testing, plan, history, CC.

And the measurement sections built from results/selection-bench.json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from kdl.rfc import facts, rst
from kdl.rfc.figures import cite, pointer
from kdl.rfc.markdown import (
    NOT_MEASURED,
    controls_table_md,
    date,
    n,
    quote_json_text,
    quote_run,
    quoted,
    ratio,
    t,
    table,
)
from kdl.rfc.sources import BENCH, LIT_REPORT, LIT_SUMMARY, Sources


def keys(src: Sources) -> list[str]:
    if src.vocab is None:
        return []
    return [rst.to_markdown(row[0]) for row in src.vocab.rows]


def example(src: Sources, intro: str) -> list[str]:
    ex = src.example
    if ex is None:
        return [
            f"{intro} The lit test that is to show it "
            "(`llvm-tests/selection/first-compatible-wins.test`) is not written yet.",
        ]
    out = [intro, ""] if intro else []
    out.append(
        f"The lit test `{ex.test_rel}` reproduces this with the real "
        "`llvm-offload-binary`:"
    )
    out.append("")
    word = "llvm-offload-binary"
    try:
        body = quote_run(src.root / ex.test_rel, f"run:{word}")
    except ValueError:
        word = ""
        body = quote_run(src.root / ex.test_rel, "run")
    out += quoted(f"{ex.test_rel}#run:{word}" if word else f"{ex.test_rel}#run", body)
    out.append("")
    first = ex.outputs.get("first_compatible")
    ranked = ex.outputs.get("ranked")
    if first is not None and ranked is not None:
        m = re.search(r"--device=(\S+)", "\n".join(ex.run_lines))
        device = f" for the device `{m.group(1)}`" if m else ""
        out.append(
            f"Today's first-compatible loop and the proposed ranking{device} "
            "print (the test drives the proposed API through `kdl-select`, a "
            "small driver that is not part of the patches):"
        )
        out.append("")
        out += quoted(
            f"{LIT_SUMMARY}#/example/first_compatible",
            quote_json_text(src.root / LIT_SUMMARY, "/example/first_compatible"),
        )
        out.append("")
        out += quoted(
            f"{LIT_SUMMARY}#/example/ranked",
            quote_json_text(src.root / LIT_SUMMARY, "/example/ranked"),
        )
        out.append("")
    if ex.code is not None and src.lit is not None:
        out.append(
            f"The test's result in the last run ({date(src.lit.get('date'))}): "
            f"`{ex.code}`."
        )
    else:
        out.append("The test has not run yet; its outcome is not recorded.")
    return out


def _lit_dirs(src: Sources) -> list[str]:
    """Directories of the lit suite that have tests in lit's report."""
    report = src.root / LIT_REPORT
    try:
        tests = json.loads(report.read_text()).get("tests", [])
    except (OSError, ValueError, AttributeError):
        return []
    dirs = set()
    for test in tests:
        name = str(test.get("name", "")).partition(" :: ")[2]
        if "/" in name:
            dirs.add(name.split("/")[0] + "/")
    return sorted(dirs)


def testing(src: Sources) -> list[str]:
    out = ["## Testing", ""]
    if src.lit is None:
        out.append(f"- lit suite (`llvm-tests/`): results {NOT_MEASURED}.")
    else:
        c = f"{LIT_SUMMARY}#/counts/"
        counts = src.lit["counts"]
        tools = src.lit.get("tools") or {}
        m = re.search(
            r"LLVM version (\d+(?:\.\d+)*)", str(tools.get("llvm-offload-binary"))
        )
        made = f" (LLVM {m.group(1)})" if m else ""
        dirs = _lit_dirs(src)
        where = f" Areas: {', '.join(f'`{d}`' for d in dirs)}." if dirs else ""
        out.append(
            f"- A lit suite (`llvm-tests/`, in the idiom of "
            f"`llvm/test/tools/llvm-offload-binary`) packs its inputs with "
            f"`llvm-offload-binary`{made} and checks every result with FileCheck. "
            f"Last run ({date(src.lit.get('date'))}): "
            f"{n(c + 'total', counts['total'])} tests, "
            f"{n(c + 'passed', counts['passed'])} passed, "
            f"{n(c + 'failed', counts['failed'])} failed, "
            f"{n(c + 'unsupported', counts['unsupported'])} unsupported.{where}"
        )
    if src.gtest is not None:
        rel, data = src.gtest
        out.append(
            f"- Unit tests (gtest, beside `llvm/unittests/Object/OffloadingTest.cpp`): "
            f"{n(rel + '#/tests', int(data['tests']))} tests, "
            f"{n(rel + '#/failures', int(data.get('failures', 0)))} failures."
        )
    else:
        out.append(f"- Unit tests (gtest): results {NOT_MEASURED}.")
    return out


def plan(src: Sources, skip: str | None = None) -> list[str]:
    """The series' patches as pull requests; those whose every file lies
    under *skip* belong to the other RFC and are only named."""
    out = ["## Implementation plan", ""]
    if not src.patches:
        out.append(
            f"Not available: {src.series_problem or 'the series is not exported yet'}."
        )
        return out
    out.append("One pull request per patch, in this order:")
    out.append("")
    for i, p in enumerate(src.patches, 1):
        if skip and all(f.startswith(skip) for f in p.files):
            out.append(f"{i}. **{p.subject}** (the companion RFC)")
            continue
        stat = (
            f"+{n(p.rel + '#insertions', p.insertions)}/"
            f"-{n(p.rel + '#deletions', p.deletions)} lines"
        )
        where = ", ".join(f"`{f}`" for f in p.files[:4])
        if len(p.files) > 4:
            where += ", ..."
        out.append(f"{i}. **{p.subject}** ({stat}; {where})")
    return out


def history(
    src: Sources, numbers: Iterable[int], states: dict[int, str] | None
) -> list[str]:
    out = ["## Upstream history", ""]
    rows = []
    for num in numbers:
        item = facts.pr(num)
        state = (states or {}).get(num, item.state)
        title = f"{item.title}: " if item.title else ""
        rows.append([f"[#{num}]({item.url})", state, f"{title}{item.what}"])
    out += table(["PR", "state", "what it did"], rows)
    out.append("")
    if states:
        out.append(
            "PR states from api.github.com when this draft was made (where it "
            "answered; otherwise as read from the threads in 2026-11)."
        )
    else:
        out.append("PR states as read from the threads in 2026-11.")
    return out


def cc() -> list[str]:
    names = ", ".join(f"{o.github} ({o.area})" for o in facts.OWNERS)
    sources = sorted({o.source for o in facts.OWNERS if "Maintainers" in o.source})
    return [
        "## CC",
        "",
        f"GitHub handles (Discourse names may differ): {names}. "
        f"Roles from {'; '.join(sources)}.",
    ]


def _sources_line() -> str:
    """The links behind the comparison tables, one line."""
    links = "; ".join(f"[{s.name}]({s.source.split()[0]})" for s in facts.SYSTEMS)
    return f"Sources: {links}."


def systems_table() -> list[str]:
    rows = [[s.name, s.filters, s.ranks, s.explains] for s in facts.SYSTEMS]
    out = table(["system", "filters by", "chooses by", "explains its choice"], rows)
    return [*out, "", _sources_line()]


def capability_table() -> list[str]:
    rows = [[c.name, *c.answers] for c in facts.CAPABILITIES]
    out = table(["system", *facts.CAPABILITY_COLUMNS], rows)
    return [*out, "", _sources_line()]


def _machine(bench: dict[str, Any]) -> str:
    m = bench.get("machine", {})
    cpus = m.get("cpus")
    cpu_text = f" ({n(BENCH + '#/machine/cpus', int(cpus))} CPUs)" if cpus else ""
    method = bench.get("method", {})
    how = ""
    if isinstance(method.get("rounds"), int) and isinstance(
        method.get("sample_us"), int
    ):
        how = (
            f"; {n(BENCH + '#/method/rounds', method['rounds'])} interleaved rounds "
            "per case, each sample the mean time of a batch of calls lasting at "
            f"least {cite(str(method['sample_us']), BENCH + '#/method/sample_us')} us"
        )
    load = m.get("load_average_before")
    if isinstance(load, list) and load and isinstance(load[0], int | float):
        load_ref = BENCH + "#/machine/load_average_before/0"
        how += (
            "; the machine was shared (one-minute load average "
            f"{cite(f'{load[0]:.2f}', load_ref)} before the run)"
        )
    return (
        f"Measured on `{m.get('cpu_model', 'unknown CPU')}`{cpu_text}, "
        f"`{bench.get('compiler', 'unknown compiler')}`, LLVM "
        f"`{bench.get('llvm_version', '?')}`, {date(bench.get('date'))}{how}"
    )


def _case_ref(i: int, *parts: str) -> str:
    return pointer(BENCH, "cases", i, *parts)


def _stat(i: int, what: str, case: dict[str, Any]) -> str:
    s = case[what]
    return (
        f"{t(_case_ref(i, what, 'median_ns'), s['median_ns'])} "
        f"({t(_case_ref(i, what, 'p5_ns'), s['p5_ns'])} to "
        f"{t(_case_ref(i, what, 'p95_ns'), s['p95_ns'])})"
    )


def vocab_measurements(src: Sources) -> list[str]:
    bench = src.bench
    if bench is None:
        return [f"Parsing and checking cost: {NOT_MEASURED}."]
    rows = []
    for i, case in enumerate(bench["cases"]):
        if case.get("scenario") != "one-compatible" or case.get("best") not in (
            "last",
            "only",
        ):
            continue
        rows.append(
            [
                n(_case_ref(i, "images"), case["images"]),
                _stat(i, "parse", case),
                _stat(i, "check", case),
            ]
        )
    size = bench.get("payload_bytes")
    each = f" of {n(BENCH + '#/payload_bytes', int(size))} bytes each" if size else ""
    out = [
        "Cost of reading a binary packed by `llvm-offload-binary` "
        f"(`extractOffloadBinaries`, images{each}) and of checking every image "
        "against one device, median (p5 to p95):",
        "",
    ]
    out += table(["images", "parse", "check all images"], rows)
    out += ["", _machine(bench) + "."]
    return out


def bench_section(bench: dict[str, Any]) -> list[str]:
    cases = bench["cases"]
    out = [
        "Both policies run interleaved on the same parsed binaries (packed by "
        "`llvm-offload-binary`) for a "
        f"`{bench.get('device', {}).get('triple', '?')}` "
        f"`{bench.get('device', {}).get('arch', '?')}` device; today's loop is the "
        "triple check plus the CUDA plugin's arch rule. One image is compatible, "
        "so both pick it; when it is last, both scan every image. Median per call "
        "(p5 to p95):",
        "",
    ]
    rows = []
    for i, case in enumerate(cases):
        if case.get("scenario") != "one-compatible":
            continue
        rows.append(
            [
                n(_case_ref(i, "images"), case["images"]),
                case["best"],
                _stat(i, "ranked", case),
                _stat(i, "first_wins", case),
                ratio(_case_ref(i, "ratio", "median"), case["ratio"]["median"]),
                "yes" if case["first_wins_scans_same"] else "no (stops early)",
            ]
        )
    out += table(
        [
            "images",
            "best at",
            "ranked",
            "first-wins",
            "ranked / first-wins",
            "same images scanned",
        ],
        rows,
    )
    out.append("")
    out += _per_image(cases)
    many = [
        (i, c) for i, c in enumerate(cases) if c.get("scenario") == "all-compatible"
    ]
    if many:
        out.append(
            '[details="When every image is compatible (first-wins stops at the first, '
            'often wrong, image)"]'
        )
        out.append("")
        rows = []
        for i, case in many:
            chosen = case["selected"]
            rows.append(
                [
                    n(_case_ref(i, "images"), case["images"]),
                    case["best"],
                    _stat(i, "ranked", case),
                    _stat(i, "first_wins", case),
                    n(_case_ref(i, "selected", "ranked"), chosen["ranked"])
                    + " / "
                    + n(_case_ref(i, "selected", "first_wins"), chosen["first_wins"]),
                ]
            )
        out += table(
            [
                "images",
                "best at",
                "ranked",
                "first-wins",
                "image chosen (ranked / first-wins)",
            ],
            rows,
        )
        out += ["", "[/details]", ""]
    for g, goal in enumerate(bench.get("goals", [])):
        out.append(_goal_line(g, goal))
    out += ["", _machine(bench) + "."]
    return out


def _per_image(cases: list[dict[str, Any]]) -> list[str]:
    """The per-image cost where both policies scan the same images."""
    same = [
        (i, c)
        for i, c in enumerate(cases)
        if c.get("scenario") == "one-compatible"
        and c.get("first_wins_scans_same")
        and "per_image_ns" in c["ranked"]
    ]
    if not same:
        return []
    # The goal's size if measured, else the largest.
    i, case = max(same, key=lambda item: (item[1]["images"] == 64, item[1]["images"]))
    early = [
        (j, c)
        for j, c in enumerate(cases)
        if c.get("scenario") == "one-compatible"
        and c["images"] == case["images"]
        and c.get("best") == "first"
    ]
    ranked = t(_case_ref(i, "ranked", "per_image_ns"), case["ranked"]["per_image_ns"])
    first_wins = t(
        _case_ref(i, "first_wins", "per_image_ns"), case["first_wins"]["per_image_ns"]
    )
    text = (
        f"Where both scan the same {n(_case_ref(i, 'images'), case['images'])} "
        f"images, ranking costs {ranked} per image and today's loop {first_wins}."
    )
    if early:
        j, first = early[0]
        text += (
            " With the best image first, today's loop stops after one image while "
            f"ranking reads all of them, so the ratio there "
            f"({ratio(_case_ref(j, 'ratio', 'median'), first['ratio']['median'])}) "
            "measures the early exit, not the cost per image."
        )
    return [text, ""]


def _goal_line(g: int, goal: dict[str, Any]) -> str:
    ref = pointer(BENCH, "goals", g)
    verdict = "met" if goal.get("met") else "**not met**"
    if goal.get("kind") == "time":
        return (
            f"- Goal: ranked selection of {n(ref + '/images', goal['images'])} images "
            f"under {t(ref + '/threshold_ns', goal['threshold_ns'])}: {verdict} "
            f"(worst median {t(ref + '/worst_ns', goal['worst_ns'])})."
        )
    within = cite(f"{goal['threshold_ratio']:.1f}x", ref + "/threshold_ratio")
    return (
        f"- Goal: ranked within {within} "
        f"of first-wins where both scan the same images: {verdict} "
        f"(worst ratio {ratio(ref + '/worst_ratio', goal['worst_ratio'])})."
    )


def controls(src: Sources) -> list[str]:
    """The runtime's environment variables, quoted from its docs page."""
    if src.controls is None:
        return []
    return [
        f"The runtime patch documents its controls (`{src.controls.page}`):",
        "",
        *quoted(src.controls.ref, controls_table_md(src.controls.rows)),
    ]
