"""The rank of offload code for a device, built where it is used.

The series' ``[Object] Add a rank of offload code for a device target``
creates ``llvm/lib/Object/OffloadTargetRank.cpp``, its header and its unit
test. The one text of the rank (the main series' patch, which the
release/22.x backport applies as it is; the backport's next patch drops the
one case of its test 22.1.8's Triple cannot read) is compiled:

- against LLVM main: main's headers and libraries in the sid root;
- against LLVM 22.1.8: the installed LLVM 22 with the backport's changed
  and new LLVM sources (the NVPTX target parser, AMDGPU::TargetID, main's
  ``areTargetsEquivalent``/``areTargetsCompatible``) compiled from their
  patched texts and linked ahead of its libraries.

Both builds run the rank's unit test, and both answer the differential
corpus (:mod:`kdl.build.rankcorpus`) through ``tools/rank/RankDiff.cpp``:
every answer must be the same. With ``bench``, main's build also runs
``tools/rank/OffloadTargetRankBench.cpp`` (google benchmark) and reports the
ratios the series aims at: ranking 64 entries against a first-compatible
loop over them and against reading the container.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdl import paths, record
from kdl.build import rankcorpus
from kdl.build.ranktexts import (
    RANK_HEADER,
    RANK_SOURCE,
    RANK_TEST,
    backport_texts,
    write_tree,
)
from kdl.build.toolchain import Toolchain, main_toolchain
from kdl.build.unittests import HEADERS, series_texts
from kdl.errors import WorkspaceError
from kdl.series.model import load
from kdl.trees.common import Tree

log = logging.getLogger("kdl")

MAIN_SERIES = paths.SERIES
BACKPORT_SERIES = paths.BACKPORT_SERIES

TOOLS = paths.ROOT / "tools" / "rank"
COMPONENTS = ["object", "targetparser"]


@dataclass
class RankRun:
    passed: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def add(self, one: RankRun, line: str) -> None:
        """Count *one*'s checks here, with its summary *line*."""
        self.passed += one.passed
        self.failed += one.failed
        self.problems += one.problems
        self.lines.append(line)


def build(
    tc: Toolchain, texts: dict[str, str], units: list[str], bench: bool
) -> dict[str, Path]:
    """The rank's test, RankDiff and (with *bench*) the benchmark, built by
    *tc* from *texts* (llvm-project paths); *units* are the LLVM sources
    linked ahead of the libraries."""
    src = tc.work / "src"
    write_tree(texts, src)
    include = src / HEADERS
    objects = []
    for unit in units:
        obj = tc.work / (Path(unit).stem + ".o")
        tc.compile(src / unit, obj, [include])
        objects.append(obj)
    programs = {
        "test": src / RANK_TEST,
        "diff": TOOLS / "RankDiff.cpp",
    }
    if bench:
        programs["bench"] = TOOLS / "OffloadTargetRankBench.cpp"
    out = {}
    for name, source in programs.items():
        copy = tc.work / source.name
        shutil.copy2(source, copy)
        obj = copy.with_suffix(".o")
        tc.compile(copy, obj, [include])
        binary = tc.work / f"rank-{name}"
        libs = ["-lbenchmark"] if name == "bench" else []
        tc.link([*objects, obj], binary, COMPONENTS, libs)
        out[name] = binary
    return out


def answers(tc: Toolchain, binary: Path, corpus: bytes, *args: str) -> list[str]:
    """What the rank built by *tc* answers for each line of *corpus*."""
    done = tc.run([tc.path(binary), *args], input=corpus)
    return done.stdout.decode().splitlines()


def bench_ratios(tc: Toolchain, binary: Path) -> dict[str, Any]:
    """Run the benchmark; the ratios of the 64-entry cases, CPU time."""
    report = tc.work / "bench.json"
    tc.run(
        [
            tc.path(binary),
            "--benchmark_min_time=0.2s",
            "--benchmark_format=json",
            f"--benchmark_out={tc.path(report)}",
        ]
    )
    data = json.loads(report.read_text())
    cpu = {b["name"]: b["cpu_time"] for b in data["benchmarks"]}
    ratios = {}
    # amdgpu_main: the entries spelled as main's clang writes them.
    for target in ("nvptx", "amdgpu", "amdgpu_main"):
        rank = cpu[f"rankEntries/{target}/64"]
        ratios[target] = {
            "rank_64_ns": round(rank, 1),
            "rank_cold_64_ns": round(cpu[f"rankCold/{target}/64"], 1),
            "first_compatible_64_ns": round(cpu[f"firstCompatible/{target}/64"], 1),
            "read_64_ns": round(cpu[f"readContainer/{target}/64"], 1),
            "rank_over_first_compatible": round(
                rank / cpu[f"firstCompatible/{target}/64"], 3
            ),
            "rank_over_read": round(rank / cpu[f"readContainer/{target}/64"], 3),
        }
    return {
        "context": data["context"],
        "cpu_time_ns": cpu,
        "ratios": ratios,
        "designs": design_ratios(cpu),
    }


