"""What the series changes, built standalone against an installed LLVM.

A full LLVM + clang + MLIR build cannot finish on the 2-core machines this
runs on; offload does not need one. When the checkout's LLVM version equals
an installed LLVM's (Debian's 22.1.8 for the 22.1.8 tree), ``kdl build
--llvm TREE`` builds, each in its own directory under the build directory:

1. ``omp``: the host OpenMP runtime from the same tree (Debian's
   libomp-22-dev carries LLVM 19's libomp);
2. ``offload``: offload with its host, CUDA and AMDGPU plugins and its unit
   tests, against the installed LLVM (``-DLLVM_DIR``), googletest built from
   the tree (:file:`StandaloneGTest.cmake`) and check-offload's thread limit
   in its cache (:data:`CHECK_OPENMP_ENV`, :file:`StandaloneOffload.cmake`);
3. ``devrtl-<target>``: the OpenMP device runtime for each GPU target the
   toolchain can build (NVPTX needs ``ptxas``).

Where the applied series changes LLVM's own headers (``llvm/include``), the
offload build compiles against the tree's changed headers ahead of the
installed ones (``-iquote``, see :func:`series_headers`); the LLVM sources it
changes or adds (``llvm/lib``) are compiled into the plugins, whose
references to them bind there as in an LLVM build
(:func:`series_llvm_sources`, :file:`StandaloneOffload.cmake`).

Every directory is configured through :func:`kdl.build.configure.configure`,
so a configure that stopped midway is redone, and ninja rebuilds nothing
that did not change.
"""

from __future__ import annotations

import logging
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kdl import paths, proc
from kdl.build.configure import configure
from kdl.errors import WorkspaceError
from kdl.provenance import cmake_cache
from kdl.series.choose import tree_version

log = logging.getLogger("kdl")

#: Included into offload's project: googletest from the tree, and the
#: CHECK_OPENMP_ENV cache entry check-offload's lit runs with.
OFFLOAD_INCLUDE = Path(__file__).with_name("StandaloneOffload.cmake")
PLUGINS = "host;cuda;amdgpu"
#: Threads per team are capped at the core count by libomp; upstream's tests
#: ask for more (the measured recipe: 5 failures on 2 cores without this).
#: It goes into the offload build's cache (StandaloneOffload.cmake), so the
#: user's own ``ninja check-offload`` runs with it too.
CHECK_OPENMP_ENV = "OMP_TEAMS_THREAD_LIMIT=16 KMP_TEAMS_THREAD_LIMIT=16"


def installed_prefix(version: str) -> Path | None:
    """The installed LLVM of exactly *version* (Debian's /usr/lib/llvm-N)."""
    prefix = Path(f"/usr/lib/llvm-{version.split('.', maxsplit=1)[0]}")
    config = prefix / "bin" / "llvm-config"
    if not config.is_file():
        return None
    have = proc.output([str(config), "--version"])
    return prefix if have == version else None


def standalone_prefix(llvm: Path) -> Path | None:
    """The installed LLVM a standalone build of *llvm* can use, if any."""
    version = tree_version(llvm)
    return installed_prefix(version) if version else None


@dataclass
class StandaloneBuild:
    llvm: Path
    build_dir: Path
    prefix: Path
    steps: dict[str, float] = field(default_factory=dict)
    device_runtimes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Checks beyond offload's (the series' LLVM-side unit tests): name -> command.
    checks: dict[str, str] = field(default_factory=dict)

    @property
    def offload(self) -> Path:
        return self.build_dir / "offload"

    @property
    def libomp(self) -> Path:
        return self.build_dir / "omp" / "runtime" / "src" / "libomp.so"


def _compilers(prefix: Path) -> list[str]:
    major = prefix.name.removeprefix("llvm-")
    cc = proc.which(f"clang-{major}") or prefix / "bin" / "clang"
    cxx = proc.which(f"clang++-{major}") or prefix / "bin" / "clang++"
    return [f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}"]


