"""``kdl tree``: the real LLVM trees the workspace stands on.

Two trees, both from Debian's registry, pinned in ``trees.json``, made once
under ``.work/trees/`` and reused:

- ``main``: a Debian sid root holding LLVM main's snapshot packages
  (:mod:`kdl.trees.sidroot`); main's tools run there and the series' code
  is built against main's headers and libraries there.
- ``22``: the complete LLVM 22.1.8 source as a git repository
  (:mod:`kdl.trees.source`), where the series' release/22.x backport is
  applied, built and tested.

Each tree's record (what it is: package version, main's commit or the
tarball's SHA-256, the git commit) goes into every result made on it.
"""

from __future__ import annotations

import argparse
import json
import re
import time

from kdl import proc
from kdl.errors import UsageError
from kdl.trees import common
from kdl.trees.common import Tree

NAMES = ("main", "22")


def ensure(name: str) -> Tree:
    """The tree *name*, made if it is missing, half-made or not the pinned one.

    One run at a time per tree (a second waits); what a killed run left
    (``NAME.partial``) goes once the tree is there."""
    pinned = common.pin(name)
    with common.locked(name):
        if name == "main":
            from kdl.trees import sidroot

            tree = sidroot.make(pinned)
        else:
            from kdl.trees import source

            tree = source.make(pinned)
        if not proc.DRY_RUN:
            common.drop_partial(name)
        return tree


def _pin_main(version: str) -> None:
    from kdl.trees.sidroot import commit_of

    commit = commit_of(version)
    major = re.match(r"^\d+:(\d+)~\+\+", version)
    if commit is None or major is None:
        raise UsageError(f"{version}: not a snapshot version (1:N~++DATE+COMMIT-...)")
    entry = dict(common.pin("main"))
    entry.update(version=version, commit=commit, major=int(major.group(1)))
    common.write_pin("main", entry)
    print(f"trees.json: main is now {version} (main at {commit})")


def cmd_tree(args: argparse.Namespace) -> int:
    if args.pin:
        if args.name != ["main"]:
            raise UsageError("--pin moves the 'main' tree only: kdl tree main --pin V")
        _pin_main(args.pin)
    names = args.name or list(NAMES)
    records = {}
    for name in names:
        if name not in NAMES:
            raise UsageError(f"no tree named '{name}' (there are: {', '.join(NAMES)})")
        started = time.monotonic()
        tree = ensure(name)
        seconds = time.monotonic() - started
        records[name] = {"path": str(tree.path), **tree.record}
        if not args.json and not proc.DRY_RUN:
            print(f"{name}: {tree.path}: {tree.describe()} ({seconds:.0f} s)")
    if args.json:
        print(json.dumps(records, indent=2))
    return 0
