"""The overlay build: what the real trees cannot host, against Debian's LLVM 22.

No llvm-project checkout exists on the machines this runs on. The small CMake
project in ``overlay/`` builds, against the installed LLVM
(``find_package(LLVM)``, its static libraries):

- ``kdl-select``, ``kdl-rank-diff`` and ``kdl-entries``: ``kdl-select`` and
  ``kdl-rank-diff`` rank with the series' rank, compiled from the release/22.x
  backport's texts (:mod:`kdl.build.ranktexts`, on the 22.1.8 tree's base
  texts): they are written into ``build/overlay/src-rank`` with
  ``units.cmake``, the LLVM sources the tools compile and link ahead of LLVM
  22's libraries, when the backport series changed;
- llvm-test-suite's OffloadDispatch benchmark from ``patches/test-suite``.

1. *Extract*: the test-suite series is applied with ``git apply`` to a
   scratch tree. Hunks on upstream files (its CMakeLists.txt) have no base
   here; they are listed as "not built here". The result is synchronised into
   ``build/overlay/src-test-suite`` file by file, so that an unchanged file
   keeps its timestamp and ninja does not rebuild it. This step runs only
   when the series or a patch changed.
2. *Configure*: ``cmake -G Ninja`` only when the build directory has no
   ``CMakeCache.txt`` for these sources, or a cache without ``build.ninja``
   (a configure that stopped midway).
3. *Build*: ``ninja`` (a no-op when nothing changed).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kdl import paths, proc
from kdl.errors import CommandError, WorkspaceError
from kdl.provenance import cmake_cache
from kdl.series.model import Series, load

log = logging.getLogger("kdl")

#: Bump when the extraction rules change, to force a fresh extraction.
_EXTRACT_FORMAT = "1"
_STAMP = ".kdl-extract-stamp"
_NOT_BUILT = ".kdl-not-built"
_LINKED = re.compile(r"Linking CXX (?:executable|static library|shared library) (\S+)")


@dataclass(frozen=True)
class Overlay:
    """Where the overlay build put things."""

    build_dir: Path
    #: ``bin/kdl-select``, the workspace driver.
    select_tool: Path
    #: ``bin/kdl-rank-diff``, tools/rank/RankDiff.cpp on kdl-select's rank.
    rank_diff: Path
    bin_dir: Path
    #: ``PATCH: PATH`` for each file of the series that is not compiled here.
    not_built: list[str] = field(default_factory=list)


def _layout(build_dir: Path, not_built: list[str]) -> Overlay:
    bin_dir = build_dir / "bin"
    return Overlay(
        build_dir=build_dir,
        select_tool=bin_dir / "kdl-select",
        rank_diff=bin_dir / "kdl-rank-diff",
        bin_dir=bin_dir,
        not_built=not_built,
    )


def _fingerprint(the_series: Series) -> str:
    digest = hashlib.sha256(f"format {_EXTRACT_FORMAT}\n".encode())
    digest.update(the_series.path.read_bytes())
    for patch in the_series.patches:
        digest.update(patch.name.encode() + b"\0" + patch.read())
    return digest.hexdigest()


def _apply_series(the_series: Series, tree: Path) -> list[str]:
    """Apply what can be applied of *the_series* in *tree*; return the rest."""
    not_built: list[str] = []
    for patch in the_series.patches:
        include = []
        for f in patch.files:
            if f.is_new or (tree / f.path).is_file():
                include.append(f.path)
            else:
                not_built.append(f"{patch.name}: {f.path}")
        if not include:
            continue
        argv = ["git", "apply", "--whitespace=nowarn"]
        argv += [f"--include={path}" for path in include]
        before = {path: _read(tree / path) for path in include}
        try:
            # The tree lies inside the workspace's git repository; stop git
            # from finding it, or it would apply paths relative to its top.
            proc.run(
                [*argv, patch.path],
                cwd=tree,
                env={"GIT_CEILING_DIRECTORIES": str(tree.parent)},
            )
        except CommandError as exc:
            raise WorkspaceError(
                f"{patch.name} does not apply to the overlay tree "
                f"({', '.join(include)}): "
                f"{exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else exc}"
            ) from exc
        unchanged = [p for p in include if _read(tree / p) == before[p]]
        if unchanged:
            raise WorkspaceError(
                f"{patch.name}: git apply left {', '.join(unchanged)} unchanged"
            )
    return not_built


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _sync(src: Path, dst: Path) -> list[str]:
    """Make *dst* hold exactly the files of *src*; return what changed."""
    return sync_files(
        {p.relative_to(src): p for p in src.rglob("*") if p.is_file()}, dst
    )


def sync_files(files: Mapping[Path, Path], dst: Path) -> list[str]:
    """Make *dst* hold exactly *files* (relative path: source file), leaving
    unchanged copies as they are (their time stamps too); return what
    changed. Files named ``.kdl*`` in *dst* are kept."""
    changed = []
    wanted = set(files)
    if dst.is_dir():
        for p in sorted(dst.rglob("*"), reverse=True):
            rel = p.relative_to(dst)
            if p.is_file() and rel not in wanted and not rel.name.startswith(".kdl"):
                p.unlink()
                changed.append(f"removed {rel}")
            elif p.is_dir() and not any(p.iterdir()):
                p.rmdir()
    for rel in sorted(wanted):
        new = files[rel].read_bytes()
        out = dst / rel
        if out.is_file() and out.read_bytes() == new:
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(new)
        changed.append(str(rel))
    return changed


def extract_series(src_dir: Path, the_series: Series) -> list[str]:
    """Extract the series' buildable files into *src_dir*, if anything changed.

    Returns the ``PATCH: PATH`` entries of files that are not built here.
    """
    stamp = src_dir / _STAMP
    fingerprint = _fingerprint(the_series)
    if stamp.is_file() and stamp.read_text() == fingerprint:
        log.debug("overlay: %s is up to date with the series", src_dir)
        return (src_dir / _NOT_BUILT).read_text().splitlines()
    if proc.DRY_RUN:
        print(f"would extract the series '{the_series.name}' into {src_dir}")
        return []
    src_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kdl-extract-", dir=src_dir.parent) as tmp:
        not_built = _apply_series(the_series, Path(tmp))
        changed = _sync(Path(tmp), src_dir)
    (src_dir / _NOT_BUILT).write_text("".join(f"{line}\n" for line in not_built))
    stamp.write_text(fingerprint)
    log.info(
        "overlay: extracted %d patches of '%s' into %s (%s)",
        len(the_series.patches),
        the_series.name,
        src_dir,
        f"{len(changed)} files changed" if changed else "no file changed",
    )
    return not_built


def _rank_fingerprint(backport: Series, commit: str) -> str:
    digest = hashlib.sha256(f"rank {_EXTRACT_FORMAT} {commit}\n".encode())
    digest.update(backport.path.read_bytes())
    for patch in backport.patches:
        digest.update(patch.name.encode() + b"\0" + patch.read())
    return digest.hexdigest()


def extract_rank(rank_dir: Path) -> None:
    """The rank's texts after the release/22.x backport, and ``units.cmake``,
    into *rank_dir*, if the backport changed (the 22.1.8 tree is made on
    first use)."""
    from kdl.build.ranktexts import backport_texts, write_tree
    from kdl.trees import common, ensure

    backport = load(paths.BACKPORT_SERIES)
    tree22 = common.current("22", ".git") or ensure("22")
    stamp = rank_dir / _STAMP
    fingerprint = _rank_fingerprint(backport, tree22.record.get("commit", ""))
    if stamp.is_file() and stamp.read_text() == fingerprint:
        return
    if proc.DRY_RUN:
        print(f"would write the rank's texts of '{backport.name}' into {rank_dir}")
        return
    rank_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kdl-rank-", dir=rank_dir.parent) as tmp:
        on22 = backport_texts(backport, tree22, Path(tmp) / "base")
        tree = Path(tmp) / "tree"
        write_tree(on22.texts, tree)
        (tree / "units.cmake").write_text(
            "# Written by kdl.build.overlay: the LLVM sources the release/22.x\n"
            "# backport changes, compiled into kdl-select ahead of LLVM 22.\n"
            "set(KDL_RANK_UNITS\n"
            + "".join(f"  {unit}\n" for unit in on22.units)
            + ")\n"
        )
        changed = _sync(tree, rank_dir)
    stamp.write_text(fingerprint)
    log.info(
        "overlay: wrote the rank's texts of '%s' into %s (%s)",
        backport.name,
        rank_dir,
        f"{len(changed)} files changed" if changed else "no file changed",
    )


def configured_for(build_dir: Path) -> Path | None:
    """The overlay sources *build_dir* was configured with, if it was."""
    home = cmake_cache(build_dir).get("CMAKE_HOME_DIRECTORY")
    return Path(home) if home else None


def _configure(build_dir: Path, rank_dir: Path, prefix: Path) -> None:
    configured = configured_for(build_dir)
    ours = (
        configured is not None and configured.resolve() == paths.OVERLAY_SRC.resolve()
    )
    # A cache without build.ninja is a configure that stopped midway: cmake
    # runs again instead of ninja failing on every later build. A cache made
    # before kdl-select built the rank has no KDL_RANK_SRC.
    rank_known = cmake_cache(build_dir).get("KDL_RANK_SRC") == str(rank_dir)
    if ours and rank_known and (build_dir / "build.ninja").is_file():
        return
    if configured is not None and not ours:
        # A workspace that was copied or moved: its cache would build the
        # other workspace's sources. The build directory is ours; start over.
        log.info(
            "overlay: %s was configured for %s; configuring it again for %s",
            build_dir,
            configured,
            paths.OVERLAY_SRC,
        )
        if not proc.DRY_RUN:
            shutil.rmtree(build_dir)
            build_dir.mkdir(parents=True)
    cmake = proc.which("cmake")
    if cmake is None:
        raise WorkspaceError("cmake: command not found (apt-get install cmake)")
    argv: list[str | os.PathLike[str]] = [
        cmake,
        "-G",
        "Ninja",
        "-S",
        paths.OVERLAY_SRC,
        "-B",
        build_dir,
        f"-DKDL_RANK_SRC={rank_dir}",
        f"-DKDL_ROOT={paths.ROOT}",
        f"-DLLVM_DIR={prefix / 'lib' / 'cmake' / 'llvm'}",
        "-DCMAKE_BUILD_TYPE=Release",
    ]
    log.info("overlay: configuring %s", build_dir)
    proc.run(argv, mutating=True)


def _build(build_dir: Path, jobs: int, targets: Sequence[str]) -> list[str]:
    ninja = proc.which("ninja")
    if ninja is None:
        raise WorkspaceError("ninja: command not found (apt-get install ninja-build)")
    result = proc.run([ninja, "-C", build_dir, f"-j{jobs}", *targets], mutating=True)
    out = result.stdout.decode(errors="replace")
    log.debug("%s", out.rstrip())
    return [Path(m.group(1)).name for m in _LINKED.finditer(out)]


def build_overlay(
    build_dir: Path | None = None,
    jobs: int | None = None,
    *,
    report: bool = True,
    targets: Sequence[str] = (),
) -> Overlay:
    """Extract the series if it changed, configure once, run ninja.

    With ``report=False`` (``kdl select``) only a build that did something is
    reported; "up to date" and the files not built here go to the debug log.
    *targets* limits ninja to those targets (``kdl select`` needs only
    ``kdl-select``); by default everything is built.
    """
    build_dir = (build_dir or paths.OVERLAY_BUILD).resolve()
    if proc.DRY_RUN:
        return _build_locked(build_dir, jobs, report, targets)
    build_dir.mkdir(parents=True, exist_ok=True)
    # One build at a time in a directory (two kdl select, or test workers):
    # the second waits for the first and then finds nothing to do.
    with (build_dir / ".kdl-build.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(build_dir, jobs, report, targets)


def _build_locked(
    build_dir: Path, jobs: int | None, report: bool, targets: Sequence[str]
) -> Overlay:
    jobs = jobs or min(2, os.cpu_count() or 1)
    prefix = paths.default_llvm_prefix()
    start = time.monotonic()
    not_built = extract_series(
        build_dir / "src-test-suite", load(paths.TEST_SUITE_SERIES)
    )
    rank_dir = build_dir / "src-rank"
    extract_rank(rank_dir)
    _configure(build_dir, rank_dir, prefix)
    linked = _build(build_dir, jobs, targets)
    overlay = _layout(build_dir, not_built)
    if proc.DRY_RUN:
        return overlay
    seconds = time.monotonic() - start
    level = logging.INFO if report else logging.DEBUG
    if linked:
        log.info("overlay: built %s in %.0f s", ", ".join(linked), seconds)
    else:
        log.log(level, "overlay: %s is up to date", build_dir)
    if not_built:
        log.log(
            level,
            "overlay: not built here: %d files of its patches have no base "
            "(-v lists them)",
            len(not_built),
        )
    for entry in not_built:
        log.debug("overlay: not built here: %s", entry)
    products = {
        "kdl-select": overlay.select_tool,
        "kdl-rank-diff": overlay.rank_diff,
    }
    for target, tool in products.items():
        if (not targets or target in targets) and not tool.is_file():
            raise WorkspaceError(f"overlay build did not produce {tool}")
    return overlay
