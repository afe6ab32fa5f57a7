"""``kdl select``: the overlay's kdl-select driver behind the CLI.

Inputs are packed with the real llvm-offload-binary (version 1, as LLVM 22
writes them) and, for the version 2 path, with kdl's own writer; version 3 is
read from the fixtures LLVM main's llvm-offload-binary wrote
(tests/data/offload/packed.v3*.bin) and from kdl's writer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from kdl import cli, paths
from kdl.offload import select
from kdl.offload.binary import Image, make_image, write_v1, write_v2, write_v3
from kdl.offload.elf import amdgpu_header, cubin_header
from tests.offload_helpers import DATA

PACKER = paths.llvm_bin() / "llvm-offload-binary"
CUDA = "nvptx64-nvidia-cuda"
AMDHSA = "amdgcn-amd-amdhsa"
SM86 = f"--device=triple={CUDA},arch=sm_86"


def test_select_argv() -> None:
    tool, file = Path("/b/kdl-select"), Path("in.bin")
    assert select.select_argv(tool, "triple=T,arch=A", file) == [
        "/b/kdl-select",
        "--device=triple=T,arch=A",
        "in.bin",
    ]
    assert select.select_argv(tool, "triple=T", file, tag="fast", json=True) == [
        "/b/kdl-select",
        "--device=triple=T",
        "--tag=fast",
        "--json",
        "in.bin",
    ]
    assert select.select_argv(tool, "triple=T", file, posting_stack=True) == [
        "/b/kdl-select",
        "--device=triple=T",
        "--posting-stack",
        "in.bin",
    ]
    # The readers' limits go along when they are not the defaults.
    from kdl.offload.binary import Limits

    raised = Limits(inflated=1 << 30, binaries=10, strings=20)
    assert select.select_argv(tool, "triple=T", file, limits=raised) == [
        "/b/kdl-select",
        "--device=triple=T",
        "--max-inflated=1073741824",
        "--max-binaries=10",
        "--max-strings=20",
        "in.bin",
    ]
    assert "--max-strings=65536" not in select.select_argv(
        tool, "triple=T", file, limits=Limits()
    )


# --- Through the real driver ------------------------------------------------------

F = TypeVar("F", bound=Callable[..., None])


def overlay_test(test: F) -> F:
    """Mark a test that packs with llvm-offload-binary and runs kdl-select."""
    marks = [
        pytest.mark.llvm,
        pytest.mark.overlay,
        pytest.mark.slow,
        pytest.mark.skipif(not PACKER.is_file(), reason=f"no {PACKER}"),
    ]
    for mark in marks:
        test = mark(test)
    return test


def pack(out: Path, *images: str) -> Path:
    """llvm-offload-binary -o OUT --image=... for each *images* spec, where a
    spec names the payload file's extension first: ``cubin:arch=sm_80,...``.
    A cubin payload is the ELF header of its arch; anything else is text."""
    argv = [str(PACKER), "-o", str(out)]
    for n, spec in enumerate(images):
        ext, _, keys = spec.partition(":")
        payload = out.parent / f"{out.stem}-{n}.{ext}"
        arch = dict(k.split("=", 1) for k in keys.split(",")).get("arch", "")
        if ext == "cubin":
            payload.write_bytes(cubin_header(arch))
        else:
            payload.write_bytes(f"image {n} of {out.name}".encode())
        argv.append(f"--image=file={payload},{keys}")
    subprocess.run(argv, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def built_overlay() -> None:
    from kdl.build.overlay import build_overlay

    build_overlay()


@pytest.fixture
def cuda_file(tmp_path: Path, built_overlay: None) -> Path:
    return pack(
        tmp_path / "cuda.bin",
        f"cubin:triple={CUDA},arch=sm_80,kind=cuda",
        f"cubin:triple={CUDA},arch=sm_89,kind=cuda",
        f"s:triple={CUDA},arch=compute_75,kind=cuda",
        f"cubin:triple={CUDA},arch=sm_86,kind=cuda,variant_tag=debug",
        f"cubin:triple={CUDA},arch=sm_86,kind=cuda,min_sm=abc",
    )


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@overlay_test
def test_text_output(cuda_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "select", SM86, str(cuda_file))
    assert status == 0, err
    assert out.splitlines() == [
        "image 0: rank 3: sm_80, compatible fit",
        "image 1: rejected: sm_89 cubin does not run on compute capability 8.6",
        "image 2: rejected: neither ELF, bitcode nor PTX: the plugin's image "
        "checks do not accept it",
        # The keys (variant_tag, a malformed min_sm) change nothing.
        "image 3: rank 1: sm_86, native fit",
        "image 4: rank 2: sm_86, native fit",
        "first compatible: image 0",
        # The selected image's tag, as the loop with the keys reports it.
        "selected: image 3 (sm_86, native fit, variant_tag 'debug'); image 0: "
        "not chosen (sm_80, compatible fit)",
    ]
    assert err == ""
    status, stack, _ = run(capsys, "select", SM86, "--posting-stack", str(cuda_file))
    assert status == 0
    assert stack.splitlines()[:-1] == out.splitlines()[:-1]
    assert stack.splitlines()[-1] == (
        "selected: image 3 (sm_86, native fit); image 0: not chosen (sm_80, "
        "compatible fit)"
    )


@overlay_test
def test_variant_priority_orders_equal_ranks_with_the_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], built_overlay: None
) -> None:
    """With the proposals' keys (kdl apply's default) the higher priority
    first among images of equal rank, never above a better rank; a
    malformed one counts as none; --posting-stack keeps the file's order."""
    f = pack(
        tmp_path / "prio.bin",
        f"cubin:triple={CUDA},arch=sm_80,kind=cuda,variant_priority=9",
        f"cubin:triple={CUDA},arch=sm_86,kind=cuda,variant_priority=1",
        f"cubin:triple={CUDA},arch=sm_86,kind=cuda,variant_priority=x",
        f"cubin:triple={CUDA},arch=sm_86,kind=cuda,variant_priority=3,variant_tag=t",
    )
    doc = json.loads(run(capsys, "select", SM86, "--json", str(f))[1])
    assert doc["posting_stack"] is False
    assert doc["selected"] == 3
    assert [i["rank"] for i in doc["images"]] == [4, 2, 3, 1]
    doc = json.loads(
        run(capsys, "select", SM86, "--json", "--posting-stack", str(f))[1]
    )
    assert doc["posting_stack"] is True
    assert doc["selected"] == 1
    assert [i["rank"] for i in doc["images"]] == [4, 1, 2, 3]


