"""The selection's own cost, timed inside the runtime.

A timer (measurement only, never part of the series: up to series v8's run
``gpu/realrt/selection-timer.patch``, since v10's ``gpu/realrt/
selection_timer.py``, which places it in any of the loops) times
``GenericDeviceTy::loadBinary`` from the arrival of an OffloadBinary
container to the first entry it hands to the load, in each build: #186088's
stand-in loop (the plugin asked in container order to the first entry it
accepts); series v7-v9 (the plugin asked about every entry, the rank, the
sort); from v10, every entry ranked from its metadata, then the plugin asked
in rank order. ``gpu/realrt/run.sh``'s timer section writes
``timer-22.jsonl``: per process, what ``ol_choice cost`` printed (the cold
``olCreateProgram`` and the warm ones) and the timer's records, ``[entries,
total_ns, parse_ns]`` per call (parse: the reading of the entries alone).

Cold: the first call of a fresh process, one sample per process. Warm: the
calls after it in processes that repeat ``olCreateProgram`` and
``olDestroyProgram``, every call a sample. A run with an earlier version of
the series beside it (``previous``) is held to v10's targets
(:func:`targets`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kdl.errors import WorkspaceError
from kdl.results.stats import median_diff_ci, rounded, stat

Json = dict[str, Any]

#: The goal (issue 32): the selection adds at most 5 us or 2% to a cold
#: load of 4 entries, whichever is larger, and for 64 entries no more than
#: the first-compatible loop.
GOAL_NS = 5000.0
GOAL_FRACTION = 0.02
VARIANTS = ("loop", "series")
#: What each container is (gpu/realrt/prepare.sh).
CONTAINERS = {
    "cost-1.bin": "[sm_90a]",
    "cost-4.bin": "[sm_90, sm_80, sm_86, sm_90a]",
    "cost-64.bin": "[sm_90, 31 x (sm_80, sm_86), sm_90a]",
    "cost-64-last.bin": "[31 x (sm_80, sm_86), sm_80, sm_90a]",
    "cost-64-first.bin": "[sm_90a, 31 x (sm_80, sm_86), sm_90]",
}


def _samples(path: Path) -> dict[tuple[str, str, str], dict[str, list[float]]]:
    """(file, variant, mode) -> selection_ns, parse_ns, create_us samples."""
    out: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    except (OSError, ValueError) as exc:
        raise WorkspaceError(f"{path}: not JSON lines ({exc})") from exc
    for row in rows:
        result, records = row["result"], row["timer"]
        if len(result) < 2 or "cold_us" not in result[1] or not records:
            raise WorkspaceError(f"{path}: a failed sample: {str(row)[:200]}")
        variant = row["variant"].removesuffix("-timer")
        cell = out.setdefault(
            (row["file"], variant, row["mode"]),
            {
                "selection_ns": [],
                "parse_ns": [],
                "total_ns": [],
                "create_us": [],
                "entries": [],
            },
        )
        warm = result[1]["warm_us"]
        if len(records) != 1 + len(warm):
            raise WorkspaceError(
                f"{path}: {len(records)} timer records for {1 + len(warm)} "
                f"loads ({row['variant']} {row['file']} {row['process']})"
            )
        chosen = records[:1] if row["mode"] == "cold" else records[1:]
        cell["selection_ns"] += [r[1] - r[2] for r in chosen]
        cell["parse_ns"] += [r[2] for r in chosen]
        cell["total_ns"] += [r[1] for r in chosen]
        cell["entries"] += sorted({r[0] for r in chosen})
        cell["create_us"] += [result[1]["cold_us"]] if row["mode"] == "cold" else warm
    return out


def summary(path: Path) -> Json:
    """Per container, mode and build: the selection's time (its parse part
    beside it) and ``olCreateProgram``'s; the goal's verdicts."""
    samples = _samples(path)
    doc: Json = {"containers": {}, "goal": {}}
    for (name, variant, mode), cell in sorted(samples.items()):
        entries = sorted(set(cell["entries"]))
        if len(entries) != 1:
            raise WorkspaceError(f"{path}: {name} read as {entries} entries")
        box = doc["containers"].setdefault(
            name, {"entries": entries[0], "what": CONTAINERS.get(name, "")}
        )
        box.setdefault(mode, {})[variant] = {
            "selection_ns": stat(cell["selection_ns"]),
            "parse_ns": stat(cell["parse_ns"]),
            "total_ns": stat(cell["total_ns"]),
            "create_us": stat(cell["create_us"], "us"),
        }
    by_pair: Pairs = {}
    for (name, variant, mode), cell in samples.items():
        by_pair.setdefault((name, mode), {})[variant] = cell["selection_ns"]
    doc["goal"] = goal(doc["containers"], by_pair)
    if any(
        "previous" in cell
        for box in doc["containers"].values()
        for cell in box.values()
        if isinstance(cell, dict)
    ):
        totals: Pairs = {}
        for (name, variant, mode), cell in samples.items():
            totals.setdefault((name, mode), {})[variant] = cell["total_ns"]
        doc["targets"] = targets(doc["containers"], by_pair, totals)
    return doc


def _ratio(sel: Json, create: Json) -> float:
    return rounded(sel["median"] / (create["median"] * 1000))


def _added(
    cell: Json, samples: dict[str, list[float]], field: str = "selection_ns"
) -> Json:
    """What the series takes beyond the loop in *field* (the selection by
    default): the difference of the medians and its bootstrap 95% CI, in ns."""
    return {
        "median": rounded(
            cell["series"][field]["median"] - cell["loop"][field]["median"]
        ),
        "ci95": median_diff_ci(samples["series"], samples["loop"]),
    }


def _against_loop(
    name: str,
    mode: str,
    cell: Json,
    samples: dict[str, list[float]],
    *,
    field: str,
    allowed: float,
) -> Json:
    """A target row: what the series adds to the loop in *field*, judged
    against *allowed* ns."""
    added = _added(cell, samples, field)
    lo, hi = added["ci95"]
    return {
        "container": name,
        "phase": mode,
        "allowed_ns": allowed,
        "added_ns": added["median"],
        "ci95": [lo, hi],
        "verdict": _verdict(lo, hi, allowed),
    }


Pairs = dict[tuple[str, str], dict[str, list[float]]]


def goal(containers: Json, samples: Pairs) -> Json:
    """The goal's two parts, against the 95% CIs."""
    out: Json = {}
    four = containers.get("cost-4.bin", {}).get("cold")
    if four and all(v in four for v in VARIANTS):
        series = four["series"]
        allowed = max(GOAL_NS, GOAL_FRACTION * series["create_us"]["median"] * 1000)
        lo, hi = series["selection_ns"]["ci95_median"]
        out["4_entries_cold"] = {
            "allowed_ns": rounded(allowed),
            "added_to_loop_ns": _added(four, samples[("cost-4.bin", "cold")]),
            "ratio_to_cold_create": {
                v: _ratio(four[v]["selection_ns"], four[v]["create_us"])
                for v in VARIANTS
            },
            "verdict": "met"
            if hi <= allowed
            else "missed"
            if lo > allowed
            else "not resolved",
        }
    for name in ("cost-64.bin", "cost-64-last.bin"):
        for mode in ("cold", "warm"):
            cell = containers.get(name, {}).get(mode)
            if not cell or not all(v in cell for v in VARIANTS):
                continue
            added = _added(cell, samples[(name, mode)])
            lo, hi = added["ci95"]
            added["verdict"] = (
                "met: no more than the loop"
                if hi <= 0
                else "missed: more than the loop"
                if lo > 0
                else "not resolved"
            )
            out[f"64_entries_{mode}_{name}"] = added
    return out


