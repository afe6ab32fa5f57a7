"""One answer from both OffloadBinary readers.

The Python reader (``kdl inspect``, :mod:`kdl.offload.binary`) and the C++
one (``overlay/container/OffloadEntries.h``: ``kdl select``; here its
``kdl-entries`` tool) get the same hostile corpus (:mod:`kdl.offload.hostile`:
bombs, runs of binaries, aliased strings, overlapping regions, ELF sections
over the same bytes, truncations, offsets past the end), the malformed inputs
of test_offload_binary.py, the committed fixtures and, where ``kdl fuzz`` has
run, the fuzzer's corpus. The rule is the Python reader's (its checks are the
stricter, and documented): each file is accepted by both with the same
entries (kinds, flags, image bytes, triple and arch), or refused by both.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from kdl import fuzz
from kdl.errors import FormatError
from kdl.offload import binary, hostile
from kdl.offload.binary import Limits
from kdl.offload.layout import encode
from tests.offload_helpers import BAD, DATA

Entries = list[tuple[int, int, int, int, str, str, str]] | None


@pytest.fixture(scope="module")
def entries_tool() -> Path:
    from kdl.build.overlay import build_overlay

    overlay = build_overlay(report=False, targets=["kdl-entries"])
    tool = overlay.bin_dir / "kdl-entries"
    assert tool.is_file(), f"the overlay build made no {tool}"
    return tool


def python_reads(data: bytes, limits: Limits) -> Entries:
    try:
        found = binary.scan(data, "input", limits)
    except FormatError:
        return None
    return [
        (
            img.image_kind_id,
            img.offload_kind,
            img.flags,
            len(img.image),
            hashlib.sha256(img.image).hexdigest(),
            encode(img.get("triple")).hex(),
            encode(img.get("arch")).hex(),
        )
        for img in found.images
    ]


def cxx_reads(tool: Path, path: Path, limits: Limits) -> tuple[Entries, str]:
    run = subprocess.run(
        [
            tool,
            f"--max-inflated={limits.inflated}",
            f"--max-binaries={limits.binaries}",
            f"--max-strings={limits.strings}",
            path,
        ],
        capture_output=True,
        text=True,
        # The C++ reader names a hostile file's bytes as they are.
        errors="backslashreplace",
        timeout=60,
        check=False,
    )
    if run.returncode != 0:
        assert run.returncode == 2, (path.name, run.returncode, run.stderr)
        assert run.stderr.startswith("error: ") and run.stderr.count("\n") == 1
        return None, run.stderr
    doc = json.loads(run.stdout)["entries"]
    return [
        (
            e["image_kind"],
            e["offload_kind"],
            e["flags"],
            e["size"],
            e["sha256"],
            e["triple"],
            e["arch"],
        )
        for e in doc
    ], ""


def the_corpus() -> dict[str, bytes]:
    found = hostile.corpus()
    for bad in BAD:
        found[f"bad-{bad.name}"] = bad.make()
    for fixture in sorted(DATA.glob("*.bin")):
        found[f"fixture-{fixture.name}"] = fixture.read_bytes()
    fuzzed = fuzz.FUZZ_DIR / "corpus"
    if fuzzed.is_dir():
        for seed in sorted(fuzzed.iterdir())[:2000]:
            if seed.is_file():
                found[f"fuzz-{seed.name}"] = seed.read_bytes()
    return found


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def zstd_unchecked(data: bytes) -> bool:
    """Whether *data* holds a zstd frame without a checksum (as LLVM writes
    them). Two libzstd versions (the Python package's own, the system's the
    C++ reader links) may inflate a corrupted one to different bytes, each
    without an error: nothing in the frame tells which is right."""
    import zstandard

    at = data.find(_ZSTD_MAGIC)
    while at >= 0:
        try:
            if not zstandard.get_frame_parameters(data[at:]).has_checksum:
                return True
        except zstandard.ZstdError:
            pass
        at = data.find(_ZSTD_MAGIC, at + 1)
    return False


def _disagreements(
    tool: Path, files: dict[str, bytes], tmp_path: Path, limits: Limits
) -> tuple[list[str], int]:
    differ, accepted = [], 0
    for name, data in sorted(files.items()):
        path = tmp_path / "input.bin"
        path.write_bytes(data)
        py = python_reads(data, limits)
        cxx, why = cxx_reads(tool, path, limits)
        if py is not None and cxx is not None and py != cxx and zstd_unchecked(data):
            # Both accept; their libzstd versions inflate a corrupted
            # unchecked frame differently (found by kdl fuzz's corpus).
            accepted += 1
            continue
        if py != cxx:
            said = "refused" if py is None else f"{len(py)} entries"
            got = why.strip() if cxx is None else f"{len(cxx)} entries"
            differ.append(f"{name}: python {said}, c++ {got}")
        accepted += py is not None
    return differ, accepted


@pytest.mark.overlay
def test_both_readers_give_one_answer_on_the_hostile_corpus(
    entries_tool: Path, tmp_path: Path
) -> None:
    files = the_corpus()
    differ, accepted = _disagreements(entries_tool, files, tmp_path, Limits())
    assert differ == []
    # Both kinds of answer are there in numbers: the test cannot pass by
    # both readers refusing (or accepting) everything.
    assert accepted >= 15 and len(files) - accepted >= 150, (accepted, len(files))


@pytest.mark.overlay
def test_raised_limits_are_the_same_limits_in_both(
    entries_tool: Path, tmp_path: Path
) -> None:
    """--max-inflated, --max-binaries and --max-strings move both readers'
    bounds alike."""
    small = hostile.corpus()
    names = ("bombs-9x8m-zlib", "concat-v1-x5000", "zerolen-5000", "strings-65537")
    files = {name: small[name] for name in names}
    raised = Limits(inflated=80 << 20, binaries=6000, strings=70000)
    differ, accepted = _disagreements(entries_tool, files, tmp_path, raised)
    assert differ == [] and accepted == 4
    lowered = Limits(inflated=1 << 20, binaries=10, strings=100)
    differ, accepted = _disagreements(entries_tool, files, tmp_path, lowered)
    assert differ == [] and accepted == 0