@overlay_test
def test_json_output(cuda_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "select", f"{SM86},feature=tensor_core", "--json", str(cuda_file)
    )
    assert status == 0
    doc = json.loads(out)
    assert doc["device"] == {
        "triple": CUDA,
        "arch": "sm_86",
        "features": ["tensor_core"],
    }
    assert (doc["selected"], doc["first_compatible"]) == (3, 0)
    assert doc["selection"] == "ranked"
    assert doc["posting_stack"] is False
    assert [i["index"] for i in doc["images"]] == [0, 1, 2, 3, 4]
    keys = {"index", "triple", "arch", "kind", "compatible", "reason", "detail"}
    keys |= {"fit", "processor", "priority", "tag", "rank"}
    for image in doc["images"]:
        assert set(image) == keys
    ptx, exact, bad = doc["images"][2], doc["images"][3], doc["images"][4]
    assert ptx["kind"] == "s" and ptx["compatible"] is False and ptx["rank"] is None
    assert exact["tag"] == "debug" and exact["priority"] is None
    assert exact["compatible"] is True and exact["fit"] == "native"
    assert bad == {
        "index": 4,
        "triple": CUDA,
        "arch": "sm_86",
        "kind": "cubin",
        "compatible": True,
        "reason": "accepted",
        "detail": "sm_86, native fit",
        "fit": "native",
        # The rank reads the entry's arch, not the image's header.
        "processor": None,
        "priority": None,
        "tag": None,
        "rank": 2,
    }


@overlay_test
def test_none_compatible(cuda_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, "select", f"--device=triple={CUDA},arch=sm_70", str(cuda_file)
    )
    assert status == 1
    assert out.splitlines()[-1] == "selected: none"
    assert err == (
        f"error: {cuda_file}: no compatible image for {CUDA} sm_70; available: "
        "[0] sm_80 cubin, [1] sm_89 cubin, [2] compute_75 s, [3] sm_86 cubin, "
        "[4] sm_86 cubin\n"
    )
    status, out, _ = run(
        capsys, "select", f"--device=triple={AMDHSA},arch=gfx90a", str(cuda_file)
    )
    assert status == 1
    assert out.count("is not the plugin's") == 4


