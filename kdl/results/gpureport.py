"""Turn the GPU harness's raw output into results/gpu/: statistics, tables, SVG.

The device machine writes raw JSON (gpu/driver.py): every cold sample from a
fresh process, every warm sample, the GEMM kernel times, the probe results.
This module, on the developer's machine, derives everything that is
reported from that file and nothing else, so the numbers in the RFC and the
picture can be regenerated (and are, by tests/results/test_gpu_results.py):

    kdl results import RAW    compact RAW into results/gpu/raw.json
    kdl results report        results/gpu/raw.json -> gpu-results.json,
                              dispatch-layers.svg, image-choice.md

Statistics: median, p5, p95 (linear interpolation between order statistics)
and a 95% percentile-bootstrap confidence interval of the median (1000
resamples, fixed seed; each resample's median drawn as its middle order
statistics, see resample_median), per layer. The stacked bars add per-layer medians;
the sum of medians is not the median of the sums, and the picture says so.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kdl import paths
from kdl.errors import UsageError, WorkspaceError

RESULTS_GPU = paths.RESULTS / "gpu"
RAW = RESULTS_GPU / "raw.json"
SUMMARY = RESULTS_GPU / "gpu-results.json"
SVG = RESULTS_GPU / "dispatch-layers.svg"
CHOICE_MD = RESULTS_GPU / "image-choice.md"

SCHEMA = "kdl-gpu-results/1"
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20261122

Json = dict[str, Any]

#: Cold path, in the order a program meets the layers.
COLD_LAYERS = [
    "runtime_init",
    "device_discovery",
    "context_create",
    "queue_create",
    "module_load_cold",
    "symbol_lookup",
    "first_launch_enqueue",
    "first_launch_sync",
    "module_load_second",
]
WARM_LAYERS = [
    "module_load_warm",
    "module_load_getfunc_warm",
    "symbol_lookup_warm",
    "launch_enqueue",
    "launch_sync",
]
#: What each stacked bar adds up (launch_sync already holds its enqueue).
COLD_STACK = [
    "runtime_init",
    "device_discovery",
    "context_create",
    "queue_create",
    "selection",
    "module_load_cold",
    "symbol_lookup",
    "first_launch_enqueue",
    "first_launch_sync",
]
WARM_STACK = ["selection", "module_load_warm", "symbol_lookup_warm", "launch_sync"]
PATHS = {"cuda": "CUDA driver API", "liboffload": "liboffload (LLVM 22)"}
#: The extra bar: liboffload with the shim preloaded, given a 4-image
#: OffloadBinary; its selection happens inside olCreateProgram.
SHIM_PATH = ("liboffload_shim", "liboffload + kdl shim")
SELECTION_FILES = {"1": "sel-1.bin", "8": "sel-8.bin", "64": "sel-64.bin"}
#: The selection the bars include: 8 real images, the series' ranking when
#: it was measured, else first-wins (named in the output).
BAR_SELECTION_IMAGES = "8"

#: Images of the GEMM table and how each is built (which of them the runtime
#: accepts is measured: runtime_accepts).
GEMM_IMAGES: dict[str, Json] = {
    "sm_80": {"kind": "cubin", "sm": 80, "arch_specific": False},
    "sm_90": {"kind": "cubin", "sm": 90, "arch_specific": False},
    "sm_90a": {"kind": "cubin", "sm": 90, "arch_specific": True},
    "compute_80": {"kind": "ptx", "sm": 80, "arch_specific": False},
}
#: Image orders of the OffloadBinaries gpu/prepare.sh packs (same names).
ORDERS: dict[str, list[str]] = {
    "order-ascending.bin": ["sm_80", "sm_90", "sm_90a", "compute_80"],
    "order-ptx-first.bin": ["compute_80", "sm_80", "sm_90", "sm_90a"],
    "order-descending.bin": ["sm_90a", "sm_90", "sm_80", "compute_80"],
    "order-generic-first.bin": ["sm_80", "compute_80", "sm_90", "sm_90a"],
    "order-ascending-prio.bin": ["sm_80", "sm_90", "sm_90a", "compute_80"],
}
#: The number each image's kdl_marker writes (gpu/prepare.sh, -DKDL_VARIANT),
#: by variant_tag.
MARKERS = {
    "sm_80": 1,
    "compute_80": 2,
    "sm_90": 3,
    "sm_90a": 4,
    "sm_86": 5,
    "sm_89": 6,
    "sm_100": 7,
    "sm_120": 8,
    "compute_90": 9,
}
RUNS = [1, 100, 10000]


# --------------------------------------------------------------------------
# Statistics


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    if not sorted_values:
        raise WorkspaceError("percentile of no samples")
    idx = p * (len(sorted_values) - 1)
    lo = int(idx)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(
        sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (idx - lo)
    )


def resample_median(rng: random.Random, sorted_values: Sequence[float]) -> float:
    """The median of one bootstrap resample of *sorted_values* (ascending).

    A resample of n values is n uniform draws U, each picking the value at
    index floor(U * n); its median needs only the middle order statistics of
    the draws, which are drawn directly: the k-th smallest of n uniforms is
    Beta(k, n + 1 - k), and the next one above u is u + (1 - u) * Beta(1,
    n - k). The same distribution as drawing all n values, with one or two
    draws instead of n.
    """
    n = len(sorted_values)
    if n == 0:
        raise WorkspaceError("bootstrap of no samples")
    lo = (n - 1) // 2  # percentile(..., 0.5) interpolates lo and n // 2
    u = rng.betavariate(lo + 1, n - lo)
    low = sorted_values[min(int(u * n), n - 1)]
    if n % 2:
        return float(low)
    v = u + (1 - u) * rng.betavariate(1, n - lo - 1)
    return (low + sorted_values[min(int(v * n), n - 1)]) / 2


def stat(values: Sequence[float], unit: str = "ns") -> Json:
    """median, p5, p95, a bootstrap 95% CI of the median, n."""
    vals = sorted(float(v) for v in values)
    rng = random.Random(BOOTSTRAP_SEED)
    n = len(vals)
    medians = sorted(resample_median(rng, vals) for _ in range(BOOTSTRAP_RESAMPLES))
    return {
        "n": n,
        "unit": unit,
        "median": _round(percentile(vals, 0.5)),
        "p5": _round(percentile(vals, 0.05)),
        "p95": _round(percentile(vals, 0.95)),
        "ci95_median": [
            _round(percentile(medians, 0.025)),
            _round(percentile(medians, 0.975)),
        ],
        "bootstrap": f"percentile, {BOOTSTRAP_RESAMPLES} resamples (median as "
        f"order statistics), seed "
        f"{BOOTSTRAP_SEED}",
    }


def _round(x: float) -> float:
    return float(f"{x:.6g}")


# --------------------------------------------------------------------------
# Import: compact the device's raw file


def compact(raw: Json) -> Json:
    """Drop what repeats in every sample (boundaries) and device paths."""
    out: Json = json.loads(json.dumps(raw))
    boundaries: Json = {}
    layers = out.get("layers") or {}
    for docs in (layers.get("cold") or {}).values():
        for d in docs:
            b = d.pop("boundaries", None)
            if b is not None:
                boundaries.setdefault(d.get("path", "?"), b)
            _basenames(d)
    for d in (layers.get("warm") or {}).values():
        if d:
            b = d.pop("boundaries", None)
            if b is not None:
                boundaries.setdefault(d.get("path", "?"), b)
            _basenames(d)
    if layers:
        layers["boundaries"] = boundaries
        if "image" in layers:
            layers["image"] = Path(layers["image"]).name
    gemm = out.get("gemm") or {}
    for docs in (gemm.get("load") or {}).values():
        for d in docs:
            _basenames(d)
    for v in (gemm.get("run") or {}).get("variants", []):
        _basenames(v)
    probe = out.get("probe") or {}
    for key in ("plain", "shim"):
        doc = probe.get(key)
        if doc:
            for f in doc.get("files", []):
                _basenames(f)
    return out


def _basenames(d: Json) -> None:
    for k in ("image", "file"):
        if isinstance(d.get(k), str):
            d[k] = Path(d[k]).name


# --------------------------------------------------------------------------
# Summary


def _require(raw: Json, *keys: str) -> Any:
    cur: Any = raw
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            raise WorkspaceError(f"raw GPU results lack {'.'.join(keys)}")
        cur = cur[k]
    return cur


def environment(raw: Json) -> Json:
    env = _require(raw, "environment")
    smi = env.get("nvidia_smi_query", {})
    return {
        "device": smi.get("name"),
        "driver": env.get("driver_version"),
        "cuda": env.get("cuda_version_driver"),
        "nvcc": env.get("nvcc_device"),
        "nvcc_images": env.get("nvcc_images"),
        "llvm": env.get("llvm_version"),
        "llvm_debs": env.get("llvm_debs"),
        "clocks_before": {
            k: smi.get(k)
            for k in (
                "clocks.sm",
                "clocks.mem",
                "clocks.max.sm",
                "clocks.max.mem",
                "clocks.applications.graphics",
                "clocks.applications.memory",
                "persistence_mode",
                "compute_mode",
                "power.limit",
                "temperature.gpu",
            )
        },
        "clocks_after": env.get("nvidia_smi_after"),
        "os": env.get("os"),
        "kernel": env.get("uname"),
        "cpu": env.get("cpu"),
    }


def layer_stats(raw: Json) -> Json:
    layers = _require(raw, "layers")
    cold, warm = layers["cold"], layers["warm"]
    out: Json = {}
    for key, cold_key, warm_key in (
        ("cuda", "cuda_cold", "cuda"),
        ("cuda_eager", "cuda_cold_eager", "cuda_eager"),
        ("liboffload", "liboffload_cold", "liboffload"),
        ("liboffload_sm90a", "liboffload_sm90a_cold", "liboffload_sm90a"),
        ("liboffload_shim", "liboffload_shim_cold", "liboffload_shim"),
    ):
        docs = cold.get(cold_key) or []
        if not docs and not warm.get(warm_key):
            continue
        entry: Json = {"cold": {}, "warm": {}, "processes": len(docs)}
        for layer in COLD_LAYERS:
            vals = [d[layer] for d in docs if layer in d]
            if vals:
                entry["cold"][layer] = stat(vals)
        wdoc = warm.get(warm_key)
        if wdoc:
            for layer in WARM_LAYERS:
                if layer in wdoc:
                    entry["warm"][layer] = stat(wdoc[layer])
            entry["marker_variant"] = wdoc.get("marker_variant")
        if docs:
            entry["marker_variant_cold"] = sorted({d["marker_variant"] for d in docs})
            entry["module_loading"] = docs[0].get("CUDA_MODULE_LOADING", "n/a")
            entry["image_bytes"] = docs[0].get("image_bytes")
        out[key] = entry
    out["boundaries"] = layers.get("boundaries", {})
    out["image"] = layers.get("image")
    return out


def selection_stats(raw: Json) -> Json:
    layers = _require(raw, "layers")
    out: Json = {}
    for name, docs in layers["cold"].items():
        if not name.startswith("select_cold/"):
            continue
        _, policy, f = name.split("/")
        count = next((k for k, v in SELECTION_FILES.items() if v == f), f)
        slot = out.setdefault(policy, {}).setdefault(count, {})
        slot["cold"] = stat([d["selection"] for d in docs])
        slot["selected"] = sorted({d["selected"] for d in docs})
        slot["file_bytes"] = docs[0]["file_bytes"] if docs else None
    for name, doc in layers["warm"].items():
        if not name.startswith("select/") or not doc:
            continue
        _, policy, f = name.split("/")
        count = next((k for k, v in SELECTION_FILES.items() if v == f), f)
        slot = out.setdefault(policy, {}).setdefault(count, {})
        slot["warm"] = stat(doc["selection"])
        slot["images"] = doc["images"]
    return out


def gemm_stats(raw: Json) -> Json:
    gemm = _require(raw, "gemm")
    out: Json = {"sass": gemm.get("sass", {}), "load": {}, "kernel": {}}
    for name, docs in gemm["load"].items():
        entry: Json = {"processes": len(docs)}
        ok = [d for d in docs if d.get("ok")]
        if ok:
            entry["load"] = stat([d["load"] for d in ok])
            entry["get_function"] = stat([d["get_function"] for d in ok])
        fails = [d for d in docs if not d.get("ok")]
        if fails:
            entry["failed"] = len(fails)
            entry["error"] = fails[0].get("error")
            entry["time_to_fail"] = stat([d["load"] for d in fails])
        entry["env"] = (
            {k: docs[0].get(k) for k in ("CUDA_MODULE_LOADING", "CUDA_CACHE_DISABLE")}
            if docs
            else {}
        )
        out["load"][name] = entry
    run = gemm.get("run") or {}
    for v in run.get("variants", []):
        s = stat(v["times_ms"], unit="ms")
        flop = 2.0 * run["M"] * run["N"] * run["K"]
        out["kernel"][v["name"]] = {
            **s,
            "rel_err": v["rel_err"],
            "unwritten": v["unwritten"],
            "tflops_at_median": _round(flop / (s["median"] * 1e-3) / 1e12),
        }
    out["problem"] = {k: run.get(k) for k in ("M", "N", "K", "rounds", "seed")}
    out["method"] = {
        k: run.get(k)
        for k in (
            "inputs",
            "reference",
            "reference_cpu_samples",
            "reference_cpu_max_rel_err",
            "timing",
            "warmup_per_variant",
        )
    }
    return out


def runtime_accepts(raw: Json) -> dict[str, bool]:
    """Which GEMM_IMAGES the runtime on the GPU accepted: LLVM 22's
    olIsValidBinary on each raw image (the probe's plain run), which asks the
    CUDA plugin what registerLib asks it. The first-compatible column below
    is that answer, measured, not a rule written here."""
    files = {d["file"]: d for d in _require(raw, "probe")["plain"]["files"]}
    out: dict[str, bool] = {}
    for name, info in GEMM_IMAGES.items():
        ext = "ptx" if info["kind"] == "ptx" else "cubin"
        doc = files.get(f"gemm.{name}.{ext}")
        if doc is None:
            raise WorkspaceError(f"probe: no plain run of gemm.{name}.{ext}")
        out[name] = bool(doc["is_valid_binary"])
    return out


def image_choice(
    gemm: Json, expected: list[Json], accepted: dict[str, bool], device_cc: str
) -> Json:
    """For each packed order: what a first-compatible loop loads (the first
    image the runtime accepted, runtime_accepts), what the series' ranking
    loads (kdl-select's answer for the same file, recorded by gpu/prepare.sh),
    and what each costs: cold load + N kernel runs, from the measured
    medians."""
    load_ms: dict[str, Json] = {}
    for name in GEMM_IMAGES:
        if GEMM_IMAGES[name]["kind"] == "ptx":
            cold = gemm["load"].get(f"{name}/jit-cache-off", {}).get("load")
            warm = gemm["load"].get(f"{name}/jit-cache-warm", {}).get("load")
        else:
            cold = warm = gemm["load"].get(name, {}).get("load")
        if cold and warm:
            load_ms[name] = {
                "jit_cache_empty": _round(cold["median"] / 1e6),
                "jit_cache_warm": _round(warm["median"] / 1e6),
            }
    kernel_ms = {k: v["median"] for k, v in gemm["kernel"].items()}
    by_file = {e["file"]: e for e in expected}
    rows = []
    for fname, order in ORDERS.items():
        ok = [n for n in order if accepted[n]]
        first = ok[0] if ok else None
        ranked = None
        sel = (by_file.get(fname) or {}).get("kdl_select")
        if isinstance(sel, dict) and sel.get("selected") is not None:
            ranked = order[sel["selected"]]
        row: Json = {
            "file": fname,
            "order": order,
            "first_compatible": first,
            "ranked": ranked,
            "ranked_by": "kdl-select as recorded by gpu/prepare.sh at the "
            "harness version of the run (series v1's rankOffloadImages)"
            if ranked
            else "not recorded (no overlay build at prepare time)",
        }
        costs: Json = {}
        for cache in ("jit_cache_empty", "jit_cache_warm"):
            for n in RUNS:
                c: Json = {}
                for label, img in (("first_compatible", first), ("ranked", ranked)):
                    if img in load_ms and img in kernel_ms:
                        c[label] = _round(load_ms[img][cache] + n * kernel_ms[img])
                if "first_compatible" in c and "ranked" in c:
                    c["first_over_ranked"] = _round(c["first_compatible"] / c["ranked"])
                costs[f"{cache}/runs={n}"] = c
        row["cost_ms"] = costs
        rows.append(row)
    return {
        "device_cc": device_cc,
        "accepted": accepted,
        "rules": "what LLVM 22's runtime on the device accepted (olIsValidBinary "
        "of each raw image, the plugin's isPluginCompatible and "
        "isDeviceCompatible, as registerLib asks them)",
        "cost": "median cold load (fresh process, eager loading; PTX with the "
        "JIT cache empty or warm) + runs x median kernel time, in ms",
        "load_ms": load_ms,
        "kernel_ms": kernel_ms,
        "orders": rows,
    }


def probe_summary(raw: Json) -> Json:
    probe = raw.get("probe") or {}
    keep = (
        "file",
        "bytes",
        "is_valid_binary",
        "is_valid_binary_error",
        "create_program_ok",
        "create_program_error",
        "get_symbol_error",
        "launch_error",
        "marker_variant",
        "marker_cuda_arch",
    )
    out: Json = {}
    for key in ("plain", "shim"):
        doc = probe.get(key)
        out[key] = (
            [{k: f[k] for k in keep if k in f} for f in doc.get("files", [])]
            if doc
            else None
        )
    out["shim_library"] = probe.get("shim_library")
    # What the shim printed with KDL_INFO=1 (each line once, in order).
    info = (probe.get("shim_stderr") or "").splitlines()
    out["shim_info"] = list(dict.fromkeys(x for x in info if x.startswith("kdl:")))
    out["shim_missing"] = probe.get("shim_missing")
    out["markers"] = {str(v): k for k, v in MARKERS.items()}
    out["shim_vs_kdl_select"] = _shim_check(out.get("shim"), probe.get("expected"))
    return out


def _shim_check(shim: list[Json] | None, expected: list[Json] | None) -> list[Json]:
    """Per OffloadBinary input: the image kdl-select chose on the CPU and the
    image whose kernel ran on the GPU behind the shim (its marker)."""
    if not shim:
        return []
    by_file = {e["file"]: e for e in expected or []}
    rows = []
    for f in shim:
        if not f["file"].endswith(".bin"):
            continue
        sel = (by_file.get(f["file"]) or {}).get("kdl_select")
        want_tag = None
        if isinstance(sel, dict) and sel.get("selected") is not None:
            want_tag = sel["images"][sel["selected"]].get("tag")
        want = MARKERS.get(want_tag) if want_tag else None
        ran = f.get("marker_variant")
        rows.append(
            {
                "file": f["file"],
                "kdl_select": want_tag,
                "expected_marker": want,
                "ran_marker": ran,
                "ran": {str(v): k for k, v in MARKERS.items()}.get(str(ran)),
                "create_program_ok": f.get("create_program_ok"),
                "error": f.get("create_program_error"),
                "match": want == ran,
            }
        )
    return rows


def summarize(raw: Json) -> Json:
    harness = _require(raw, "harness")
    cold = _require(raw, "layers", "cold")
    cc_text = next((d["compute_capability"] for d in cold.get("cuda_cold", [])), "9.0")
    gemm = gemm_stats(raw)
    expected = (raw.get("probe") or {}).get("expected") or []
    return {
        "schema": SCHEMA,
        "harness": {
            "version": harness["version"],
            "date": harness["date"],
            "command": harness["command"],
            "counts": harness["counts"],
        },
        "environment": environment(raw),
        "layers": layer_stats(raw),
        "selection": selection_stats(raw),
        "gemm": gemm,
        "image_choice": image_choice(gemm, expected, runtime_accepts(raw), cc_text),
        "probe": probe_summary(raw),
    }


# --------------------------------------------------------------------------
# The picture: stacked horizontal bars, standard library only


COLORS = {
    "runtime_init": "#4e79a7",
    "device_discovery": "#a0cbe8",
    "context_create": "#f28e2b",
    "queue_create": "#ffbe7d",
    "selection": "#e15759",
    "module_load_cold": "#59a14f",
    "module_load_warm": "#59a14f",
    "symbol_lookup": "#8cd17d",
    "symbol_lookup_warm": "#8cd17d",
    "first_launch_enqueue": "#b6992d",
    "first_launch_sync": "#f1ce63",
    "launch_sync": "#f1ce63",
}


def _fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def bars(summary: Json) -> list[Json]:
    """The panels of the picture: [{title, rows: [{label, segments}]}]."""
    layers = summary["layers"]
    sel_all = summary["selection"]
    policy = "kdl-ranked" if "kdl-ranked" in sel_all else "first-wins"
    sel = sel_all.get(policy, {}).get(BAR_SELECTION_IMAGES, {})
    panels = []
    for title, stack, mode, skip in (
        ("Cold: first use in a fresh process", COLD_STACK, "cold", set()),
        (
            "Cold, after initialisation (runtime init and context left out)",
            COLD_STACK,
            "cold",
            {"runtime_init", "context_create"},
        ),
        ("Warm: one more program, symbol and launch", WARM_STACK, "warm", set()),
    ):
        rows = []
        paths = dict(PATHS)
        if SHIM_PATH[0] in layers:
            paths[SHIM_PATH[0]] = SHIM_PATH[1]
        for key, label in paths.items():
            segs = []
            for layer in stack:
                if layer in skip:
                    continue
                if layer == "selection" and key == SHIM_PATH[0]:
                    continue  # inside its olCreateProgram (module_load_*)
                if layer == "selection":
                    s = sel.get(mode)
                    name = f"selection ({policy}, {BAR_SELECTION_IMAGES} images)"
                else:
                    s = layers[key][mode].get(layer)
                    name = layer
                if s:
                    segs.append({"layer": name, "key": layer, "ns": s["median"]})
            rows.append({"label": label, "segments": segs})
        panels.append({"title": title, "rows": rows})
    return panels


def render_svg(summary: Json) -> str:
    panels = bars(summary)
    width, left, right = 980, 190, 80
    bar_h, gap = 26, 10
    out: list[str] = []
    y = 56
    body: list[str] = []
    for panel in panels:
        body.append(f'<text x="{left}" y="{y}" class="h">{_esc(panel["title"])}</text>')
        y += 12
        total_max = max(sum(s["ns"] for s in r["segments"]) for r in panel["rows"])
        scale = (width - left - right) / total_max if total_max > 0 else 0.0
        for row in panel["rows"]:
            x = float(left)
            body.append(
                f'<text x="{left - 8}" y="{y + bar_h * 0.68:.1f}" '
                f'text-anchor="end">{_esc(row["label"])}</text>'
            )
            for seg in row["segments"]:
                w = seg["ns"] * scale
                color = COLORS.get(seg["key"], "#bab0ac")
                body.append(
                    f'<rect x="{x:.2f}" y="{y}" width="{max(w, 0.5):.2f}" '
                    f'height="{bar_h}" fill="{color}">'
                    f"<title>{_esc(seg['layer'])}: {_fmt_ns(seg['ns'])} (median)"
                    "</title></rect>"
                )
                if w > 70:
                    body.append(
                        f'<text x="{x + w / 2:.2f}" y="{y + bar_h * 0.68:.1f}" '
                        f'text-anchor="middle" class="s">{_fmt_ns(seg["ns"])}</text>'
                    )
                x += w
            total = sum(s["ns"] for s in row["segments"])
            body.append(
                f'<text x="{x + 4:.2f}" '
                f'y="{y + bar_h * 0.68:.1f}" class="s">{_fmt_ns(total)}</text>'
            )
            y += bar_h + gap
        y += 22
    # Legend
    seen: list[tuple[str, str]] = []
    for panel in panels:
        for row in panel["rows"]:
            for seg in row["segments"]:
                item = (seg["layer"], COLORS.get(seg["key"], "#bab0ac"))
                if item not in seen:
                    seen.append(item)
    lx, ly = left, y
    for i, (name, color) in enumerate(seen):
        cx = lx + (i % 3) * 260
        cy = ly + (i // 3) * 20
        body.append(f'<rect x="{cx}" y="{cy}" width="12" height="12" fill="{color}"/>')
        body.append(f'<text x="{cx + 18}" y="{cy + 11}" class="s">{_esc(name)}</text>')
    y = ly + ((len(seen) + 2) // 3) * 20 + 16
    h = summary["harness"]
    env = summary["environment"]
    foot = [
        f"{env['device']}, driver {env['driver']}, CUDA {env['cuda']}, LLVM "
        f"{env['llvm']}; harness {h['version']}, {h['date']}.",
        "Segments are per-layer medians (a sum of medians, not the median of "
        "sums); results/gpu/gpu-results.json has n, p5, p95 and bootstrap CIs.",
        "Shim bar: olCreateProgram of a 4-image OffloadBinary, selection inside.",
    ]
    if summary["selection"]:
        foot.append(
            "Selection: extractOffloadBinaries + series v1's choice, timed in its "
            "own process by that harness (select_bench, since removed; `kdl bench` "
            "times v2's)."
        )
    for line in foot:
        body.append(f'<text x="10" y="{y}" class="s">{_esc(line)}</text>')
        y += 15
    out.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
        f'viewBox="0 0 {width} {y}" font-family="sans-serif" font-size="12">'
    )
    out.append(
        "<style>.h{font-weight:bold;font-size:13px}.s{font-size:11px}"
        ".t{font-weight:bold;font-size:15px}</style>"
    )
    out.append('<rect width="100%" height="100%" fill="white"/>')
    out.append(
        '<text x="10" y="24" class="t">GPU dispatch path, layer by layer: '
        "CUDA driver API vs liboffload</text>"
    )
    out.extend(body)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_choice_md(summary: Json) -> str:
    ch = summary["image_choice"]
    lines = [
        "<!-- generated by `kdl results report` from "
        "results/gpu/raw.json; do not edit -->",
        f"Device: {summary['environment']['device']} (compute capability "
        f"{ch['device_cc']}). First compatible: {ch['rules']}. Ranked: "
        "series v1's ranking, as kdl-select recorded it for the run (series v2 "
        f"makes the same choices here). Cost: {ch['cost']}.",
        "",
        "| image order | first compatible | ranked | 1 run, JIT cache empty "
        "| 100 runs | 10000 runs | 1 run, JIT cache warm |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in ch["orders"]:
        c = row["cost_ms"]

        def pair(key: str, costs: Json = c) -> str:
            e = costs.get(key, {})
            if "first_over_ranked" not in e:
                return "n/a"
            return (
                f"{e['first_compatible']:.3f} vs {e['ranked']:.3f} "
                f"(x{e['first_over_ranked']:.2f})"
            )

        name = ", ".join(row["order"])
        if "prio" in row["file"]:
            name += " (sm_90a: variant_priority=1)"
        lines.append(
            f"| {name} | {row['first_compatible']} | {row['ranked'] or 'n/a'} | "
            f"{pair('jit_cache_empty/runs=1')} | {pair('jit_cache_empty/runs=100')} "
            f"| {pair('jit_cache_empty/runs=10000')} | "
            f"{pair('jit_cache_warm/runs=1')} |"
        )
    lines.append("")
    lines.append(
        "| image | cold load, JIT cache empty | cold load, JIT cache warm "
        "| kernel (median) | TFLOP/s | rel. error | HMMA / HGMMA in SASS |"
    )
    lines.append("|---|---|---|---|---|---|---|")
    kern = summary["gemm"]["kernel"]
    sass = summary["gemm"]["sass"]
    for name, ld in ch["load_ms"].items():
        k = kern.get(name, {})
        mix = sass.get(name)
        mix_text = f"{mix['HMMA']} / {mix['HGMMA']}" if mix else "PTX (JIT)"
        lines.append(
            f"| {name} | {ld['jit_cache_empty']:.3f} ms | {ld['jit_cache_warm']:.3f} ms"
            f" | {k.get('median', float('nan')):.4f} ms | "
            f"{k.get('tflops_at_median', float('nan')):.0f} | "
            f"{k.get('rel_err', float('nan')):.2e} | {mix_text} |"
        )
    sm80 = summary["gemm"]["load"].get("sm_80", {})
    if sm80.get("error"):
        lines.append(
            f"| sm_80 | fails: {sm80['error']} (after "
            f"{sm80['time_to_fail']['median'] / 1e6:.3f} ms) | | | | | |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Files


def load_json(path: Path) -> Json:
    try:
        doc: Json = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise WorkspaceError(f"{path}: no such file") from e
    except json.JSONDecodeError as e:
        raise WorkspaceError(f"{path}: not JSON: {e}") from e
    return doc


def dump(doc: Json) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def import_raw(src: Path, dst: Path = RAW) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(compact(load_json(src)), sort_keys=True) + "\n")
    return dst


def generate(raw_path: Path = RAW) -> dict[str, str]:
    """The report files' contents, keyed by file name (nothing written)."""
    summary = summarize(load_json(raw_path))
    return {
        SUMMARY.name: dump(summary),
        SVG.name: render_svg(summary),
        CHOICE_MD.name: render_choice_md(summary),
    }


def write_generated(out_dir: Path, files: dict[str, str]) -> list[Path]:
    """Write each generated report *files* names into *out_dir*."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out_dir / name).write_text(text)
    return [out_dir / name for name in files]


def write_report(raw_path: Path = RAW, out_dir: Path = RESULTS_GPU) -> list[Path]:
    return write_generated(out_dir, generate(raw_path))


def cli(
    argv: Sequence[str] | None,
    module: str,
    import_raw: Callable[[Path], Path],
    write_report: Callable[[], list[Path]],
) -> int:
    """``python -m MODULE import RAW | report`` for a results module."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if len(args) == 2 and args[0] == "import":
            print(import_raw(Path(args[1])))
            return 0
        if args == ["report"]:
            for p in write_report():
                print(p)
            return 0
        raise UsageError(
            f"usage: python -m {module} import RAW | python -m {module} report"
        )
    except WorkspaceError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    return cli(argv, "kdl.results.gpureport", import_raw, write_report)


if __name__ == "__main__":
    raise SystemExit(main())
