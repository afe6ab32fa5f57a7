"""The GPU results' picture and table, drawn from gpu-results.json.

:mod:`kdl.results.gpureport` derives the summary; this module draws it:
stacked horizontal bars of the per-layer medians (an SVG, standard library
only; the sum of medians is not the median of the sums, and the picture says
so) and the Markdown table of which image each runtime chose.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]

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
#: The selection the bars include: 8 real images, the series' ranking when
#: it was measured, else first-wins (named in the output).
BAR_SELECTION_IMAGES = "8"

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
