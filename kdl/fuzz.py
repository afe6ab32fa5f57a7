"""``kdl fuzz``: libFuzzer on the series' rank and the container reader, with
ASan and UBSan.

Builds ``overlay/fuzz/OffloadTargetRankFuzzer.cpp`` with the rank as the
overlay build compiles it into kdl-select (``OffloadTargetRank.cpp`` and the
LLVM sources the release/22.x backport changes, from the series' texts in
``build/overlay/src-rank``, linked ahead of LLVM 22's static libraries), the
plugins' acceptance test and the container reader kdl-select uses,
using clang 22 with ``-fsanitize=fuzzer,address,undefined``; seeds a fresh
corpus with the committed OffloadBinary fixtures (``tests/data/offload/*.bin``:
versions 1 and 2, and version 3 as LLVM main writes it, uncompressed, zstd and
zlib, which the lit suite does not pack) and the files the lit suite packed
(every ``*.bin``, ``*.cubin`` and ``*.so`` under the lit output directory),
and runs it for a bounded time. A finding is a failure; its reproducer stays
in ``build/fuzz/``.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shutil
from pathlib import Path

from kdl import paths, proc
from kdl.errors import WorkspaceError

log = logging.getLogger("kdl")

FUZZ_DIR = paths.BUILD / "fuzz"
SOURCE = paths.OVERLAY_SRC / "fuzz" / "OffloadTargetRankFuzzer.cpp"
#: The LLVM libraries the fuzzer links statically, after the backport's units.
COMPONENTS = ["object", "bitreader", "frontendoffloading", "targetparser", "support"]
SEED_PATTERNS = ("*.bin", "*.cubin", "*.so")
#: At most this many seeds from the lit suite, the smallest first (libFuzzer
#: reads them all).
MAX_SEEDS = 200
#: Seeded whatever the lit suite packed: the only version 3 inputs (the lit
#: suite packs with LLVM 22, which writes version 1).
FIXTURE_SEEDS = paths.ROOT / "tests" / "data" / "offload"


def build_fuzzer(build_dir: Path, out: Path) -> Path:
    """Compile the fuzz target with the rank's texts the overlay build in
    *build_dir* wrote (``src-rank``)."""
    from kdl.build.ranktexts import LIBS, llvm_files
    from kdl.series.model import load

    prefix = paths.default_llvm_prefix()
    clang = proc.clang_cxx(prefix)
    config = str(prefix / "bin" / "llvm-config")
    rank_src = build_dir / "src-rank"
    units = llvm_files(load(paths.BACKPORT_SERIES), LIBS, ".cpp")
    plugin_model = paths.OVERLAY_SRC / "plugin-model"
    libs = proc.run([config, "--link-static", "--libs", *COMPONENTS])
    system = proc.run([config, "--link-static", "--system-libs", *COMPONENTS])
    argv: list[str | Path] = [
        clang,
        "-std=c++17",
        "-g",
        "-O1",
        "-fno-rtti",
        "-fsanitize=fuzzer,address,undefined",
        "-fno-sanitize=vptr",
        "-fno-sanitize-recover=undefined",
        f"-I{rank_src / 'llvm' / 'include'}",
        f"-I{plugin_model}",
        f"-I{paths.OVERLAY_SRC / 'container'}",
        f"-I{prefix / 'include'}",
        *[rank_src / unit for unit in units],
        plugin_model / "PluginAcceptance.cpp",
        paths.OVERLAY_SRC / "container" / "OffloadEntries.cpp",
        paths.OVERLAY_SRC / "container" / "OffloadSections.cpp",
        SOURCE,
        f"-L{prefix / 'lib'}",
        *libs.stdout.decode().split(),
        *system.stdout.decode().split(),
        "-o",
        out,
    ]
    # The sanitized build of the LLVM units takes a minute or more: it is
    # done again only when the command or a file it reads changed.
    inputs = [
        *sorted(p for p in rank_src.rglob("*") if p.is_file()),
        *sorted(
            p
            for d in (plugin_model, paths.OVERLAY_SRC / "container")
            for p in d.glob("*.*")
        ),
        SOURCE,
    ]
    stamp = out.with_name(out.name + ".stamp")
    fingerprint = _fingerprint([str(a) for a in argv], inputs)
    if out.is_file() and stamp.is_file() and stamp.read_text() == fingerprint:
        log.debug("fuzz: %s is up to date", out)
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    proc.run(argv, mutating=True)
    if not proc.DRY_RUN:
        stamp.write_text(fingerprint)
    return out


def _fingerprint(argv: list[str], inputs: list[Path]) -> str:
    digest = hashlib.sha256("\0".join(argv).encode())
    for path in inputs:
        digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def seed_corpus(
    corpus: Path, lit_root: Path, fixtures: Path = FIXTURE_SEEDS
) -> tuple[int, int]:
    """A fresh corpus of the files the lit suite packed and the committed
    OffloadBinary fixtures; returns how many of each."""
    if corpus.exists():
        shutil.rmtree(corpus)
    corpus.mkdir(parents=True)
    seeds = sorted(
        (p for pat in SEED_PATTERNS for p in lit_root.rglob(pat) if p.is_file()),
        key=lambda p: (p.stat().st_size, str(p)),
    )[:MAX_SEEDS]
    for i, seed in enumerate(seeds):
        shutil.copyfile(seed, corpus / f"seed-{i:03d}{seed.suffix}")
    fixed = sorted(p for p in fixtures.glob("*.bin") if p.is_file())
    for seed in fixed:
        shutil.copyfile(seed, corpus / f"fixture-{seed.name}")
    return len(seeds), len(fixed)


def run_fuzz(seconds: int) -> bool:
    """Build, seed and run for *seconds*; True when nothing was found."""
    from kdl.build.overlay import build_overlay

    overlay = build_overlay(report=False)
    tool = build_fuzzer(overlay.build_dir, FUZZ_DIR / "offload-target-rank-fuzzer")
    lit_root = paths.BUILD / "llvm-tests"
    count, fixed = seed_corpus(FUZZ_DIR / "corpus", lit_root)
    if count == 0:
        # The seeds are what the lit suite packs: run it first.
        from kdl.build.lit import run_lit

        print(f"fuzz: no seeds under {lit_root}: running the lit suite first")
        run_lit(overlay=overlay)
        count, fixed = seed_corpus(FUZZ_DIR / "corpus", lit_root)
    if count == 0:
        raise WorkspaceError(f"{lit_root}: the lit suite packed no seeds")
    log.info(
        "fuzz: %d seeds from %s, %d from %s, %d s",
        count,
        lit_root,
        fixed,
        FIXTURE_SEEDS,
        seconds,
    )
    result = proc.run(
        [
            tool,
            f"-max_total_time={seconds}",
            "-timeout=10",
            "-rss_limit_mb=2048",
            f"-artifact_prefix={FUZZ_DIR}/",
            FUZZ_DIR / "corpus",
        ],
        cwd=FUZZ_DIR,
        check=False,
        mutating=True,
    )
    tail = result.stderr.decode(errors="replace").strip().splitlines()[-3:]
    for line in tail:
        print(f"fuzz: {line}")
    return result.returncode == 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    return 0 if run_fuzz(args.seconds) else 1
