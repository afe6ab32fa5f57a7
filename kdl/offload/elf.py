"""Find the ``SHT_LLVM_OFFLOADING`` sections of an ELF file (stdlib only).

LLVM's ``extractOffloadBinaries`` looks at ELF relocatable, executable and
shared-object files and takes every section whose *type* is
``SHT_LLVM_OFFLOADING`` (0x6fff4c0b; the section is named
``.llvm.offloading``); other ELF types (core files) hold no offloading code
for it. This module does the same for ELF32 and ELF64, little- and
big-endian, checking every offset and count against the file before using
it. Only the ELF structures follow the file's byte order; the OffloadBinary
data inside a section is read as little-endian (see
:mod:`kdl.offload.layout`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kdl.errors import FormatError
from kdl.offload.layout import Data

MAGIC = b"\x7fELF"
SHT_LLVM_OFFLOADING = 0x6FFF4C0B
SHN_XINDEX = 0xFFFF
#: e_type values LLVM's identify_magic calls relocatable, executable, shared.
OBJECT_TYPES = (1, 2, 3)


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    offset: int
    size: int


@dataclass(frozen=True)
class _Layout:
    ehdr: struct.Struct  # e_type .. e_shstrndx (after e_ident)
    shdr: struct.Struct  # sh_name .. sh_link (the fields used here)
    shdr_size: int  # the whole Elf_Shdr
    shoff_at: int  # file offset of e_shoff
    shentsize_at: int  # file offset of e_shentsize


def _layout(elf_class: int, order: str) -> _Layout:
    if elf_class == 1:
        return _Layout(
            struct.Struct(f"{order}HHIIIIIHHHHHH"),
            struct.Struct(f"{order}IIIIIII"),
            40,
            0x20,
            0x2E,
        )
    return _Layout(
        struct.Struct(f"{order}HHIQQQIHHHHHH"),
        struct.Struct(f"{order}IIQQQQI"),
        64,
        0x28,
        0x3A,
    )


class _Headers:
    """Section headers of a file whose table is known to fit in it."""

    def __init__(self, data: Data, lay: _Layout, shoff: int) -> None:
        self.data, self.lay, self.shoff = data, lay, shoff
        self.names: tuple[int, int] | None = None

    def at(self, i: int) -> int:
        return self.shoff + i * self.lay.shdr_size

    def __getitem__(self, i: int) -> tuple[int, ...]:
        fields: tuple[int, ...] = self.lay.shdr.unpack_from(self.data, self.at(i))
        return fields

    def use_names(self, strndx: int, count: int) -> None:
        if 0 < strndx < count:
            offset, size = self[strndx][4:6]
            if offset <= len(self.data) and size <= len(self.data) - offset:
                self.names = (offset, size)

    def name(self, i: int) -> str:
        """The section's name for messages; ``?`` when the name table is
        broken, as names play no part in finding the sections."""
        if self.names is None:
            return "?"
        offset, size = self.names
        name_off = self[i][0]
        nul = self.data.find(b"\0", offset + name_off, offset + size)
        if name_off >= size or nul < 0:
            return "?"
        return self.data[offset + name_off : nul].decode("utf-8", "replace")


def offloading_sections(data: Data, path: str) -> list[Section]:
    """The offloading sections of the ELF file *data*, in section order."""
    if len(data) < 16:
        raise FormatError(path, f"truncated ELF identification: {len(data)} bytes", 0)
    elf_class, byte_order = data[4], data[5]
    if elf_class not in (1, 2):
        raise FormatError(path, f"unknown ELF class {elf_class}", 4)
    if byte_order not in (1, 2):
        raise FormatError(path, f"unknown ELF data encoding {byte_order}", 5)
    lay = _layout(elf_class, "<" if byte_order == 1 else ">")
    ehdr_size = 16 + lay.ehdr.size
    if len(data) < ehdr_size:
        raise FormatError(
            path, f"truncated ELF header: {len(data)} of {ehdr_size} bytes", 0
        )
    fields = lay.ehdr.unpack_from(data, 16)
    e_type, e_shoff = fields[0], fields[5]
    e_shentsize, e_shnum, e_shstrndx = fields[10], fields[11], fields[12]
    if e_type not in OBJECT_TYPES or e_shoff == 0:
        return []
    if e_shentsize != lay.shdr_size:
        raise FormatError(
            path,
            f"section header size {e_shentsize}, expected {lay.shdr_size}",
            lay.shentsize_at,
        )
    if e_shoff > len(data) - lay.shdr_size:
        raise FormatError(
            path, f"section header table at {e_shoff} is past the end", lay.shoff_at
        )
    headers = _Headers(data, lay, e_shoff)
    # Extended numbering: with 0 in e_shnum / SHN_XINDEX in e_shstrndx the
    # real values are in section 0's sh_size / sh_link.
    if e_shnum == 0:
        e_shnum = headers[0][5]
    if e_shstrndx == SHN_XINDEX:
        e_shstrndx = headers[0][6]
    if e_shnum > (len(data) - e_shoff) // lay.shdr_size:
        raise FormatError(
            path,
            f"{e_shnum} section headers at {e_shoff} do not fit in the file",
            lay.shoff_at,
        )
    headers.use_names(e_shstrndx, e_shnum)

    found = []
    for i in range(e_shnum):
        _, sh_type, _, _, sh_offset, sh_size, _ = headers[i]
        if sh_type != SHT_LLVM_OFFLOADING:
            continue
        if sh_offset > len(data) or sh_size > len(data) - sh_offset:
            raise FormatError(
                path,
                f"section {i} ({headers.name(i)}) of {sh_size} bytes at "
                f"{sh_offset} is past the end of the file",
                headers.at(i),
            )
        found.append(Section(i, headers.name(i), sh_offset, sh_size))
    return found


#: ELF header fields of the device images the tests and the benchmark make.
EM_CUDA = 190
EM_AMDGPU = 224
ELFOSABI_CUDA = 0x33
ELFOSABI_CUDA_V2 = 0x29
ELFOSABI_AMDGPU_HSA = 64
ELFABIVERSION_AMDGPU_HSA_V5 = 3
EF_CUDA_64BIT_ADDRESS = 0x400
#: EF_AMDGPU_MACH values of the processors the benchmark names (ELF.h).
AMDGPU_MACH = {"gfx90a": 0x3F, "gfx942": 0x4C}


def elf_header(machine: int, flags: int, osabi: int, abi_version: int) -> bytes:
    """A 64-byte little-endian ELF64 executable header with no sections.

    That is all an offload plugin's image check and the ranking read of a
    device image (e_machine, e_flags, EI_OSABI, EI_ABIVERSION).
    """
    ident = b"\x7fELF" + bytes([2, 1, 1, osabi, abi_version]) + bytes(7)
    return ident + struct.pack(
        "<HHIQQQIHHHHHH", 2, machine, 1, 0, 0, 0, flags, 64, 0, 0, 64, 0, 0
    )


def cubin_header(arch: str, abi: int = 1, bits64: bool = True) -> bytes:
    """The ELF header of a cubin for *arch* (``sm_90``, ``sm_90a``).

    *abi* 1 is CUDA ELF ABI version 1 (ELFOSABI_CUDA): compute capability in
    bits 0-7 of e_flags, EF_CUDA_64BIT_ADDRESS, EF_CUDA_ACCELERATORS_V1
    (0x800) for an "a" target. *abi* 2 is what ptxas of CUDA 13.0 writes
    (ELFOSABI_CUDA_V2, ABI version 8): compute capability in bits 8-15, 0x4
    below sm_100 and 0x2 from sm_100 on in bits 0-7, 0x6 in bits 24-31, and
    nothing that tells sm_90a from sm_90 (measured with ptxas 13.0.88).
    """
    number = arch.removeprefix("sm_")
    specific = number.endswith("a")
    sm = int(number.removesuffix("a"))
    if abi == 1:
        flags = sm | (0x800 if specific else 0)
        if bits64:
            flags |= EF_CUDA_64BIT_ADDRESS
        return elf_header(EM_CUDA, flags, ELFOSABI_CUDA, 7)
    flags = 0x6000000 | (sm << 8) | (0x4 if sm < 100 else 0x2)
    return elf_header(EM_CUDA, flags, ELFOSABI_CUDA_V2, 8)


def amdgpu_header(processor: str) -> bytes:
    """The ELF header of a linked AMDGPU code object (code object v5)."""
    return elf_header(
        EM_AMDGPU,
        AMDGPU_MACH[processor],
        ELFOSABI_AMDGPU_HSA,
        ELFABIVERSION_AMDGPU_HSA_V5,
    )
