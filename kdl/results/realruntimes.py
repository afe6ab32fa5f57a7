"""The real runtimes on a GPU: which entry each loads, and what ranking costs.

``gpu/realrt/run.sh`` writes JSON lines on the device machine; they are
committed as they came back, in ``results/gpu/real-runtimes/``:

- ``choice-main.jsonl``: LLVM main's own liboffload (Debian's snapshot);
- ``choice-22-{base,loop,series}.jsonl``: LLVM 22.1.8 built from the tree
  as released, with #186088's first-compatible loop (the backport's 0002),
  and with the whole backport;
- ``cost-22-*.jsonl``: cold and warm ``olCreateProgram``, loop against
  series, one fresh process per sample;
- ``omp-22.txt``: a clang-22 program through 22.1.8's libomptarget, built
  with and without the series.
- ``timer-22*.jsonl`` (from series v7's run on): the selection timed inside
  the runtime, loop against series (:mod:`kdl.results.selection`).

:func:`report` derives ``report.json`` and ``report.md`` from those files
alone; CI regenerates both and fails on any difference, so neither can be
edited by hand. Every figure names the card it was measured on.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kdl.build.baseline import diff_states, lit_states
from kdl.errors import WorkspaceError
from kdl.results import selection
from kdl.results.gpufiles import write_generated
from kdl.results.gpureport import RESULTS_GPU
from kdl.results.stats import median_diff_ci, percentile, rounded

#: The goal: what ranking may add to the cold load of the chosen image (at
#: most 5 us or 2% of the loop's cold load, whichever is larger).
GOAL_NS = 5000.0
GOAL_FRACTION = 0.02

DIR = RESULTS_GPU / "real-runtimes"
#: The run with series v6's backport (patches/next/release-22.x) as the series.
DIR_V6 = RESULTS_GPU / "real-runtimes-v6"
#: The run with series v7's backport (patches/release-22.x), and the
#: selection timed inside the runtime (kdl.results.selection).
DIR_V7 = RESULTS_GPU / "real-runtimes-v7"
#: The run with series v8's backport: PTX images unloaded, one error when
#: every candidate fails.
DIR_V8 = RESULTS_GPU / "real-runtimes-v8"
#: Series v10's first run, beside v9 ("previous") and the loop, on an H100;
#: its loop's build lacks the fixes' LLVM code (NOTES.md there).
DIR_V10_RUN1 = RESULTS_GPU / "real-runtimes-v10-run1"
#: Series v10's run with every build on the same LLVM code (the loop's too).
DIR_V10 = RESULTS_GPU / "real-runtimes-v10"
#: Series v11's run, beside v10 ("previous") and the loop.
DIR_V11 = RESULTS_GPU / "real-runtimes-v11"
RUNTIMES = {
    "main": "LLVM main 7e3c57157096 (Debian snapshot)",
    "22-base": "22.1.8 as released",
    "22-loop": "22.1.8 + #186088's loop",
    "22-series": "22.1.8 + the series",
}
#: The raw cubin: the same code path in both builds, the A/A control.
CONTROL = "sm_90a.cubin"

Json = dict[str, Any]


def _lines(path: Path) -> list[Json]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line]
    except (OSError, ValueError) as exc:
        raise WorkspaceError(f"{path}: not JSON lines ({exc})") from exc


def _short(row: Json) -> str:
    """The outcome in a word or two, for a table cell."""
    if "exit" in row:
        return "process died"
    if not row.get("created"):
        return "refused"
    marker = row.get("marker") or "?"
    return marker if row.get("ran") else f"{marker}, kernel fails"


def _outcome(row: Json) -> str:
    if "exit" in row:
        return f"process died (exit {row['exit']})"
    if not row.get("created"):
        return f"refused: {row.get('error', '')}"
    ran = "ran" if row.get("ran") else f"did not run: {row.get('run_error', '')}"
    return f"loads {row.get('marker') or '?'}, {ran}"


def choices(directory: Path, keys: Iterable[str] = RUNTIMES) -> Json:
    """Per image: olIsValidBinary and what each runtime loaded."""
    table: dict[str, Json] = {}
    for key in keys:
        path = directory / f"choice-{key}.jsonl"
        if key == "main" and not path.exists():
            continue
        for row in _lines(path):
            name = Path(row["file"]).name
            entry = table.setdefault(name, {})
            entry[key] = {
                "valid": row.get("valid"),
                "outcome": _outcome(row),
                "short": _short(row),
                "error": row.get("error", row.get("run_error")),
            }
    return dict(sorted(table.items()))


def _cost_samples(path: Path) -> dict[tuple[str, str], dict[str, list[float]]]:
    samples: dict[tuple[str, str], dict[str, list[float]]] = {}
    for row in _lines(path):
        result = row["result"]
        if len(result) < 2 or "cold_us" not in result[1]:
            raise WorkspaceError(f"{path}: a failed sample: {row}")
        key = (Path(result[1]["file"]).name, row["variant"])
        cell = samples.setdefault(key, {"cold": [], "warm": []})
        cell["cold"].append(result[1]["cold_us"])
        cell["warm"].append(statistics.median(result[1]["warm_us"]))
    return samples


def _stat(values: list[float]) -> Json:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "median": rounded(statistics.median(ordered)),
        "p5": rounded(percentile(ordered, 0.05)),
        "p95": rounded(percentile(ordered, 0.95)),
    }


def costs(path: Path) -> Json:
    """Loop against series per image: medians over processes, the series'
    added time with a bootstrap CI, and the control's difference beside it."""
    samples = _cost_samples(path)
    out: Json = {}
    for name in sorted({n for n, _ in samples}):
        loop, series = samples[(name, "loop")], samples[(name, "series")]
        out[name] = {
            phase: {
                "loop": _stat(loop[phase]),
                "series": _stat(series[phase]),
                "added_median": rounded(
                    statistics.median(series[phase]) - statistics.median(loop[phase])
                ),
                "added_ci95": median_diff_ci(series[phase], loop[phase]),
            }
            for phase in ("cold", "warm")
        }
    return out


