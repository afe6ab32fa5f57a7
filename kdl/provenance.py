"""Where a result came from: tool versions and a build's CMake cache.

The ground floor every module that records provenance uses, so that each fact
is read one way: the first line a tool prints for ``--version``, the
``KEY:TYPE=VALUE`` entries of a ``CMakeCache.txt``. Each answers None (or an
empty mapping) where the fact is not there to read, never an error: a result
file says "unknown" rather than failing to be written. ``git describe`` of a
checkout, the same way, is :func:`kdl.series.checkout.describe_tree`: git is
read only through :class:`kdl.series.checkout.Checkout`.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from kdl import proc
from kdl.errors import WorkspaceError

log = logging.getLogger("kdl")

_CACHE_LINE = re.compile(r"^([A-Za-z_][\w.-]*):[A-Z_]+=(.*)$")


def first_line(argv: list[str]) -> str | None:
    """The first non-empty line *argv* prints, if it runs and succeeds."""
    try:
        result = proc.run(argv, check=False, timeout=30)
    except WorkspaceError as exc:
        log.debug("%s: %s", argv[0], exc)
        return None
    if result.returncode != 0:
        return None
    lines = [
        ln.strip()
        for ln in (result.stdout or b"").decode(errors="replace").splitlines()
    ]
    return next((ln for ln in lines if ln), None)


def version(tool: Path) -> str | None:
    """``TOOL --version`` on one line (LLVM's tools print several)."""
    if not tool.is_file():
        return None
    try:
        text = proc.output([tool, "--version"], timeout=30)
    except WorkspaceError as exc:
        log.debug("%s --version: %s", tool, exc)
        return None
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def cmake_cache(build_dir: Path) -> dict[str, str]:
    """The ``KEY:TYPE=VALUE`` entries of *build_dir*/CMakeCache.txt ({} if none)."""
    try:
        text = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return {}
    return {m[1]: m[2] for m in map(_CACHE_LINE.match, text.splitlines()) if m}
