"""``kdl bench-readers``: what the OffloadBinary readers cost on hostile input.

Makes the hostile corpus (:mod:`kdl.offload.hostile`, its large files
included: decompression bombs of 1 GiB from 1 MB, four of them, 5000 binaries
of 1 MiB, an ELF whose 64 section headers point at one bomb, 100,000 tiny
binaries, and the inputs whose report is large: a 64 KB binary that inflates
to one value of 60 MiB, plain ones of 15.7 MB with a value or key of 15 MiB)
and runs each reader on every file in a process of its own, recording its
exit status, time and peak resident set size (``wait4``):

- ``python``: ``kdl inspect --json`` (:mod:`kdl.offload.binary`, then the
  report, :mod:`kdl.offload.inspect`);
- ``python-text``: ``kdl inspect``, the text report;
- ``c++``: ``kdl-select`` (the C++ container reader of
  ``overlay/container/OffloadEntries.h``, then the ranking) for an sm_90
  device.

The goal: at most :data:`MAX_RSS_MB` for every input of at most
:data:`MAX_INPUT` bytes, with the readers' default limits. The results go to
``results/readers/peak-rss.json`` with the machine and the date; the command
fails when the goal is missed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from kdl import paths, proc
from kdl.errors import WorkspaceError
from kdl.offload import hostile

log = logging.getLogger("kdl")

MAX_RSS_MB = 256
MAX_INPUT = 16 << 20
OUTPUT = paths.RESULTS / "readers" / "peak-rss.json"
DEVICE = "triple=nvptx64-nvidia-cuda,arch=sm_90"
READERS = ("python", "python-text", "c++")


def readers(select_tool: Path) -> dict[str, list[str]]:
    """Each reader's command line, the input's path to be appended."""
    return {
        "python": [sys.executable, "-m", "kdl", "inspect", "--json"],
        "python-text": [sys.executable, "-m", "kdl", "inspect"],
        "c++": [str(select_tool), f"--device={DEVICE}"],
    }


#: Exit statuses: kdl inspect 0 read, 1 refused; kdl-select 0 an image
#: selected, 1 none compatible (both read), 2 refused. Anything else (a
#: crash, a kill for memory) is a failure.
_VERDICTS = {
    "python": {0: "read", 1: "refused"},
    "python-text": {0: "read", 1: "refused"},
    "c++": {0: "read", 1: "read", 2: "refused"},
}


def run_bench(select_tool: Path, files: dict[str, bytes]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    env = {"PYTHONPATH": str(paths.ROOT)}
    with tempfile.TemporaryDirectory(prefix="kdl-readers-") as scratch:
        for path in map(Path, hostile.write(scratch, files)):
            size = path.stat().st_size
            for reader, argv in readers(select_tool).items():
                got = proc.measure([*argv, path], env=env)
                verdict = _VERDICTS[reader].get(got.returncode, "failed")
                rows.append(
                    {
                        "file": path.stem,
                        "bytes": size,
                        "reader": reader,
                        "verdict": verdict,
                        "exit": got.returncode,
                        "seconds": round(got.seconds, 3),
                        "peak_rss_mb": round(got.peak_rss_mb, 1),
                        "message": got.stderr.strip().splitlines()[-1:] or None,
                    }
                )
                log.info(
                    "%-32s %-11s %-7s %6.2f s %7.1f MB",
                    path.stem,
                    reader,
                    verdict,
                    got.seconds,
                    got.peak_rss_mb,
                )
    bounded = [r for r in rows if r["bytes"] <= MAX_INPUT]
    over = [r for r in bounded if r["peak_rss_mb"] > MAX_RSS_MB]
    failed = [r for r in rows if r["verdict"] == "failed"]
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "node": platform.node(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
        },
        "goal": f"peak RSS at most {MAX_RSS_MB} MB on every input up to "
        f"{MAX_INPUT >> 20} MB, default limits",
        "met": not over and not failed,
        "over": [f"{r['file']} ({r['reader']}: {r['peak_rss_mb']} MB)" for r in over],
        "failed": [f"{r['file']} ({r['reader']}: exit {r['exit']})" for r in failed],
        "max_peak_rss_mb": {
            reader: max(r["peak_rss_mb"] for r in bounded if r["reader"] == reader)
            for reader in READERS
        },
        "rows": rows,
    }


def cmd_bench_readers(args: argparse.Namespace) -> int:
    from kdl.build.overlay import build_overlay

    overlay = build_overlay(report=False, targets=["kdl-select"])
    files = hostile.corpus(large_files=not args.small)
    log.info("readers: %d hostile files", len(files))
    result = run_bench(overlay.select_tool, files)
    output: Path = args.output or OUTPUT
    if not proc.DRY_RUN:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(result, indent=2) + "\n")
    peaks = result["max_peak_rss_mb"]
    print(
        f"readers: {len(files)} files; peak RSS python {peaks['python']} MB "
        f"(text report {peaks['python-text']} MB), c++ {peaks['c++']} MB "
        f"(goal {MAX_RSS_MB} MB); {output}"
    )
    if not result["met"]:
        raise WorkspaceError(
            "readers: goal missed: " + "; ".join(result["over"] + result["failed"])
        )
    return 0