def verdict(cost: Json) -> str:
    """The goal (ranking adds at most 5 us or 2% to a cold load of a 4-entry
    container) against what the A/A control shows the method can resolve."""
    four, control = cost.get("cost-4.bin"), cost.get(CONTROL)
    if not four or not control:
        return "not measured"
    added = four["cold"]["added_ci95"]
    allowed = max(GOAL_NS / 1000, GOAL_FRACTION * four["cold"]["loop"]["median"])
    noise = control["cold"]["added_ci95"]
    if added[1] <= allowed:
        return "met"
    if added[0] > allowed:
        return "missed"
    return (
        f"not resolved: the 95% CI of what ranking adds ({added[0]:.1f} to "
        f"{added[1]:.1f} us) spans the goal ({allowed:.1f} us), and the A/A "
        f"control (the raw cubin, the same code in both builds) differs by "
        f"{noise[0]:.1f} to {noise[1]:.1f} us"
    )


def openmp(directory: Path) -> Json:
    """Which image a clang-22 program ran through libomptarget, per build."""
    path = directory / "omp-22.txt"
    ran: Json = {}
    try:
        text = path.read_text()
    except OSError as exc:
        raise WorkspaceError(f"{path}: cannot read ({exc.strerror})") from exc
    for block in re.split(r"^== ", text, flags=re.MULTILINE)[1:]:
        head, _, body = block.partition("\n")
        program, variant = head.split()
        m = re.search(r"^ran image: (\S+)", body, re.MULTILINE)
        ran.setdefault(program, {})[variant] = m.group(1) if m else "nothing"
    return ran


#: The check-offload nvptx64 run the report shows: the newest, with the
#: backport's current version (earlier runs stay beside it).
NVPTX_RUN = "check-offload-nvptx/v4"


