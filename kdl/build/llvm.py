"""``kdl build``: the series in an llvm-project build tree, or the overlay.

With ``--llvm PATH`` the checkout is configured once (``cmake -G Ninja``
with :func:`configure_argv`: upstream's offload settings, ccache or sccache
as compiler launcher when present) and then ninja builds only what the
series needs: ``llvm-offload-binary``, ``clang-offload-packager`` (a
symlink to it upstream, a tool of its own in older trees), the Frontend
unit tests (the ranking's), ``mlir-opt`` and ``mlir-translate`` (the MLIR
patch's tests) and the offload runtimes for the host and the GPU targets.
An existing CMakeCache.txt is never reconfigured: where it disagrees with
:data:`CONFIG` kdl says so and builds what that configuration has.

Without ``--llvm`` it builds the overlay (:func:`kdl.build.overlay.build_overlay`),
the series' new files against Debian's LLVM 22.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from kdl import paths, proc
from kdl.build.configure import STAMP
from kdl.errors import UsageError, WorkspaceError
from kdl.provenance import cmake_cache

#: The GPU targets whose device runtimes the offload tests need.
GPU_RUNTIME_TARGETS = ("amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda")

#: The cache entries kdl configures a new build with: upstream's
#: offload/cmake/caches/Offload.cmake (read at 6c5bc5ab: lld, device
#: runtimes through LLVM_RUNTIME_TARGETS), with mlir for the MLIR patch and
#: without the host's C++ runtimes and clang-tools-extra, which no test of
#: the series needs.
CONFIG = {
    "CMAKE_BUILD_TYPE": "Release",
    "LLVM_ENABLE_ASSERTIONS": "ON",
    # clang: clang-offload-packager and the compiler of the offload tests;
    # lld: the AMDGPU device link; mlir: #gpu.runtime_select.
    "LLVM_ENABLE_PROJECTS": "clang;lld;mlir",
    "LLVM_ENABLE_RUNTIMES": "openmp;offload",
    "LLVM_TARGETS_TO_BUILD": "host;NVPTX;AMDGPU",
    "LLVM_ENABLE_PER_TARGET_RUNTIME_DIR": "ON",
    "LLVM_RUNTIME_TARGETS": ";".join(("default", *GPU_RUNTIME_TARGETS)),
    **{
        f"RUNTIMES_{t}_LLVM_ENABLE_RUNTIMES": "compiler-rt;libc;openmp;libcxx;libcxxabi"
        for t in GPU_RUNTIME_TARGETS
    },
}

#: The per-target cache files Offload.cmake names, relative to the checkout.
CACHE_FILES = {
    "amdgcn-amd-amdhsa": "libcxx/cmake/caches/AMDGPU.cmake",
    "nvptx64-nvidia-cuda": "libcxx/cmake/caches/NVPTX.cmake",
}

#: What upstream's layout has (assumed by --dry-run before a configure).
CONFIGURED_TARGETS = (
    "llvm-offload-binary",
    "clang-offload-packager",
    "LLVMFrontendTests",
    "mlir-opt",
    "mlir-translate",
    "runtimes",
)

#: The offload runtime: the runtimes build's umbrella target, else the
#: targets an openmp/offload build without LLVM_ENABLE_RUNTIMES has.
RUNTIME_TARGETS = ("omp", "omptarget", "offload", "LLVMOffload")

#: Where LLVM's own names for the host target come from.
_HOST_TARGETS = {
    "x86_64": "X86",
    "amd64": "X86",
    "aarch64": "AArch64",
    "arm64": "AArch64",
    "ppc64le": "PowerPC",
}

_TRUE = {"ON", "YES", "TRUE", "Y", "1"}


@dataclass
class LLVMBuild:
    build_dir: Path
    targets: list[str]
    configure_seconds: float | None  # None: an existing cache was used
    build_seconds: float
    notes: list[str] = field(default_factory=list)


def default_build_dir() -> Path:
    """build/llvm in the workspace (``kdl test --check-offload`` looks there)."""
    return paths.BUILD / "llvm"


def launcher_args() -> list[str]:
    """Compiler cache: LLVM's own switch for ccache, CMake's launcher for sccache."""
    if proc.which("ccache"):
        return ["-DLLVM_CCACHE_BUILD=ON"]
    sccache = proc.which("sccache")
    if sccache:
        return [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={sccache}" for lang in ("C", "CXX")]
    return []


def configure_argv(llvm: Path, build_dir: Path) -> list[str]:
    return [
        "cmake",
        "-G",
        "Ninja",
        "-S",
        str(llvm / "llvm"),
        "-B",
        str(build_dir),
        *[f"-D{key}={value}" for key, value in CONFIG.items()],
        *[f"-DRUNTIMES_{t}_CACHE_FILES={llvm / rel}" for t, rel in CACHE_FILES.items()],
        *launcher_args(),
    ]


def _items(value: str) -> set[str]:
    return {v.strip() for v in value.split(";") if v.strip()}


def cache_disagreements(cache: dict[str, str]) -> list[str]:
    """Where an existing configuration differs from :data:`CONFIG` in effect."""
    notes = []
    build_type = cache.get("CMAKE_BUILD_TYPE", "")
    if build_type != CONFIG["CMAKE_BUILD_TYPE"]:
        notes.append(f"CMAKE_BUILD_TYPE is '{build_type}' (kdl uses Release)")
    if cache.get("LLVM_ENABLE_ASSERTIONS", "").upper() not in _TRUE:
        notes.append("LLVM_ENABLE_ASSERTIONS is off (kdl uses ON)")
    for key in ("LLVM_ENABLE_PROJECTS", "LLVM_ENABLE_RUNTIMES"):
        have = _items(cache.get(key, ""))
        lacking = _items(CONFIG[key]) - have
        if lacking and "all" not in have:
            notes.append(
                f"{key} lacks {';'.join(sorted(lacking))} "
                f"(it is '{cache.get(key, '')}')"
            )
    runtime_targets = _items(cache.get("LLVM_RUNTIME_TARGETS", ""))
    lacking_gpus = [t for t in GPU_RUNTIME_TARGETS if t not in runtime_targets]
    if lacking_gpus:
        notes.append(
            f"LLVM_RUNTIME_TARGETS lacks {';'.join(lacking_gpus)}: no device "
            "runtimes, the offload GPU tests cannot run"
        )
    targets = _items(cache.get("LLVM_TARGETS_TO_BUILD", ""))
    if "all" not in targets:
        missing = sorted({"NVPTX", "AMDGPU"} - targets)
        host = _HOST_TARGETS.get(platform.machine().lower(), "host")
        if "host" not in targets and host not in targets:
            missing.append(f"host ({host})")
        if missing:
            notes.append(
                f"LLVM_TARGETS_TO_BUILD lacks {', '.join(missing)} "
                f"(it is '{cache.get('LLVM_TARGETS_TO_BUILD', '')}')"
            )
    return notes


def ninja_targets(build_dir: Path) -> set[str]:
    """Every target name the build has (``ninja -t targets all``)."""
    out = proc.output(["ninja", "-C", str(build_dir), "-t", "targets", "all"])
    return {line.rsplit(": ", 1)[0] for line in out.splitlines() if ": " in line}


def choose_targets(available: set[str]) -> tuple[list[str], list[str]]:
    """(targets to build, what is missing and why) for the series."""
    targets = ["llvm-offload-binary"]
    missing = []
    if "clang-offload-packager" in available:
        targets.append("clang-offload-packager")
    else:
        missing.append("clang-offload-packager (no such target in this build)")
    if "LLVMFrontendTests" in available:
        targets.append("LLVMFrontendTests")
    else:
        missing.append("LLVMFrontendTests (no such target; LLVM_INCLUDE_TESTS=OFF?)")
    for tool in ("mlir-opt", "mlir-translate"):
        if tool in available:
            targets.append(tool)
        else:
            missing.append(f"{tool} (no such target; is mlir in LLVM_ENABLE_PROJECTS?)")
    if "runtimes" in available:
        targets.append("runtimes")
    else:
        found = [t for t in RUNTIME_TARGETS if t in available]
        targets += found
        if not found:
            missing.append(
                "the offload runtime (no 'runtimes', 'omp' or 'offload' target)"
            )
    if "llvm-offload-binary" not in available:
        missing.insert(0, "llvm-offload-binary (no such target)")
        targets.remove("llvm-offload-binary")
    return targets, missing


def existing_cache_notes(llvm: Path, build_dir: Path) -> list[str]:
    """Refuse a cache kdl cannot build in; list where it differs from CONFIG."""
    cache = cmake_cache(build_dir)
    source = Path(cache.get("CMAKE_HOME_DIRECTORY", "")).resolve()
    if source != llvm / "llvm":
        raise UsageError(
            f"{build_dir} is configured for {source}, not {llvm / 'llvm'}; "
            "pick another --build-dir"
        )
    if cache.get("CMAKE_GENERATOR") != "Ninja":
        raise UsageError(
            f"{build_dir} uses the '{cache.get('CMAKE_GENERATOR')}' generator; "
            "kdl builds with Ninja: pick another --build-dir"
        )
    return cache_disagreements(cache)


def build_llvm(
    llvm: Path, build_dir: Path | None = None, jobs: int | None = None
) -> LLVMBuild:
    """Configure (once) and build the series' targets in an llvm-project build."""
    llvm = llvm.expanduser().resolve()
    if not (llvm / "llvm" / "CMakeLists.txt").is_file():
        raise UsageError(
            f"{llvm}: not an llvm-project checkout (no llvm/CMakeLists.txt)"
        )
    build_dir = (build_dir or default_build_dir()).expanduser().resolve()
    notes: list[str] = []
    configure_seconds = None
    # A cache without build.ninja is a configure that stopped midway: cmake
    # runs again over it (it keeps what the user set) instead of ninja failing.
    reuse = (build_dir / "CMakeCache.txt").is_file()
    if reuse:
        notes = existing_cache_notes(llvm, build_dir)
        reuse = (build_dir / "build.ninja").is_file()
    if reuse:
        for note in notes:
            print(f"note: existing cache in {build_dir}: {note}; not reconfigured")
        available = ninja_targets(build_dir)
    else:
        notes = []
        started = time.monotonic()
        argv = configure_argv(llvm, build_dir)
        proc.run(argv, capture=False, mutating=True)
        if not proc.DRY_RUN:
            (build_dir / STAMP).write_text(proc.quote(argv) + "\n")
        configure_seconds = time.monotonic() - started
        if proc.DRY_RUN:
            print(
                "note: targets assumed from upstream's layout "
                "(the real list needs a configured tree)"
            )
            available = {*CONFIGURED_TARGETS}
        else:
            available = ninja_targets(build_dir)
    targets, missing = choose_targets(available)
    for m in missing:
        print(f"note: not built: {m}")
        notes.append(f"not built: {m}")
    if "llvm-offload-binary" not in targets:
        raise WorkspaceError(
            f"{build_dir}: cannot build the series: {'; '.join(missing)}"
        )
    jobs_args = ["-j", str(jobs)] if jobs else []
    started = time.monotonic()
    proc.run(
        ["ninja", "-C", str(build_dir), *jobs_args, *targets],
        capture=False,
        mutating=True,
    )
    build_seconds = time.monotonic() - started
    return LLVMBuild(build_dir, targets, configure_seconds, build_seconds, notes)


