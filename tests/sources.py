"""The workspace's own tracked files, for the tests that check all of them."""

from __future__ import annotations

import subprocess

from kdl import paths

#: Where files are not the workspace's own sources: the series (upstream's
#: code), test inputs, generated results.
NOT_SOURCES = ("patches/", "tests/data/", "llvm-tests/", "results/")


def tracked(*patterns: str) -> list[str]:
    """``git ls-files`` of the workspace, paths relative to its root."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", *patterns],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [p for p in out.split("\0") if p]


def c_family_sources() -> list[str]:
    """Every C, C++ and CUDA source of the workspace itself."""
    return [
        f
        for f in tracked("*.c", "*.cpp", "*.h", "*.cu")
        if not f.startswith(NOT_SOURCES)
    ]
