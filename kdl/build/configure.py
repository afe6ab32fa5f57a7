"""Configure a CMake build directory once, and again only when it must.

Every build directory the workspace makes goes through :func:`configure`.
A directory counts as configured only when CMake finished: ``build.ninja``
exists and the stamp ``kdl-configure.txt``, written after CMake returned 0,
holds the same command line. A configure that was killed or failed midway
leaves a ``CMakeCache.txt`` without the stamp; the next run removes that
cache and configures again instead of failing forever in ninja.
"""

from __future__ import annotations

import logging
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

from kdl import proc

log = logging.getLogger("kdl")

STAMP = "kdl-configure.txt"


def is_configured(build_dir: Path, argv: Sequence[str] | None = None) -> bool:
    """Whether CMake finished in *build_dir* (with *argv*, when given)."""
    stamp = build_dir / STAMP
    if not (build_dir / "build.ninja").is_file() or not stamp.is_file():
        return False
    return argv is None or stamp.read_text() == proc.quote(argv) + "\n"


def configure(
    argv: Sequence[str], build_dir: Path, log_file: Path | None = None
) -> bool:
    """Run *argv* (a cmake line for *build_dir*) unless it already ran there.

    Returns True when CMake ran. What an unfinished or different configure
    left (the cache and CMakeFiles/) is removed first. With *log_file*,
    CMake's output goes there (:func:`kdl.proc.run_logged`).
    """
    if is_configured(build_dir, argv):
        return False
    if (build_dir / "CMakeCache.txt").is_file():
        log.info("%s: %s; configuring again", build_dir, _why_again(build_dir, argv))
        if not proc.DRY_RUN:
            (build_dir / "CMakeCache.txt").unlink()
            shutil.rmtree(build_dir / "CMakeFiles", ignore_errors=True)
    (build_dir / STAMP).unlink(missing_ok=True)
    if log_file is None:
        proc.run(argv, capture=False, mutating=True)
    else:
        proc.run_logged(argv, log_file, label=f"cmake {build_dir.name}")
    if not proc.DRY_RUN:
        (build_dir / STAMP).write_text(proc.quote(argv) + "\n")
    return True


def _why_again(build_dir: Path, argv: Sequence[str]) -> str:
    """Why a build directory with a CMake cache is configured again."""
    if not is_configured(build_dir):
        return "the cmake that configured it did not finish"
    before = shlex.split((build_dir / STAMP).read_text())
    changed = [a for a in argv if a not in before] + [
        f"no {a}" for a in before if a not in argv
    ]
    return "its cmake command line changed: " + (", ".join(changed[:3]) or "order")
