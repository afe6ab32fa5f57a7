"""The *main* tree: LLVM main's snapshot packages in a Debian sid root.

Debian's experimental suite carries ``llvm-toolchain-snapshot``, LLVM main at
one commit, built for sid (glibc newer than this machine's). The root is made
with ``debootstrap --variant=minbase sid`` from this machine's Debian mirror,
then apt inside it installs the pinned snapshot version of every package the
series needs (clang, llvm and its headers and static libraries, lit and
FileCheck, lld, clang-tools, liboffload, libomp, MLIR) and sid's googletest.
Every later step that says "main" runs inside this root (:func:`run_in`).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from kdl import proc
from kdl.errors import WorkspaceError
from kdl.trees import common, debian

log = logging.getLogger("kdl")

#: Snapshot packages (suffixed with the major version) and sid's own.
SNAPSHOT_PACKAGES = (
    "clang",
    "llvm",
    "llvm-{}-dev",
    "llvm-{}-tools",
    "lld",
    "clang-tools",
    "liboffload",
    "liboffload-{}-dev",
    "libomp-{}-dev",
    "libmlir-{}-dev",
    "mlir-{}-tools",
)
SID_PACKAGES = ("libgtest-dev", "libgmock-dev", "libbenchmark-dev")

#: debootstrap's minbase root, the snapshot's packages with -dev, MLIR and
#: googletest, and apt's archive cache while it installs (measured: 2.6 GB).
DISK_NEEDED = 4_000_000_000


def package_names(major: int) -> list[str]:
    return [p.format(major) if "{}" in p else f"{p}-{major}" for p in SNAPSHOT_PACKAGES]


def run_in(
    root: Path, argv: list[str], **kwargs: Any
) -> subprocess.CompletedProcess[bytes]:
    """Run *argv* inside *root* (``chroot``)."""
    return proc.run(["chroot", str(root), *argv], **kwargs)


def _apt(root: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return run_in(
        root,
        ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-qq", *args],
        **kwargs,
    )


def commit_of(version: str) -> str | None:
    """main's commit in a snapshot version (``1:24~++DATE+COMMIT-1~exp1``)."""
    m = re.search(r"\+([0-9a-f]{7,40})-", version)
    return m.group(1) if m else None


def _snapshot_versions(root: Path) -> list[str]:
    """Snapshot versions the root's index carries, newest major first."""
    out = run_in(
        root, ["apt-cache", "search", "--names-only", "^llvm-[0-9]+-dev$"], check=False
    )
    found = []
    for line in out.stdout.decode(errors="replace").splitlines():
        name = line.split(" ", 1)[0]
        madison = run_in(root, ["apt-cache", "madison", name], check=False)
        for row in madison.stdout.decode(errors="replace").splitlines():
            cols = [c.strip() for c in row.split("|")]
            if len(cols) > 1 and "~++" in cols[1]:
                found.append(cols[1])
    return sorted(set(found), reverse=True)


def _check_pinned(root: Path, pinned: dict[str, Any]) -> None:
    name = f"llvm-{pinned['major']}-dev"
    madison = run_in(root, ["apt-cache", "madison", name], check=False)
    if f"| {pinned['version']} |" in madison.stdout.decode(errors="replace"):
        return
    carried = _snapshot_versions(root)
    if not carried:
        raise WorkspaceError(
            f"the registry carries no {pinned['source_package']} at all "
            f"(pinned: {pinned['version']})"
        )
    raise WorkspaceError(
        f"the registry no longer carries {pinned['source_package']} "
        f"{pinned['version']}; it carries {carried[0]} (main at "
        f"{commit_of(carried[0])}): move with 'kdl tree main --pin {carried[0]}'"
    )


def _record(
    pinned: dict[str, Any], packages: list[str], seconds: float
) -> dict[str, Any]:
    return {
        "tree": "main",
        "source_package": pinned["source_package"],
        "version": pinned["version"],
        "commit": pinned["commit"],
        "major": pinned["major"],
        "packages": packages,
        "prefix": f"/usr/lib/llvm-{pinned['major']}",
        "seconds_to_make": round(seconds, 1),
    }


def _add_missing(tree: common.Tree) -> common.Tree:
    """A root made before a sid package joined :data:`SID_PACKAGES` gets it."""
    missing = [p for p in SID_PACKAGES if p not in tree.record.get("packages", [])]
    if not missing:
        return tree
    log.info("adding %s to the sid root", " ".join(missing))
    try:
        _apt(tree.path, "update")
        _apt(tree.path, "install", "-y", "--no-install-recommends", *missing)
        _apt(tree.path, "clean")
    finally:
        common.unmount_all(tree.path)
    tree.record["packages"] = [*tree.record.get("packages", []), *missing]
    common.record_file(tree.path).write_text(json.dumps(tree.record, indent=2) + "\n")
    return tree


def make(pinned: dict[str, Any]) -> common.Tree:
    """Make the sid root with the pinned snapshot (reusing a current one)."""
    made = common.current("main", f"usr/lib/llvm-{pinned['major']}/bin/clang")
    if made is not None:
        return _add_missing(made)
    common.TREES_DIR.mkdir(parents=True, exist_ok=True)
    debian.need_disk(common.TREES_DIR, DISK_NEEDED, "the sid root of LLVM main")
    started = time.monotonic()
    uri = debian.mirror()
    root = common.staging("main")
    log.info("making the sid root for LLVM main (%s)", pinned["version"])
    try:
        proc.run(
            ["debootstrap", "--variant=minbase", "sid", str(root), uri],
            mutating=True,
        )
    finally:
        common.unmount_all(root)
    if proc.DRY_RUN:
        return common.Tree("main", common.tree_dir("main"), _record(pinned, [], 0))
    (root / "etc/apt/sources.list.d/experimental.list").write_text(
        f"deb {uri} experimental main\n"
    )
    # Snapshot suites' Release files may be past their Valid-Until.
    (root / "etc/apt/apt.conf.d/99kdl").write_text(
        'Acquire::Check-Valid-Until "false";\n'
    )
    _apt(root, "update")
    _check_pinned(root, pinned)
    snapshot = package_names(pinned["major"])
    _apt(
        root,
        "install",
        "-y",
        "--no-install-recommends",
        "-t",
        "experimental",
        *[f"{p}={pinned['version']}" for p in snapshot],
        *SID_PACKAGES,
    )
    _apt(root, "clean")
    common.unmount_all(root)
    record = _record(pinned, [*snapshot, *SID_PACKAGES], time.monotonic() - started)
    return common.finish("main", root, record)
