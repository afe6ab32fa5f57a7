"""Turn the GPU harness's raw output into results/gpu/: statistics, tables, SVG.

The device machine writes raw JSON (gpu/driver.py): every cold sample from a
fresh process, every warm sample, the GEMM kernel times, the probe results.
This module, on the developer's machine, derives everything that is
reported from that file and nothing else (:mod:`kdl.results.gpufiles` reads
and writes the files), so the numbers in the RFC and the picture can be
regenerated (and are, by tests/results/test_gpu_results.py).

Statistics: median, p5, p95 (linear interpolation between order statistics)
and a 95% percentile-bootstrap confidence interval of the median (1000
resamples, fixed seed; each resample's median drawn as its middle order
statistics, see resample_median), per layer. The picture and the table of
image choices are drawn by :mod:`kdl.results.gpurender`.
"""

from __future__ import annotations

from typing import Any

from kdl import paths
from kdl.errors import WorkspaceError
from kdl.results.stats import rounded, stat

RESULTS_GPU = paths.RESULTS / "gpu"
RAW = RESULTS_GPU / "raw.json"
SUMMARY = RESULTS_GPU / "gpu-results.json"
SVG = RESULTS_GPU / "dispatch-layers.svg"
CHOICE_MD = RESULTS_GPU / "image-choice.md"

SCHEMA = "kdl-gpu-results/1"

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
SELECTION_FILES = {"1": "sel-1.bin", "8": "sel-8.bin", "64": "sel-64.bin"}

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
            "tflops_at_median": rounded(flop / (s["median"] * 1e-3) / 1e12),
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
                "jit_cache_empty": rounded(cold["median"] / 1e6),
                "jit_cache_warm": rounded(warm["median"] / 1e6),
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
                        c[label] = rounded(load_ms[img][cache] + n * kernel_ms[img])
                if "first_compatible" in c and "ranked" in c:
                    c["first_over_ranked"] = rounded(
                        c["first_compatible"] / c["ranked"]
                    )
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
