"""Idempotent set-up: Debian's LLVM 22 packages and the pinned virtualenv.

This module uses only the standard library, because it runs before the
virtual environment exists (``scripts/*.py`` import it with the system
Python). A second run installs nothing: packages are checked with
``dpkg-query`` and the environment carries a stamp of ``pyproject.toml``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".kdl-stamp"

#: Debian 12 packages the workspace uses (LLVM 22.1.8 from bookworm).
APT_PACKAGES = (
    "llvm-22",
    "llvm-22-dev",
    "llvm-22-tools",
    "clang-22",
    # clang-linker-wrapper: clang -fopenmp cannot link offloading code without it.
    "clang-tools-22",
    # ld.lld: AMDGPU code objects are linked before a plugin loads them.
    "lld-22",
    "liboffload-22-dev",
    "libomp-22-dev",
    "libgtest-dev",
    # ASSERT_THAT_EXPECTED's matchers: the series' unit tests built against 22.1.8.
    "libgmock-dev",
    # LLVMSupport's link interface names zstd::libzstd_shared: offload's
    # standalone build against the installed LLVM finds it through this.
    "libzstd-dev",
    # Makes the sid root of LLVM main (kdl tree main).
    "debootstrap",
    "libbenchmark-dev",
    "clang-format-22",
    "libclang-rt-22-dev",
    # #gpu.runtime_select is built against MLIR 22 (overlay/mlir/).
    "libmlir-22-dev",
    "mlir-22-tools",
    "cmake",
    "ninja-build",
    # The compiler launcher of the standalone builds: base and series, and a
    # build made again, compile the same sources.
    "ccache",
    "g++",
    "git",
)


def _say(msg: str) -> None:
    print(f"kdl: {msg}", file=sys.stderr, flush=True)


def missing_packages(packages: tuple[str, ...] = APT_PACKAGES) -> list[str]:
    """Return the packages of *packages* that dpkg does not list as installed."""
    if shutil.which("dpkg-query") is None:
        return []
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *packages],
        capture_output=True,
        text=True,
        check=False,
    )
    installed = {
        line.split()[0]
        for line in proc.stdout.splitlines()
        if line.endswith(" installed")
    }
    return [p for p in packages if p not in installed]


def ensure_packages() -> None:
    missing = missing_packages()
    if not missing:
        return
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]
    if os.geteuid() != 0:
        raise SystemExit(
            "error: missing Debian packages: "
            + " ".join(missing)
            + "; run as root: apt-get update && "
            + " ".join(cmd)
        )
    _say(f"installing {len(missing)} Debian packages: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"], cmd):
        proc = subprocess.run(
            argv, env=env, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SystemExit(f"error: {' '.join(argv[:2])} failed: {tail}")


def _stamp_value() -> str:
    """What .venv was made for: the pins, the Python, and this workspace's
    path (a copied or moved workspace must not run the original's package,
    which the editable install and the scripts' shebangs point at)."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    return f"{digest} {sys.version_info[0]}.{sys.version_info[1]} {ROOT}\n"


def venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> Path:
    """Create ``.venv`` with the pinned dependencies unless it is current."""
    py = venv_python()
    want = _stamp_value()
    if py.exists() and STAMP.exists() and STAMP.read_text() == want:
        return py
    _say("creating the virtual environment .venv (pinned in pyproject.toml)")
    # --clear: a .venv copied from another workspace points at that one.
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    proc = subprocess.run(
        [*pip, "-e", f"{ROOT}[dev]"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"error: pip install into .venv failed: {tail}")
    STAMP.write_text(want)
    return py


def in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def enter(argv: list[str], *, packages: bool = True) -> None:
    """Make sure the workspace is set up, then run ``kdl argv`` in the venv.

    When already running inside ``.venv`` this returns without re-executing.
    """
    if packages and os.environ.get("KDL_SKIP_APT") != "1":
        ensure_packages()
    py = ensure_venv()
    if in_venv():
        return
    os.execv(str(py), [str(py), "-m", "kdl", *argv])
