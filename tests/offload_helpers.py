"""Shared by test_offload_binary.py and test_inspect.py: the LLVM 22 tools,
the committed fixtures under tests/data/offload/ and how they were made, and
the table of malformed inputs with the error each must give."""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from kdl import paths
from kdl.offload.binary import make_image, write_v1, write_v2

DATA = Path(__file__).parent / "data" / "offload"
LLVM_BIN = paths.llvm_bin()


def tool(name: str) -> Path:
    return LLVM_BIN / name


HAVE_LLVM = all(
    tool(t).exists() for t in ("llvm-offload-binary", "llvm-objdump", "clang")
)

_NEEDS_LLVM = [
    pytest.mark.llvm,
    pytest.mark.skipif(not HAVE_LLVM, reason=f"no LLVM 22 tools in {LLVM_BIN}"),
]

T = TypeVar("T", bound=Callable[..., None])


def llvm(test: T) -> T:
    """Mark a test that runs Debian's LLVM 22 tools; skipped without them."""
    for mark in _NEEDS_LLVM:
        test = mark(test)
    return test


#: The --image arguments packed.v1.bin was made from (run in DATA):
#:   llvm-offload-binary -o packed.v1.bin --image=... --image=... --image=...
#: Repeated keys (requires_features) are joined with commas by the tool.
PACKED_IMAGES = [
    "file=scale-sm_80.s,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=openmp,"
    "min_sm=80,variant_priority=1,variant_tag=generic",
    "file=scale-gfx90a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a:xnack-,kind=hip,"
    "requires_features=mfma_amd,requires_features=bf16,variant_tag=optimized,"
    "variant_priority=2",
    "file=scale-gfx90a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp,"
    "min_gfx=gfx90a:cdna2,empty=",
]

#: What each of PACKED_IMAGES must read back as (keys in any order).
PACKED_EXPECTED = [
    {
        "kind": "s",
        "offload": ["openmp"],
        "file": "scale-sm_80.s",
        "strings": {
            "triple": "nvptx64-nvidia-cuda",
            "arch": "sm_80",
            "min_sm": "80",
            "variant_priority": "1",
            "variant_tag": "generic",
        },
    },
    {
        "kind": "o",
        "offload": ["hip"],
        "file": "scale-gfx90a.o",
        "strings": {
            "triple": "amdgcn-amd-amdhsa",
            "arch": "gfx90a:xnack-",
            "requires_features": "mfma_amd,bf16",
            "variant_tag": "optimized",
            "variant_priority": "2",
        },
    },
    {
        "kind": "o",
        "offload": ["openmp"],
        "file": "scale-gfx90a.o",
        "strings": {
            "triple": "amdgcn-amd-amdhsa",
            "arch": "gfx90a",
            "min_gfx": "gfx90a:cdna2",
            "empty": "",
        },
    },
]

#: The host object that carries packed.v1.bin in its .llvm.offloading section:
#:   clang --target=x86_64-linux-gnu -O2 -c scale.c -o embed-x86_64.o \
#:     -Xclang -fembed-offload-object=packed.v1.bin
EMBED_TARGET = "x86_64-linux-gnu"


def pack(out: Path, images: list[str], cwd: Path = DATA) -> bytes:
    """Run llvm-offload-binary 22 and return what it wrote."""
    argv = [str(tool("llvm-offload-binary")), "-o", str(out)]
    argv += [f"--image={spec}" for spec in images]
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return out.read_bytes()


def embed(out: Path, packed: Path, target: str = EMBED_TARGET) -> bytes:
    """Compile scale.c for *target* with *packed* in .llvm.offloading."""
    argv = [str(tool("clang")), f"--target={target}", "-O2", "-c"]
    argv += [str(DATA / "scale.c"), "-o", str(out)]
    argv += ["-Xclang", f"-fembed-offload-object={packed}"]
    subprocess.run(argv, check=True, capture_output=True)
    return out.read_bytes()