#: The loop's designs in the benchmark (tools/rank/OffloadTargetRankBench.cpp):
#: series v9 asked the plugin about every entry, then ranked; v11 (the loop's
#: code) ranks the entries from their metadata as the search for the next best
#: reaches them, stopping at one nothing outranks, and asks in rank order;
#: #186088's loop asks in container order.
DESIGNS = {
    "ask_then_rank": "askThenRank",
    "rank_then_ask": "rankThenAsk",
    "first_accepted": "firstAccepted",
}
#: The containers: the device's own entry last or first; NVPTX, and AMDGPU in
#: the triples main's clang writes.
DESIGN_CASES = ("nvptx_last", "nvptx_first", "amdgpu_main_last", "amdgpu_main_first")
#: Where rank-then-ask must cost no more than ask-then-rank: NVPTX, 4 and 64
#: entries. (Ranking an AMDGPU entry in main's spellings parses its triple and
#: target ID, which costs more than this benchmark's ELF read: reported, not
#: held to it.)
DESIGN_GOAL = {"cases": ("nvptx_last", "nvptx_first"), "entries": (4, 64)}


def design_ratios(cpu: dict[str, float]) -> dict[str, Any]:
    """Per container and entry count: each design's CPU time and the ratios
    of rank-then-ask to the other two."""
    out: dict[str, Any] = {}
    for case in DESIGN_CASES:
        for n in (1, 4, 64):
            names = {key: f"design<{fn}>/{case}/{n}" for key, fn in DESIGNS.items()}
            if not all(name in cpu for name in names.values()):
                continue
            times = {key: cpu[name] for key, name in names.items()}
            cell: dict[str, Any] = {f"{k}_ns": round(v, 1) for k, v in times.items()}
            r = times["rank_then_ask"]
            cell["rank_then_ask_over_ask_then_rank"] = round(
                r / times["ask_then_rank"], 3
            )
            cell["rank_then_ask_over_first_accepted"] = round(
                r / times["first_accepted"], 3
            )
            out[f"{case}/{n}"] = cell
    return out


def design_problems(designs: dict[str, Any]) -> list[str]:
    """Where the goal's containers find rank-then-ask dearer than
    ask-then-rank, or were not measured."""
    problems = []
    for case in DESIGN_GOAL["cases"]:
        for n in DESIGN_GOAL["entries"]:
            cell = designs.get(f"{case}/{n}")
            if cell is None:
                problems.append(f"rank bench: no design figures for {case}/{n}")
            elif cell["rank_then_ask_over_ask_then_rank"] > 1.0:
                problems.append(
                    f"rank bench: rank-then-ask costs "
                    f"{cell['rank_then_ask_over_ask_then_rank']:.2f}x ask-then-rank "
                    f"({case}, {n} entries)"
                )
    return problems


