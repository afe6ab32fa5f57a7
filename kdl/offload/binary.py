"""Read OffloadBinary files: raw, concatenated, or inside an ELF section.

:func:`scan` finds every binary in a file the way
``llvm::object::extractOffloadBinaries`` does in LLVM 22: a file that starts
with the OffloadBinary magic is a run of binaries, the next one starting
right after the previous one's ``Size`` bytes; an ELF relocatable, executable
or shared object is searched for sections of type ``SHT_LLVM_OFFLOADING``
(``.llvm.offloading``), each holding such a run. Images are numbered 0..N-1
in that order. (LLVM 22's walk was checked with its tools, see
``test_binaries_follow_each_other_at_size_as_in_llvm22``. Upstream's newer
``extractOffloadFiles``, llvm/llvm-project@02dc39ba9835b4f5c3d0c8eb834e013b1201adda,
rounds the next offset up to 8; the two agree on everything LLVM writes,
whose sizes are multiples of 8.)

The reader is stricter than LLVM, which trusts most offsets once the header
checks pass. Besides LLVM's own checks (magic, version, ``Size`` within the
buffer, entry table within ``Size``), every region must lie inside its
binary, and a binary's header, entry table, string maps and images must not
overlap each other: LLVM lays them out one after the other, so an overlap
means a corrupt file, and a reader that accepts one would take structure for
data. Strings (the keys and values the string maps point at) may share bytes
with each other, as LLVM's string table merges common suffixes, but not with
anything else. Keys, and version 1 values, must be NUL-terminated inside the
binary. Nothing is allocated from an untrusted count before it is checked
against the bytes that are really there.

The whole input is bounded too (:class:`Limits`): the inflated sizes of all
its compressed binaries together, checked against the budget before anything
is inflated, and the number of its binaries and of their entries. A file of a
few MB that inflates to GBs, or holds hundreds of thousands of tiny binaries,
is refused in one line instead of read; the C++ reader
(``overlay/container/OffloadEntries.h``) applies the same rules and limits, so
both accept the same files with the same entries.

Every problem raises :class:`kdl.errors.FormatError` naming the absolute file
offset of the field (or structure) at fault.
"""

from __future__ import annotations

import bisect
import itertools
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from kdl.errors import FormatError, WorkspaceError
from kdl.files import open_regular
from kdl.offload import elf
from kdl.offload.inflate import inflate, is_compressed_v3
from kdl.offload.layout import (
    ENT_IMAGE_OFFSET,
    ENT_IMAGE_SIZE,
    ENT_NUM_STRINGS,
    ENT_STRING_OFFSET,
    ENTRY,
    HDR_COUNT,
    HDR_ENTRIES_OFFSET,
    HDR_SIZE,
    HDR_VERSION,
    HEADER,
    HEADER_V3,
    MAGIC,
    STRING_V1,
    STRING_V2,
    SUPPORTED_VERSIONS,
    Data,
    Image,
    Raw,
    Strings,
    align,
    image_kind_name,
    make_image,
    offload_kind_names,
)
from kdl.offload.writer import write_v1, write_v2, write_v3

__all__ = [
    "Binary",
    "Image",
    "Limits",
    "Scan",
    "image_kind_name",
    "make_image",
    "offload_kind_names",
    "parse",
    "read_file",
    "scan",
    "write_v1",
    "write_v2",
    "write_v3",
]


#: The defaults of :class:`Limits` (and of the C++ reader's): a fat binary
#: of a few hundred images and 64 MiB of compressed code fits with room; with
#: them ``kdl inspect`` stays under 256 MB of memory on any input of 16 MB.
MAX_INFLATED_TOTAL = 64 << 20
MAX_BINARIES = 4096
MAX_STRINGS = 65536


@dataclass(frozen=True)
class Limits:
    """Bounds for one whole input (``--max-inflated``, ``--max-binaries``)."""

    #: The inflated sizes of all compressed binaries together, in bytes.
    inflated: int = MAX_INFLATED_TOTAL
    #: The binaries, and separately their entries (images), of the input.
    binaries: int = MAX_BINARIES
    #: The string-map entries (key=value pairs) of all its images.
    strings: int = MAX_STRINGS


@dataclass(frozen=True)
class Binary:
    """One OffloadBinary found in a file."""

    index: int
    offset: int
    version: int
    size: int
    entries: int
    section: str | None = None  # the ELF section it was found in
    #: "zstd" or "zlib" for a compressed version 3 binary (LLVM main, #222774)
    compression: str | None = None
    #: The size of a compressed binary once inflated.
    inflated_size: int | None = None


