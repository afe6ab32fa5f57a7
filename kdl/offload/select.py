"""``kdl select``: rank the images of a file for a device with the C++ library.

The work is done by the overlay's ``kdl-select`` driver, i.e. by the series'
ranking (``llvm/Frontend/Offloading/ImageRanking.cpp``) compiled against
LLVM 22; this module
builds it if needed, hands it the file and passes its output and exit status
through: 0 an image was selected, 1 no image is compatible, 2 bad arguments or
an unreadable file.

The input is read once (a FIFO, or ``-`` for standard input, works) and
checked by kdl's own reader before the driver sees a copy of it: a file that
reader rejects is an error here, exit status 2. LLVM 22 reads only
OffloadBinary format version 1, so a file with a newer binary is handed over
as concatenated version 1 binaries holding the same images, in the same
order, with the same string maps (``kdl.offload.binary.as_v1``). Control
characters from the file are escaped in the output.
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


def _read_input(path: Path) -> bytes:
    """The bytes of *path*, read once (a FIFO or ``-``, standard input, too)."""
    try:
        if str(path) == "-":
            return sys.stdin.buffer.read()
        with path.open("rb") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _readable_for_llvm22(data: bytes, name: str, workdir: Path) -> Path:
    """A file in *workdir* that LLVM 22 reads as the same images as *data*.

    kdl's own reader checks *data* first, bounding every offset by the
    buffer: a file it rejects never reaches LLVM's reader (whose handling of
    malformed headers is not bounded everywhere) and is a usage error. A file
    with binaries newer than version 1 becomes concatenated version 1
    binaries with the same images and string maps, in the same order.
    """
    from kdl.offload.binary import as_v1

    try:
        converted = as_v1(data, name)
    except FormatError as exc:
        # kdl-select's own exit status for input it cannot use.
        raise UsageError(str(exc)) from exc
    out = workdir / "input.bin"
    out.write_bytes(data if converted is None else converted)
    if converted is not None:
        log.debug(
            "%s: OffloadBinary version 2 or later, which LLVM 22 cannot read; "
            "converted to version 1 binaries (%d bytes) for the driver",
            name,
            len(converted),
        )
    return out


def _printable(text: str) -> str:
    """*text* with control characters (other than newlines) escaped, so that
    bytes from the file cannot reach the terminal as themselves."""
    from kdl.offload.inspect import show

    return "\n".join(show(line) for line in text.split("\n"))


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
    from kdl.build.overlay import build_overlay

    name = "<stdin>" if str(args.file) == "-" else str(args.file)
    data = _read_input(args.file)
    overlay = build_overlay(args.build_dir, report=False)
    with tempfile.TemporaryDirectory(prefix="kdl-select-") as tmp:
        file = _readable_for_llvm22(data, name, Path(tmp))
        argv = select_argv(overlay.select_tool, args.device, file, args.tag, args.json)
        result = proc.run(argv, check=False)
    # Name the user's file, not the copy the driver read.
    out = result.stdout.decode(errors="replace").replace(str(file), name)
    err = result.stderr.decode(errors="replace").replace(str(file), name)
    sys.stdout.write(out if args.json else _printable(out))
    sys.stdout.flush()
    sys.stderr.write(_printable(err))
    return result.returncode