@overlay_test
def test_tag_is_ignored(cuda_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "select", SM86, "--tag=debug", str(cuda_file))
    assert status == 0
    assert out.splitlines()[-1].startswith("selected: image 3 (sm_86, native fit, ")
    assert err == "note: the rank reads no variant_tag; the tag 'debug' is ignored\n"
    status, out, _ = run(
        capsys, "select", SM86, "--tag=debug", "--json", str(cuda_file)
    )
    assert json.loads(out)["tag_ignored"] is True


@overlay_test
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--device=triple=nvptx64-nvidia-cuda,arch=sm_90a"],
            "error: --device: invalid NVPTX device architecture 'sm_90a': "
            "expected sm_XY such as sm_86\n",
        ),
        (
            ["--device=arch=sm_86"],
            "error: --device: no triple= given\n",
        ),
        (
            ["--device=triple=amdgcn-amd-amdhsa,arch=gfx90a,colour=red"],
            "error: --device: unknown key 'colour' (expected triple, arch, isa "
            "or feature)\n",
        ),
    ],
)
def test_bad_arguments(
    cuda_file: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    status, out, err = run(capsys, "select", *argv, str(cuda_file))
    assert (status, out, err) == (2, "", message)


@overlay_test
def test_unreadable_files(
    tmp_path: Path, built_overlay: None, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.bin"
    status, _, err = run(capsys, "select", SM86, str(missing))
    assert status == 2
    assert err == f"error: {missing}: cannot read: No such file or directory\n"
    text = tmp_path / "notes.txt"
    text.write_text("not an offload file\n")
    status, out, err = run(capsys, "select", SM86, str(text))
    assert (status, out) == (2, "")
    assert err == (
        f"error: {text}: not an OffloadBinary or ELF file (magic 6e 6f 74 20, "
        "expected 10 ff 10 ad)\n"
    )


@overlay_test
def test_version2_input_is_read_as_it_is(
    tmp_path: Path, built_overlay: None, capsys: pytest.CaptureFixture[str]
) -> None:
    def code_object(processor: str, xnack: int) -> bytes:
        header = bytearray(amdgpu_header(processor))
        header[48:52] = (int.from_bytes(header[48:52], "little") | xnack).to_bytes(
            4, "little"
        )
        return bytes(header)

    images = [
        make_image(
            code_object("gfx90a", 0x300),  # xnack+
            [("triple", AMDHSA), ("arch", "gfx90a:xnack+")],
            kind="o",
            offload_kind="hip",
        ),
        make_image(
            code_object("gfx942", 0x100),
            [("triple", AMDHSA), ("arch", "gfx942"), ("variant_priority", "2")],
            kind="o",
            offload_kind="hip",
        ),
        make_image(
            code_object("gfx90a", 0x100),  # xnack any
            [("triple", AMDHSA), ("arch", "gfx90a")],
            kind="o",
            offload_kind="hip",
        ),
    ]
    v1, v2 = tmp_path / "v1.bin", tmp_path / "v2.bin"
    v1.write_bytes(write_v1(images))
    v2.write_bytes(write_v2(images))
    device = f"--device=triple={AMDHSA},arch=gfx90a:xnack-"
    status1, out1, _ = run(capsys, "select", device, str(v1))
    status2, out2, _ = run(capsys, "select", device, str(v2))
    assert status1 == status2 == 0
    assert out1 == out2
    assert out2.splitlines()[-1] == "selected: image 2 (gfx90a, any mode fit)"
    # The driver reads the user's file and names it.
    status, _, err = run(
        capsys, "select", f"--device=triple={AMDHSA},arch=gfx1100", str(v2)
    )
    assert status == 1
    assert err.startswith(f"error: {v2}: no compatible image for ")


#: LLVM main's llvm-offload-binary (24, the sid root) on PACKED_IMAGES, the
#: images of packed.v1.bin: plain, --compress, --compress
#: --compression-format=zlib (tests/data/offload/README.md).
V3_FIXTURES = ["packed.v3.bin", "packed.v3.zstd.bin", "packed.v3.zlib.bin"]


@overlay_test
@pytest.mark.parametrize("name", V3_FIXTURES)
def test_version3_from_llvm_main_reads_as_version1(
    name: str, built_overlay: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """What LLVM main writes, compressed or not, gives the answers the same
    images packed by LLVM 22 give: every entry, key and image is read. (The
    code objects are not executables: none loads on gfx90a; the CUDA plugin
    with the series takes the PTX for sm_80 on sm_80.)"""
    v1, v3 = DATA / "packed.v1.bin", DATA / name
    assert v3.read_bytes()[4:8] == (3).to_bytes(4, "little")
    for device, status in (
        (f"--device=triple={AMDHSA},arch=gfx90a:xnack-", 1),
        (f"--device=triple={CUDA},arch=sm_80", 0),
    ):
        for extra in ([], ["--json"]):
            want = run(capsys, "select", device, *extra, str(v1))
            got = run(capsys, "select", device, *extra, str(v3))
            assert got[0] == want[0] == status
            assert (got[1], got[2].replace(str(v3), "FILE")) == (
                want[1],
                want[2].replace(str(v1), "FILE"),
            )
    doc = json.loads(run(capsys, "select", device, "--json", str(v3))[1])
    assert [(i["triple"], i["arch"], i["kind"], i["tag"]) for i in doc["images"]] == [
        (CUDA, "sm_80", "s", "generic"),
        (AMDHSA, "gfx90a:xnack-", "o", "optimized"),
        (AMDHSA, "gfx90a", "o", None),
    ]


def cubins() -> list[Image]:
    return [
        make_image(
            cubin_header(arch),
            [("triple", CUDA), ("arch", arch), *extra],
            kind="cubin",
            offload_kind="cuda",
        )
        for arch, extra in [
            ("sm_80", []),
            ("sm_89", []),
            ("sm_86", [("variant_tag", "debug")]),
            ("sm_80", [("variant_priority", "3")]),
        ]
    ]


@overlay_test
@pytest.mark.parametrize("compression", ["zstd", "zlib", None])
def test_version3_entries_are_ranked_from_the_inflated_binary(
    compression: str | None,
    tmp_path: Path,
    built_overlay: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The entries of a compressed binary are views of the inflated copy the
    reader keeps: ranked, described and printed as version 2's; a version 1
    binary after it (at the next 8 bytes) numbers on."""
    images = cubins()
    v2, v3 = tmp_path / "v2.bin", tmp_path / "v3.bin"
    v2.write_bytes(write_v2(images[:3]) + write_v1(images[3:]))
    v3.write_bytes(write_v3(images[:3], compression) + write_v1(images[3:]))
    for extra in ([], ["--json"], ["--tag=debug"]):
        want = run(capsys, "select", SM86, *extra, str(v2))
        got = run(capsys, "select", SM86, *extra, str(v3))
        assert got == want and got[0] == 0
    out = run(capsys, "select", SM86, str(v3))[1].splitlines()
    assert out[2] == "image 2: rank 1: sm_86, native fit"
    assert out[-1] == (
        "selected: image 2 (sm_86, native fit, variant_tag 'debug'); image 0: not "
        "chosen (sm_80, compatible fit)"
    )


def _u64(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + value.to_bytes(8, "little") + data[at + 8 :]


def _truncated(data: bytes, keep: int) -> bytes:
    """The first *keep* bytes of a compressed binary, its Size saying so."""
    return _u64(data[:keep], 8, keep)


_ZSTD = (DATA / "packed.v3.zstd.bin").read_bytes()
_ZLIB = (DATA / "packed.v3.zlib.bin").read_bytes()
_INFLATED = int.from_bytes(_ZSTD[32:40], "little")
_BODY = _INFLATED - 40


@overlay_test
@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            _u64(_ZSTD, 32, _INFLATED + 8),
            f"the zstd stream inflates to {_BODY} bytes, its header says {_BODY + 8}",
            id="zstd-inflated-size-too-large",
        ),
        pytest.param(
            _u64(_ZSTD, 32, _INFLATED - 8),
            f"the zstd stream does not inflate to the {_BODY - 8} bytes its "
            "header says (",
            id="zstd-inflated-size-too-small",
        ),
        pytest.param(
            _u64(_ZLIB, 32, _INFLATED + 8),
            f"the zlib stream inflates to {_BODY} bytes, its header says {_BODY + 8}",
            id="zlib-inflated-size-too-large",
        ),
        pytest.param(
            _u64(_ZLIB, 32, _INFLATED - 8),
            f"the zlib stream does not inflate to the {_BODY - 8} bytes its "
            "header says (zlib error: Z_BUF_ERROR)",
            id="zlib-inflated-size-too-small",
        ),
        pytest.param(
            _u64(_ZSTD, 32, 1 << 62),
            f"inflated size {1 << 62} is not believable for ",
            id="inflated-size-unbelievable",
        ),
        pytest.param(
            _u64(_ZLIB, 32, 39),
            "inflated size 39 is not believable for ",
            id="inflated-size-below-the-header",
        ),
        pytest.param(
            _truncated(_ZSTD, len(_ZSTD) // 2),
            f"the zstd stream does not inflate to the {_BODY} bytes its header says (",
            id="zstd-truncated",
        ),
        pytest.param(
            _truncated(_ZLIB, len(_ZLIB) // 2),
            f"the zlib stream does not inflate to the {_BODY} bytes its "
            "header says (zlib error: ",
            id="zlib-truncated",
        ),
        pytest.param(
            _ZSTD[:40] + bytes(len(_ZSTD) - 40),
            "unknown compression format (neither zstd nor zlib)",
            id="not-compressed",
        ),
        pytest.param(
            _u64(_ZSTD, 16, 32),
            "entries offset 32, expected 40",
            id="entries-offset",
        ),
        pytest.param(
            _u64(_ZLIB, 24, 1 << 40),
            "inflated: entries outside the binary",
            id="entry-count-past-the-inflated-binary",
        ),
    ],
)
def test_a_hostile_version3_header_is_one_line_and_exit_2(
    data: bytes,
    message: str,
    tmp_path: Path,
    built_overlay: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A compressed binary whose InflatedSize lies, is past belief (nothing
    is allocated from it), or whose stream is cut short: one error line."""
    bad = tmp_path / "bad.bin"
    bad.write_bytes(data)
    status, out, err = run(capsys, "select", SM86, str(bad))
    assert (status, out) == (2, "")
    prefix = f"error: {bad}: malformed OffloadBinary at offset 0: "
    if not message.startswith("inflated: "):
        prefix += "compressed binary: "
    assert err.startswith(prefix + message), err
    assert err.count("\n") == 1


def test_what_is_not_a_regular_file_is_refused_before_the_driver_runs(
    tmp_path: Path,
) -> None:
    """The attack's 5e: a FIFO with no writer made the driver wait forever
    in open(). A FIFO, a directory, a device and an empty path are refused
    in one line, exit 2, before anything is built or run."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=str(paths.ROOT))
    for file, message in (
        (str(fifo), f"{fifo}: not a regular file (a FIFO)"),
        (str(tmp_path), f"{tmp_path}: not a regular file (a directory)"),
        ("/dev/null", "/dev/null: not a regular file (a character device)"),
        ("", "'': an empty path names no file"),
    ):
        run = subprocess.run(
            [sys.executable, "-m", "kdl", "select", SM86, "--", file],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert (run.returncode, run.stdout) == (2, ""), file
        assert run.stderr == f"error: {message}\n"


@overlay_test
def test_input_is_read_once_from_stdin(
    cuda_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``-`` is standard input, read once and handed to the driver."""
    import io

    status, want, _ = run(capsys, "select", SM86, str(cuda_file))
    monkeypatch.setattr(
        "sys.stdin", io.TextIOWrapper(io.BytesIO(cuda_file.read_bytes()))
    )
    status, out, _ = run(capsys, "select", SM86, "-")
    assert (status, out) == (0, want)


@overlay_test
def test_a_header_whose_sizes_lie_is_one_line_and_exit_2(
    cuda_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The container reader bounds every offset: a binary whose Size points
    past the file is a one-line error, exit 2, not a crash."""
    data = bytearray(cuda_file.read_bytes())
    data[8:16] = (1 << 40).to_bytes(8, "little")  # the binary's size field
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(data))
    status, out, err = run(capsys, "select", SM86, str(bad))
    assert (status, out) == (2, "")
    assert err.startswith(f"error: {bad}: ") and err.count("\n") == 1


@overlay_test
def test_control_characters_are_escaped(
    tmp_path: Path, built_overlay: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = pack(tmp_path / "esc.bin", f"cubin:triple={CUDA},arch=sm_90,kind=cuda")
    # The same length, so no offset moves.
    data = out_file.read_bytes().replace(b"sm_90\0", b"\x1b[2Jx\0")
    out_file.write_bytes(data)
    status, out, err = run(capsys, "select", SM86, str(out_file))
    assert status == 1
    assert "\x1b" not in out + err
    assert "\\x1b[2Jx" in err


@overlay_test
def test_batch_answers_are_the_json_documents(
    cuda_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--batch``: one line per question, the ``--json`` document with the
    exit status and error the question alone would give; bad lines answered."""
    from kdl.build.overlay import build_overlay

    tool = build_overlay(report=False).select_tool
    amd = f"triple={AMDHSA},arch=gfx90a"
    questions = [
        {"device": SM86.removeprefix("--device="), "file": str(cuda_file)},
        {"device": amd, "file": str(cuda_file), "tag": "debug"},
        {"device": "triple=x", "file": str(tmp_path / "missing.bin")},
        "not json",
        {"device": amd},
        {
            "device": SM86.removeprefix("--device="),
            "file": str(cuda_file),
            "posting_stack": True,
        },
        {"device": amd, "file": str(cuda_file), "posting_stack": "yes"},
    ]
    stdin = "\n".join(q if isinstance(q, str) else json.dumps(q) for q in questions)
    proc = subprocess.run(
        [str(tool), "--batch"],
        input=stdin + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a["status"] for a in answers] == [0, 1, 2, 2, 2, 0, 2]
    assert [a.get("tag_ignored") for a in answers] == [
        False,
        True,
        None,
        None,
        None,
        False,
        None,
    ]
    for question, got in zip(
        [*questions[:2], questions[5]], [*answers[:2], answers[5]], strict=True
    ):
        assert isinstance(question, dict)
        argv = ["select", f"--device={question['device']}", "--json"]
        if "tag" in question:
            argv.append(f"--tag={question['tag']}")
        if question.get("posting_stack"):
            argv.append("--posting-stack")
        status, out, err = run(capsys, *argv, question["file"])
        want = json.loads(out)
        assert list(got)[: len(want)] == list(want)
        assert {k: got[k] for k in want} == want
        assert got["status"] == status
        assert (got["error"] is None) == (status == 0)
        if status == 1:
            assert err.endswith(f"error: {got['error']}\n")
    assert answers[2]["error"] == "--device: unknown triple 'x'"
    assert answers[3]["error"].startswith("--batch: ")
    assert answers[4]["error"] == (
        '--batch: expected string members "device" and "file"'
    )
    assert answers[6]["error"] == '--batch: "posting_stack" must be true or false'


@overlay_test
def test_json_strings_outlive_the_files_buffer(
    tmp_path: Path, built_overlay: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Large images (the file is mapped, and unmapped once read): every
    string of the document is a copy, not a view of the file."""
    images = [
        make_image(
            cubin_header(arch) + bytes(256 * 1024),
            [("triple", CUDA), ("arch", arch), ("variant_tag", f"t{n}")],
            kind="cubin",
            offload_kind="cuda",
        )
        for n, arch in enumerate(["sm_80", "sm_86"])
    ]
    big = tmp_path / "big.bin"
    big.write_bytes(write_v2(images))
    status, out, err = run(capsys, "select", SM86, "--json", str(big))
    assert status == 0, err
    doc = json.loads(out)
    assert [(i["triple"], i["arch"], i["tag"]) for i in doc["images"]] == [
        (CUDA, "sm_80", "t0"),
        (CUDA, "sm_86", "t1"),
    ]
    from kdl.build.overlay import build_overlay

    question = {"device": SM86.removeprefix("--device="), "file": str(big)}
    proc = subprocess.run(
        [str(build_overlay(report=False).select_tool), "--batch"],
        input=json.dumps(question) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    answer = json.loads(proc.stdout)
    assert answer["device"]["features"] == []
    assert {k: answer[k] for k in doc} == doc


@overlay_test
def test_json_fit_reads_the_entry_arch(
    tmp_path: Path, built_overlay: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """An sm_90a cubin of CUDA ELF ABI 2 (ptxas 13) carries no "a" in its
    header; its entry's arch says it, and the rank reads the arch: native
    code for sm_90, as specific as code for the device can be."""
    image = make_image(
        cubin_header("sm_90a", abi=2),
        [("triple", CUDA), ("arch", "sm_90a")],
        kind="cubin",
        offload_kind="openmp",
    )
    f = tmp_path / "abi2.bin"
    f.write_bytes(write_v2([image]))
    status, out, err = run(
        capsys, "select", f"--device=triple={CUDA},arch=sm_90", "--json", str(f)
    )
    assert status == 0, err
    (img,) = json.loads(out)["images"]
    assert (img["detail"], img["fit"], img["processor"]) == (
        "sm_90a, native fit",
        "native",
        None,
    )