def objdump_offloading(path: Path) -> list[dict[str, str]]:
    """What ``llvm-objdump --offloading`` lists: one dict per image."""
    proc = subprocess.run(
        [str(tool("llvm-objdump")), "--offloading", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    found: list[dict[str, str]] = []
    for line in proc.stdout.splitlines():
        if line.startswith("OFFLOADING IMAGE ["):
            found.append({})
        elif found and line.strip():
            key, _, value = line.partition(" ")
            found[-1][key] = value.strip()
    return found


# --- Malformed inputs ----------------------------------------------------------

U64_MAX = 2**64 - 1


def base_v1(image: bytes = b"\x7fELF fake image bytes 123") -> bytes:
    """One v1 binary: header 0-32, entry 32-72, two string entries 72-104,
    string table from 104, image at the 8-aligned offset after it."""
    return write_v1(
        [
            make_image(
                image,
                [("triple", "x86_64-unknown-linux-gnu"), ("arch", "generic")],
                kind="o",
                offload_kind="openmp",
            )
        ]
    )


def base_v2() -> bytes:
    """One v2 binary with two entries of one string each."""
    return write_v2(
        [
            make_image(b"A" * 16, [("arch", "sm_80")], kind="cubin"),
            make_image(b"B" * 16, [("arch", "gfx90a")], kind="o"),
        ]
    )


def put(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<" + fmt, out, offset, value)
    return bytes(out)


def get(data: bytes, offset: int, fmt: str = "Q") -> int:
    value: int = struct.unpack_from("<" + fmt, data, offset)[0]
    return value


@dataclass(frozen=True)
class Bad:
    """A malformed input and the one error it must give."""

    name: str
    make: Callable[[], bytes]
    what: Callable[[bytes], str] | str  # a str may use {n} (length), {size}
    offset: Callable[[bytes], int] | int

    def expected(self, data: bytes) -> tuple[str, int]:
        off = self.offset(data) if callable(self.offset) else self.offset
        if callable(self.what):
            return self.what(data), off
        size = get(data, 8) if len(data) >= 16 else 0
        return self.what.format(n=len(data), size=size), off


def _v1_field(offset: int, value: int, fmt: str = "Q") -> Callable[[], bytes]:
    return lambda: put(base_v1(), offset, fmt, value)


def _cut(at: int) -> bytes:
    """base_v1() cut to *at* bytes with its Size field saying so; if that
    cuts off the image (at 152), the image is made empty and put at *at*, so
    the cut shows in the entry and string checks."""
    data = put(base_v1()[:at], 8, "Q", at)
    if 72 <= at < 152:
        data = put(put(data, 56, "Q", at), 64, "Q", 0)
    return data


def _unterminated() -> bytes:
    # A 32-byte image without NUL ends the binary (no padding); point the
    # first key into it, so the only terminator would be past the end.
    data = base_v1(b"x" * 32)
    image_offset = get(data, 56)
    return put(data, 72, "Q", image_offset + 8)


def _v1_image_over_strings() -> bytes:
    # The image moved onto the string table: the first string it covers is
    # the value of string 0 (the table starts with that value).
    return put(base_v1(), 56, "Q", 104)


def _v2_overlapping_images() -> bytes:
    data = base_v2()
    return put(data, 32 + 40 + 24, "Q", get(data, 32 + 24))


ELF_SHT = 0x6FFF4C0B


def tiny_elf(
    sections: list[tuple[str, int, bytes]], *, elf64: bool = True, little: bool = True
) -> bytes:
    """A minimal ELF relocatable: the given (name, type, contents) sections,
    then a .shstrtab, section headers at the end. Independent of kdl.offload."""
    order = "<" if little else ">"
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _, _ in sections)
    names += b".shstrtab\0"
    ehsize, shsize = (64, 64) if elf64 else (52, 40)
    body = bytearray()
    placed = []
    name_at = 1
    for name, sh_type, contents in sections:
        while (ehsize + len(body)) % 8:
            body.append(0)
        placed.append((name_at, sh_type, ehsize + len(body), len(contents)))
        name_at += len(name) + 1
        body += contents
    placed.append((name_at, 3, ehsize + len(body), len(names)))
    body += names
    while (ehsize + len(body)) % 8:
        body.append(0)
    shoff = ehsize + len(body)
    count = len(placed) + 1
    ident = b"\x7fELF" + bytes([2 if elf64 else 1, 1 if little else 2, 1]) + bytes(9)
    if elf64:
        ehdr = struct.pack(
            order + "HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, ehsize, 0, 0,
            shsize, count, count - 1,
        )  # fmt: skip
    else:
        ehdr = struct.pack(
            order + "HHIIIIIHHHHHH", 1, 3, 1, 0, 0, shoff, 0, ehsize, 0, 0,
            shsize, count, count - 1,
        )  # fmt: skip
    shdrs = bytes(shsize)
    for name, sh_type, offset, size in placed:
        if elf64:
            shdrs += struct.pack(
                order + "IIQQQQIIQQ", name, sh_type, 0, 0, offset, size, 0, 0, 8, 0
            )
        else:
            shdrs += struct.pack(
                order + "IIIIIIIIII", name, sh_type, 0, 0, offset, size, 0, 0, 8, 0
            )
    return ident + ehdr + bytes(body) + shdrs


def _elf_with(payload: bytes, **kw: bool) -> bytes:
    return tiny_elf([(".llvm.offloading", ELF_SHT, payload)], **kw)


def _elf_section_header(data: bytes, index: int) -> int:
    return get(data, 0x28) + 64 * index


def _elf_section_past_end() -> bytes:
    data = _elf_with(base_v1())
    return put(data, _elf_section_header(data, 1) + 32, "Q", len(data))


BAD: list[Bad] = [
    Bad("empty", lambda: b"", "not an OffloadBinary or ELF file (0 bytes)", 0),
    Bad(
        "wrong-magic",
        lambda: b"\x10\xff\x10\xae" + base_v1()[4:],
        "not an OffloadBinary or ELF file (magic 10 ff 10 ae, expected 10 ff 10 ad)",
        0,
    ),
    Bad(
        "bitcode",
        lambda: b"BC\xc0\xde" + bytes(60),
        "not an OffloadBinary or ELF file (LLVM bitcode is not supported)",
        0,
    ),
    Bad(
        "wrong-magic-second-binary",
        lambda: base_v1() + b"\x00\xff\x10\xad" + base_v1()[4:],
        "bad magic 00 ff 10 ad, expected 10 ff 10 ad",
        lambda d: len(d) // 2,
    ),
    Bad(
        "trailing-zeros",
        lambda: base_v1() + bytes(40),
        "bad magic 00 00 00 00, expected 10 ff 10 ad",
        lambda d: len(d) - 40,
    ),
    Bad(
        "truncated-second-header",
        lambda: base_v1() + base_v1()[:20],
        "truncated header: 20 of 32 bytes",
        lambda d: len(d) - 20,
    ),
    Bad(
        "truncated-in-header",
        lambda: base_v1()[:31],
        "truncated header: 31 of 32 bytes",
        0,
    ),
    Bad(
        "truncated-in-entry",
        lambda: base_v1()[:50],
        "binary size {size} is past the end of the data (50 bytes left)",
        8,
    ),
    Bad(
        "truncated-in-image",
        lambda: base_v1()[:-9],
        "binary size {size} is past the end of the data ({n} bytes left)",
        8,
    ),
    Bad("version-0", _v1_field(4, 0, "I"), "unsupported version 0", 4),
    # A version 1 binary relabelled 3: its first entry's fields stand where
    # version 3 keeps InflatedSize, so it reads as a compressed binary whose
    # entries do not start after a version 3 header.
    Bad(
        "version-3",
        _v1_field(4, 3, "I"),
        "compressed binary: entries offset 32, expected 40",
        16,
    ),
    Bad("version-4", _v1_field(4, 4, "I"), "unsupported version 4", 4),
    Bad(
        "version-big-endian",
        _v1_field(4, 1 << 24, "I"),
        "unsupported version 16777216 (a big-endian binary? only little-endian "
        "is supported)",
        4,
    ),
    Bad(
        "version-max", _v1_field(4, 2**32 - 1, "I"), "unsupported version 4294967295", 4
    ),
    Bad(
        "size-past-end",
        lambda: put(base_v1(), 8, "Q", len(base_v1()) + 8),
        "binary size {size} is past the end of the data ({n} bytes left)",
        8,
    ),
    Bad(
        "size-u64-max",
        _v1_field(8, U64_MAX),
        "binary size 18446744073709551615 is past the end of the data ({n} bytes left)",
        8,
    ),
    Bad(
        "size-below-header-and-entry",
        _v1_field(8, 40),
        "binary size 40 is less than a header and an entry",
        8,
    ),
    Bad(
        "cut-at-entry",
        lambda: _cut(64),
        "binary size 64 is less than a header and an entry",
        8,
    ),
    Bad(
        "cut-at-string-map",
        lambda: _cut(88),
        "entry 0: 2 strings at offset 72 do not fit in the binary",
        48,
    ),
    Bad(
        "cut-at-string-table",
        lambda: _cut(112),
        "key offset 135 is past the end of the binary",
        72,
    ),
    Bad(
        "cut-in-string",
        lambda: _cut(140),
        "unterminated key string",
        135,
    ),
    Bad(
        "cut-in-image",
        lambda: _cut(160),
        "entry 0: image of 25 bytes at offset 152 is past the end of the binary",
        64,
    ),
    Bad(
        "entry-size-u64-max",
        _v1_field(24, U64_MAX),
        "entry size 18446744073709551615 is larger than the binary",
        24,
    ),
    Bad(
        "entry-table-overlaps-header",
        _v1_field(16, 8),
        "entry table at 8 overlaps the header",
        16,
    ),
    Bad(
        "entry-table-past-end",
        _v1_field(16, U64_MAX - 7),
        "entry table of 1 x 40 bytes at 18446744073709551608 is past the end of "
        "the binary",
        16,
    ),
    Bad(
        "string-map-offset-past-end",
        _v1_field(40, U64_MAX),
        "entry 0: string map offset 18446744073709551615 is past the end of the binary",
        40,
    ),
    Bad(
        "string-count-2^63",
        _v1_field(48, 2**63),
        "entry 0: 9223372036854775808 strings at offset 72 do not fit in the binary",
        48,
    ),
    Bad(
        "string-count-wraps-u64",
        _v1_field(48, 2**60),  # 16 * 2**60 is 0 in 64-bit arithmetic
        "entry 0: 1152921504606846976 strings at offset 72 do not fit in the binary",
        48,
    ),
    Bad(
        "image-offset-past-end",
        _v1_field(56, 2**63),
        "entry 0: image offset 9223372036854775808 is past the end of the binary",
        56,
    ),
    Bad(
        "image-size-past-end",
        _v1_field(64, 33),
        "entry 0: image of 33 bytes at offset 152 is past the end of the binary",
        64,
    ),
    Bad(
        "image-end-wraps-u64",
        _v1_field(64, U64_MAX),
        "entry 0: image of 18446744073709551615 bytes at offset 152 is past the "
        "end of the binary",
        64,
    ),
    Bad(
        "string-map-overlaps-header",
        _v1_field(40, 0),
        "the string map of entry 0 overlaps the header",
        40,
    ),
    Bad(
        "string-map-overlaps-entry-table",
        _v1_field(40, 56),
        "the string map of entry 0 overlaps the entry table",
        40,
    ),
    Bad(
        "image-overlaps-string-map",
        _v1_field(56, 88),
        "the image of entry 0 overlaps the string map of entry 0",
        56,
    ),
    Bad(
        "image-overlaps-string-table",
        _v1_image_over_strings,
        "value string at offset 105 overlaps the image of entry 0",
        80,
    ),
    Bad(
        "key-offset-past-end",
        _v1_field(72, U64_MAX),
        "key offset 18446744073709551615 is past the end of the binary",
        72,
    ),
    Bad(
        "key-points-into-header",
        _v1_field(88, 4),
        "key string at offset 4 overlaps the header",
        88,
    ),
    Bad(
        "value-offset-past-end",
        _v1_field(80, 184),
        "value offset 184 is past the end of the binary",
        80,
    ),
    Bad(
        "unterminated-string",
        _unterminated,
        "unterminated key string",
        lambda d: get(d, 56) + 8,
    ),
    Bad(
        "unterminated-string-before-next-binary",
        lambda: _unterminated() + base_v1(),
        "unterminated key string",
        lambda d: get(d, 56) + 8,
    ),
    Bad(
        "v2-count-2^63",
        lambda: put(base_v2(), 24, "Q", 2**63),
        "entry count 9223372036854775808 does not fit in a binary of {size} bytes",
        24,
    ),
    Bad(
        "v2-count-u64-max",
        lambda: put(base_v2(), 24, "Q", U64_MAX),
        "entry count 18446744073709551615 does not fit in a binary of {size} bytes",
        24,
    ),
    Bad(
        "v2-entry-table-overlaps-header",
        lambda: put(base_v2(), 16, "Q", 0),
        "entry table at 0 overlaps the header",
        16,
    ),
    Bad(
        "v2-images-overlap",
        _v2_overlapping_images,
        "the image of entry 1 overlaps the image of entry 0",
        32 + 40 + 24,
    ),
    Bad(
        "v2-value-past-end",
        lambda: put(base_v2(), 112 + 16, "Q", 2**63),
        "value of 9223372036854775808 bytes at offset 173 is past the end of the "
        "binary",
        112 + 8,
    ),
    Bad(
        "elf-truncated-header",
        lambda: _elf_with(base_v1())[:40],
        "truncated ELF header: 40 of 64 bytes",
        0,
    ),
    Bad(
        "elf-class",
        lambda: put(_elf_with(base_v1()), 4, "B", 3),
        "unknown ELF class 3",
        4,
    ),
    Bad(
        "elf-section-headers-past-end",
        lambda: put(_elf_with(base_v1()), 0x28, "Q", 2**63),
        "section header table at 9223372036854775808 is past the end",
        0x28,
    ),
    Bad(
        "elf-section-count",
        lambda: put(_elf_with(base_v1()), 0x3C, "H", 0xFFFE),
        lambda d: f"65534 section headers at {get(d, 0x28)} do not fit in the file",
        0x28,
    ),
    Bad(
        "elf-section-past-end",
        _elf_section_past_end,
        lambda d: (
            f"section 1 (.llvm.offloading) of {len(d)} bytes at 64 is past the "
            "end of the file"
        ),
        lambda d: _elf_section_header(d, 1),
    ),
    Bad(
        "elf-bad-binary-inside",
        lambda: _elf_with(put(base_v1(), 64, "Q", 2**40)),
        "entry 0: image of 1099511627776 bytes at offset 152 is past the end of the "
        "binary",
        64 + 64,
    ),
]
