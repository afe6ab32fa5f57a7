"""Inflate a compressed version 3 OffloadBinary (LLVM main, #222774), bounded.

A version 3 binary whose header's InflatedSize is not 0 holds, after its
40-byte header, a zstd or zlib stream of everything after the header. The
InflatedSize is not trusted: it must be at most :data:`MAX_INFLATE_RATIO`
times the stream, never past :data:`MAX_INFLATED`, and within what the whole
input may still inflate (:class:`kdl.offload.binary.Limits`), all checked
before anything is allocated; the stream must inflate to exactly that size.
The body is inflated in place after a copy of the header (InflatedSize 0), so
the result reads as an uncompressed binary whose offsets are the inflated ones.
"""

from __future__ import annotations

import zlib
from typing import NoReturn

from kdl.errors import FormatError
from kdl.offload.layout import HEADER_V3, MAGIC, Data

#: Where compressed streams start: zstd's frame magic; a zlib stream is told
#: by its 2-byte header (CMF/FLG) instead.
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: A compressed binary may inflate to at most this many times its stream,
#: and never past this many bytes: the header's InflatedSize is not trusted.
MAX_INFLATE_RATIO = 1024
MAX_INFLATED = 1 << 30


def is_compressed_v3(data: Data, offset: int, end: int) -> bool:
    """Whether a compressed version 3 binary starts at *offset*."""
    if end - offset < HEADER_V3.size or data[offset : offset + 4] != MAGIC:
        return False
    _, version, _, _, _, inflated_size = HEADER_V3.unpack_from(data, offset)
    return bool(version == 3 and inflated_size != 0)


def inflate(
    data: Data, path: str, offset: int, end: int, budget: tuple[int, int]
) -> tuple[bytearray, str, int]:
    """(the inflated binary, its compression, its Size on disk).

    *budget* is (inflated bytes the input may still take, the budget in
    all): the header's InflatedSize is checked against it, and against the
    stream's size, before anything is allocated."""
    _, version, size, entries_offset, count, inflated_size = HEADER_V3.unpack_from(
        data, offset
    )

    def fail(what: str, at: int) -> NoReturn:
        raise FormatError(path, f"compressed binary: {what}", offset + at)

    if size > end - offset:
        fail(f"size {size} is past the end of the data ({end - offset} bytes)", 8)
    if entries_offset != HEADER_V3.size:
        fail(f"entries offset {entries_offset}, expected {HEADER_V3.size}", 16)
    if size < entries_offset:
        fail(f"size {size} is less than the header", 8)
    stream = memoryview(data)[offset + entries_offset : offset + size]
    body_size = inflated_size - entries_offset
    if inflated_size < entries_offset or body_size > min(
        MAX_INFLATED, MAX_INFLATE_RATIO * max(len(stream), 1)
    ):
        fail(f"inflated size {inflated_size} is not believable", 32)
    left, total = budget
    if inflated_size > left:
        fail(
            f"inflated size {inflated_size} takes the input past its budget of "
            f"{total} inflated bytes ({total - left} used; --max-inflated raises "
            "it)",
            32,
        )
    # Inflated in place after the header: no copy of the body is made.
    inflated = bytearray(inflated_size)
    inflated[: HEADER_V3.size] = HEADER_V3.pack(
        MAGIC, version, inflated_size, entries_offset, count, 0
    )
    body = memoryview(inflated)[HEADER_V3.size :]
    if stream[:4] == _ZSTD_MAGIC:
        import zstandard

        fmt = "zstd"
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(stream)
            got = 0
            while got < body_size:
                n = reader.readinto(body[got:])
                if n == 0:
                    break
                got += n
            if got == body_size and reader.read(1):
                got += 1
        except zstandard.ZstdError as exc:
            fail(f"bad zstd stream ({exc})", entries_offset)
    elif (
        len(stream) >= 2
        and stream[0] & 0x0F == 8
        and ((stream[0] << 8) | stream[1]) % 31 == 0
    ):
        fmt = "zlib"
        try:
            got = _zlib_into(stream, body)
        except zlib.error as exc:
            fail(f"bad zlib stream ({exc})", entries_offset)
    else:
        fail("unknown compression format (neither zstd nor zlib)", entries_offset)
    if got != body_size:
        what = f"more than {body_size}" if got > body_size else str(got)
        fail(f"inflates to {what} bytes, header says {body_size}", 32)
    return inflated, fmt, size


def _zlib_into(stream: memoryview, body: memoryview) -> int:
    """Inflate the zlib *stream* into *body* a MiB at a time; the bytes it
    inflates to (one more than *body* holds when it holds more)."""
    d = zlib.decompressobj()
    src: bytes | memoryview = stream
    got = 0
    while not d.eof:
        chunk = d.decompress(src, 1 << 20)
        src = d.unconsumed_tail
        if got + len(chunk) > len(body):
            return len(body) + 1
        body[got : got + len(chunk)] = chunk
        got += len(chunk)
        if not chunk and not src:
            break
    return got
