"""A hostile corpus for the OffloadBinary readers, made on demand.

Both readers (the Python one, :mod:`kdl.offload.binary`, and the C++ one,
``overlay/container/OffloadEntries.h``) must give one answer on each of these
files, accept or refuse, with the same entries (tests/offload/
test_readers_agree.py), and stay under 256 MB of memory on every one of them
up to 16 MB (:mod:`kdl.results.readers`). The corpus follows the kinds of
input of the fault and hostile-input report of 2026-11-28: decompression
bombs (zlib, zstd; one, several, thousands of binaries), a run of many tiny
binaries, aliased strings, overlapping regions, ELF section headers over the
same bytes (one of them over a bomb), truncations and offsets past the end.

:func:`corpus` gives ``{name: bytes}``; *large* adds the bombs of a GiB and
the files of several MB, which take a few seconds to make.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator

from kdl.offload.layout import (
    ENTRY,
    HEADER,
    HEADER_V3,
    MAGIC,
    STRING_V2,
    align,
    make_image,
)
from kdl.offload.writer import write_v1, write_v2, write_v3

SHT_LLVM_OFFLOADING = 0x6FFF4C0B


def _image(n: int = 0, size: int = 64) -> bytes:
    return (b"\x7fELF" + bytes([n % 251]) * (size - 4))[:size]


def good_v1(n: int = 0, size: int = 64) -> bytes:
    return write_v1(
        [
            make_image(
                _image(n, size),
                [("triple", "nvptx64-nvidia-cuda"), ("arch", f"sm_{80 + n % 20}")],
                kind="cubin",
                offload_kind="openmp",
            )
        ]
    )


def good_v2(count: int = 3, size: int = 64) -> bytes:
    return write_v2(
        [
            make_image(
                _image(i, size),
                [("triple", "amdgcn-amd-amdhsa"), ("arch", f"gfx90{i % 10}")],
                kind="o",
                offload_kind="hip",
            )
            for i in range(count)
        ]
    )


def _noise(size: int) -> bytes:
    """Bytes that do not compress (fixed, so the corpus is the same each run)."""
    out = bytearray()
    seed = 0
    while len(out) < size:
        out += zlib.crc32(seed.to_bytes(8, "little")).to_bytes(4, "little")
        seed += 1
    return bytes(out[:size])


def _compress(chunks: Iterator[bytes], fmt: str) -> bytes:
    if fmt == "zstd":
        import zstandard

        c = zstandard.ZstdCompressor().compressobj()
        return b"".join(c.compress(chunk) for chunk in chunks) + c.flush()
    z = zlib.compressobj(9)
    return b"".join(z.compress(chunk) for chunk in chunks) + z.flush()


def v3_compressed(image_size: int, fmt: str = "zstd", n: int = 0) -> bytes:
    """A valid compressed version 3 binary whose one image holds *image_size*
    bytes, mostly zeros, so that it inflates about 1000 times its stream
    (under the readers' per-binary ratio of 1024)."""
    noisy = max(image_size // 900, 64)
    tiny = write_v3(
        [
            make_image(
                b"\0" * 8, [("triple", "x86_64-unknown-linux-gnu"), ("n", str(n))]
            )
        ],
        compression=None,
    )
    _, version, _, entries_offset, count, _ = HEADER_V3.unpack_from(tiny)
    # The same layout with the image made image_size long (it is last).
    image_offset = struct.unpack_from("<Q", tiny, entries_offset + 24)[0]
    inflated = align(image_offset + image_size)
    head = bytearray(tiny[:image_offset])
    struct.pack_into("<Q", head, 8, inflated)
    struct.pack_into("<Q", head, entries_offset + 32, image_size)

    def body() -> Iterator[bytes]:
        yield bytes(head[HEADER_V3.size :])
        yield _noise(noisy)
        left = inflated - image_offset - noisy
        while left > 0:
            step = min(left, 1 << 22)
            yield bytes(step)
            left -= step

    stream = _compress(body(), fmt)
    total = HEADER_V3.size + len(stream)
    header = HEADER_V3.pack(MAGIC, version, total, entries_offset, count, inflated)
    return header + stream + bytes(align(total) - total)


def _set(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<" + fmt, out, offset, value)
    return bytes(out)


def elf(sections: list[bytes], *, elf_type: int = 1, same: bool = False) -> bytes:
    """An ELF64 little-endian file with one SHT_LLVM_OFFLOADING section per
    item of *sections*; with *same*, every section header points at the
    first section's bytes (and only they are stored)."""
    stored = sections[:1] if same else sections
    body = bytearray()
    placed = []
    for contents in stored:
        while (64 + len(body)) % 8:
            body.append(0)
        placed.append((64 + len(body), len(contents)))
        body += contents
    if same:
        placed = placed * len(sections)
    while (64 + len(body)) % 8:
        body.append(0)
    shoff = 64 + len(body)
    count = len(placed) + 1
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    ehdr = struct.pack(
        "<HHIQQQIHHHHHH", elf_type, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, count, 0
    )
    shdrs = bytes(64)
    for offset, size in placed:
        shdrs += struct.pack(
            "<IIQQQQIIQQ", 0, SHT_LLVM_OFFLOADING, 0, 0, offset, size, 0, 0, 8, 0
        )
    return ident + ehdr + bytes(body) + shdrs


def _aliased(strings: int, length: int) -> bytes:
    """A version 2 binary whose one entry has *strings* string entries, all
    naming the same key and value of *length* bytes."""
    table = HEADER.size + ENTRY.size
    text = table + STRING_V2.size * strings
    image = align(text + length + 1)
    size = image + 8
    out = bytearray(size)
    HEADER.pack_into(out, 0, MAGIC, 2, size, HEADER.size, 1)
    ENTRY.pack_into(out, HEADER.size, 0, 0, 0, table, strings, image, 8)
    for i in range(strings):
        STRING_V2.pack_into(out, table + STRING_V2.size * i, text, text, length)
    out[text : text + length] = b"k" * length
    return bytes(out)


def _many_strings(count: int, length: int) -> bytes:
    """A version 2 binary whose one entry has *count* distinct keys, each of
    *length* bytes with a value of *length* control bytes (escaped when shown:
    what costs a reader most per byte of input)."""
    table = HEADER.size + ENTRY.size
    text = table + STRING_V2.size * count
    step = 2 * length + 1
    size = align(text + step * count) + 8
    out = bytearray(size)
    HEADER.pack_into(out, 0, MAGIC, 2, size, HEADER.size, 1)
    ENTRY.pack_into(out, HEADER.size, 0, 0, 0, table, count, size - 8, 8)
    value = b"\x01" * length
    for i in range(count):
        at = text + step * i
        out[at : at + length] = ((b"%08d" % i) * (length // 8 + 1))[:length]
        out[at + length + 1 : at + step] = value
        STRING_V2.pack_into(
            out, table + STRING_V2.size * i, at, at + length + 1, length
        )
    return bytes(out)


def _zero_length(entries: int) -> bytes:
    """A version 2 binary of *entries* entries with no image and no string."""
    size = align(HEADER.size + ENTRY.size * entries) + 8
    out = bytearray(size)
    HEADER.pack_into(out, 0, MAGIC, 2, size, HEADER.size, entries)
    for i in range(entries):
        ENTRY.pack_into(out, HEADER.size + ENTRY.size * i, 1, 1, 0, 0, 0, 0, 0)
    return bytes(out)


def _shared(what: str) -> bytes:
    """good_v2 with entry 1's string map or image moved onto entry 0's."""
    data = good_v2(2)
    field = 8 if what == "strings" else 24
    first = struct.unpack_from("<Q", data, HEADER.size + field)[0]
    return _set(data, HEADER.size + ENTRY.size + field, "Q", first)


def _truncations(name: str, data: bytes) -> dict[str, bytes]:
    """*data* cut at every 16th of its length, its Size saying so or not."""
    out = {}
    for k in range(1, 16):
        cut = data[: len(data) * k // 16]
        out[f"trunc-{name}-{k}of16"] = cut
        if len(cut) >= 16:
            out[f"trunc-sized-{name}-{k}of16"] = _set(cut, 8, "Q", len(cut))
    return out


def _offsets() -> dict[str, bytes]:
    """Every u64 field of a version 1 and a version 2 binary set past the end,
    to 2^40 and to 2^64 - 1 (the value that wraps)."""
    out = {}
    for name, data, fields in (
        ("v1", good_v1(), (16, 24, 40, 48, 56, 64, 72, 80)),
        ("v2", good_v2(2), (16, 24, 40, 48, 56, 64, 112, 120, 128)),
    ):
        for at in fields:
            for label, value in (
                ("end", len(data)),
                ("2p40", 1 << 40),
                ("wrap", (1 << 64) - 1),
            ):
                out[f"past-{name}-{at}-{label}"] = _set(data, at, "Q", value)
    return out


def small() -> dict[str, bytes]:
    """The corpus without its large files: every kind, in a few hundred KB."""
    v1, v2 = good_v1(), good_v2()
    v3 = write_v3([make_image(_image(3), [("triple", "x86_64"), ("arch", "x")])], None)
    zstd_bin = v3_compressed(1 << 16, "zstd")
    zlib_bin = v3_compressed(1 << 16, "zlib")
    found: dict[str, bytes] = {
        "good-v1": v1,
        "good-v2": v2,
        "good-v3": v3,
        "good-v3-zstd": zstd_bin,
        "good-v3-zlib": zlib_bin,
        "concat-v1-v2-v3": v1 + v2 + v3 + zstd_bin,
        "concat-odd-size": _set(v1, 8, "Q", len(v1) - 4)[: len(v1) - 4] + v1,
        "concat-v1-x4000": b"".join(good_v1(i, 8) for i in range(4000)),
        "concat-v1-x5000": b"".join(good_v1(i, 8) for i in range(5000)),
        "elf": elf([v1, v2]),
        "elf-exec": elf([v1], elf_type=2),
        "elf-core": elf([v1], elf_type=4),
        "elf-same-2": elf([v1, v1], same=True),
        "elf-same-64-bomb": elf([v3_compressed(1 << 20)] * 64, same=True),
        "nested": write_v1([make_image(v2, [("triple", "x"), ("arch", "y")])]),
        "alias-1k-x-64": _aliased(1000, 64),
        "alias-fits": _aliased(2, 8),
        "zerolen-100": _zero_length(100),
        "strings-65536": _many_strings(65536, 1),
        "strings-65537": _many_strings(65537, 1),
        "zerolen-5000": _zero_length(5000),
        "shared-strings": _shared("strings"),
        "shared-image": _shared("image"),
        "image-over-header": _set(v1, 56, "Q", 0),
        "entries-over-header": _set(v2, 16, "Q", 8),
        "key-at-last-byte": _set(v1, 72, "Q", len(v1) - 1),
        "v1-entry-size-huge": _set(v1, 24, "Q", 1 << 40),
        "version-4": _set(v1, 4, "I", 4),
        "big-endian": _set(v1, 4, "I", 1 << 24),
        "empty": b"",
        "three-bytes": MAGIC[:3],
        "not-offload": b"not an offload file\n",
        "bomb-budget-80m-zstd": v3_compressed(80 << 20, "zstd"),
        "bombs-9x8m-zlib": v3_compressed(8 << 20, "zlib") * 9,
        "lie-8m-holds-64k": _set(zstd_bin, 32, "Q", 8 << 20),
        "lie-64k-holds-more": _set(zstd_bin, 32, "Q", (1 << 16) - 4096),
    }
    found.update(_offsets())
    for name, data in (("v1", v1), ("v2", v2), ("v3", v3), ("v3-zstd", zstd_bin)):
        found.update(_truncations(name, data))
    return found


def one_value(size: int, fill: bytes, version: int = 2) -> bytes:
    """A binary of one image whose one string-map value is *size* bytes of
    *fill*: version 1 (the key is that long instead: a version 1 value cannot
    hold a NUL, nor can a key), 2, or 3 compressed with zstd. Version 3 adds
    an image of bytes that do not compress, 1/900 of *size*, so that the
    binary inflates less than the readers' ratio of 1024 times its stream."""
    text = fill * (size // len(fill))
    if version == 1:
        return write_v1([make_image(_image(), [(text, "v")], kind="o")])
    if version == 2:
        return write_v2([make_image(_image(), [("k", text)], kind="o")])
    return write_v3([make_image(_noise(size // 900), [("k", text)], kind="o")])


def reports() -> dict[str, bytes]:
    """Inputs whose report is large (the attack of 2026-12-07): a 64 KB
    binary that inflates to one value of 60 MiB of control characters, or of
    bytes that are not UTF-8 (within the 64 MiB budget), and plain ones of
    15.7 MB (within the 16 MB of the goal) with a value or a key of 15 MiB."""
    return {
        "value-60m-ctrl-v3zstd": one_value(60 << 20, b"\x01", 3),
        "value-60m-not-utf8-v3zstd": one_value(60 << 20, b"\x80", 3),
        "value-15m-ctrl-v2": one_value(15 << 20, b"\x01", 2),
        "value-15m-not-utf8-v2": one_value(15 << 20, b"\x80", 2),
        "key-15m-ctrl-v1": one_value(15 << 20, b"\x01", 1),
    }


def large() -> dict[str, bytes]:
    """The bombs and large runs of the report: 1 GiB from 1 MB (zlib, zstd),
    four of them, 5000 binaries of 1 MiB, a 64-section ELF over a 1 GiB bomb,
    60 binaries of 1 MiB (within the budget: read), 100,000 tiny binaries,
    480,000 strings (refused) and 60,000 long ones (read), each about 15 MB;
    and :func:`reports`."""
    bomb_zlib = v3_compressed(1 << 30, "zlib")
    bomb_zstd = v3_compressed(1 << 30, "zstd")
    one_mib = v3_compressed(1 << 20, "zstd")
    return {
        "bomb-zlib-1g": bomb_zlib,
        "bomb-zstd-1g": bomb_zstd,
        "bomb-zlib-4x1g": bomb_zlib * 4,
        "concat-v3-1m-x5000": one_mib * 5000,
        "concat-v3-1m-x60": one_mib * 60,
        "elf-64-sections-over-1g-bomb": elf([bomb_zstd] * 64, same=True),
        "concat-v1-x100k": b"".join([good_v1(0, 8)] * 100_000),
        "strings-480k": _many_strings(480_000, 4),
        "strings-60k-of-120-bytes": _many_strings(60_000, 120),
        **reports(),
    }


def corpus(large_files: bool = False) -> dict[str, bytes]:
    found = small()
    if large_files:
        found.update(large())
    return found


def write(directory: os.PathLike[str] | str, files: dict[str, bytes]) -> list[str]:
    """Write *files* into *directory*; their paths."""
    paths = []
    for name, data in sorted(files.items()):
        path = os.path.join(directory, f"{name}.bin")
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    return paths


__all__: list[str] = [
    "corpus",
    "elf",
    "good_v1",
    "good_v2",
    "one_value",
    "reports",
    "v3_compressed",
    "write",
]
