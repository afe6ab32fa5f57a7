"""``kdl select``: rank the images of a file for a device with the C++ library.

The work is done by the overlay's ``kdl-select`` driver, i.e. by the series'
``llvm/Object/OffloadMetadata.cpp`` compiled against LLVM 22; this module
builds it if needed, hands it the file and passes its output and exit status
through: 0 an image was selected, 1 no image is compatible, 2 bad arguments or
an unreadable file.

LLVM 22 reads only OffloadBinary format version 1. A file with a newer binary
is first rewritten as concatenated version 1 binaries holding the same images,
in the same order, with the same string maps (``kdl.offload.binary.as_v1``),
so the image numbers the driver prints are those of the original file.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from kdl import proc
from kdl.errors import FormatError, UsageError

log = logging.getLogger("kdl")


def _readable_for_llvm22(path: Path, workdir: Path) -> Path:
    """*path*, or a version 1 copy of it in *workdir* if it has newer binaries."""
    from kdl.offload.binary import as_v1

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        converted = as_v1(data, str(path))
    except FormatError as exc:
        # Not something kdl's reader accepts: let LLVM's reader give its own
        # verdict on the original bytes.
        log.debug("%s; passing the file to the driver unchanged", exc)
        return path
    if converted is None:
        return path
    out = workdir / f"{path.name}.v1"
    out.write_bytes(converted)
    log.debug(
        "%s: OffloadBinary version 2 or later, which LLVM 22 cannot read; "
        "converted to version 1 binaries (%d bytes) for the driver",
        path,
        len(converted),
    )
    return out


def select_argv(
    tool: Path, device: str, file: Path, tag: str | None = None, json: bool = False
) -> list[str]:
    """The ``kdl-select`` command line for these arguments."""
    argv = [str(tool), f"--device={device}"]
    if tag is not None:
        argv.append(f"--tag={tag}")
    if json:
        argv.append("--json")
    argv.append(str(file))
    return argv


def cmd_select(args: argparse.Namespace) -> int:
    from kdl.overlay import build_overlay

    overlay = build_overlay(args.build_dir, report=False)
    with tempfile.TemporaryDirectory(prefix="kdl-select-") as tmp:
        file = _readable_for_llvm22(args.file, Path(tmp))
        argv = select_argv(overlay.select_tool, args.device, file, args.tag, args.json)
        result = proc.run(argv, check=False)
    out = result.stdout.decode(errors="replace")
    err = result.stderr.decode(errors="replace")
    if file != args.file:
        # Name the user's file, not the converted copy, in the driver's output.
        out = out.replace(str(file), str(args.file))
        err = err.replace(str(file), str(args.file))
    sys.stdout.write(out)
    sys.stdout.flush()
    sys.stderr.write(err)
    return result.returncode
