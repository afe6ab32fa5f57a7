"""Write OffloadBinary version 1 and version 2 files.

``write_v1`` produces the bytes ``llvm-offload-binary`` 22 writes for the
same images and string maps in the same order: one binary per image,
concatenated; string table laid out like ``StringTableBuilder(ELF)``; the
image and the binary's end padded to 8 bytes. ``write_v2`` follows upstream's
version 2 ``OffloadBinary::write`` (one binary, one shared string table, the
images back to back after it). See :mod:`kdl.offload.layout` for the
upstream commits these are based on.

Keys and values are written exactly as given, duplicates included (LLVM's
writers take a MapVector, so they never write a key twice; a reader keeps the
last value). Version 1 stores NUL-terminated values, so a value containing a
NUL byte cannot be written as version 1.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

from kdl.errors import WorkspaceError
from kdl.offload.layout import (
    ALIGNMENT,
    ENTRY,
    HEADER,
    HEADER_V3,
    MAGIC,
    STRING_V1,
    STRING_V2,
    Image,
    align,
    decode,
)


class StringTable:
    """What ``llvm::StringTableBuilder`` in ELF mode lays out.

    Offset 0 holds a NUL (the empty string). The other strings are sorted so
    that each one comes just before its suffixes (descending order of the
    reversed bytes, which is the order its multikey sort produces for
    distinct strings); a string that is a suffix of the last one laid out
    shares that string's bytes. Offsets are relative to the table.
    """

    def __init__(self, strings: Iterable[bytes]) -> None:
        self.offsets: dict[bytes, int] = {}
        size = 1
        previous = b""
        for s in sorted(set(strings), key=lambda s: s[::-1], reverse=True):
            if previous.endswith(s):
                self.offsets[s] = size - len(s) - 1
                continue
            self.offsets[s] = size
            size += len(s) + 1
            previous = s
        self.offsets[b""] = 0
        self.size = size

    def data(self) -> bytes:
        out = bytearray(self.size)
        for s, offset in self.offsets.items():
            out[offset : offset + len(s)] = s
        return bytes(out)


def _encoded(img: Image, version: int, number: int) -> list[tuple[bytes, bytes]]:
    pairs = []
    for key, value in img.strings.raw():
        k, v = bytes(key), bytes(value)
        if b"\0" in k or (version == 1 and b"\0" in v):
            what = "key" if b"\0" in k else f"value of key {decode(k)!r}"
            raise WorkspaceError(
                f"cannot write image {number} as OffloadBinary version {version}: "
                f"its {what} contains a NUL byte"
            )
        pairs.append((k, v))
    return pairs


def _check_fields(img: Image, number: int) -> None:
    for name, value, limit in (
        ("image kind", img.image_kind_id, 0xFFFF),
        ("offload kind", img.offload_kind, 0xFFFF),
        ("flags", img.flags, 0xFFFFFFFF),
    ):
        if not 0 <= value <= limit:
            raise WorkspaceError(f"image {number}: {name} {value} does not fit")


def _write_one_v1(img: Image, number: int) -> bytes:
    _check_fields(img, number)
    pairs = _encoded(img, 1, number)
    table = StringTable(s for pair in pairs for s in pair)
    strtab_offset = HEADER.size + ENTRY.size + STRING_V1.size * len(pairs)
    data_size = align(strtab_offset + table.size)
    size = align(data_size + len(img.image))
    out = bytearray(
        HEADER.pack(MAGIC, 1, size, HEADER.size, ENTRY.size)
        + ENTRY.pack(
            img.image_kind_id,
            img.offload_kind,
            img.flags,
            HEADER.size + ENTRY.size,
            len(pairs),
            data_size,
            len(img.image),
        )
    )
    for k, v in pairs:
        out += STRING_V1.pack(
            strtab_offset + table.offsets[k], strtab_offset + table.offsets[v]
        )
    out += table.data()
    out += bytes(data_size - len(out))
    out += img.image
    out += bytes(size - len(out))
    return bytes(out)


def write_v1(images: Iterable[Image]) -> bytes:
    """One version 1 binary per image, concatenated (8-byte aligned)."""
    return b"".join(_write_one_v1(img, n) for n, img in enumerate(images))


def write_v2(images: Sequence[Image] | Iterable[Image]) -> bytes:
    """One version 2 binary holding every image as an entry."""
    return _write_entries(images, version=2)


def write_v3(
    images: Sequence[Image] | Iterable[Image], compression: str | None = "zstd"
) -> bytes:
    """One version 3 binary (LLVM main's format, #222774): version 2's layout after a
    40-byte header that adds InflatedSize. With *compression* ("zstd" or
    "zlib") everything after the header is compressed: Size is the header
    plus the stream, InflatedSize the whole uncompressed binary, and the
    binary is padded with zeros to 8 bytes."""
    plain = _write_entries(images, version=3)
    if compression is None:
        return plain
    body = plain[HEADER_V3.size :]
    if compression == "zstd":
        import zstandard

        stream = zstandard.ZstdCompressor().compress(body)
    elif compression == "zlib":
        stream = zlib.compress(body)
    else:
        raise WorkspaceError(f"unknown compression {compression!r} (zstd or zlib)")
    magic, version, _, entries_offset, count, _ = HEADER_V3.unpack_from(plain)
    size = HEADER_V3.size + len(stream)
    header = HEADER_V3.pack(magic, version, size, entries_offset, count, len(plain))
    return header + stream + bytes(align(size) - size)


def _write_entries(images: Sequence[Image] | Iterable[Image], version: int) -> bytes:
    images = list(images)
    header_size = HEADER_V3.size if version >= 3 else HEADER.size
    if not images:
        raise WorkspaceError("an OffloadBinary needs at least one image")
    encoded = []
    for n, img in enumerate(images):
        _check_fields(img, n)
        encoded.append(_encoded(img, version, n))
    table = StringTable(s for pairs in encoded for pair in pairs for s in pair)
    entries_size = ENTRY.size * len(images)
    nstrings = sum(len(pairs) for pairs in encoded)
    strtab_offset = header_size + entries_size + STRING_V2.size * nstrings
    data_size = align(strtab_offset + table.size)
    size = align(data_size + sum(len(img.image) for img in images))

    if version >= 3:
        out = bytearray(
            HEADER_V3.pack(MAGIC, version, size, header_size, len(images), 0)
        )
    else:
        out = bytearray(HEADER.pack(MAGIC, version, size, header_size, len(images)))
    string_offset = header_size + entries_size
    image_offset = data_size
    for img, pairs in zip(images, encoded, strict=True):
        out += ENTRY.pack(
            img.image_kind_id,
            img.offload_kind,
            img.flags,
            string_offset,
            len(pairs),
            image_offset,
            len(img.image),
        )
        string_offset += STRING_V2.size * len(pairs)
        image_offset += len(img.image)
    for pairs in encoded:
        for k, v in pairs:
            out += STRING_V2.pack(
                strtab_offset + table.offsets[k],
                strtab_offset + table.offsets[v],
                len(v),
            )
    out += table.data()
    out += bytes(data_size - len(out))
    for img in images:
        out += img.image
    out += bytes(size - len(out))
    assert len(out) == size and size % ALIGNMENT == 0
    return bytes(out)
