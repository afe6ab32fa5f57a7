"""Committed result files agree with themselves and with what made them.

A figure edited by hand in any of them fails here: statistics are recomputed
from the samples kept beside them, reports are re-derived from their logs,
and verdicts from the details they rest on. (results/gpu/gpu-results.json is
checked in test_gpu_results.py.)
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import struct
import sys
from types import ModuleType
from typing import Any

from kdl import paths

RESULTS = paths.RESULTS


def _load(rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RESULTS / rel).read_text())
    return data


def test_apply_bench_statistics_follow_the_samples() -> None:
    doc = _load("apply-bench.json")
    assert set(doc["samples"]) == set(doc["seconds"])
    for command, samples in doc["samples"].items():
        assert len(samples) == doc["runs"], command
        want = {"min": min(samples), "median": round(statistics.median(samples), 3)}
        assert doc["seconds"][command] == want, command
    # Measured on series v2's five patches, the series when the bench ran.
    assert doc["patches"] == 5


def _report_module(name: str = "clang_selection_report") -> ModuleType:
    path = paths.ROOT / "gpu" / f"{name}.py"
    # The reports import their sibling gpu/logsections.py, as when run.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_clang_selection_follows_its_log() -> None:
    doc = _load("gpu/clang-selection-h100.json")
    log = (RESULTS / "gpu" / "clang-selection-h100.log").read_text()
    parsed = _report_module().parse(log)
    assert doc["device"] == parsed["device"]
    assert doc["runs"] == parsed["runs"]
    ran = {r["run"]: r["ran"] for r in doc["runs"]}
    # What the README and RFC say about this run.
    assert ran["mark (clang's descriptor), LLVM 22"] == "sm_90a"
    assert ran["mark (clang's descriptor), LLVM 22 + shim"] == "sm_90a"
    assert ran["mark-90-first, LLVM 22"] == "sm_90"
    assert ran["mark-90-first, LLVM 22 + shim"] == "sm_90a"
    assert doc["clang_descriptor_order"] == ["sm_90a", "sm_90"]


def test_results_name_their_files() -> None:
    """Every file in results/ is one of the kinds checked somewhere."""
    known = {
        "apply-bench.json",
        "gpu",
        "real-trees",
        "readers",  # test_readers.py: kdl bench-readers
        "main-texts",  # checks by hand against main's texts (patches/series)
    }
    # lit/ is written by each run and not committed.
    assert {p.name for p in RESULTS.iterdir()} <= known | {"lit"}
    gpu = {p.name for p in (RESULTS / "gpu").iterdir()}
    assert gpu <= {
        "raw.json",
        "gpu-results.json",
        "dispatch-layers.svg",
        "image-choice.md",
        "clang-selection-h100.json",
        "clang-selection-h100.log",
        "offload-dispatch-h100.json",
        "offload-dispatch-h100.log",
        "real-runtimes",
        "real-runtimes-v6",
        "real-runtimes-v7",
        "cubin-arch-mark",
        "runtime-select-v7",  # test_runtime_select.py
        "runtime-select-v8",
        "runtime-select-v8-proposals-v2",  # test_runtime_select.py
        "offloadapi-h200",  # test_offloadapi_h200.py
        "offloadapi-h200-v9",
        "real-runtimes-v8",
        "real-runtimes-v10-run1",  # test_real_runtimes.py
        "real-runtimes-v10",
        "real-runtimes-v11",
        "offloadapi-h100-v10",  # test_offloadapi_h200.py
    }, gpu


def _nv_compat(cubin: bytes) -> tuple[int, dict[int, int]]:
    """A 64-bit little-endian cubin's e_flags and its .nv.compat records
    (attribute -> value; records of format 4 carry data, skipped)."""
    (flags,) = struct.unpack_from("<I", cubin, 48)
    (shoff,) = struct.unpack_from("<Q", cubin, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 58)

    def section(i: int) -> tuple[int, bytes]:
        name, _, _, _, off, size = struct.unpack_from(
            "<IIQQQQ", cubin, shoff + i * shentsize
        )
        return name, cubin[off : off + size]

    names = section(shstrndx)[1]
    for i in range(shnum):
        name, data = section(i)
        if names[name : names.index(b"\0", name)] == b".nv.compat":
            records, at = {}, 0
            while at + 4 <= len(data):
                fmt, attr, value = struct.unpack_from("<BBH", data, at)
                at += 4 + (value if fmt == 4 else 0)
                if fmt in (2, 3):
                    records[attr] = value
            return flags, records
    raise AssertionError("no .nv.compat section")


def test_nvcc_marks_arch_specific_cubins_in_nv_compat_not_e_flags() -> None:
    """results/gpu/cubin-arch-mark/: nvcc 13.0's cubins as committed."""
    where = RESULTS / "gpu" / "cubin-arch-mark"
    read = {
        p.stem.removeprefix("k-"): _nv_compat(p.read_bytes())
        for p in where.glob("k-*.cubin")
    }
    assert set(read) == {"sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f"} | {
        "sm_120",
        "sm_120a",
    }
    for arch, (flags, records) in read.items():
        base = arch.rstrip("af")
        assert flags == read[base][0], arch  # e_flags: the base SM's
        assert records[9] == (1 if arch.endswith("a") else 0), arch
    # The family-specific cubin's compatibility records are the base one's.
    assert read["sm_100f"] == read["sm_100"]


def test_test_suite_benchmark_ran_on_the_gpu() -> None:
    """llvm-test-suite's OffloadDispatch on an H100: LLVM 22 refuses the
    OffloadBinary, the shim loads the image it ranks first (sm_90a)."""
    doc = json.loads((RESULTS / "gpu" / "offload-dispatch-h100.json").read_text())
    assert doc["device"].startswith("NVIDIA H100") and doc["harness"]

    def runs(stack: str, name: str) -> list[dict[str, object]]:
        return [
            b
            for b in doc[stack]["benchmarks"]
            if b["run_name"] == name and b["run_type"] == "iteration"
        ]

    refused = runs("llvm22", "CreateProgram/offload:3")
    assert refused and all(b.get("error_occurred") for b in refused)
    loaded = runs("shim", "CreateProgram/offload:3")
    assert loaded and not any(b.get("error_occurred") for b in loaded)
    for stack in ("llvm22", "shim"):
        assert runs(stack, "CreateProgram/image:sm_90a")
        assert runs(stack, "LaunchSync")
    log = (RESULTS / "gpu" / "offload-dispatch-h100.log").read_text()
    assert "image 2 (sm_90a, exact fit)" in log