@dataclass
class Scan:
    """Everything found in one file."""

    path: str
    kind: str  # "offload-binary" or "elf"
    binaries: list[Binary] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    sections: list[elf.Section] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    #: The inflated bytes of the compressed binaries read so far.
    inflated: int = 0
    #: The string-map entries read so far.
    strings: int = 0


def read_file(path: str | Path, limits: Limits | None = None) -> list[Image]:
    """The images of the file at *path* (see :func:`scan`)."""
    return scan_file(path, limits).images


def scan_file(path: str | Path, limits: Limits | None = None) -> Scan:
    """Scan the file at *path* (:func:`map_file`)."""
    return scan(map_file(path), str(path), limits)


def map_file(path: str | Path) -> bytes | mmap.mmap:
    """The bytes of the regular file at *path* (only a regular file:
    :func:`kdl.files.open_regular`), mapped, not read: a reader
    reads only the pages it looks at, so the magic and the header are checked
    before anything else is read, and a large file costs only what its
    structures point at (as LLVM's MemoryBuffer maps a file)."""
    fd = open_regular(path)
    try:
        head = os.pread(fd, 4, 0)
        if head not in (MAGIC, elf.MAGIC):
            raise FormatError(
                os.fspath(path), f"not an OffloadBinary or ELF file ({_what(head)})", 0
            )
        size = os.fstat(fd).st_size
        if size <= len(head):  # a file of 4 bytes, or one that gives no size
            return head
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # a file system that cannot map it
            with os.fdopen(os.dup(fd), "rb") as f:
                return f.read()
    except OSError as exc:
        raise WorkspaceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def parse(data: Data, path: str, limits: Limits | None = None) -> list[Image]:
    """The images in *data*, numbered as ``extractOffloadBinaries`` would."""
    return scan(data, path, limits).images


def scan(data: Data, path: str, limits: Limits | None = None) -> Scan:
    """What *data* holds. The string maps of the images are views of *data*
    (or of the inflated binaries), not copies."""
    if not isinstance(data, bytes | bytearray | mmap.mmap):
        data = bytes(data)
    limits = limits or Limits()
    if data[:4] == MAGIC:
        result = Scan(path, "offload-binary", limits=limits)
        _walk(data, path, result, (0, len(data), None))
        return result
    if data[:4] == elf.MAGIC:
        result = Scan(path, "elf", limits=limits)
        result.sections = elf.offloading_sections(data, path)
        # Two sections over the same bytes would list their images twice.
        spans = sorted(result.sections, key=lambda sec: sec.offset)
        for prev, sec in itertools.pairwise(spans):
            if sec.offset < prev.offset + prev.size:
                raise FormatError(
                    path,
                    f"section {sec.name} [{sec.index}] overlaps section "
                    f"{prev.name} [{prev.index}]",
                    sec.offset,
                )
        for sec in result.sections:
            _walk(data, path, result, (sec.offset, sec.offset + sec.size, sec.name))
        return result
    raise FormatError(path, f"not an OffloadBinary or ELF file ({_what(data)})", 0)


def _what(data: Data) -> str:
    if len(data) < 4:
        return f"{len(data)} bytes"
    if data[:4] in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b"):
        return "LLVM bitcode is not supported"
    if data[:8] == b"!<arch>\n":
        return "archives are not supported"
    return f"magic {data[:4].hex(' ')}, expected {MAGIC.hex(' ')}"


def _walk(data: Data, path: str, out: Scan, where: tuple[int, int, str | None]) -> None:
    """Parse the run of binaries in data[start:end], as LLVM 22 walks it."""
    offset, end, section = where
    limits = out.limits
    while offset < end:
        if len(out.binaries) >= limits.binaries:
            raise FormatError(
                path,
                f"more than {limits.binaries} OffloadBinaries in one input "
                "(--max-binaries raises the limit)",
                offset,
            )
        if not is_compressed_v3(data, offset, end):
            reader = _Reader(data, path, offset, end)
            _count_images(out, reader.count, offset)
            found = reader.images(out)
            binary = Binary(
                len(out.binaries),
                offset,
                reader.version,
                reader.size,
                reader.count,
                section,
            )
            step = reader.size
        else:
            budget = (limits.inflated - out.inflated, limits.inflated)
            inflated, fmt, size = inflate(data, path, offset, end, budget)
            out.inflated += len(inflated)
            # Offsets inside a compressed binary are offsets of the inflated one.
            reader = _Reader(
                inflated, f"{path} (binary at {offset}, inflated)", 0, len(inflated)
            )
            _count_images(out, reader.count, offset)
            found = reader.images(out)
            binary = Binary(
                len(out.binaries),
                offset,
                3,
                size,
                reader.count,
                section,
                fmt,
                len(inflated),
            )
            step = size
        out.images += found
        out.binaries.append(binary)
        # Version 3 pads a compressed binary to 8 bytes after its Size.
        offset += align(step) if binary.version >= 3 else step


