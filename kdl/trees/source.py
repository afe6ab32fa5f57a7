"""The *22* tree: the complete llvm-project source of a Debian release.

Debian's source package ``llvm-toolchain-22`` carries the upstream release
as its orig tarball. Its size and SHA-256 come from sid's signed source index
(through :class:`kdl.trees.debian.PrivateApt`) and must equal the pins in
``trees.json``; the tarball is unpacked whole (2.4 GB) and committed as one
commit of a new git repository, with a fixed author and date, so the same
tarball always gives the same commit id. The series (its release/22.x
backport) applies to it with ``kdl apply``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from kdl import proc
from kdl.errors import WorkspaceError
from kdl.series.checkout import Checkout
from kdl.trees import common, debian

log = logging.getLogger("kdl")

#: The tarball, the unpacked tree and its .git (measured: 0.2 + 2.4 + 0.9 GB).
DISK_NEEDED = 4_500_000_000

#: Who made the one commit, and when: fixed, so the commit id is reproducible.
COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "kdl",
    "GIT_AUTHOR_EMAIL": "kdl@localhost",
    "GIT_COMMITTER_NAME": "kdl",
    "GIT_COMMITTER_EMAIL": "kdl@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}


def orig_tarball(pinned: dict[str, Any]) -> debian.RemoteFile:
    """The pinned orig tarball as sid's source index describes it."""
    uri = debian.mirror()
    apt = debian.PrivateApt([f"deb-src {uri} sid main"])
    apt.update()
    files = apt.source_files(pinned["source_package"], pinned["version"])
    orig = next((f for f in files if f.name == pinned["orig"]), None)
    if orig is None:
        carried = apt.source_versions(pinned["source_package"])
        now = f"it carries {', '.join(carried)}" if carried else "it carries none"
        raise WorkspaceError(
            f"sid's source index has no {pinned['source_package']} "
            f"{pinned['version']} ({now}); update the '22' pin in trees.json"
        )
    if (orig.size, orig.sha256) != (pinned["size"], pinned["sha256"]):
        raise WorkspaceError(
            f"{orig.name}: sid's index says {orig.size} bytes, sha256 {orig.sha256}; "
            f"trees.json pins {pinned['size']} bytes, sha256 {pinned['sha256']}"
        )
    return orig


def ensure_identity(tree: Path) -> None:
    """Commits in the workspace's own tree need an author: where git has
    none configured, the tree gets kdl's (a user's checkout is never
    touched: this is only called on the tree kdl made)."""
    with Checkout(tree, require_llvm=False) as checkout:
        status, out, _ = checkout.attempt("config", "user.email")
        if status != 0 or not out.strip():
            checkout.run("config", "user.name", COMMIT_ENV["GIT_AUTHOR_NAME"])
            checkout.run("config", "user.email", COMMIT_ENV["GIT_AUTHOR_EMAIL"])


def make(pinned: dict[str, Any]) -> common.Tree:
    """Make the source tree of the pinned release (reusing a current one)."""
    final = common.tree_dir("22")
    made = common.current("22", ".git", "offload/CMakeLists.txt")
    if made is not None:
        return made
    common.TREES_DIR.mkdir(parents=True, exist_ok=True)
    debian.need_disk(common.TREES_DIR, DISK_NEEDED, "the LLVM 22.1.8 source tree")
    started = time.monotonic()
    remote = orig_tarball(pinned)
    if proc.DRY_RUN:
        print(f"would download {remote.name} and unpack it into {final}")
        return common.Tree("22", final, {})
    tarball = debian.download(remote, common.DOWNLOADS)
    tree = common.staging("22")
    log.info("unpacking %s", tarball.name)
    common.unpack(tarball, tree)
    # The tarball has no .gitignore: build directories belong outside the tree.
    proc.run(["git", "init", "-q", "-b", "main", str(tree)])
    with Checkout(tree, require_llvm=False) as checkout:
        checkout.run("add", "-A")
        checkout.run(
            "commit",
            "-q",
            "-m",
            f"llvm-project {pinned['upstream_version']} (Debian's {pinned['orig']})",
            env=COMMIT_ENV,
        )
        commit = checkout.head()
    record = {
        "tree": "22",
        "source_package": pinned["source_package"],
        "version": pinned["version"],
        "upstream_version": pinned["upstream_version"],
        "orig": pinned["orig"],
        "sha256": pinned["sha256"],
        "commit": commit,
        "seconds_to_make": round(time.monotonic() - started, 1),
    }
    return common.finish("22", tree, record)
