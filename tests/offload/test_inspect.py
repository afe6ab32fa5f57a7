"""``kdl inspect``: text and JSON output, one ``error:`` line for bad input
(through the real CLI in a subprocess), and a property test that mutates real
binaries and runs the CLI in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kdl import cli
from kdl.errors import FormatError
from kdl.offload import inspect as inspect_mod
from kdl.offload.binary import make_image, parse, scan, scan_file, write_v2, write_v3
from kdl.offload.layout import decode
from kdl.proc import measure
from tests.offload_helpers import (
    BAD,
    DATA,
    ELF_SHT,
    Bad,
    llvm,
    objdump_offloading,
    tiny_elf,
    tool,
)

ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m kdl ...`` in a fresh interpreter, as a user runs it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "kdl", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = cli.main(["inspect", *args])
    out, err = capsys.readouterr()
    return rc, out, err


# --- Output ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "golden"),
    [
        ("packed.v1.bin", "packed.v1.txt"),
        ("embed-x86_64.o", "embed-x86_64.txt"),
    ],
)
def test_text_output_matches_golden(
    capsys: pytest.CaptureFixture[str], name: str, golden: str
) -> None:
    path = str(DATA / name)
    rc, out, err = inspect(capsys, path)
    assert (rc, err) == (0, "")
    assert out.replace(path, "FILE") == (DATA / golden).read_text()


def test_json_output_matches_golden(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "packed.v1.bin")
    rc, out, err = inspect(capsys, "--json", path)
    assert (rc, err) == (0, "")
    doc = json.loads(out)
    assert doc["file"] == path
    doc["file"] = "FILE"
    assert doc == json.loads((DATA / "packed.v1.json").read_text())


def test_json_has_the_facts_of_every_image(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "packed.v2.bin"
    rc, out, _ = inspect(capsys, "--json", str(path))
    doc = json.loads(out)
    assert rc == 0
    assert [(b["version"], b["entries"]) for b in doc["binaries"]] == [(2, 3)]
    images = parse(path.read_bytes(), str(path))
    assert len(doc["images"]) == len(images)
    for entry, img in zip(doc["images"], images, strict=True):
        assert entry["index"] == img.index
        assert entry["entry"] == img.entry_index
        assert entry["binary"] == 0
        assert entry["version"] == 2
        assert entry["image_kind"] == img.image_kind
        assert entry["offload_kind"] == img.offload_kind_names
        assert entry["flags"] == img.flags
        assert [tuple(p) for p in entry["strings"]] == img.strings
        assert (entry["size"], entry["sha256"]) == (len(img.image), img.sha256)


def test_odd_strings_stay_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "odd.bin"
    odd = [("key", "line\nbreak"), ("bytes", "\udcff\udcfe"), ("tab", "a\tb")]
    path.write_bytes(write_v2([make_image(b"x", odd, kind="o", flags=1)]))
    rc, out, _ = inspect(capsys, str(path))
    assert rc == 0
    assert "    key=line\\nbreak\n" in out
    assert "    bytes=\\xff\\xfe\n" in out
    assert "    tab=a\\tb\n" in out
    assert "  flags:         0x1\n" in out
    rc, out, _ = inspect(capsys, "--json", str(path))
    strings = json.loads(out)["images"][0]["strings"]
    assert strings == [["key", "line\nbreak"], ["bytes", "\\xff\\xfe"], ["tab", "a\tb"]]


def test_elf_without_offloading_lists_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "plain.o"
    path.write_bytes(tiny_elf([(".text", 1, b"\x90")]))
    rc, out, err = inspect(capsys, str(path))
    assert (rc, err) == (0, "")
    assert out == (
        f"{path}: 0 images in 0 OffloadBinaries (0 sections of type "
        "SHT_LLVM_OFFLOADING)\n"
    )


# --- Errors through the real CLI ------------------------------------------------


@pytest.mark.parametrize("bad", BAD, ids=[b.name for b in BAD])
def test_cli_prints_one_error_line(tmp_path: Path, bad: Bad) -> None:
    data = bad.make()
    path = tmp_path / f"{bad.name}.bin"
    path.write_bytes(data)
    proc = run_cli("inspect", str(path))
    what, offset = bad.expected(data)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == f"error: {path}: {what} at offset {offset}\n"


def test_cli_json_error_is_the_same_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.bin"
    path.write_bytes(b"\x10\xff\x10\xad\x09" + bytes(40))
    proc = run_cli("inspect", "--json", str(path))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == f"error: {path}: unsupported version 9 at offset 4\n"


def test_cli_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.bin"
    proc = run_cli("inspect", str(path))
    assert proc.returncode == 1
    assert proc.stderr == f"error: {path}: cannot read: No such file or directory\n"


def test_what_is_not_a_regular_file_is_refused_at_once(tmp_path: Path) -> None:
    """A FIFO with no writer (open() would wait for one forever), a
    directory, a device: one line each, at once; and an empty path is named
    as such, not as the current directory."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, what in (
        (fifo, "a FIFO"),
        (tmp_path, "a directory"),
        (Path("/dev/zero"), "a character device"),
    ):
        proc = run_cli("inspect", str(path), timeout=20)
        assert (proc.returncode, proc.stdout) == (1, ""), path
        assert proc.stderr == f"error: {path}: not a regular file ({what})\n"
    proc = run_cli("inspect", "", timeout=20)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "error: '': an empty path names no file\n"