#: The targets of series v10 (rank from the metadata, then ask the plugin in
#: rank order), each against #186088's stand-in loop: what the series'
#: selection may add to the loop's, in ns, per container and phase.
TARGETS = (
    ("cost-4.bin", "warm", 500.0),
    ("cost-4.bin", "cold", 5000.0),
    ("cost-64.bin", "warm", 2000.0),
    ("cost-64-last.bin", "warm", 0.0),
)
#: And the whole of loadBinary's work on a container before the load (the
#: parse and the selection) at 64 entries, against the earlier version's: at
#: most this fraction of it.
TOTAL_FRACTION = 0.5
TOTAL_CONTAINERS = ("cost-64.bin", "cost-64-first.bin", "cost-64-last.bin")


def _verdict(lo: float, hi: float, allowed: float) -> str:
    return "met" if hi <= allowed else "missed" if lo > allowed else "not resolved"


def targets(containers: Json, selections: Pairs, totals: Pairs) -> Json:
    """Series v10's targets against the 95% CIs of the differences of the
    medians: the selection against the loop's, the total against the earlier
    version's."""
    out: Json = {"selection": [], "total": [], "total_vs_loop": []}
    for name, mode, allowed in TARGETS:
        pair = selections.get((name, mode), {})
        if "series" in pair and "loop" in pair:
            row = _against_loop(
                name,
                mode,
                containers[name][mode],
                pair,
                field="selection_ns",
                allowed=allowed,
            )
            out["selection"].append(row)
    for name in containers:
        for mode in ("warm", "cold"):
            pair = totals.get((name, mode), {})
            if "series" in pair and "loop" in pair:
                row = _against_loop(
                    name,
                    mode,
                    containers[name][mode],
                    pair,
                    field="total_ns",
                    allowed=0.0,
                )
                del row["allowed_ns"]
                out["total_vs_loop"].append(row)
    for name in TOTAL_CONTAINERS:
        for mode in ("warm", "cold"):
            pair = totals.get((name, mode), {})
            if "series" not in pair or "previous" not in pair:
                continue
            scaled = [TOTAL_FRACTION * v for v in pair["previous"]]
            lo, hi = median_diff_ci(pair["series"], scaled)
            cell = containers[name][mode]
            out["total"].append(
                {
                    "container": name,
                    "phase": mode,
                    "ratio": rounded(
                        cell["series"]["total_ns"]["median"]
                        / cell["previous"]["total_ns"]["median"]
                    ),
                    "over_half_ci95": [lo, hi],
                    "verdict": _verdict(lo, hi, 0.0),
                }
            )
    return out