def check_offload_nvptx(directory: Path) -> Json:
    """Upstream's nvptx64 tests on the GPU, base against series, test by test."""
    where = directory / NVPTX_RUN
    states = {
        v: lit_states(where / f"check-offload-nvptx-{v}.xml")
        for v in ("base", "series")
    }
    diff = diff_states(states["base"], states["series"])
    return {
        "device": (where / "device.txt").read_text().splitlines()[3].strip(),
        **{
            v: {
                k: sum(x == k for x in s.values())
                for k in ("pass", "fail", "unsupported")
            }
            for v, s in states.items()
        },
        "differ": sorted(
            t for t in states["base"] if states["base"][t] != states["series"].get(t)
        ),
        "regressions": diff["regressions"],
        "series_tests": diff["series_tests"],
    }


def leaks(path: Path) -> list[Json]:
    """What LOADS loads of one image in one process left behind, per runtime:
    resident memory and the device's free memory after the first load and
    after the last (gpu/src/ol_choice.c leak)."""
    rows = []
    for row in _lines(path):
        if "exit" in row:
            raise WorkspaceError(f"{path}: a process died: {row}")
        rss, dev = row["rss_kib"], row["device_free_kib"]
        rows.append(
            {
                "variant": row["variant"],
                "file": Path(row["file"]).name,
                "loads": row["loads"],
                "failed": row["failed"],
                "rss_growth_kib": rss[1] - rss[0],
                "device_free_drop_kib": dev[0] - dev[1],
            }
        )
    return rows


def _optional(path: Path, read: Any) -> Any:
    """*read(path)*, or None where the run did not write *path*."""
    return read(path) if path.exists() else None


def report(directory: Path = DIR) -> Json:
    device = (directory / "device-22.txt").read_text().strip()
    runtimes = dict(RUNTIMES)
    # The run of another series than kdl all's names it (gpu/realrt/prepare.sh).
    series = _optional(directory / "series-22.txt", lambda p: p.read_text().strip())
    if series:
        runtimes["22-series"] = f"22.1.8 + {series}"
    # A run with an earlier version of the backport beside it names that
    # version (previous-22.txt), before the series.
    previous = _optional(directory / "previous-22.txt", lambda p: p.read_text().strip())
    if previous:
        runtimes = {
            **{k: v for k, v in runtimes.items() if k != "22-series"},
            "22-previous": f"22.1.8 + {previous}",
            "22-series": runtimes["22-series"],
        }
    doc: Json = {
        "device": device,
        "device_main": _optional(
            directory / "device-main.txt", lambda p: p.read_text().strip()
        ),
        "harness": (directory / "harness-22.txt").read_text().splitlines(),
        "runtimes": runtimes,
        "choices": choices(directory, runtimes),
        "openmp": _optional(directory / "omp-22.txt", lambda p: openmp(p.parent)),
        "check_offload_nvptx": _optional(
            directory / NVPTX_RUN, lambda p: check_offload_nvptx(directory)
        ),
        "leaks": _optional(directory / "leak-22.jsonl", leaks),
        "cost": {},
    }
    # The selection timed inside the runtime (from series v7's run on).
    if (directory / "timer-22.jsonl").exists():
        doc["selection"] = selection.summary(directory / "timer-22.jsonl")
        # The same with LD_BIND_NOW=1: no lazy binding inside the timed calls.
        bind_now = directory / "timer-22-bind-now.jsonl"
        if bind_now.exists():
            doc["selection_bind_now"] = selection.summary(bind_now)
    for path in sorted(directory.glob("cost-22-*.jsonl")):
        name = path.stem.removeprefix("cost-22-")
        cost = costs(path)
        doc["cost"][name] = {"images": cost, "goal_4_entries": verdict(cost)}
    return doc


def _us(stat: Json) -> str:
    return f"{stat['median']:.1f} us ({stat['p5']:.1f}-{stat['p95']:.1f})"


