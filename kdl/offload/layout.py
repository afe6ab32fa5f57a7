"""The OffloadBinary container: byte layout, kind names and the Image record.

What the layout is based on (upstream files read with the search tool; no
upstream text is copied here):

- Version 1, what Debian's LLVM 22.1.8 reads and writes: its installed
  ``llvm/Object/OffloadBinary.h`` (``OffloadBinary::Version = 1``) and
  llvm/llvm-project@5e8214e8bdab39a56b6afebf3f2ea65742642068
  ``llvm/lib/Object/OffloadBinary.cpp`` (the version 1 reader and writer).
- Version 2 (several entries per binary, sized string values): the reader
  and writer in intel/llvm@014e584eb4040e070b2c34bdeb4a19fa2fe8e093
  ``llvm/lib/Object/OffloadBinary.cpp`` (a downstream tree that carries
  upstream's version 2 code) and the version 2 header it goes with; the
  same rules are kept by upstream's version 3 code,
  llvm/llvm-project@05ed393bf1e357030349c2991d3370e4220902ee
  ``llvm/include/llvm/Object/OffloadBinary.h`` and
  llvm/llvm-project@02dc39ba9835b4f5c3d0c8eb834e013b1201adda
  ``llvm/lib/Object/OffloadBinary.cpp``, which read versions 1 and 2 with
  the 32-byte header ("v1/v2 headers are 32 bytes").

Layout (every offset is relative to the start of its binary)::

    Header (32 bytes)   magic 10 ff 10 ad, u32 Version, u64 Size,
                        u64 EntriesOffset, u64 EntrySize (v1) | EntriesCount (v2)
    Entry (40 bytes)    u16 ImageKind, u16 OffloadKind, u32 Flags,
                        u64 StringOffset, u64 NumStrings,
                        u64 ImageOffset, u64 ImageSize
    StringEntry         v1: u64 KeyOffset, u64 ValueOffset (both NUL-terminated)
                        v2: u64 KeyOffset, u64 ValueOffset, u64 ValueSize

Version 1 has exactly one entry; ``llvm-offload-binary`` 22 writes one binary
per ``--image`` and concatenates them. Version 2 has EntriesCount entries
sharing one string table. Version 3 (a u64 InflatedSize after the version 2
header and a zlib/zstd-compressed body) is reported as unsupported.

Byte order: LLVM writes these structs in host byte order. Every producer we
know of is little-endian (x86-64, AArch64, ppc64le), so this package reads and
writes little-endian only; a big-endian binary is rejected with its version
field read backwards as the hint.
"""

from __future__ import annotations

import hashlib
import mmap
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

MAGIC = b"\x10\xff\x10\xad"
ALIGNMENT = 8

HEADER = struct.Struct("<4sIQQQ")
#: Version 3 (LLVM main, #222774) adds InflatedSize: the whole binary's size
#: before compression, 0 when it is not compressed.
HEADER_V3 = struct.Struct("<4sIQQQQ")
ENTRY = struct.Struct("<HHIQQQQ")
STRING_V1 = struct.Struct("<QQ")
STRING_V2 = struct.Struct("<QQQ")
assert HEADER.size == 32 and ENTRY.size == 40
assert STRING_V1.size == 16 and STRING_V2.size == 24

#: Offsets of the fields inside a header and an entry, for error messages.
HDR_VERSION, HDR_SIZE, HDR_ENTRIES_OFFSET, HDR_COUNT = 4, 8, 16, 24
ENT_STRING_OFFSET, ENT_NUM_STRINGS, ENT_IMAGE_OFFSET, ENT_IMAGE_SIZE = 8, 16, 24, 32

SUPPORTED_VERSIONS = (1, 2, 3)

#: ``OffloadEntryFlags::OIF_Metadata`` (version 2): an entry without an image.
FLAG_METADATA = 1

#: ``llvm::object::ImageKind`` and the names ``getImageKindName`` gives them
#: (also the file extensions ``llvm-offload-binary`` maps back to a kind).
IMAGE_KIND_NAMES: dict[int, str] = {
    0: "none",
    1: "o",
    2: "bc",
    3: "cubin",
    4: "fatbin",
    5: "s",
    6: "spv",
}

#: ``llvm::object::OffloadKind``, a bit mask on upstream main and in LLVM 22.
OFFLOAD_KIND_BITS: dict[int, str] = {1: "openmp", 2: "cuda", 4: "hip", 8: "sycl"}


def image_kind_name(value: int) -> str:
    return IMAGE_KIND_NAMES.get(value, f"unknown({value})")


def image_kind_value(name: str | int) -> int:
    """The ImageKind number for a name (``cubin``) or a number."""
    if isinstance(name, int):
        return name
    for value, known in IMAGE_KIND_NAMES.items():
        if known == name:
            return value
    raise ValueError(f"unknown image kind {name!r}")