def test_a_large_file_is_not_read_before_its_header_is_checked(
    tmp_path: Path,
) -> None:
    """The attack's 4c: a sparse file of the magic and then zeros (3 GiB
    there) was read whole, twice, before its version was looked at."""
    path = tmp_path / "sparse.bin"
    with path.open("wb") as f:
        f.write(b"\x10\xff\x10\xad")
        f.truncate(256 << 20)
    tracemalloc.start()
    started = time.monotonic()
    with pytest.raises(FormatError, match=r"unsupported version 0 at offset 4$"):
        scan_file(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20
    assert time.monotonic() - started < 2.0


# --- The report of large strings ------------------------------------------------


def whole_as_text(raw: bytes) -> str:
    """The report's text of *raw*, made whole (the oracle of the pieces)."""
    return raw.decode("utf-8", "backslashreplace")


def whole_show(raw: bytes) -> str:
    text = whole_as_text(raw)
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


ODD_TEXT = st.text(
    st.sampled_from(["a", "\x01", "\n", "\\", "\xe9", "\u200b", "\u4e2d", "\U0001f600"])
).map(str.encode)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(raw=st.binary(max_size=40) | ODD_TEXT, chunk=st.integers(1, 9))
def test_strings_written_in_pieces_read_as_written_whole(
    raw: bytes, chunk: int
) -> None:
    """A character, or a byte that is not UTF-8, split between two pieces
    comes out as the whole string gives it, in text and in JSON."""
    assert "".join(inspect_mod.shown(raw, chunk)) == whole_show(raw)
    assert "".join(inspect_mod.json_chunks(inspect_mod.Text(raw), chunk=chunk)) == (
        json.dumps(whole_as_text(raw))
    )


def test_the_json_report_is_what_json_dump_writes() -> None:
    found = scan((DATA / "packed.v2.bin").read_bytes(), "FILE")
    doc = inspect_mod.to_json(found)

    def plain(value: object) -> object:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return str(value) if isinstance(value, inspect_mod.Text) else value

    assert "".join(inspect_mod.json_chunks(doc)) == json.dumps(plain(doc), indent=2)


def one_value(value: bytes, version: int = 2) -> bytes:
    """A binary of one image whose one value is *value*."""
    img = make_image(b"\x7fELF", [("k", decode(value))], kind="o")
    return write_v2([img]) if version == 2 else write_v3([img], "zstd")


LARGE = 8 << 20


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(
    "fill",
    [b"\x01", b"\x80", b"\xf0\x9f\x98\x80\x01"],
    ids=["ctrl", "not-utf8", "astral"],
)
def test_the_report_of_a_large_string_is_streamed(
    tmp_path: Path, fmt: str, fill: bytes
) -> None:
    """The attack's 4a and 4b: a value of control characters or of bytes
    that are not UTF-8 was escaped a character at a time into one list (text),
    or into one string of six characters a byte (JSON): 4.83 GB for 60 MiB.
    Streamed, the report of an 8 MiB value costs about the value once more."""
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(one_value(fill))
    large.write_bytes(one_value(fill * (LARGE // len(fill))))
    argv = [sys.executable, "-m", "kdl", "inspect"] + (
        ["--json"] if fmt == "json" else []
    )
    env = {"PYTHONPATH": str(ROOT)}
    base = measure([*argv, small], env=env)
    got = measure([*argv, large], env=env)
    assert (base.returncode, got.returncode) == (0, 0), got.stderr
    assert got.peak_rss_mb - base.peak_rss_mb < 2 * LARGE / 1e6 + 8


# --- Property: mutated real binaries ----------------------------------------------

SEEDS = [
    (DATA / "packed.v1.bin").read_bytes(),
    (DATA / "packed.v2.bin").read_bytes(),
    # Version 3 (LLVM main, #222774), compressed both ways and not at all.
    *(
        write_v3(
            [
                make_image(b"code " * 40, [("triple", "t"), ("arch", "a")], kind="o"),
                make_image(b"more " * 30, [("variant_tag", "x")], kind="cubin"),
            ],
            compression,
        )
        for compression in ("zstd", "zlib", None)
    ),
    (DATA / "embed-x86_64.o").read_bytes(),
    tiny_elf([(".llvm.offloading", ELF_SHT, (DATA / "packed.v2.bin").read_bytes())]),
]
BOUNDARY = [0, 1, 7, 8, 31, 32, 40, 71, 72, 2**31, 2**32 - 1, 2**63, 2**64 - 1]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "truncate", "field", "near-size"]))
        if not data:
            break
        # Mostly past the magic (hypothesis favours small numbers), so that
        # the mutation reaches the header, entries and strings.
        at = draw(st.integers(0, len(data) - 1) | st.integers(4, len(data) + 3))
        at = min(at, len(data) - 1)
        if how == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif how == "truncate":
            del data[at:]
        else:
            # Overwrite an aligned 8-byte (or 4/2-byte) field with a boundary
            # value, or with a value just around the data's own size.
            width = draw(st.sampled_from([8, 4, 2]))
            at = max(at - at % width, min(at, 4))
            if at + width > len(data):
                continue
            value = draw(st.sampled_from(BOUNDARY))
            if how == "near-size":
                value = len(data) + draw(st.integers(-80, 80))
            value %= 2 ** (8 * width)
            data[at : at + width] = value.to_bytes(width, "little")
    return bytes(data)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=mutated())
