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

The report is written as it is made, a string a piece at a time
(:data:`CHUNK` bytes): a value of 60 MiB costs what its pieces cost, not six
times its size in one string, so the report stays within the readers' memory
goal (:mod:`kdl.results.readers`) on any input they accept.
"""

from __future__ import annotations

import argparse
import codecs
import json
import sys
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from typing import Any, TextIO

from kdl.errors import UsageError
from kdl.offload.binary import Binary, Limits, Scan, scan_file
from kdl.offload.layout import Image, Raw, encode

#: The bytes of a string the report decodes and escapes at a time.
CHUNK = 1 << 16


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
    write_report(scan_file(args.file, limits_of(args)), sys.stdout, as_json=args.json)
    return 0


def as_text(text: str | Raw) -> str:
    """*text* with bytes that are not UTF-8 written as ``\\xNN``."""
    return "".join(_decoded(encode(text) if isinstance(text, str) else text))


def show(text: str | Raw) -> str:
    """*text* made safe for one line of output."""
    return "".join(shown(encode(text) if isinstance(text, str) else text))


#: A byte that is not UTF-8, as ``surrogateescape`` decodes it, and as the
#: report shows it.
_NOT_UTF8 = {0xDC00 + b: f"\\x{b:02x}" for b in range(0x80, 0x100)}


def _escape(c: str) -> str:
    """A character that is not printable as its escape (``\\x01``, ``\\n``,
    ``\\u200b``); a byte that is not UTF-8 as ``\\xNN``."""
    return _NOT_UTF8.get(ord(c)) or c.encode("unicode_escape").decode("ascii")


def _pieces(raw: Raw, chunk: int) -> Iterator[str]:
    """*raw* decoded with ``surrogateescape``, *chunk* bytes at a time (a
    character split between two pieces is decoded whole in the second)."""
    view = memoryview(raw)
    if len(view) <= chunk:
        yield str(view, "utf-8", "surrogateescape")
        return
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    for at in range(0, len(view), chunk):
        yield decoder.decode(view[at : at + chunk])
    yield decoder.decode(b"", final=True)


def _decoded(raw: Raw, chunk: int = CHUNK) -> Iterator[str]:
    """*raw* as :func:`as_text` gives it, in pieces."""
    for piece in _pieces(raw, chunk):
        yield piece if piece.isascii() else piece.translate(_NOT_UTF8)


def shown(raw: Raw, chunk: int = CHUNK) -> Iterator[str]:
    """*raw* made safe for one line of output, in pieces: as :func:`as_text`,
    and every character that is not printable as its escape. (A table per
    piece: ``str.translate`` costs the same for any mix of characters.)"""
    for piece in _pieces(raw, chunk):
        if piece.isprintable():
            yield piece
        else:
            table = {ord(c): _escape(c) for c in set(piece) if not c.isprintable()}
            yield piece.translate(table)


class Text:
    """A string of the JSON report: the bytes the binary stores, written out
    a piece at a time by :func:`json_chunks`."""

    __slots__ = ("raw",)

    def __init__(self, raw: str | Raw) -> None:
        self.raw = encode(raw) if isinstance(raw, str) else raw

    def __str__(self) -> str:
        return as_text(self.raw)


def json_chunks(value: object, level: int = 0, chunk: int = CHUNK) -> Iterator[str]:
    """*value* as ``json.dump(value, indent=2)`` writes it, a piece at a
    time; a :class:`Text` as its :func:`as_text`, a chunk at a time."""
    if isinstance(value, Text):
        yield '"'
        for piece in _decoded(value.raw, chunk):
            yield encode_basestring_ascii(piece)[1:-1]
        yield '"'
    elif isinstance(value, dict | list) and value:
        inner = "\n" + "  " * (level + 1)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        yield "{" if isinstance(value, dict) else "["
        for n, (key, item) in enumerate(items):
            yield "," + inner if n else inner
            if isinstance(value, dict):
                yield json.dumps(key) + ": "
            yield from json_chunks(item, level + 1, chunk)
        yield "\n" + "  " * level + ("}" if isinstance(value, dict) else "]")
    else:
        yield json.dumps(value)


def write_report(found: Scan, out: TextIO, *, as_json: bool = False) -> None:
    """The report of *found* on *out*, text or JSON, written as it is made."""
    if as_json:
        out.writelines(json_chunks(to_json(found)))
        out.write("\n")
    else:
        out.writelines(text_lines(found))


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
        for k, v in img.strings.raw():
            yield "    "
            yield from shown(k)
            yield "="
            yield from shown(v)
            yield "\n"


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
        "strings": [[Text(k), Text(v)] for k, v in img.strings.raw()],
        "offset": img.image_offset,
        "size": len(img.image),
        "sha256": img.sha256,
    }


def to_json(found: Scan) -> dict[str, Any]:
    """The JSON report as a document; its strings are :class:`Text`."""
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
