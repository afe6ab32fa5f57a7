"""kdl's standalone libomp is configured with libomptarget's side of deferred
target tasks (real CMake on the 22.1.8 tree; slow)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kdl import trees
from kdl.build.standalone import installed_prefix, omp_argv

pytestmark = pytest.mark.slow


def test_libomp_asks_libomptarget_about_target_nowait_tasks(tmp_path: Path) -> None:
    tree = trees.ensure("22")
    prefix = installed_prefix("22.1.8")
    assert prefix, "the set-up installs LLVM 22.1.8 (/usr/lib/llvm-22)"
    build = tmp_path / "omp"
    done = subprocess.run(
        omp_argv(tree.path, build, prefix), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # Without it libomp runs a target nowait task's routine again instead of
    # calling __tgt_target_nowait_query (upstream's nowait tests loop on a GPU).
    config = (build / "runtime/src/kmp_config.h").read_text()
    assert "#define OPENMP_ENABLE_LIBOMPTARGET 1" in config
