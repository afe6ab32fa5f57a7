"""A run's record: what it measured, under build/, and recording it in results/.

Every run of the real-tree stage (``kdl all``, ``kdl selftest --full``,
``kdl test --check-offload --llvm``) writes what it measured as JSON under
``build/record/`` (ignored by git), in the layout of ``results/``: the run's
``real-trees/rank.json`` is ``build/record/real-trees/rank.json``. A run
therefore leaves the checkout as it found it. The files under
``results/real-trees/`` are the recorded run the README and the RFC quote;
they change only when the user asks: :func:`record` (``kdl results record``,
or ``kdl all --record``) copies the run's record over them.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from kdl import paths, proc
from kdl.errors import WorkspaceError

log = logging.getLogger("kdl")

#: Where a run writes its record (the layout of ``results/``).
RUN = paths.BUILD / "record"
#: The run's record of the real trees (``results/real-trees/`` when recorded).
RUN_REAL_TREES = RUN / "real-trees"


def write(name: str, doc: dict[str, Any], where: Path = RUN_REAL_TREES) -> Path:
    """Write *doc* as ``WHERE/NAME`` (the run's record); its path."""
    where.mkdir(parents=True, exist_ok=True)
    out = where / name
    out.write_text(json.dumps(doc, indent=2) + "\n")
    return out


def last(name: str, where: Path = RUN_REAL_TREES) -> Path:
    """The last record of *name*: the run's if there is one, else the
    recorded one in results/real-trees/ (what a later run keeps of it)."""
    run = where / name
    return run if run.is_file() else paths.REAL_TREE_RESULTS / name


def record(run: Path = RUN, results: Path = paths.RESULTS) -> list[Path]:
    """Copy every file of the run's record *run* over ``results/``; the
    files written (none with --dry-run, which prints them)."""
    files = sorted(p for p in run.rglob("*") if p.is_file()) if run.is_dir() else []
    if not files:
        raise WorkspaceError(f"{run}: no run's record to record (run 'kdl all' first)")
    written = []
    for source in files:
        target = results / source.relative_to(run)
        if proc.DRY_RUN:
            print(f"would record: {source} -> {target}")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        log.debug("record: %s -> %s", source, target)
        written.append(target)
    return written