def _describe_tool(path: Path) -> str:
    if path.is_symlink():
        return f"{path} -> {os.readlink(path)} (symlink)"
    return str(path)


def _cmd_build_standalone(args: argparse.Namespace, prefix: Path) -> int:
    from kdl.build.standalone import TOP_CHECKS, build_standalone, default_dir
    from kdl.series.choose import tree_version

    llvm = args.llvm.expanduser().resolve()
    build_dir = (args.build_dir or default_dir(llvm)).expanduser().resolve()
    print(
        f"{llvm} is LLVM {tree_version(llvm)}, as installed in {prefix}: "
        f"offload builds standalone against it in {build_dir} "
        "(--full for the whole LLVM build)",
        flush=True,
    )
    built = build_standalone(llvm, build_dir, prefix, args.jobs, llvm_side=True)
    for note in built.notes:
        print(f"note: {note}")
    if proc.DRY_RUN:
        return 0
    print(f"built in {sum(built.steps.values()):.0f} s: {build_dir}")
    checks = ", ".join([*TOP_CHECKS, *built.checks])
    print(f"run the tests: ninja -C {build_dir} check   ({checks})")
    return 0


def refuse_hours(llvm: Path, build_dir: Path | None) -> None:
    """A checkout no installed LLVM matches takes the whole LLVM build
    (hours on 2 cores): only with --full, or in a build directory the user
    configured already."""
    from kdl.series.choose import tree_version

    if build_dir is not None and (build_dir.expanduser() / "CMakeCache.txt").is_file():
        return
    version = tree_version(llvm)
    if version is None:
        return  # build_llvm says what the directory lacks
    major = version.split(".", 1)[0]
    raise UsageError(
        f"{llvm}: LLVM {version}: no installed LLVM {version} to build offload "
        f"against standalone (/usr/lib/llvm-{major}); --full builds LLVM itself "
        "with clang, lld and mlir: hours on 2 cores"
    )