#: How the builds of a run with an earlier version are named in its report.
LABELS = {"loop": "loop", "previous": "earlier series", "series": "series"}


def _row(name: str, box: Json, mode: str, build: str, cell: Json) -> str:
    """One row of the selection's table: a container, a phase, a build."""
    return (
        f"| `{name}` {box['what']} | {box['entries']} | {mode} "
        f"| {build} | {_ns(cell['selection_ns'])} "
        f"| {_ns(cell['parse_ns'])} | {_ns(cell['total_ns'])} "
        f"| {_ns(cell['create_us'])} | {cell['selection_ns']['n']} |"
    )


def _ns(s: Json) -> str:
    lo, hi = s["ci95_median"]
    scale, unit = (1000.0, "us") if s["unit"] == "ns" else (1.0, "us")
    return f"{s['median'] / scale:.2f} ({lo / scale:.2f}-{hi / scale:.2f}) {unit}"


#: How each version of the series chooses, as the report says it: v7-v9 ask
#: the plugin first; v10 ranks every entry first; v11 ranks lazily.
DESIGNS = {
    9: "every entry asked, the accepted ones ranked and sorted",
    10: "every entry ranked from its metadata, the plugin asked in rank order "
    "(the next entry the first least of those left) to the first it accepts",
    11: "the entries ranked from their metadata as the search for the next "
    "one to try first reaches them, stopping at an entry nothing can outrank, "
    "the plugin asked in rank order to the first it accepts",
}


def _version(label: str) -> int:
    """The series version a build's label names ("series v10 (...)")."""
    match = re.search(r"\bv(\d+)\b", label)
    return int(match[1]) if match else max(DESIGNS)


def _intro(labels: dict[str, str]) -> str:
    """What the timer times, and how the loop, the earlier series and the
    series choose, by the versions their labels name."""
    previous = _version(labels.get("previous", "v9"))
    series = _version(labels.get("series", ""))
    copies = ["the loop"] + (["the earlier series"] if previous < 10 else [])
    in_place = (["the earlier series"] if previous >= 10 else []) + ["the series"]
    design = DESIGNS.get(previous, DESIGNS[9] if previous < 10 else DESIGNS[11])
    ours = DESIGNS.get(series, DESIGNS[max(DESIGNS)])
    return (
        "`gpu/realrt/selection_timer.py` (measurement only) times `loadBinary` "
        "per call from the container's arrival to the first entry handed to the "
        "load (total), and the reading of the entries within it (parse: "
        f"`extractOffloadBinaries`, which copies every entry, in "
        f"{' and '.join(copies)}; `readOffloadBinaries`, in place, in "
        f"{' and '.join(in_place)}); the selection is the rest: loop, #186088's "
        "stand-in, the plugin asked in container order to the first entry it "
        f"accepts; earlier series, {design}; series, {ours}. "
        "std::chrono::steady_clock; median (95% CI of the "
        "median); cold: the first call of a fresh process, one sample per "
        "process; warm: every call after it in processes of repeated loads."
    )


