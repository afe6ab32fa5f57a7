"""The "On a GPU" part of the measurements, from results/gpu/*.json.

``gpu-results.json`` (schema ``kdl-gpu-results/1``, written by
``kdl.gpureport``) gets a summary of its own: what stock liboffload does with
an OffloadBinary, which image each policy loads and what that costs, and the
module-load and selection times that put the selection cost in proportion.
Any other JSON file is shown by its ``figures`` list or its ``*_ns`` fields.
Every part is optional: a missing key drops that part, never the post.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kdl.rfc.figures import cite, pointer
from kdl.rfc.markdown import date, ratio, t, table

GPU_SCHEMA = "kdl-gpu-results/1"
#: Costs shown from image_choice: (key in cost_ms, column title).
COST_COLUMNS = (
    ("jit_cache_empty/runs=1", "first / best, one run"),
    ("jit_cache_empty/runs=10000", "first / best, 10k runs"),
)


def section(rel: str, data: dict[str, Any]) -> list[str]:
    """The lines for one results file; none for raw data without figures."""
    if data.get("schema") == GPU_SCHEMA:
        return gpu_results(rel, data)
    if isinstance(data.get("figures"), list):
        return generic(rel, data)
    return []


def _get(node: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _median(rel: str, data: dict[str, Any], *keys: str) -> str | None:
    """A sourced median from a stats object with a ``unit`` next to it."""
    stats = _get(data, *keys)
    if not isinstance(stats, dict) or not isinstance(stats.get("median"), int | float):
        return None
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}.get(str(stats.get("unit")))
    if scale is None:
        return None
    return t(pointer(rel, *keys, "median"), float(stats["median"]) * scale)


def gpu_results(rel: str, data: dict[str, Any]) -> list[str]:
    env = data.get("environment") or {}
    harness = data.get("harness") or {}
    device = env.get("device", "a GPU")
    parts = [
        f"driver {env['driver']}" if env.get("driver") else "",
        f"CUDA {env['cuda']}" if env.get("cuda") else "",
        f"Debian's LLVM {env['llvm']} liboffload" if env.get("llvm") else "",
    ]
    where = ", ".join(p for p in parts if p)
    out = [
        f"`{device}`{f' ({where})' if where else ''}, {date(harness.get('date'))}, "
        f"from `{rel}`:",
        "",
    ]
    out += _probe(rel, data)
    out += _choice(rel, data)
    out += _layers(rel, data)
    out += _selection(rel, data)
    return out


def _probe(rel: str, data: dict[str, Any]) -> list[str]:
    out: list[str] = []
    plain = _get(data, "probe", "plain")
    if isinstance(plain, list):
        packed = [p for p in plain if str(p.get("file", "")).endswith(".bin")]
        raw_ok = [
            p["file"]
            for p in plain
            if not str(p.get("file", "")).endswith(".bin")
            and p.get("create_program_ok")
        ]
        errors = {
            str(p.get("create_program_error", "")).partition(": ")[2] for p in packed
        }
        if (
            packed
            and len(errors) == 1
            and not any(p.get("create_program_ok") for p in packed)
        ):
            text = (
                "- Stock liboffload cannot load an OffloadBinary: every packed file "
                "the probe tried, with one image or several, is refused by "
                f"`olIsValidBinary` and fails `olCreateProgram` with `{errors.pop()}`"
            )
            if raw_ok:
                text += f", while the raw `{raw_ok[0]}` loads"
            out += [text + ".", ""]
    checks = _get(data, "probe", "shim_vs_kdl_select")
    if isinstance(checks, list) and checks:
        base = pointer(rel, "probe", "shim_vs_kdl_select")
        matched = sum(
            1 for c in checks if isinstance(c, dict) and c.get("match") is True
        )
        matched_text = cite(str(matched), base + "?count=match:true")
        total_text = cite(str(len(checks)), base + "?len")
        out += [
            "- With the ranking in front of the same liboffload (a preloaded shim "
            "that applies the series' library to LLVM 22; the runtime patches "
            f"themselves target main), {matched_text} "
            f"of {total_text} packed files ran exactly "
            "the image `kdl-select` ranks first (each kernel reports which image "
            "it is), and a file with no compatible image fails with the "
            "explanation.",
            "",
        ]
    return out


def _choice(rel: str, data: dict[str, Any]) -> list[str]:
    orders = _get(data, "image_choice", "orders")
    if not isinstance(orders, list) or not orders:
        return []
    rows = []
    seen: set[str] = set()
    for i, row in enumerate(orders):
        if not isinstance(row, dict) or "first_compatible" not in row:
            continue
        chosen = row.get("ranked", row.get("ranked_with_priority"))
        order = ", ".join(f"`{x}`" for x in row.get("order", []))
        if order in seen and row.get("file"):
            order += f" (`{row['file']}`)"
        seen.add(order)
        cells = [
            order,
            _name(row["first_compatible"]),
            _name(chosen),
        ]
        for key, _ in COST_COLUMNS:
            costs = _get(row, "cost_ms", key)
            field = next(
                (
                    f
                    for f in ("first_over_ranked", "first_over_best")
                    if f in (costs or {})
                ),
                None,
            )
            if field is None or not isinstance(costs[field], int | float):
                cells.append("")
                continue
            ref = pointer(rel, "image_choice", "orders", i, "cost_ms", key, field)
            cells.append(ratio(ref, float(costs[field])))
        rows.append(cells)
    if not rows:
        return []
    by = next((r.get("ranked_by") for r in orders if isinstance(r, dict)), None)
    if isinstance(by, str):
        by = by.replace(" (", ", ").replace(")", "")
    out = [
        "- One GEMM kernel's images packed in different orders: what each policy "
        f"loads (ranked by {by or 'the series ranking'}) and what the first "
        "compatible image costs over the ranked one (measured cold load with an "
        "empty JIT cache, plus runs times the measured kernel time).",
        "",
    ]
    out += table(
        ["packed order", "first compatible", "ranked", *(c for _, c in COST_COLUMNS)],
        rows,
    )
    out.append("")
    kernel_a = _median(rel, data, "gemm", "kernel", "sm_90a")
    kernel = _median(rel, data, "gemm", "kernel", "sm_90")
    ptx = _median(rel, data, "gemm", "load", "compute_80/jit-cache-off", "load")
    cubin = _median(rel, data, "gemm", "load", "sm_90", "load")
    facts = []
    if kernel_a and kernel:
        facts.append(
            f"the GEMM kernel built for `sm_90a` takes {kernel_a}, for `sm_90` {kernel}"
        )
    if ptx and cubin:
        facts.append(
            f"loading `compute_80` PTX with an empty JIT cache takes {ptx} against "
            f"{cubin} for the `sm_90` cubin"
        )
    if facts:
        out += ["- Medians: " + "; ".join(facts) + ".", ""]
    return out


def _name(image: Any) -> str:
    return f"`{image}`" if image else "none"


def _layers(rel: str, data: dict[str, Any]) -> list[str]:
    lib = _median(rel, data, "layers", "liboffload", "cold", "module_load_cold")
    cuda = _median(rel, data, "layers", "cuda", "cold", "module_load_cold")
    if not lib and not cuda:
        return []
    what = []
    if lib:
        what.append(f"{lib} through liboffload (`olCreateProgram`)")
    if cuda:
        what.append(f"{cuda} through the CUDA driver (`cuModuleLoadData`)")
    return [
        "- For scale: the first module load in a fresh process takes "
        + " and ".join(what)
        + ".",
        "",
    ]


def _selection(rel: str, data: dict[str, Any]) -> list[str]:
    sel = data.get("selection")
    if not isinstance(sel, dict) or not sel:
        return []
    rows = []
    for policy, by_size in sel.items():
        if not isinstance(by_size, dict):
            continue
        for size in sorted(by_size, key=lambda k: int(k) if str(k).isdigit() else 0):
            entry = by_size[size]
            warm = _median(rel, data, "selection", policy, size, "warm")
            cold = _median(rel, data, "selection", policy, size, "cold")
            images = entry.get("images") if isinstance(entry, dict) else None
            if not warm or not isinstance(images, int):
                continue
            rows.append(
                [
                    cite(
                        str(images), pointer(rel, "selection", policy, size, "images")
                    ),
                    f"`{policy}`",
                    warm,
                    cold or "",
                ]
            )
    if not rows:
        return []
    out = [
        '[details="Parsing a file of real cubins and choosing one, on the GPU '
        'host (median; cold: the first call in a fresh process)"]',
        "",
    ]
    out += table(["images", "policy", "warm", "cold"], rows)
    out += ["", "[/details]", ""]
    return out


def _flatten(node: Any, ptr: str, out: list[tuple[str, float]]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            child = f"{ptr}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if isinstance(value, int | float) and not isinstance(value, bool):
                if str(key).endswith("_ns"):
                    out.append((child, float(value)))
            else:
                _flatten(value, child, out)


def generic(rel: str, data: dict[str, Any]) -> list[str]:
    """Any other results file: its ``figures`` list, or its ``*_ns`` fields."""
    title = data.get("title") or Path(rel).stem
    head = f"**{title}**"
    if isinstance(data.get("device"), str):
        head += f" on `{data['device']}`"
    if data.get("date"):
        head += f", {date(data['date'])}"
    out = [head + f" (`{rel}`):", ""]
    shown = 0
    figures = data.get("figures")
    if isinstance(figures, list):
        for k, fig in enumerate(figures):
            if not isinstance(fig, dict) or not isinstance(
                fig.get("value"), int | float
            ):
                continue
            ref = pointer(rel, "figures", k, "value")
            unit = str(fig.get("unit", ""))
            if unit == "ns":  # the checker reads the unit next to the value
                text = t(ref, float(fig["value"]))
            else:
                text = cite(str(fig["value"]), ref) + (f" {unit}" if unit else "")
            out.append(f"- {fig.get('name', 'figure')}: {text}")
            shown += 1
    else:
        leaves: list[tuple[str, float]] = []
        _flatten(data, "", leaves)
        for ptr, value in leaves[:12]:
            out.append(f"- `{ptr.lstrip('/')}`: {t(rel + '#' + ptr, value)}")
            shown += 1
        if len(leaves) > 12:
            out.append(f"- ... and more in `{rel}`.")
    facts_list = data.get("facts")
    if isinstance(facts_list, list):
        for item in facts_list:
            if isinstance(item, dict):
                out.append(f"- {item.get('name', 'fact')}: `{item.get('text', '')}`")
    if not shown and not facts_list:
        out.append("- no figures in this file.")
    out.append("")
    return out
