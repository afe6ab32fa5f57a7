"""Device-side driver of the GPU harness (run by gpu/run.sh, standard library only).

Runs the harness programs built by run.sh, each cold measurement in a fresh
process, collects their JSON documents and writes one raw JSON file per
section under --out, rewritten after every section so a call cut short still
returns what it measured. Statistics are NOT computed here: kdl/results/gpureport.py
turns the raw files into results/gpu/ on the developer's machine.

Sections: env, layers (CUDA driver API and liboffload, cold and warm), gemm (SASS mix,
cold load of each image, kernel time and correctness), probe (LLVM 22
liboffload on raw and OffloadBinary inputs, plain and behind the preloaded
shim when build/gpu/lib has one; the shim is retired).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GPU = ROOT / "build" / "gpu"
IMG = GPU / "img"
OB = GPU / "ob"

# name -> (cold processes, warm samples, GEMM rounds, select warm samples)
COUNTS = {
    "smoke": dict(cold=3, warm=50, rounds=10, load=2),
    "full": dict(cold=50, warm=2000, rounds=200, load=30),
}

# The images of the "what the choice is worth" table, with their marker.
GEMM_IMAGES = [
    ("sm_80", "gemm.sm_80.cubin"),
    ("sm_90", "gemm.sm_90.cubin"),
    ("sm_90a", "gemm.sm_90a.cubin"),
    ("compute_80", "gemm.compute_80.ptx"),
    ("compute_90", "gemm.compute_90.ptx"),
]

PROBE_FILES = [
    "img/gemm.sm_90.cubin",
    "img/gemm.sm_90a.cubin",
    "img/gemm.sm_80.cubin",
    "img/gemm.compute_80.ptx",
    "ob/single-sm_90.bin",
    "ob/order-ascending.bin",
    "ob/order-ptx-first.bin",
    "ob/order-descending.bin",
    "ob/order-generic-first.bin",
    "ob/order-ascending-prio.bin",
    "ob/only-ptx-fits.bin",
    "ob/nothing-fits.bin",
    "ob/order-ascending.v2.bin",
]


def log(msg: str) -> None:
    print(f"[driver {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(
    argv: list[str],
    env: dict[str, str] | None = None,
    timeout: float = 120,
    stderr_to: list[str] | None = None,
) -> str:
    """Run argv, return stdout; on failure return '' and log stderr."""
    try:
        p = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        log(f"FAILED {argv[0]}: {e}")
        return ""
    if stderr_to is not None:
        stderr_to.append(p.stderr)
    if p.returncode != 0:
        log(f"FAILED rc={p.returncode}: {' '.join(argv)}\n{p.stderr[-2000:]}")
        return ""
    return p.stdout


def run_json(
    argv: list[str],
    extra_env: dict[str, str] | None = None,
    timeout: float = 120,
    stderr_to: list[str] | None = None,
) -> dict[str, Any] | None:
    env = dict(os.environ)
    if extra_env:
        env.update(extra_env)
    out = sh(argv, env=env, timeout=timeout, stderr_to=stderr_to)
    if not out.strip():
        return None
    try:
        doc: dict[str, Any] = json.loads(out)
    except json.JSONDecodeError as e:
        log(f"bad JSON from {argv[0]}: {e}: {out[:500]}")
        return None
    return doc


def environment(bindir: Path) -> dict[str, Any]:
    env: dict[str, Any] = {}
    q = (
        "name,driver_version,pci.bus_id,clocks.sm,clocks.mem,clocks.max.sm,"
        "clocks.max.mem,clocks.applications.graphics,clocks.applications.memory,"
        "power.draw,power.limit,temperature.gpu,persistence_mode,compute_mode,"
        "mig.mode.current,memory.total"
    )
    out = sh(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"])
    env["nvidia_smi_query"] = dict(
        zip(q.split(","), [s.strip() for s in out.strip().split(",")], strict=False)
    )
    head = sh(["nvidia-smi"])
    m = re.search(r"CUDA Version:\s*([0-9.]+)", head)
    env["cuda_version_driver"] = m.group(1) if m else None
    m = re.search(r"Driver Version:\s*([0-9.]+)", head)
    env["driver_version"] = m.group(1) if m else None
    nv = sh(["nvcc", "--version"])
    m = re.search(r"release ([0-9.]+), (V[0-9.]+)", nv)
    env["nvcc_device"] = f"{m.group(1)} {m.group(2)}" if m else nv.strip()[-80:]
    env["nvcc_images"] = (IMG / "NVCC_VERSION").read_text().strip()
    env["llvm_version"] = (GPU / "LLVM_VERSION").read_text().strip()
    debs = {}
    for deb in sorted((ROOT / ".deb").glob("*.deb")):
        name = sh(["dpkg-deb", "-f", str(deb), "Package"]).strip()
        ver = sh(["dpkg-deb", "-f", str(deb), "Version"]).strip()
        debs[name] = ver
    env["llvm_debs"] = debs
    env["uname"] = sh(["uname", "-srm"]).strip()
    env["cpu"] = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        None,
    )
    env["os"] = next(
        (
            line.split("=", 1)[1].strip('"')
            for line in Path("/etc/os-release").read_text().splitlines()
            if line.startswith("PRETTY_NAME=")
        ),
        None,
    )
    env["python"] = sys.version.split()[0]
    env["cuobjdump"] = shutil.which("cuobjdump")
    return env


_SHIM_TIMING = re.compile(r"^kdl: timing olCreateProgram (.*)$", re.MULTILINE)


def cold_series(
    jobs: list[tuple[str, list[str], dict[str, str]]], n: int
) -> dict[str, list[dict[str, Any]]]:
    """Run each job n times in fresh processes, round-robin across jobs.

    A shim timing line on stderr (KDL_SHIM_TIMING) goes into the document
    as ``shim_timing``.
    """
    res: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in jobs}
    for i in range(n):
        for name, argv, extra in jobs:
            err: list[str] = []
            doc = run_json(argv, extra, stderr_to=err)
            m = _SHIM_TIMING.search(err[0]) if doc is not None and err else None
            if doc is not None and m:
                doc["shim_timing"] = {
                    k: int(v) for k, v in (kv.split("=") for kv in m[1].split())
                }
            if doc is not None:
                res[name].append(doc)
            elif i == 0:
                log(f"{name}: first cold run failed")
    return res


def shim_path() -> Path | None:
    name = GPU / "lib" / "SHIM"
    return GPU / "lib" / name.read_text().strip() if name.exists() else None


def layers(bindir: Path, c: dict[str, int]) -> dict[str, Any]:
    image = str(IMG / "gemm.sm_90.cubin")
    cu, lo = str(bindir / "cuda_layers"), str(bindir / "offload_layers")
    jobs: list[tuple[str, list[str], dict[str, str]]] = [
        ("cuda_cold", [cu, "cold", image], {}),
        ("cuda_cold_eager", [cu, "cold", image], {"CUDA_MODULE_LOADING": "EAGER"}),
        ("liboffload_cold", [lo, "cold", image], {}),
    ]
    # liboffload on the raw sm_90a cubin, and on a 4-image OffloadBinary
    # behind the shim (which picks that sm_90a image inside olCreateProgram).
    sm90a = str(IMG / "gemm.sm_90a.cubin")
    multi = str(OB / "order-ascending.bin")
    jobs.append(("liboffload_sm90a_cold", [lo, "cold", sm90a], {}))
    shim = shim_path()
    if shim:
        jobs.append(
            ("liboffload_shim_cold", [lo, "cold", multi], {"LD_PRELOAD": str(shim)})
        )
    log(f"layers: {len(jobs)} cold series x {c['cold']} processes")
    out: dict[str, Any] = {"image": image, "cold": cold_series(jobs, c["cold"])}
    warm: dict[str, Any] = {}
    log("layers: warm series")
    warm["cuda"] = run_json([cu, "warm", image, str(c["warm"])], timeout=300)
    warm["cuda_eager"] = run_json(
        [cu, "warm", image, str(c["warm"])], {"CUDA_MODULE_LOADING": "EAGER"}, 300
    )
    warm["liboffload"] = run_json([lo, "warm", image, str(c["warm"])], timeout=300)
    warm["liboffload_sm90a"] = run_json(
        [lo, "warm", sm90a, str(c["warm"])], timeout=300
    )
    if shim:
        warm["liboffload_shim"] = run_json(
            [lo, "warm", multi, str(c["warm"])], {"LD_PRELOAD": str(shim)}, 300
        )
    out["warm"] = warm
    return out


def sass_mix(path: Path) -> dict[str, Any]:
    text = sh(["cuobjdump", "--dump-sass", str(path)])
    ops: dict[str, int] = {}
    for op in ("HMMA", "HGMMA", "LDSM", "LDGSTS", "UTMALDG", "WARPGROUP", "FFMA"):
        ops[op] = len(re.findall(rf"\b{op}\b", text))
    ops["instructions"] = len(re.findall(r"/\*[0-9a-f]{4}\*/", text))
    return ops


def gemm(bindir: Path, c: dict[str, int]) -> dict[str, Any]:
    gb = str(bindir / "gemm_bench")
    out: dict[str, Any] = {"sass": {}}
    for name, f in GEMM_IMAGES:
        if f.endswith(".cubin"):
            out["sass"][name] = sass_mix(IMG / f)
    # Cold load, each in a fresh process; the module is loaded eagerly so the
    # whole load is inside cuModuleLoadData. PTX twice: JIT cache disabled
    # (the true first-load cost) and JIT cache enabled and primed.
    eager = {"CUDA_MODULE_LOADING": "EAGER"}
    nocache = {**eager, "CUDA_CACHE_DISABLE": "1"}
    cache_dir = "/tmp/kdl-jit-cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    cached = {**eager, "CUDA_CACHE_PATH": cache_dir}
    jobs: list[tuple[str, list[str], dict[str, str]]] = []
    for name, f in GEMM_IMAGES:
        if f.endswith(".ptx"):
            jobs.append((f"{name}/jit-cache-off", [gb, "load", str(IMG / f)], nocache))
            run_json([gb, "load", str(IMG / f)], cached)  # prime the cache
            jobs.append((f"{name}/jit-cache-warm", [gb, "load", str(IMG / f)], cached))
        else:
            jobs.append((name, [gb, "load", str(IMG / f)], eager))
    log(f"gemm: {len(jobs)} load series x {c['load']} processes")
    out["load"] = cold_series(jobs, c["load"])
    runnable = [
        f"{name}={IMG / f}" for name, f in GEMM_IMAGES if name != "sm_80"
    ]  # sm_80 machine code cannot load on 9.0 (recorded by the load series)
    log("gemm: kernel timing")
    out["run"] = run_json(
        [gb, "run", "4096", "4096", "4096", str(c["rounds"]), *runnable], timeout=400
    )
    return out


def probe(bindir: Path) -> dict[str, Any]:
    lo = str(bindir / "offload_layers")
    files = [str(GPU / f) for f in PROBE_FILES if (GPU / f).exists()]
    out: dict[str, Any] = {"plain": run_json([lo, "probe", *files], timeout=300)}
    so = shim_path()
    if so:
        log(f"probe: with LD_PRELOAD={so}")
        err: list[str] = []
        out["shim"] = run_json(
            [lo, "probe", *files],
            {"LD_PRELOAD": str(so), "KDL_INFO": "1"},
            timeout=300,
            stderr_to=err,
        )
        out["shim_library"] = so.name
        out["shim_stderr"] = "".join(err)[-20000:]
    else:
        out["shim"] = None
        out["shim_missing"] = "no shim .so under build/gpu/lib at prepare time"
    exp = OB / "expected.jsonl"
    out["expected"] = (
        [json.loads(x) for x in exp.read_text().splitlines() if x.strip()]
        if exp.exists()
        else []
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--bin", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--counts", choices=sorted(COUNTS), default="full")
    a = ap.parse_args()
    c = COUNTS[a.counts]
    sections = {
        "layers": ["layers"],
        "gemm": ["gemm"],
        "probe": ["probe"],
        "all": ["probe", "gemm", "layers"],
    }[a.config]
    a.out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "harness": {
            "version": (GPU / "VERSION").read_text().strip(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "config": a.config,
            "counts": a.counts,
            "command": f"bash gpu/run.sh {a.config} {a.counts}",
        },
    }
    doc["environment"] = environment(a.bin)
    log(json.dumps(doc["environment"]))
    path = a.out / f"raw-{a.config}-{a.counts}.json"
    for s in sections:
        t0 = time.monotonic()
        log(f"section {s}")
        if s == "layers":
            doc["layers"] = layers(a.bin, c)
        elif s == "gemm":
            doc["gemm"] = gemm(a.bin, c)
        elif s == "probe":
            doc["probe"] = probe(a.bin)
        doc.setdefault("section_seconds", {})[s] = round(time.monotonic() - t0, 1)
        path.write_text(json.dumps(doc))
        log(f"section {s} done in {doc['section_seconds'][s]} s -> {path}")
    # Clocks after the work, for the record (read only).
    doc["environment"]["nvidia_smi_after"] = sh(
        [
            "nvidia-smi",
            "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw",
            "--format=csv,noheader",
        ]
    ).strip()
    path.write_text(json.dumps(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
