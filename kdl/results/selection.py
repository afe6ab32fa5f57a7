"""The selection's own cost, timed inside the runtime.

``gpu/realrt/selection-timer.patch`` (measurement only, never part of the
series) times ``GenericDeviceTy::loadBinary`` from the arrival of an
OffloadBinary container to the entry it hands to the load, in two builds:
#186088's stand-in loop (the scan to the first compatible entry) and the
series (the plugin asked about every entry, the rank, the sort).
``gpu/realrt/run.sh``'s timer section writes ``timer-22.jsonl``: per process,
what ``ol_choice cost`` printed (the cold ``olCreateProgram`` and the warm
ones) and the timer's records, ``[entries, total_ns, parse_ns]`` per call
(parse: ``extractOffloadBinaries`` alone).

Cold: the first call of a fresh process, one sample per process. Warm: the
calls after it in processes that repeat ``olCreateProgram`` and
``olDestroyProgram``, every call a sample.
"""

from __future__ import annotations

import json
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
    return doc


def _ratio(sel: Json, create: Json) -> float:
    return rounded(sel["median"] / (create["median"] * 1000))


def _added(cell: Json, samples: dict[str, list[float]]) -> Json:
    """What the series' selection takes beyond the loop's: the difference of
    the medians and its bootstrap 95% CI, in ns."""
    return {
        "median": rounded(
            cell["series"]["selection_ns"]["median"]
            - cell["loop"]["selection_ns"]["median"]
        ),
        "ci95": median_diff_ci(samples["series"], samples["loop"]),
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


def _ns(s: Json) -> str:
    lo, hi = s["ci95_median"]
    scale, unit = (1000.0, "us") if s["unit"] == "ns" else (1.0, "us")
    return f"{s['median'] / scale:.2f} ({lo / scale:.2f}-{hi / scale:.2f}) {unit}"


def render(doc: Json | None, *, bind_now: bool = False) -> list[str]:
    if not doc:
        return []
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
                lines.append(
                    f"| `{name}` {box['what']} | {box['entries']} | {mode} "
                    f"| {variant} | {_ns(cell['selection_ns'])} "
                    f"| {_ns(cell['parse_ns'])} | {_ns(cell['total_ns'])} "
                    f"| {_ns(cell['create_us'])} | {cell['selection_ns']['n']} |"
                )
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
