"""``kdl select``: which image of a file a device loads, with the series' rank.

The order is the series' loop's with the proposals' OffloadBinary keys,
which ``kdl apply`` applies with it by default: of equal ranks that run on
the device the higher ``variant_priority`` first, and the selected image's
``variant_tag`` reported; ``--posting-stack`` orders as the posted series
alone does (equal ranks in the file's order).

The work is done by the overlay's ``kdl-select`` driver: a model of which
images the plugins, with the series, accept for the device
(``overlay/plugin-model/PluginAcceptance.cpp``) and the rank
(``llvm/Object/OffloadTargetRank.cpp``, compiled from the release/22.x
backport's texts with the LLVM sources it changes, linked ahead of LLVM
22's libraries), reading the file with the workspace's container reader
(``overlay/container/OffloadEntries.h``: OffloadBinary versions
1 to 3, every offset bounded). This module builds the driver if needed and
runs it on the user's file; its output, escaping and exit status are the
driver's: 0 an image was selected, 1 no image is compatible, 2 bad arguments
or an unreadable file. FILE is checked here first, as ``kdl inspect`` checks
it: what is not a regular file (a FIFO, whose open would wait for a writer,
a directory, a device) or an empty path is refused in one line, exit 2,
before the driver is built or run. Standard input (``-``) is read here once
and handed to the driver on its standard input.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kdl import proc
from kdl.errors import UsageError, WorkspaceError
from kdl.files import open_regular
from kdl.offload.binary import Limits
from kdl.offload.inspect import limits_of


def select_argv(
    tool: Path,
    device: str,
    file: str | Path,
    tag: str | None = None,
    json: bool = False,
    *,
    limits: Limits | None = None,
    posting_stack: bool = False,
) -> list[str]:
    """The ``kdl-select`` command line for these arguments."""
    argv = [str(tool), f"--device={device}"]
    if posting_stack:
        argv.append("--posting-stack")
    if limits is not None and limits != Limits():
        argv += [
            f"--max-inflated={limits.inflated}",
            f"--max-binaries={limits.binaries}",
            f"--max-strings={limits.strings}",
        ]
    if tag is not None:
        argv.append(f"--tag={tag}")
    if json:
        argv.append("--json")
    argv.append(str(file))
    return argv


def check_input(file: str) -> None:
    """Refuse a FILE the driver must not open (exit 2, the driver's status
    for an unreadable file): :func:`kdl.files.open_regular`."""
    if file == "-":
        return
    try:
        os.close(open_regular(file))
    except WorkspaceError as exc:
        raise UsageError(str(exc)) from None


def cmd_select(args: argparse.Namespace) -> int:
    from kdl.build.overlay import build_overlay

    limits = limits_of(args)
    check_input(args.file)
    overlay = build_overlay(args.build_dir, report=False, targets=["kdl-select"])
    argv = select_argv(
        overlay.select_tool,
        args.device,
        args.file,
        args.tag,
        args.json,
        limits=limits,
        posting_stack=getattr(args, "posting_stack", False),
    )
    stdin = sys.stdin.buffer.read() if str(args.file) == "-" else None
    result = proc.run(argv, check=False, input=stdin)
    sys.stdout.write(result.stdout.decode(errors="replace"))
    sys.stdout.flush()
    sys.stderr.write(result.stderr.decode(errors="replace"))
    return result.returncode
