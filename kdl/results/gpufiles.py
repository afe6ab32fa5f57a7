"""The GPU results' files: the device's raw file compacted into
results/gpu/raw.json, and the reports derived from it
(:mod:`kdl.results.gpureport` summarises, :mod:`kdl.results.gpurender`
draws).

    kdl results import RAW    compact RAW into results/gpu/raw.json
    kdl results report        results/gpu/raw.json -> gpu-results.json,
                              dispatch-layers.svg, image-choice.md
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kdl.errors import UsageError, WorkspaceError
from kdl.results.gpurender import render_choice_md, render_svg
from kdl.results.gpureport import (
    CHOICE_MD,
    RAW,
    RESULTS_GPU,
    SUMMARY,
    SVG,
    Json,
    summarize,
)


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
    """Compact the raw file *src* into *dst*; one laid out otherwise than
    the harness writes is refused in one line, *dst* untouched."""
    try:
        compacted = compact(load_json(src))
    except (AttributeError, TypeError, KeyError) as exc:
        raise WorkspaceError(
            f"{src}: not a raw file of the GPU harness ({type(exc).__name__}: {exc})"
        ) from None
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(compacted, sort_keys=True) + "\n")
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