def render(
    doc: Json | None, *, bind_now: bool = False, labels: dict[str, str] | None = None
) -> list[str]:
    if not doc:
        return []
    if "targets" in doc:
        return _render_v10(doc, labels or {})
    title = "The selection's own cost, timed inside the runtime"
    intro = (
        "`gpu/realrt/selection-timer.patch` (measurement only) times "
        "`loadBinary` per call from the container's arrival to the entry it "
        "loads (total), and the parse (`extractOffloadBinaries`, which copies "
        "every entry) within it; the selection is the rest: loop, #186088's "
        "stand-in, the scan to the first compatible entry; series, every entry "
        "asked, ranked, sorted. std::chrono::steady_clock; median (95% CI of "
        "the median); cold: the first call of a fresh process, one sample per "
        "process; warm: every call after it in processes of repeated loads."
    )
    if bind_now:
        title += ", with LD_BIND_NOW=1"
        intro = (
            "The same, every process run with LD_BIND_NOW=1: the dynamic "
            "linker resolves every symbol at start, so no first call inside "
            "the timed region pays for lazy binding."
        )
    lines = [
        "",
        f"## {title}",
        "",
        intro,
        "",
        "| container | entries | phase | build | selection | parse | total "
        "| `olCreateProgram` | n |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, box in doc["containers"].items():
        for mode in ("cold", "warm"):
            for variant, cell in box.get(mode, {}).items():
                lines.append(_row(name, box, mode, variant, cell))
    g = doc["goal"]
    four = g.get("4_entries_cold")
    if four:
        added = four["added_to_loop_ns"]
        ratios = ", ".join(
            f"{v} {r * 100:.2f}%" for v, r in four["ratio_to_cold_create"].items()
        )
        lines += [
            "",
            f"Goal, 4 entries, cold: the series' selection at most "
            f"{four['allowed_ns'] / 1000:.1f} us (5 us or 2% of its cold "
            f"`olCreateProgram`, the larger): {four['verdict']}; it takes "
            f"{added['median'] / 1000:.2f} us more than the loop's (95% CI "
            f"{added['ci95'][0] / 1000:.2f} to {added['ci95'][1] / 1000:.2f}). "
            f"The selection over the cold `olCreateProgram` of 4 entries: {ratios}.",
        ]
    for key, added in g.items():
        if key.startswith("64_entries"):
            _, _, mode, name = key.split("_", 3)
            lo, hi = added["ci95"]
            lines.append(
                f"Goal, 64 entries, {mode}, `{name}`: the series' selection "
                f"takes {added['median'] / 1000:.2f} us more than the loop's "
                f"(95% CI {lo / 1000:.2f} to {hi / 1000:.2f}): {added['verdict']}."
            )
    return lines


def _render_v10(doc: Json, labels: dict[str, str]) -> list[str]:
    """The run with an earlier version beside the loop and the series: the
    table, then series v10's targets."""
    lines = [
        "",
        "## The selection's own cost, timed inside the runtime",
        "",
        _intro(labels),
        "",
        "| container | entries | phase | build | selection | parse | total "
        "| `olCreateProgram` | n |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, box in doc["containers"].items():
        for mode in ("cold", "warm"):
            for variant in ("loop", "previous", "series"):
                cell = box.get(mode, {}).get(variant)
                if cell is None:
                    continue
                lines.append(_row(name, box, mode, labels.get(variant, variant), cell))
    tg = doc["targets"]
    lines += [
        "",
        "Targets: what the series' selection adds to the loop's (difference of "
        "the medians, 95% CI), and the series' total (parse and selection) over "
        "the earlier series' at 64 entries (target: at most half).",
        "",
        "| container | phase | target | series adds | 95% CI | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in tg["selection"]:
        lo, hi = r["ci95"]
        lines.append(
            f"| `{r['container']}` | {r['phase']} | at most "
            f"{r['allowed_ns'] / 1000:+.1f} us | {r['added_ns'] / 1000:+.2f} us "
            f"| {lo / 1000:+.2f} to {hi / 1000:+.2f} us | {r['verdict']} |"
        )
    lines += [
        "",
        "| container | phase | series total / earlier series' total "
        "| series minus half the earlier, 95% CI | verdict |",
        "|---|---|---|---|---|",
    ]
    for r in tg["total"]:
        lo, hi = r["over_half_ci95"]
        lines.append(
            f"| `{r['container']}` | {r['phase']} | {r['ratio']:.2f} "
            f"| {lo / 1000:+.2f} to {hi / 1000:+.2f} us | {r['verdict']} |"
        )
    lines += [
        "",
        "The whole of it (parse and selection) against the loop's: what the "
        "series adds (difference of the medians, 95% CI; met: at most the "
        "loop's).",
        "",
        "| container | phase | series adds | 95% CI | verdict |",
        "|---|---|---|---|---|",
    ]
    for r in tg["total_vs_loop"]:
        lo, hi = r["ci95"]
        lines.append(
            f"| `{r['container']}` | {r['phase']} | {r['added_ns'] / 1000:+.2f} us "
            f"| {lo / 1000:+.2f} to {hi / 1000:+.2f} us | {r['verdict']} |"
        )
    return lines
