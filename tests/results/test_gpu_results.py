"""The committed GPU results (results/gpu/): they parse, carry every field the
RFC relies on, and are exactly what kdl.results.gpureport derives from the committed
raw device output (regenerated here and compared byte for byte). CI has no
GPU: the measurements themselves come from gpu/run.sh on the device machine.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kdl import paths
from kdl.offload.binary import make_image, write_v1
from kdl.offload.elf import cubin_header
from kdl.results import gpufiles, gpurender, gpureport, stats

RAW = gpureport.RAW


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return gpufiles.generate(RAW)


@pytest.fixture(scope="module")
def summary() -> dict[str, object]:
    doc: dict[str, object] = json.loads(gpureport.SUMMARY.read_text())
    return doc


def check_stat(s: dict[str, object], where: str) -> None:
    for key in ("n", "median", "p5", "p95", "ci95_median", "unit"):
        assert key in s, f"{where}: no {key}"
    n, med, p5, p95 = s["n"], s["median"], s["p5"], s["p95"]
    assert isinstance(n, int) and n > 0, where
    assert isinstance(med, float | int) and isinstance(p5, float | int)
    assert isinstance(p95, float | int)
    assert p5 <= med <= p95, where
    lo, hi = s["ci95_median"]  # type: ignore[misc]
    assert lo <= med <= hi, where


def test_committed_files_are_regenerated_exactly(generated: dict[str, str]) -> None:
    for name, text in generated.items():
        path = gpureport.RESULTS_GPU / name
        assert path.exists(), f"{path} is not committed"
        assert path.read_text() == text, (
            f"{path} differs from what `kdl results report` makes "
            "from results/gpu/raw.json"
        )


def test_versions_and_provenance(summary: dict[str, object]) -> None:
    assert summary["schema"] == gpureport.SCHEMA
    harness = summary["harness"]
    assert isinstance(harness, dict)
    assert harness["version"] and harness["date"][:2] == "20"
    assert harness["command"].startswith("bash gpu/run.sh")
    env = summary["environment"]
    assert isinstance(env, dict)
    for key in ("device", "driver", "cuda", "llvm", "nvcc", "clocks_before"):
        assert env[key], key
    assert env["llvm"].startswith("22.")


def test_every_layer_has_statistics(summary: dict[str, object]) -> None:
    layers = summary["layers"]
    assert isinstance(layers, dict)
    for path in ("cuda", "liboffload"):
        entry = layers[path]
        assert entry["processes"] >= 30, "cold numbers need >= 30 processes"
        for layer in (
            "runtime_init",
            "device_discovery",
            "module_load_cold",
            "symbol_lookup",
            "first_launch_enqueue",
            "first_launch_sync",
            "module_load_second",
        ):
            check_stat(entry["cold"][layer], f"{path}.cold.{layer}")
        for layer in gpureport.WARM_LAYERS:
            s = entry["warm"][layer]
            check_stat(s, f"{path}.warm.{layer}")
            assert s["n"] >= 1000, "warm numbers need >= 1000 calls"
        # The image that ran is the one that was loaded (sm_90 cubin).
        assert entry["marker_variant"] == 3
        assert entry["marker_variant_cold"] == [3]
    # The same layers for liboffload given the sm_90a cubin, and given a
    # 4-image OffloadBinary behind the shim: the shim's run loads sm_90a (4).
    for path in ("liboffload_sm90a", "liboffload_shim"):
        if path not in layers:
            continue
        entry = layers[path]
        assert entry["marker_variant"] == 4 and entry["marker_variant_cold"] == [4]
        check_stat(entry["cold"]["module_load_cold"], f"{path}.module_load_cold")
        assert entry["warm"]["module_load_warm"]["n"] >= 1000
    assert layers["cuda"]["cold"]["context_create"]["median"] > 0
    for path in ("cuda", "liboffload"):
        assert set(gpureport.WARM_LAYERS) <= set(layers["boundaries"][path])


def test_selection_measured_for_1_8_64_images(summary: dict[str, object]) -> None:
    sel = summary["selection"]
    assert isinstance(sel, dict) and "first-wins" in sel
    for policy, counts in sel.items():
        for count in ("1", "8", "64"):
            slot = counts[count]
            assert slot["images"] == int(count), (policy, count)
            check_stat(slot["cold"], f"{policy}.{count}.cold")
            check_stat(slot["warm"], f"{policy}.{count}.warm")
            assert slot["cold"]["n"] >= 30 and slot["warm"]["n"] >= 1000


def test_gemm_checked_and_timed(summary: dict[str, object]) -> None:
    gemm = summary["gemm"]
    assert isinstance(gemm, dict)
    assert gemm["problem"]["M"] == gemm["problem"]["N"] == gemm["problem"]["K"]
    for name in ("sm_90", "sm_90a", "compute_80"):
        k = gemm["kernel"][name]
        check_stat(k, f"kernel {name}")
        assert k["unwritten"] == 0
        assert k["rel_err"] is not None and 0 < k["rel_err"] < 1e-3
    assert gemm["method"]["reference_cpu_max_rel_err"] < 1e-5
    # sm_80 machine code must not load on compute capability 9.0.
    assert "NO_BINARY_FOR_GPU" in gemm["load"]["sm_80"]["error"]
    assert gemm["load"]["compute_80/jit-cache-off"]["env"]["CUDA_CACHE_DISABLE"] == "1"
    # What cuobjdump saw: only the sm_90a image uses wgmma.
    assert gemm["sass"]["sm_90"]["HGMMA"] == 0 < gemm["sass"]["sm_90"]["HMMA"]
    assert gemm["sass"]["sm_90a"]["HGMMA"] > 0


def test_llvm22_baseline_rejects_offload_binaries(summary: dict[str, object]) -> None:
    plain = summary["probe"]["plain"]  # type: ignore[index]
    by = {f["file"]: f for f in plain}
    assert by["gemm.sm_90.cubin"]["create_program_ok"] is True
    assert by["gemm.sm_90.cubin"]["marker_variant"] == 3
    assert by["gemm.sm_80.cubin"]["create_program_ok"] is False
    for name, f in by.items():
        if name.endswith(".bin"):
            assert f["create_program_ok"] is False, name
            assert "device kernel image is invalid" in f["create_program_error"]


def test_image_choice_table(summary: dict[str, object]) -> None:
    ch = summary["image_choice"]
    assert isinstance(ch, dict)
    rows = {r["file"]: r for r in ch["orders"]}
    assert set(rows) == set(gpureport.ORDERS)
    # Upstream's registerLib rule on 9.0 (no raw PTX): the first compatible
    # image of each order.
    assert rows["order-ascending.bin"]["first_compatible"] == "sm_90"
    assert rows["order-ptx-first.bin"]["first_compatible"] == "sm_90"
    assert rows["order-descending.bin"]["first_compatible"] == "sm_90a"
    assert rows["order-generic-first.bin"]["first_compatible"] == "sm_90"
    for r in rows.values():
        # kdl-select's choice was recorded, is compatible, and is never
        # measurably worse than first-compatible (5% is run-to-run noise).
        assert r["ranked"] is not None, r["file"]
        assert ch["accepted"][r["ranked"]]
        for key, cost in r["cost_ms"].items():
            assert cost["first_over_ranked"] > 0.95, (r["file"], key)
    # The table's inputs are the measured medians.
    assert ch["kernel_ms"]["sm_90a"] == summary["gemm"]["kernel"]["sm_90a"]["median"]


def test_shim_runs_what_kdl_select_chose(summary: dict[str, object]) -> None:
    probe = summary["probe"]
    assert isinstance(probe, dict)
    if probe["shim"] is None:
        pytest.skip(f"no shim run recorded: {probe['shim_missing']}")
    rows = probe["shim_vs_kdl_select"]
    assert {r["file"] for r in rows} >= {f for f in gpureport.ORDERS}
    for r in rows:
        assert r["match"], r
        if r["kdl_select"] is None:
            assert r["create_program_ok"] is False, r


def test_the_runtime_accepted_what_the_cuda_plugin_rules_say(
    summary: dict[str, object],
) -> None:
    """The measured acceptance on the 9.0 device is upstream's rule: the CUDA
    plugin's isELFCompatible (same major, minor at most the device's, the
    "a" suffix not looked at) and no raw PTX (isPluginCompatible)."""
    ch = summary["image_choice"]
    assert isinstance(ch, dict) and ch["device_cc"] == "9.0"
    assert ch["accepted"] == {
        "sm_80": False,
        "sm_90": True,
        "sm_90a": True,
        "compute_80": False,
    }


@pytest.mark.overlay
def test_the_rank_makes_the_recorded_choices(
    summary: dict[str, object], tmp_path: Path
) -> None:
    """The image-choice table's "ranked" column was recorded with series v1;
    kdl-select (the series' rank) makes the same choice for each order, on
    images with the headers ptxas 13 writes (ELF ABI 2) and the runs' string
    maps. Its "first compatible" is LLVM 22.1.8's plugin's, which refused PTX;
    the series' plugin accepts PTX that runs (0007), so kdl-select's first
    compatible is that one or a PTX image listed before it."""
    tool = paths.OVERLAY_BUILD / "bin" / "kdl-select"
    if not tool.is_file():
        pytest.skip(f"{tool} not built")
    ch = summary["image_choice"]
    assert isinstance(ch, dict)
    images = {}
    for name, info in gpureport.GEMM_IMAGES.items():
        if info["kind"] == "ptx":
            payload = f".version 9.0\n.target sm_{info['sm']}\n".encode()
        else:
            payload = cubin_header(name, abi=2)
        images[name] = make_image(
            payload,
            [("triple", "nvptx64-nvidia-cuda"), ("arch", name)],
            kind="s" if info["kind"] == "ptx" else "cubin",
            offload_kind="cuda",
        )
    for row in ch["orders"]:
        path = tmp_path / row["file"]
        path.write_bytes(write_v1(images[n] for n in row["order"]))
        got = json.loads(
            subprocess.run(
                [
                    str(tool),
                    "--json",
                    "--device=triple=nvptx64-nvidia-cuda,arch=sm_90",
                    str(path),
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        order = row["order"]
        assert order[got["selected"]] == row["ranked"], row["file"]
        first = order[got["first_compatible"]]
        if first != row["first_compatible"]:
            assert gpureport.GEMM_IMAGES[first]["kind"] == "ptx", row["file"]
            assert order.index(first) < order.index(row["first_compatible"])


def test_statistics() -> None:
    s = stats.stat([5, 1, 4, 2, 3])
    assert s["median"] == 3 and s["p5"] == pytest.approx(1.2)
    assert s["p95"] == pytest.approx(4.8) and s["n"] == 5
    lo, hi = s["ci95_median"]
    assert 1 <= lo <= 3 <= hi <= 5
    assert stats.stat([7.0] * 10)["ci95_median"] == [7.0, 7.0]


def test_svg_follows_the_data(generated: dict[str, str]) -> None:
    svg = generated[gpureport.SVG.name]
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    summary = json.loads(generated[gpureport.SUMMARY.name])
    med = summary["layers"]["liboffload"]["cold"]["runtime_init"]["median"]
    assert gpurender._fmt_ns(med) in svg
    summary["layers"]["liboffload"]["cold"]["runtime_init"]["median"] = med * 3
    assert gpurender.render_svg(summary) != svg


@pytest.mark.parametrize("n", [7, 6])
def test_resample_median_has_the_bootstrap_distribution(n: int) -> None:
    """The order-statistic draw gives a resample's median the distribution
    that drawing all n values gives it: checked against the exact one."""
    import random
    from math import comb

    values = [float(v) for v in range(n)]
    rng = random.Random(1)
    draws = 20000
    got: dict[float, int] = {}
    for _ in range(draws):
        m = stats.resample_median(rng, values)
        got[m] = got.get(m, 0) + 1

    def at_least(k: int, p: float) -> float:
        """P(at least k of n draws fall at or below a value of mass p)."""
        return sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))

    lo = (n - 1) // 2
    for j in range(n):
        # P(median <= j), exactly: for odd n, the (lo+1)-th smallest draw is
        # at most j; for even n, the mean of the two middle draws is.
        p = (j + 1) / n
        if n % 2:
            want = at_least(lo + 1, p)
        else:
            want = sum(
                prob
                for (a, b), prob in _middle_pairs(n, lo).items()
                if (a + b) / 2 <= j
            )
        seen = sum(c for m, c in got.items() if m <= j) / draws
        sigma = max((want * (1 - want) / draws) ** 0.5, 1e-9)
        assert abs(seen - want) <= 5 * sigma + 1e-3, (j, seen, want)


def _middle_pairs(n: int, lo: int) -> dict[tuple[int, int], float]:
    """Exact distribution of the (lo+1)-th and (lo+2)-th smallest of n draws
    of 0..n-1, by enumerating every resample (n**n of them)."""
    from itertools import product

    dist: dict[tuple[int, int], float] = {}
    for draw in product(range(n), repeat=n):
        s = sorted(draw)
        key = (s[lo], s[lo + 1])
        dist[key] = dist.get(key, 0.0) + 1.0
    total = float(n**n)
    return {k: v / total for k, v in dist.items()}