def run(main: Tree, tree22: Tree, *, bench: bool = False) -> RankRun:
    """Build and test the rank on both trees; compare their answers."""
    result = RankRun()
    main_series, backport = load(MAIN_SERIES), load(BACKPORT_SERIES)
    rank_files = [RANK_HEADER, RANK_SOURCE, RANK_TEST]
    main_texts = series_texts(main_series, rank_files)
    work22 = paths.BUILD / "rank-22"
    on22 = backport_texts(backport, tree22, work22 / "base", [RANK_TEST])
    texts22 = on22.texts
    # The rank's header and source are one text; the backport's test lacks
    # main's AMDGPU triple spellings, which 22.1.8's Triple cannot read.
    for name in (RANK_HEADER, RANK_SOURCE):
        if texts22.get(name) != main_texts.get(name):
            raise WorkspaceError(
                f"{name}: the release/22.x backport does not carry the main "
                "series' text (one rank, one source)"
            )
    toolchains = {
        "main": main_toolchain(main, "kdl-rank"),
        "22.1.8": Toolchain("22.1.8", Path("/usr/lib/llvm-22"), None, work22),
    }
    units = {
        "main": [RANK_SOURCE],
        "22.1.8": on22.units,
    }
    corpus = paths.BUILD / "rank-corpus.tsv"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text(rankcorpus.text())
    outputs: dict[str, list[str]] = {}
    runs: dict[str, dict[str, str]] = {}
    loop_runs: dict[str, dict[str, str]] = {}
    doc: dict[str, Any] = {"trees": {"main": main.record, "22": tree22.record}}
    for key, tc in toolchains.items():
        tc.work.mkdir(parents=True, exist_ok=True)
        texts = main_texts if key == "main" else texts22
        binaries = build(tc, texts, units[key], bench and key == "main")
        states = tc.gtest(binaries["test"])
        runs[key] = states
        one = judge_states(key, states)
        result.add(
            one,
            f"rank unit test, {key + ':':8} {one.passed} passed, {one.failed} failed",
        )
        outputs[key] = answers(tc, binaries["diff"], corpus.read_bytes())
        loop = rankcorpus.loop_text().encode()
        orders = answers(tc, binaries["diff"], loop, "--loop")
        names = [c[0] for c in rankcorpus.LOOP_CASES]
        loop_runs[key] = dict(zip(names, orders, strict=False))
        one = judge_orders(key, orders)
        result.add(
            one,
            f"rank in the loop's order, {key + ':':8} {one.passed} of "
            f"{len(rankcorpus.LOOP_CASES)} containers as the tests expect",
        )
        if "bench" in binaries:
            doc["bench"] = bench_ratios(tc, binaries["bench"])
    pairs = list(rankcorpus.pairs())
    differ = [
        {"pair": list(p), "main": a, "22.1.8": b}
        for p, a, b in zip(pairs, outputs["main"], outputs["22.1.8"], strict=False)
        if a != b
    ]
    complete = all(len(o) == len(pairs) for o in outputs.values())
    if differ or not complete:
        result.failed += 1
        result.problems.append(
            f"rank differential: {len(differ)} of {len(pairs)} pairs differ "
            "between main and 22.1.8" + ("" if complete else " (an output is short)")
        )
    else:
        result.passed += 1
    result.lines.append(
        f"rank differential: {len(pairs)} pairs, {len(differ)} differ (main, 22.1.8)"
    )
    if "bench" in doc:
        for target, r in doc["bench"]["ratios"].items():
            result.lines.append(
                f"rank bench, {target}: 64 entries {r['rank_64_ns'] / 1000:.1f} us; "
                f"{r['rank_over_first_compatible']:.2f}x a first-compatible loop, "
                f"{r['rank_over_read']:.2f}x reading the container"
            )
        designs = doc["bench"].get("designs", {})
        for key, cell in designs.items():
            if key.endswith(("/4", "/64")):
                result.lines.append(
                    f"loop designs, {key}: rank then ask "
                    f"{cell['rank_then_ask_ns'] / 1000:.2f} us, "
                    f"{cell['rank_then_ask_over_ask_then_rank']:.2f}x ask then rank, "
                    f"{cell['rank_then_ask_over_first_accepted']:.2f}x the first-"
                    "accepted loop"
                )
        if bench:
            found = design_problems(designs)
            result.failed += len(found)
            result.passed += not found
            result.problems += found
    doc.update(
        {
            "sources": {
                RANK_HEADER: "the main series' text; the backport's is the same",
                RANK_SOURCE: "the main series' text; the backport's is the same",
                RANK_TEST: "each series' own text (the backport's drops the case "
                "of main's AMDGPU triple spellings)",
            },
            "linked_ahead_on_22": units["22.1.8"],
            "corpus_pairs": len(pairs),
            "differences": differ[:50],
            "difference_count": len(differ),
            "unit_tests": runs,
            "loop_orders": {
                "tool": "tools/rank/RankDiff.cpp --loop: the loop's two steps "
                "(rank each accepted entry, a stable sort) over the rank",
                "expected": {c[0]: c[4] for c in rankcorpus.LOOP_CASES},
                "runs": loop_runs,
            },
        }
    )
    if "bench" not in doc:
        # The benchmark is the main job's (kdl all); a run without it keeps
        # the last one measured (the run's record, else the recorded one).
        old = record.last("rank.json")
        try:
            kept = json.loads(old.read_text()).get("bench")
        except (OSError, ValueError):
            kept = None
        if kept is not None:
            doc["bench"] = kept
    out = record.write("rank.json", doc)
    result.lines.append(f"rank results:   {out}")
    return result


def judge_orders(key: str, orders: list[str]) -> RankRun:
    """Each loop case's order against what its test expects."""
    one = RankRun()
    cases = rankcorpus.LOOP_CASES
    if len(orders) != len(cases):
        one.failed += 1
        one.problems.append(f"loop orders on {key}: {len(orders)} of {len(cases)}")
        return one
    for (name, *_, expected), got in zip(cases, orders, strict=True):
        if got == expected:
            one.passed += 1
        else:
            one.failed += 1
            one.problems.append(
                f"{name} on {key}: the loop would try {got}, the test expects "
                f"{expected}"
            )
    return one


def judge_states(key: str, states: dict[str, str]) -> RankRun:
    one = RankRun()
    for name, state in sorted(states.items()):
        if state == "pass":
            one.passed += 1
        else:
            one.failed += 1
            one.problems.append(f"{name} on {key}: {state}")
    if not states:
        one.failed += 1
        one.problems.append(f"the rank's unit test ran no test on {key}")
    return one