def render_md(doc: Json) -> str:
    main = f" (main's run: {doc['device_main']})" if doc["device_main"] else ""
    runtimes = {
        k: v
        for k, v in doc["runtimes"].items()
        if any(k in row for row in doc["choices"].values())
    }
    lines = [
        "# The real runtimes on a GPU",
        "",
        f"Card: {doc['device']}{main}. Generated "
        "by `kdl results report` from the JSON lines beside this file.",
        "",
        "## Which entry each runtime loads (`olCreateProgram`)",
        "",
        "| image | " + " | ".join(runtimes.values()) + " |",
        "|---|" + "---|" * len(runtimes),
    ]
    for name, row in doc["choices"].items():
        cells = [row.get(k, {}).get("outcome", "-") for k in runtimes]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    if doc["leaks"]:
        lines += [
            "",
            "## What failed loads leave behind",
            "",
            "Loads of one image in one process, each followed by "
            "`olDestroyProgram` when it loaded: resident memory and the "
            "device's free memory after the first load and after the last.",
            "",
            "| runtime | image | loads | failed | RSS growth | device memory lost |",
            "|---|---|---|---|---|---|",
        ]
        for r in doc["leaks"]:
            lines.append(
                f"| {doc['runtimes']['22-' + r['variant']]} | `{r['file']}` "
                f"| {r['loads']} | {r['failed']} | {r['rss_growth_kib']} KiB "
                f"| {r['device_free_drop_kib']} KiB |"
            )
    labels = {
        "loop": "loop",
        "previous": doc["runtimes"].get("22-previous", "").removeprefix("22.1.8 + "),
        "series": doc["runtimes"]["22-series"].removeprefix("22.1.8 + "),
    }
    lines += _openmp_md(doc) + _nvptx_md(doc)
    lines += selection.render(doc.get("selection"), labels=labels)
    lines += selection.render(doc.get("selection_bind_now"), bind_now=True)
    return _cost_md(doc, lines)


def _openmp_md(doc: Json) -> list[str]:
    if not doc["openmp"]:
        return []
    lines = [
        "",
        "## A clang-22 program through libomptarget",
        "",
        "`gpu/kernels/mark.cu`, `-foffload-via-llvm` for sm_90 and sm_90a: "
        "`mark` as clang registers it, `mark-90-first` with sm_90 registered "
        "first (llvm-offload-wrapper).",
        "",
        "| program | 22.1.8 | 22.1.8 + the series |",
        "|---|---|---|",
    ]
    for program, ran in doc["openmp"].items():
        lines.append(f"| `{program}` | {ran.get('base')} | {ran.get('series')} |")
    return lines


def _nvptx_md(doc: Json) -> list[str]:
    nv = doc["check_offload_nvptx"]
    if not nv:
        return []
    lines = [
        "",
        "## Upstream's check-offload, nvptx64 suites, on the GPU",
        "",
        f"Card: {nv['device']}. Test by test from the two xunit files in "
        f"`{NVPTX_RUN}/` (XFAIL and XPASS count as passed there).",
        "",
        "| 22.1.8 | pass | fail | unsupported |",
        "|---|---|---|---|",
    ]
    for v in ("base", "series"):
        c = nv[v]
        lines.append(f"| {v} | {c['pass']} | {c['fail']} | {c['unsupported']} |")
    lines += [
        "",
        f"Tests whose status differs: {len(nv['differ'])}; regressions: "
        f"{len(nv['regressions'])}.",
    ]
    return lines


def _cost_md(doc: Json, lines: list[str]) -> str:
    for run, entry in doc["cost"].items():
        lines += [
            "",
            f"## Cost of `olCreateProgram`, loop against series ({run})",
            "",
            "| image | phase | loop median (p5-p95) | series median (p5-p95) "
            "| series adds (95% CI) | n |",
            "|---|---|---|---|---|---|",
        ]
        for name, phases in entry["images"].items():
            for phase, s in phases.items():
                lo, hi = s["added_ci95"]
                lines.append(
                    f"| `{name}` | {phase} | {_us(s['loop'])} | {_us(s['series'])} "
                    f"| {s['added_median']:.1f} us ({lo:.1f} to {hi:.1f}) "
                    f"| {s['loop']['n']} |"
                )
        lines += ["", f"Goal, 4 entries, cold: {entry['goal_4_entries']}."]
    return "\n".join(lines) + "\n"


def generate(directory: Path = DIR) -> dict[str, str]:
    doc = report(directory)
    return {
        "report.json": json.dumps(doc, indent=2) + "\n",
        "report.md": render_md(doc),
    }


def write_report(directory: Path = DIR) -> list[Path]:
    return write_generated(directory, generate(directory))