def offload_kind_names(mask: int) -> list[str]:
    """Names of the bits set in an OffloadKind mask, lowest bit first.

    Bits without a name are given as hex (``0x20``); 0 is ``["none"]``.
    """
    if mask == 0:
        return ["none"]
    names = []
    bit = 1
    while bit <= mask:
        if mask & bit:
            names.append(OFFLOAD_KIND_BITS.get(bit, f"{bit:#x}"))
        bit <<= 1
    return names


def offload_kind_value(names: str | int | Iterable[str]) -> int:
    """An OffloadKind mask from a number, a name, or several names."""
    if isinstance(names, int):
        return names
    if isinstance(names, str):
        names = [names]
    mask = 0
    for name in names:
        for bit, known in OFFLOAD_KIND_BITS.items():
            if known == name:
                mask |= bit
                break
        else:
            if name != "none":
                raise ValueError(f"unknown offload kind {name!r}")
    return mask


#: The bytes of a key or a value: a reader keeps a view of what it read.
Raw = bytes | bytearray | memoryview
#: What the readers read: bytes in memory, or a file mapped (mmap).
Data = bytes | bytearray | mmap.mmap


def decode(raw: Raw) -> str:
    """Keys and values are bytes; keep them lossless as ``str``."""
    return str(raw, "utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def align(value: int, to: int = ALIGNMENT) -> int:
    return (value + to - 1) // to * to


class Strings(Sequence[tuple[str, str]]):
    """The string map of an image: (key, value) pairs in stored order.

    The pairs are kept as the bytes the binary stores (the reader's views of
    what it read: nothing is copied) and decoded (:func:`decode`) when they
    are asked for, so a value of many MB costs nothing until it is used, and
    the report can write it a piece at a time (:meth:`raw`). Compares equal
    to any sequence of the same ``(key, value)`` pairs.
    """

    __slots__ = ("_raw",)

    def __init__(self, pairs: Iterable[tuple[str | Raw, str | Raw]] = ()) -> None:
        self._raw = [(_as_raw(k), _as_raw(v)) for k, v in pairs]

    def raw(self) -> list[tuple[Raw, Raw]]:
        """The pairs as the binary stores them."""
        return self._raw

    def get(self, key: str) -> str:
        """The value LLVM's ``getString(key)`` returns: the last one stored
        under *key*, or ``""``; only that value is decoded."""
        want = encode(key)
        found = [v for k, v in self._raw if k == want]
        return decode(found[-1]) if found else ""

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, i: int) -> tuple[str, str]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[str, str]]: ...
    def __getitem__(self, i: int | slice) -> tuple[str, str] | list[tuple[str, str]]:
        if isinstance(i, slice):
            return [(decode(k), decode(v)) for k, v in self._raw[i]]
        k, v = self._raw[i]
        return decode(k), decode(v)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for k, v in self._raw:
            yield decode(k), decode(v)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Strings):
            return self._raw == other._raw
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Strings({list(self)!r})"


def _as_raw(text: str | Raw) -> Raw:
    if isinstance(text, str):
        return encode(text)
    return bytes(text) if isinstance(text, bytearray) else text


@dataclass(frozen=True)
class Image:
    """One image of an OffloadBinary and where it was found.

    The writers use only ``image``, ``strings``, ``image_kind_id``,
    ``offload_kind`` and ``flags``; the reader also fills in where the image
    came from. ``index`` numbers the images of a whole file 0..N-1 in the
    order ``llvm::object::extractOffloadBinaries`` yields them.
    """

    image: bytes
    strings: Strings = field(default_factory=Strings)
    image_kind_id: int = 0
    offload_kind: int = 0
    flags: int = 0
    index: int = 0
    binary_index: int = 0
    binary_offset: int = 0
    version: int = 1
    entry_index: int = 0
    image_offset: int = 0

    @property
    def image_kind(self) -> str:
        return image_kind_name(self.image_kind_id)

    @property
    def offload_kind_names(self) -> list[str]:
        return offload_kind_names(self.offload_kind)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.image).hexdigest()

    def get(self, key: str) -> str:
        """The value LLVM's ``getString(key)`` returns: the last one stored
        under *key* (its MapVector keeps the first position, the last value),
        or ``""`` when the key is missing."""
        return self.strings.get(key)

    @property
    def triple(self) -> str:
        return self.get("triple")

    @property
    def arch(self) -> str:
        return self.get("arch")


def make_image(
    image: bytes,
    strings: Iterable[tuple[str | Raw, str | Raw]] = (),
    *,
    kind: str | int = "none",
    offload_kind: str | int | Iterable[str] = 0,
    flags: int = 0,
) -> Image:
    """An :class:`Image` to hand to a writer: ``make_image(data,
    [("triple", "nvptx64-nvidia-cuda"), ("arch", "sm_80")], kind="cubin",
    offload_kind="cuda")``."""
    return Image(
        image=bytes(image),
        strings=Strings(strings),
        image_kind_id=image_kind_value(kind),
        offload_kind=offload_kind_value(offload_kind),
        flags=flags,
    )
