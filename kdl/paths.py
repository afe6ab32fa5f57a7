"""Where things live: the workspace, the default LLVM, build and result dirs."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATCHES = ROOT / "patches"
SERIES = PATCHES / "series"
#: The release/22.x backport of the series, for the 22.1.8 tree.
BACKPORT_SERIES = PATCHES / "release-22.x" / "series"
#: What needs an RFC, a producer or a consumer before it can be posted.
PROPOSALS_SERIES = PATCHES / "proposals" / "series"
#: The llvm-test-suite series (its own index, applied to llvm-test-suite).
TEST_SUITE_SERIES = PATCHES / "test-suite" / "series"
LLVM_TESTS = ROOT / "llvm-tests"
RESULTS = ROOT / "results"
#: The recorded run on the real trees, which the README and the RFC quote (a
#: run writes its own record under build/record/: :mod:`kdl.record`).
REAL_TREE_RESULTS = RESULTS / "real-trees"
RFC_OUT = ROOT / "rfc" / "out"
OVERLAY_SRC = ROOT / "overlay"
BUILD = ROOT / "build"
#: Where the overlay build (what the real trees cannot host, on LLVM 22) goes.
OVERLAY_BUILD = BUILD / "overlay"


def default_llvm_prefix() -> Path:
    """Debian's LLVM 22 install, or ``$KDL_LLVM_PREFIX``."""
    return Path(os.environ.get("KDL_LLVM_PREFIX", "/usr/lib/llvm-22"))


def llvm_bin() -> Path:
    return default_llvm_prefix() / "bin"