def _cmake(source: Path, build: Path, prefix: Path) -> list[str]:
    """A Release Ninja configure of *source* with the installed LLVM's clang
    (through ccache where it is installed: the set-up installs it)."""
    ccache = proc.which("ccache")
    launch = [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={ccache}" for lang in ("C", "CXX")]
    return [
        "cmake",
        "-S",
        str(source),
        "-B",
        str(build),
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=Release",
        *_compilers(prefix),
        *(launch if ccache else []),
    ]


def omp_argv(llvm: Path, build: Path, prefix: Path) -> list[str]:
    # OPENMP_ENABLE_LIBOMPTARGET=ON (its default, said explicitly so that a
    # cache made with OFF is overwritten): in a standalone openmp build it
    # builds nothing of offload, it only compiles libomp's side of deferred
    # target tasks (kmp_config.h's ENABLE_LIBOMPTARGET). Without it libomp
    # runs a `target nowait` task's routine again instead of asking
    # libomptarget whether its device work is done, which launches the
    # kernel again each time (upstream's nowait tests fail on a GPU).
    return [
        *_cmake(llvm / "openmp", build, prefix),
        "-DOPENMP_ENABLE_LIBOMPTARGET=ON",
        "-DLIBOMP_OMPD_SUPPORT=OFF",
        f"-DOPENMP_LLVM_TOOLS_DIR={prefix / 'bin'}",
    ]


def series_changes(llvm: Path, under: str) -> list[str] | None:
    """The files under *under* a ``kdl apply`` branch changes or adds since
    its base (deletions left out); None for any other checkout."""
    from kdl.series.checkout import Checkout

    try:
        with Checkout(llvm, require_llvm=False) as co:
            _, meta = co.kdl_branch()
            out = co.run(
                "diff",
                "--name-only",
                "--diff-filter=d",
                co.rev(meta.base),
                "HEAD",
                "--",
                under,
            )
    except WorkspaceError:
        return None
    return out.split()


def series_llvm_sources(llvm: Path) -> list[Path]:
    """The LLVM sources (``llvm/lib``) the applied series changes or adds,
    which offload's plugins compile (:file:`StandaloneOffload.cmake`)."""
    names = series_changes(llvm, "llvm/lib") or []
    return [llvm / n for n in names if n.endswith(".cpp")]


def series_headers(llvm: Path, where: Path, *, keep: bool = False) -> Path | None:
    """Copies of the LLVM headers the applied series changes, under *where*.

    The headers are those a ``kdl apply`` branch changes under
    ``llvm/include`` since its base; None for any other checkout (the base's
    worktree included) or when the series changes none. LLVM's headers
    include each other with quotes, so ``-iquote WHERE`` puts these ahead of
    the installed LLVM's for every quoted include of them.

    With *keep*, a kdl branch that changes none (after ``kdl revert``) still
    gets *where*, emptied: the build's command line stays the one it was
    configured with, so a rebuild recompiles only what included a copy,
    not everything a new configure would.
    """
    names = series_changes(llvm, "llvm/include")
    if names is None or (not names and not keep):
        return None
    from kdl.build.overlay import sync_files

    where.mkdir(parents=True, exist_ok=True)
    # Exactly these: a header an earlier series changed and this one does not
    # must not stay ahead of the installed one. Unchanged copies keep their
    # time stamps, so ninja rebuilds nothing.
    sync_files({Path(n).relative_to("llvm/include"): llvm / n for n in names}, where)
    if names:
        log.info(
            "  offload compiles against the series' LLVM headers: %s",
            ", ".join(str(Path(n).relative_to("llvm/include")) for n in names),
        )
    return where


def offload_argv(
    llvm: Path,
    build: Path,
    prefix: Path,
    libomp: Path,
    *,
    headers: Path | None = None,
    sources: list[Path] | None = None,
) -> list[str]:
    flags = [f"-DCMAKE_CXX_FLAGS=-iquote {headers}"] if headers else []
    return [
        *_cmake(llvm / "offload", build, prefix),
        *flags,
        # Always given, so that a build after kdl revert compiles none.
        f"-DKDL_SERIES_LLVM_SOURCES={';'.join(map(str, sources or []))}",
        f"-DLLVM_DIR={prefix / 'lib' / 'cmake' / 'llvm'}",
        f"-DLIBOMPTARGET_PLUGINS_TO_BUILD={PLUGINS}",
        "-DOFFLOAD_INCLUDE_TESTS=ON",
        f"-DOPENMP_LLVM_TOOLS_DIR={prefix / 'bin'}",
        f"-DLLVM_EXTERNAL_LIT={prefix / 'bin' / 'lit'}",
        # Debian's static libffi is not position-independent.
        "-DFFI_STATIC_LIBRARIES=OFF",
        f"-DLIBOMP_STANDALONE={libomp}",
        f"-DCMAKE_PROJECT_offload_INCLUDE={OFFLOAD_INCLUDE}",
        f"-DCHECK_OPENMP_ENV={CHECK_OPENMP_ENV}",
    ]


def devrtl_argv(llvm: Path, build: Path, prefix: Path, target: str) -> list[str]:
    version = tree_version(llvm) or "0.0.0"
    major, minor, patch = version.split(".")
    return [
        *_cmake(llvm / "openmp", build, prefix),
        f"-DCMAKE_ASM_COMPILER={prefix / 'bin' / 'clang'}",
        *[f"-DCMAKE_{lang}_COMPILER_TARGET={target}" for lang in ("C", "CXX", "ASM")],
        *[f"-DCMAKE_{lang}_COMPILER_WORKS=ON" for lang in ("C", "CXX", "ASM")],
        f"-DLLVM_DEFAULT_TARGET_TRIPLE={target}",
        f"-DLLVM_VERSION_MAJOR={major}",
        f"-DLLVM_VERSION_MINOR={minor}",
        f"-DLLVM_VERSION_PATCH={patch}",
        f"-DLLVM_LIBRARY_OUTPUT_INTDIR={build / 'lib'}",
    ]


def device_targets() -> tuple[list[str], list[str]]:
    """(GPU targets whose device runtime can be built here, notes on the rest)."""
    targets = ["amdgcn-amd-amdhsa"]
    notes = []
    if proc.which("ptxas"):
        targets.append("nvptx64-nvidia-cuda")
    else:
        notes.append("no NVPTX device runtime: ptxas is not on PATH")
    return targets, notes


def _ninja(build: Path, jobs: int | None, log_file: Path, *targets: str) -> None:
    jobs_args = ["-j", str(jobs)] if jobs else []
    argv = ["ninja", "-C", str(build), *jobs_args, *targets]
    proc.run_logged(argv, log_file, label=f"ninja {build.name}")
    # What an earlier configuration built and this one no longer does (the
    # series' test binaries after a revert, which check-offload-unit would
    # still find and run) goes: ninja's own record of what it built.
    proc.run_logged(
        ["ninja", "-C", str(build), "-t", "cleandead"], log_file, label="cleandead"
    )


def build_standalone(
    llvm: Path,
    build_dir: Path,
    prefix: Path,
    jobs: int | None = None,
    *,
    llvm_side: bool = False,
) -> StandaloneBuild:
    """Build libomp, offload (with unit tests) and the device runtimes, one
    line per step; each step's output goes to ``BUILD_DIR/logs/STEP.log``.
    With *llvm_side*, also the series' LLVM-side changes
    (:mod:`kdl.build.llvmside`: its sources, unit tests, llvm-offload-binary)."""
    result = StandaloneBuild(llvm, build_dir, prefix)
    build_dir.mkdir(parents=True, exist_ok=True)
    logs = build_dir / "logs"

    def step(name: str, argv: list[str], build: Path, *targets: str) -> None:
        started = time.monotonic()
        log_file = logs / f"{build.name}.log"
        log_file.unlink(missing_ok=True)
        configure(argv, build, log_file)
        _ninja(build, jobs, log_file, *targets)
        result.steps[name] = round(time.monotonic() - started, 1)
        print(f"  {name}: {result.steps[name]:.0f} s (log: {log_file})", flush=True)

    step("omp", omp_argv(llvm, build_dir / "omp", prefix), build_dir / "omp")
    headers = (
        None
        if proc.DRY_RUN
        else series_headers(llvm, build_dir / "llvm-include", keep=llvm_side)
    )
    sources = [] if proc.DRY_RUN else series_llvm_sources(llvm)
    step(
        "offload",
        offload_argv(
            llvm,
            result.offload,
            prefix,
            result.libomp,
            headers=headers,
            sources=sources,
        ),
        result.offload,
        "all",
        "OffloadUnitTests",
    )
    # The tests link -lomp from the first -L directory, the build's own.
    link = result.offload / "libomp.so"
    if not proc.DRY_RUN:
        link.unlink(missing_ok=True)
        link.symlink_to(result.libomp)
    targets, result.notes = device_targets()
    for target in targets:
        build = build_dir / f"devrtl-{target}"
        try:
            step(f"devrtl {target}", devrtl_argv(llvm, build, prefix, target), build)
            result.device_runtimes.append(target)
        except WorkspaceError as exc:
            result.notes.append(f"device runtime {target} did not build: {exc}")
    checks: dict[str, str] = {}
    if llvm_side and not proc.DRY_RUN:
        from kdl.build.llvmside import CHECK_TARGET, build_llvm_side

        started = time.monotonic()
        side = build_llvm_side(llvm, build_dir, prefix, headers)
        result.steps["llvm side"] = round(time.monotonic() - started, 1)
        if side.test_binary is not None:
            checks[CHECK_TARGET] = str(side.test_binary)
        built = ", ".join(side.sources + side.tests) or "none (the series changes none)"
        tool = f"; {side.bin_dir}/llvm-offload-binary" if side.bin_dir else ""
        print(f"  llvm side: {result.steps['llvm side']:.0f} s ({built}{tool})")
        result.checks = checks
    if not proc.DRY_RUN:
        write_top_ninja(result, checks)
    return result


#: The targets of the build directory itself (:func:`write_top_ninja`).
TOP_CHECKS = ("check-offload", "check-offload-unit")
#: The script they run through (a copy of :mod:`kdl.build.checkrun`).
CHECK_RUNNER = "kdl-check.py"


def write_top_ninja(
    build: StandaloneBuild, extra: dict[str, str] | None = None
) -> Path:
    """``BUILD_DIR/build.ninja``: the checks of the builds under it, run from
    the build directory itself (``ninja -C BUILD_DIR check``), each handed to
    the build that has it, through ``BUILD_DIR/kdl-check.py``, which keeps
    lit's results in ``BUILD_DIR/results/`` (:mod:`kdl.build.checkrun`).
    *extra* adds checks: name -> command line."""
    from kdl.build import checkrun

    # The checks run through kdl-check.py, which keeps lit's results in
    # BUILD_DIR/results/ (kdl rfc --build-dir reads them).
    runner = build.build_dir / CHECK_RUNNER
    runner.write_text(Path(checkrun.__file__).read_text())
    # The Python offload's own checks run with (CMake's choice).
    python = cmake_cache(build.offload).get("_Python3_EXECUTABLE") or sys.executable
    results = build.build_dir / checkrun.RESULTS
    lines = [
        f"# Written by kdl build --llvm {build.llvm}: the builds under this",
        "# directory (omp, offload, devrtl-*) are CMake's; these targets hand",
        "# their checks to them. 'ninja check' runs them all; lit's results",
        f"# stay in {results}.",
        "ninja_required_version = 1.5",
        "rule sub",
        f"  command = {shlex.join([python, str(runner)])} $what $dir "
        f"{shlex.join([str(build.llvm), str(results)])}",
        "  description = ninja -C $dir $what",
        "  pool = console",
        "rule run",
        "  command = $cmd",
        "  description = $cmd",
        "  pool = console",
    ]
    for check in TOP_CHECKS:
        lines += [
            f"build {check}: sub",
            f"  dir = {build.offload}",
            f"  what = {check}",
        ]
    for name, command in (extra or {}).items():
        lines += [f"build {name}: run", f"  cmd = {command}"]
    lines.append(f"build check: phony {' '.join([*TOP_CHECKS, *(extra or {})])}")
    lines.append("default check")
    top = build.build_dir / "build.ninja"
    top.write_text("\n".join(lines) + "\n")
    return top


def default_dir(llvm: Path) -> Path:
    return paths.BUILD / f"standalone-{llvm.name}"
