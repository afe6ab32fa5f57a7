"""What the growth rows of the H200 run say (results/gpu/real-runtimes-v7/
NOTES.md): the CUDA driver alone keeps nothing after a refused load, a PTX
load and unload or the fallback's sequence; the series' PTX programs are
never destroyed and keep what the driver keeps for a loaded module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RUN = Path(__file__).resolve().parents[2] / "results/gpu/real-runtimes-v7"


def rows(name: str) -> dict[str, dict[str, Any]]:
    out = {}
    for line in (RUN / name).read_text().splitlines():
        row = json.loads(line)
        image = row.get("file") or row.get("good") or row.get("bad")
        out[f"{row['run']} {row.get('mode', 'growth')} {Path(image).name}"] = row
    return out


def per_step(row: dict[str, Any], key: str) -> tuple[float, float]:
    """Growth of *key* per step in the two intervals of STEPS steps."""
    first, middle, last = row[key]
    steps = row["steps"][1] - row["steps"][0]
    return (middle - first) / steps, (last - middle) / steps


def test_the_driver_alone_keeps_nothing_unless_a_module_stays_loaded() -> None:
    for name in ("growth-22.jsonl", "growth-22-first.jsonl"):
        got = rows(name)
        for key in (
            "driver fail bad-version-90.ptx",
            "driver load compute_80.ptx",
            "driver fallback compute_80.ptx",
            "driver load sm_90.cubin",
        ):
            assert got[key]["unexpected"] == 0 and got[key]["steps"] == [1, 1001, 2001]
            assert max(per_step(got[key], "heap_kib")) < 0.1, (name, key)
            assert max(per_step(got[key], "rss_kib")) < 0.5, (name, key)
    kept = rows("growth-22.jsonl")
    for image in ("compute_80.ptx", "sm_90.cubin"):
        heap = per_step(kept[f"driver keep {image}"], "heap_kib")
        assert all(40 < h < 41.5 for h in heap), (image, heap)


def test_the_series_never_unloads_a_ptx_program() -> None:
    got = rows("growth-22.jsonl")
    for image in ("v1-ptx-bad90.bin", "v1-ptx.bin", "compute_80.ptx"):
        row = got[f"series growth {image}"]
        assert row["failed"] == 0 and row["destroy_failed"] == 2001, image
        assert row["destroy_error"] == "error parsing binary: Invalid ELF class"
        heap = per_step(row, "heap_kib")
        assert all(41 < h < 42 for h in heap), (image, heap)  # linear
    cubin = got["series growth sm_90.cubin"]
    assert cubin["destroy_failed"] == 0 and max(per_step(cubin, "heap_kib")) < 0.1
    # The fallback keeps the heap a PTX load keeps; only more of it resident.
    fallback, alone = (
        got["series growth v1-ptx-bad90.bin"],
        got["series growth v1-ptx.bin"],
    )
    assert abs(per_step(fallback, "heap_kib")[1] - per_step(alone, "heap_kib")[1]) < 0.2
    assert per_step(fallback, "rss_kib")[1] > 2.5 * per_step(alone, "rss_kib")[1]


def test_v8_destroys_ptx_programs_and_keeps_nothing() -> None:
    """Series v8's run (real-runtimes-v8): 0004 unloads PTX images, so every
    PTX program is destroyed and neither the fallback nor a PTX load keeps
    the 41.5 KiB a module left loaded costs in the driver."""
    v8 = RUN.parent / "real-runtimes-v8" / "growth-22.jsonl"
    for line in v8.read_text().splitlines():
        row = json.loads(line)
        if row["run"] != "series":
            continue
        assert row["destroy_failed"] == 0, row["file"]
        assert max(per_step(row, "heap_kib")) < 1.0, row["file"]