def test_mutated_binaries_parse_or_fail_cleanly(
    data: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # API: parses, or one FormatError naming an offset inside the data; and
    # never allocates much more than the data itself.
    tracemalloc.start()
    started = time.monotonic()
    try:
        found = scan(data, "mutant")
        images = found.images
    except FormatError as exc:
        event(f"error: {exc.what.split(' ')[0]}")
        assert exc.offset is not None
        assert 0 <= exc.offset <= len(data)
        images = None
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Time linear in the data: far under a second for these sizes.
    assert time.monotonic() - started < 1.0
    assert peak < 3 * len(data) + (1 << 20)
    if images is not None:
        event("parsed")
        for img in images:
            if found.binaries[img.binary_index].compression:
                continue  # its offsets are those of the inflated binary
            assert data[img.image_offset :][: len(img.image)] == img.image

    # CLI in-process: output and exit 0, or exactly one error line and exit 1.
    path = tmp_path / "mutant.bin"
    path.write_bytes(data)
    rc, out, err = inspect(capsys, str(path))
    if images is None:
        assert rc == 1
        assert out == ""
        assert err.count("\n") == 1
        assert err.startswith(f"error: {path}: ")
        assert err.rstrip("\n").rsplit(" at offset ", 1)[1].isdigit()
    else:
        assert (rc, err) == (0, "")
        assert out.startswith(f"{path}: {len(images)} image")


# --- Against LLVM 22 -------------------------------------------------------------


@llvm
def test_numbering_matches_objdump_for_an_openmp_executable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "t.c"
    src.write_text(
        "int main(void) {\n  int x = 0;\n#pragma omp target map(tofrom: x)\n"
        "  x = 1;\n  return x - 1;\n}\n"
    )
    exe = tmp_path / "t"
    subprocess.run(
        [
            str(tool("clang")),
            "-fopenmp",
            "-fopenmp-targets=x86_64-unknown-linux-gnu",
            str(src),
            "-o",
            str(exe),
        ],
        check=True,
        capture_output=True,
    )
    rc, out, _ = inspect(capsys, "--json", str(exe))
    assert rc == 0
    doc = json.loads(out)
    listed = objdump_offloading(exe)
    mine = [(i["index"], dict(map(tuple, i["strings"]))) for i in doc["images"]]
    assert [(n, s["triple"]) for n, s in mine] == [
        (n, d["triple"]) for n, d in enumerate(listed)
    ]
    assert doc["sections"][0]["name"] == ".llvm.offloading"
