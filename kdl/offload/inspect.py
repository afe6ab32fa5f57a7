"""``kdl inspect FILE [--json]``: list every OffloadBinary image in FILE.

FILE is a raw OffloadBinary, several concatenated (what
``llvm-offload-binary`` 22 writes, one binary per ``--image``), or an ELF
object or executable with ``.llvm.offloading`` sections. Images are numbered
0..N-1 over the whole file in the order LLVM's ``extractOffloadBinaries``
yields them, the numbers ``kdl select`` reports. For each image: the binary
it is in and that binary's offset, format version, entry index, image kind,
offload kind, flags, every string-map key and value in stored order, and the
image's size, offset and sha256.

Strings are shown as stored, except that bytes that are not UTF-8 appear as
``\\xNN`` (text and JSON) and control characters as escapes (text; JSON
escapes them itself).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from kdl.errors import UsageError
from kdl.offload.binary import Binary, Limits, Scan, scan_file
from kdl.offload.layout import Image, encode


def limits_of(args: argparse.Namespace) -> Limits:
    """The readers' bounds given by ``--max-inflated``, ``--max-binaries`` and
    ``--max-strings``."""
    given = {
        "inflated": args.max_inflated,
        "binaries": args.max_binaries,
        "strings": args.max_strings,
    }
    limits = Limits(**{k: v for k, v in given.items() if v is not None})
    if limits.inflated < 0 or limits.binaries < 1 or limits.strings < 0:
        raise UsageError(
            "--max-inflated and --max-strings must be 0 or more, --max-binaries "
            "1 or more"
        )
    return limits


def cmd_inspect(args: argparse.Namespace) -> int:
    found = scan_file(args.file, limits_of(args))
    if args.json:
        # Streamed: the text of a large document is never held whole.
        json.dump(to_json(found), sys.stdout, indent=2)
        print()
    else:
        sys.stdout.writelines(text_lines(found))
    return 0


def as_text(text: str) -> str:
    """*text* with bytes that are not UTF-8 written as ``\\xNN``."""
    return encode(text).decode("utf-8", "backslashreplace")


def show(text: str) -> str:
    """*text* made safe for one line of output."""
    shown = as_text(text)
    if shown.isprintable():
        return shown
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
        for c in shown
    )


def _where(binary: Binary) -> str:
    section = f" in section {binary.section}" if binary.section else ""
    return f"offset {binary.offset}{section}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _format_note(binary: Binary) -> str:
    """How a version 3 binary (LLVM main's format, #222774) is marked."""
    if binary.version < 3:
        return ""
    how = (
        f"compressed with {binary.compression}, {binary.inflated_size} bytes inflated"
        if binary.compression
        else "not compressed"
    )
    return f" ({how}; LLVM main's format, #222774; LLVM 22 reads only 1)"


def _kind(img: Image) -> str:
    name = img.image_kind
    return name if name.startswith("unknown") else f"{name} ({img.image_kind_id})"


def render_text(found: Scan) -> str:
    return "".join(text_lines(found))


def text_lines(found: Scan) -> Iterator[str]:
    """The text report, a line at a time (each with its newline)."""
    title = (
        f"{found.path}: {_count(len(found.images), 'image', 'images')} in "
        f"{_count(len(found.binaries), 'OffloadBinary', 'OffloadBinaries')}"
    )
    if found.kind == "elf":
        sections = _count(len(found.sections), "section", "sections")
        title += f" ({sections} of type SHT_LLVM_OFFLOADING)"
    yield title + "\n"
    for img in found.images:
        binary = found.binaries[img.binary_index]
        lines = [
            f"image {img.index}:",
            f"  binary:        {img.binary_index} at {_where(binary)}",
            f"  version:       {img.version}{_format_note(binary)}",
            f"  entry:         {img.entry_index}",
            f"  image kind:    {_kind(img)}",
            f"  offload kind:  {'|'.join(img.offload_kind_names)}",
            f"  flags:         {img.flags:#x}",
            f"  size:          {len(img.image)} bytes at offset {img.image_offset}",
            f"  sha256:        {img.sha256}",
            f"  strings:       {len(img.strings)}",
        ]
        yield "".join(line + "\n" for line in lines)
        for k, v in img.strings:
            yield f"    {show(k)}={show(v)}\n"


def _image_json(img: Image) -> dict[str, Any]:
    return {
        "index": img.index,
        "binary": img.binary_index,
        "binary_offset": img.binary_offset,
        "version": img.version,
        "entry": img.entry_index,
        "image_kind": img.image_kind,
        "image_kind_id": img.image_kind_id,
        "offload_kind": img.offload_kind_names,
        "offload_kind_mask": img.offload_kind,
        "flags": img.flags,
        "strings": [[as_text(k), as_text(v)] for k, v in img.strings],
        "offset": img.image_offset,
        "size": len(img.image),
        "sha256": img.sha256,
    }


def to_json(found: Scan) -> dict[str, Any]:
    return {
        "file": found.path,
        "format": found.kind,
        "sections": [
            {"index": s.index, "name": s.name, "offset": s.offset, "size": s.size}
            for s in found.sections
        ],
        "binaries": [
            {
                "index": b.index,
                "offset": b.offset,
                "version": b.version,
                "size": b.size,
                "compression": b.compression,
                "inflated_size": b.inflated_size,
                "entries": b.entries,
                "section": b.section,
            }
            for b in found.binaries
        ],
        "images": [_image_json(img) for img in found.images],
    }