def _count_images(out: Scan, count: int, offset: int) -> None:
    """Refuse a binary whose entries take the input past its image limit,
    before any of them is read."""
    if len(out.images) + count > out.limits.binaries:
        raise FormatError(
            out.path,
            f"more than {out.limits.binaries} images in one input "
            "(--max-binaries raises the limit)",
            offset,
        )


class _Regions:
    """Byte ranges of one binary that must not overlap, with their names."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, str, int]] = []

    def add(self, start: int, length: int, what: str, where: int) -> None:
        if length:
            self.items.append((start, start + length, what, where))

    def overlap(self) -> tuple[str, int] | None:
        """Sort the regions; the first overlap and where to report it."""
        self.items.sort()
        last_end, last_what = -1, ""
        for start, end, what, where in self.items:
            if start < last_end:
                return f"{what} overlaps {last_what}", where
            if end > last_end:
                last_end, last_what = end, what
        return None

    def find(self, start: int, end: int) -> str | None:
        """The region that [start, end) overlaps, if any (after overlap())."""
        i = bisect.bisect_right(self.items, (end,)) - 1
        if i >= 0 and self.items[i][1] > start:
            return self.items[i][2]
        return None


class _Reader:
    """One binary at *base*: header checks on construction, then
    :meth:`images`. Offsets inside the binary are relative to *base*; the
    offsets in errors are absolute."""

    def __init__(self, data: Data, path: str, base: int, end: int) -> None:
        self.data, self.path, self.base = data, path, base
        self.view = memoryview(data)
        self.regions = _Regions()
        left = end - base
        if left < HEADER.size:
            self.fail(f"truncated header: {left} of {HEADER.size} bytes", 0)
        magic, version, size, entries_offset, count = HEADER.unpack_from(data, base)
        if magic != MAGIC:
            self.fail(f"bad magic {magic.hex(' ')}, expected {MAGIC.hex(' ')}", 0)
        if version not in SUPPORTED_VERSIONS:
            hint = ""
            if int.from_bytes(version.to_bytes(4, "little")) in (1, 2, 3):
                hint = " (a big-endian binary? only little-endian is supported)"
            self.fail(f"unsupported version {version}{hint}", HDR_VERSION)
        if size > left:
            self.fail(
                f"binary size {size} is past the end of the data ({left} bytes left)",
                HDR_SIZE,
            )
        self.header_size = HEADER_V3.size if version >= 3 else HEADER.size
        if (
            version >= 3
            and left >= HEADER_V3.size
            and HEADER_V3.unpack_from(data, base)[5] != 0
        ):
            self.fail("a compressed binary must be inflated first", 32)
        if size < self.header_size + ENTRY.size:
            self.fail(
                f"binary size {size} is less than a header and an entry", HDR_SIZE
            )
        if version == 1:
            # Header field 3 is EntrySize in version 1; LLVM only bounds it.
            if count > size - HEADER.size:
                self.fail(f"entry size {count} is larger than the binary", HDR_COUNT)
            count = 1
        elif count > (size - self.header_size) // ENTRY.size:
            self.fail(
                f"entry count {count} does not fit in a binary of {size} bytes",
                HDR_COUNT,
            )
        if entries_offset < HEADER.size:
            self.fail(
                f"entry table at {entries_offset} overlaps the header",
                HDR_ENTRIES_OFFSET,
            )
        if entries_offset > size - ENTRY.size * count:
            self.fail(
                f"entry table of {count} x {ENTRY.size} bytes at {entries_offset} "
                "is past the end of the binary",
                HDR_ENTRIES_OFFSET,
            )
        self.version, self.size, self.count = version, size, count
        self.entries_offset = entries_offset
        self.string_entry = STRING_V1 if version == 1 else STRING_V2
        self.string_bytes = 0

    def fail(self, what: str, offset: int) -> NoReturn:
        raise FormatError(self.path, what, self.base + offset)

    def images(self, out: Scan) -> list[Image]:
        """The binary's images, numbered after *out*'s; its strings count
        towards *out*'s limit, checked before any is read."""
        first, binary_index = len(out.images), len(out.binaries)
        regions = self.regions
        regions.add(0, self.header_size, "the header", 0)
        regions.add(
            self.entries_offset,
            ENTRY.size * self.count,
            "the entry table",
            HDR_ENTRIES_OFFSET,
        )
        entries = []
        for i in range(self.count):
            at = self.entries_offset + ENTRY.size * i
            entries.append(ENTRY.unpack_from(self.data, self.base + at))
            self.check_entry(entries[-1], at, i)
        overlap = regions.overlap()
        if overlap:
            self.fail(*overlap)
        strings = sum(fields[4] for fields in entries)
        if strings > out.limits.strings - out.strings:
            self.fail(
                f"more than {out.limits.strings} strings in one input "
                "(--max-strings raises the limit)",
                HDR_COUNT,
            )
        out.strings += strings

        found = []
        for i, (kind, offload, flags, str_off, nstr, img_off, img_size) in enumerate(
            entries
        ):
            start = self.base + img_off
            found.append(
                Image(
                    image=bytes(self.view[start : start + img_size]),
                    strings=Strings(self.string(str_off, j) for j in range(nstr)),
                    image_kind_id=kind,
                    offload_kind=offload,
                    flags=flags,
                    index=first + i,
                    binary_index=binary_index,
                    binary_offset=self.base,
                    version=self.version,
                    entry_index=i,
                    image_offset=start,
                )
            )
        return found

    def check_entry(self, fields: tuple[int, ...], at: int, i: int) -> None:
        _, _, _, str_off, nstr, img_off, img_size = fields
        size, entry_size = self.size, self.string_entry.size
        if str_off > size:
            self.fail(
                f"entry {i}: string map offset {str_off} is past the end of the binary",
                at + ENT_STRING_OFFSET,
            )
        if nstr > (size - str_off) // entry_size:
            self.fail(
                f"entry {i}: {nstr} strings at offset {str_off} do not fit in the "
                "binary",
                at + ENT_NUM_STRINGS,
            )
        if img_off > size:
            self.fail(
                f"entry {i}: image offset {img_off} is past the end of the binary",
                at + ENT_IMAGE_OFFSET,
            )
        if img_size > size - img_off:
            self.fail(
                f"entry {i}: image of {img_size} bytes at offset {img_off} is past "
                "the end of the binary",
                at + ENT_IMAGE_SIZE,
            )
        self.regions.add(
            str_off,
            nstr * entry_size,
            f"the string map of entry {i}",
            at + ENT_STRING_OFFSET,
        )
        self.regions.add(
            img_off, img_size, f"the image of entry {i}", at + ENT_IMAGE_OFFSET
        )

    def string(self, str_off: int, j: int) -> tuple[Raw, Raw]:
        at = str_off + self.string_entry.size * j
        fields = self.string_entry.unpack_from(self.data, self.base + at)
        key, value = self._string(fields, at)
        # Keys and values may share bytes (a common suffix), but never more
        # than the binary holds in all: string entries that point at the same
        # bytes over and over would make the reader copy the file many times.
        self.string_bytes += len(key) + len(value)
        if self.string_bytes > self.size:
            self.fail(
                f"string map holds more bytes than the binary ({self.size}): "
                "aliased strings",
                at,
            )
        return key, value

    def _string(self, fields: tuple[int, ...], at: int) -> tuple[Raw, Raw]:
        key = self.cstring(fields[0], at, "key")
        if self.version == 1:
            return key, self.cstring(fields[1], at + 8, "value")
        value_off, value_size = fields[1], fields[2]
        if value_off > self.size or value_size > self.size - value_off:
            self.fail(
                f"value of {value_size} bytes at offset {value_off} is past the end "
                "of the binary",
                at + 8,
            )
        self.not_structure(value_off, value_size, at + 8, "value")
        start = self.base + value_off
        return key, self.view[start : start + value_size]

    def cstring(self, offset: int, field_at: int, what: str) -> Raw:
        if offset >= self.size:
            self.fail(f"{what} offset {offset} is past the end of the binary", field_at)
        start = self.base + offset
        nul = self.data.find(b"\0", start, self.base + self.size)
        if nul < 0:
            self.fail(f"unterminated {what} string", offset)
        self.not_structure(offset, nul + 1 - start, field_at, what)
        return self.view[start:nul]

    def not_structure(self, offset: int, length: int, field_at: int, what: str) -> None:
        hit = self.regions.find(offset, offset + length) if length else None
        if hit is not None:
            self.fail(f"{what} string at offset {offset} overlaps {hit}", field_at)