def cmd_build(args: argparse.Namespace) -> int:
    if args.llvm is not None and not args.full:
        from kdl.build.standalone import standalone_prefix

        prefix = standalone_prefix(args.llvm.expanduser().resolve())
        if prefix is not None:
            return _cmd_build_standalone(args, prefix)
        refuse_hours(args.llvm.expanduser().resolve(), args.build_dir)
    if args.llvm is None:
        from kdl.build import overlay

        built = overlay.build_overlay(args.build_dir, args.jobs)
        print(f"overlay build: {built.build_dir}")
        print(f"  kdl-select:    {built.select_tool}")
        print(f"  kdl-rank-diff: {built.rank_diff}")
        return 0
    result = build_llvm(args.llvm, args.build_dir, args.jobs)
    if proc.DRY_RUN:
        return 0
    if result.configure_seconds is None:
        print(f"used the existing configuration in {result.build_dir}")
    else:
        print(f"configured {result.build_dir} in {result.configure_seconds:.1f} s")
    print(f"built {', '.join(result.targets)} in {result.build_seconds:.1f} s")
    for rel in (
        "bin/llvm-offload-binary",
        "bin/clang-offload-packager",
        "unittests/Frontend/LLVMFrontendTests",
        "bin/mlir-translate",
    ):
        path = result.build_dir / rel
        if path.exists() or path.is_symlink():
            print(f"  {_describe_tool(path)}")
    return 0
