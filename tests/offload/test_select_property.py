"""Property test of ``kdl-select`` against the rank it is built on.

Each example draws a device and a set of images: cubin headers of several
compute capabilities (CUDA ELF ABI 1 and 2, some architecture-specific),
AMDGPU code-object headers (specific and generic processors, xnack modes,
the entry's arch naming the target ID), bitcode modules for either vendor
under any arch (compiled at load), and images no plugin accepts, each with
random keys, some malformed. There is no model of the rules here: the rank
(the series' ``OffloadTargetRank.cpp``, as the release/22.x backport creates
it) is asked through ``kdl-rank-diff``, the overlay's build of
``tools/rank/RankDiff.cpp`` on the same objects, and for every set:

* the answer is well formed: ranks 1..N over the accepted images and none
  for the rest, the choice ranked 1, today's choice the first accepted;
* each accepted image's fit and "compiled at load" are what the rank
  answers for its entry's triple, arch and image kind on the device's
  (triple, target ID), and the order is the series' loop's (RankDiff
  ``--loop``: ranked, a stable sort);
* along that order the rank's documented key never decreases: code that
  runs first, then native code before code compiled at load, then the fit;
* adding an image no plugin accepts, or dropping the keys other than
  triple and arch, never changes the choice;
* with the proposals' keys (what ``kdl apply`` applies by default; the
  checks above ask with ``"posting_stack": true``, the posted series alone)
  the verdicts are the same, the coarse key above still never decreases,
  and every image the order moves before one the posted series tries first
  carries a higher variant_priority; without priorities the order is the
  posted series'.

Hypothesis runs derandomized, so every run checks the same sets; pinned
examples check a choice for each GPU rule, as the lit tests do. All
questions go to one ``kdl-select --batch`` process
(tests/offload/test_select.py checks that its answers are the ``--json``
ones).
"""

from __future__ import annotations

import functools
import json
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kdl import paths
from kdl.offload.binary import make_image, write_v1
from kdl.offload.elf import (
    ELFABIVERSION_AMDGPU_HSA_V5,
    ELFOSABI_AMDGPU_HSA,
    EM_AMDGPU,
    cubin_header,
    elf_header,
)

MAX_EXAMPLES = 300

TOOL = paths.OVERLAY_BUILD / "bin" / "kdl-select"
RANK_DIFF = paths.OVERLAY_BUILD / "bin" / "kdl-rank-diff"

pytestmark = [
    pytest.mark.overlay,
    pytest.mark.skipif(not TOOL.is_file(), reason=f"{TOOL} not built (kdl build)"),
    pytest.mark.skipif(
        not RANK_DIFF.is_file(), reason=f"{RANK_DIFF} not built (kdl build)"
    ),
]

NVPTX = "nvptx64-nvidia-cuda"
AMDGCN = "amdgcn-amd-amdhsa"

SMS = (75, 80, 86, 87, 89, 90, 100, 103, 120)
#: EF_AMDGPU_MACH of the processors drawn (llvm/BinaryFormat/ELF.h).
MACH = {"gfx90a": 0x3F, "gfx942": 0x4C, "gfx950": 0x4F, "gfx9-4-generic": 0x5F}
#: EF_AMDGPU_FEATURE_XNACK_*_V4: None is "any".
XNACK = {None: 0x100, "-": 0x200, "+": 0x300}
#: The fits' names (getOffloadTargetFitName), in OffloadTargetFit's order.
FIT = ("native", "any mode", "compatible", "none")


@dataclass(frozen=True)
class Img:
    kind: str  # "cubin", "amdgpu", "bitcode" (compiled at load) or "junk"
    arch: str = ""
    xnack: str | None = None
    abi: int = 1
    keys: tuple[tuple[str, str], ...] = ()
    uid: int = 0
    triple: str = ""  # the bitcode module's

    def payload(self) -> bytes:
        tag = self.uid.to_bytes(4, "little")
        if self.kind == "cubin":
            return cubin_header(self.arch, abi=self.abi) + tag
        if self.kind == "bitcode":
            return bitcode(self.triple, self.uid)
        if self.kind == "amdgpu":
            flags = MACH[self.arch] | XNACK[self.xnack]
            if self.arch.endswith("-generic"):
                flags |= 1 << 24  # generic version 1
            header = elf_header(
                EM_AMDGPU, flags, ELFOSABI_AMDGPU_HSA, ELFABIVERSION_AMDGPU_HSA_V5
            )
            return header + tag
        return b"junk" + tag

    def entry_arch(self) -> str:
        """The entry's "arch": an AMDGPU target ID carries the xnack mode."""
        if self.kind == "amdgpu" and self.xnack is not None:
            return f"{self.arch}:xnack{self.xnack}"
        return self.arch or "junk"


@dataclass(frozen=True)
class Device:
    triple: str
    arch: str  # sm_XY, or an AMDGPU target ID such as gfx942:xnack-
    isas: tuple[str, ...] = ()

    def spec(self) -> str:
        return ",".join(
            [f"triple={self.triple}", f"arch={self.arch}"]
            + [f"isa={isa}" for isa in self.isas]
        )


@functools.cache
def bitcode(triple: str, uid: int) -> bytes:
    """A real bitcode module for *triple* (llvm-as), one per uid."""
    text = f'target triple = "{triple}"\n@kdl_uid = global i32 {uid}\n'
    return subprocess.run(
        [str(paths.llvm_bin() / "llvm-as"), "-o", "-"],
        input=text.encode(),
        capture_output=True,
        check=True,
    ).stdout


# --- Drawing cases ----------------------------------------------------------------


@st.composite
def keys(draw: st.DrawFn) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    if draw(st.integers(0, 2)) == 0:
        out.append(("variant_priority", draw(st.sampled_from(["0", "1", "3", "x"]))))
    if draw(st.integers(0, 4)) == 0:
        out.append(("min_sm", draw(st.sampled_from(["80", "90", "100", "8.6"]))))
    return tuple(out)


@st.composite
def images(draw: st.DrawFn) -> Img:
    kind = draw(
        st.sampled_from(["cubin", "cubin", "amdgpu", "amdgpu", "bitcode", "junk"])
    )
    if kind == "cubin":
        sm = draw(st.sampled_from(SMS))
        specific = sm in (90, 100) and draw(st.booleans())
        arch = f"sm_{sm}{'a' if specific else ''}"
        abi = 2 if sm >= 100 else 1
        return Img(kind, arch, abi=abi, keys=draw(keys()))
    if kind == "amdgpu":
        arch = draw(st.sampled_from(sorted(MACH)))
        xnack = draw(st.sampled_from([None, "-", "+"]))
        return Img(kind, arch, xnack, keys=draw(keys()))
    if kind == "bitcode":
        # Any arch: the plugin checks the module's architecture only.
        triple = draw(st.sampled_from([NVPTX, AMDGCN]))
        archs = [f"sm_{sm}" for sm in SMS] + ["sm_90a"] if triple == NVPTX else MACH
        return Img(kind, draw(st.sampled_from(sorted(archs))), triple=triple)
    return Img(kind)


@st.composite
def devices(draw: st.DrawFn) -> Device:
    if draw(st.booleans()):
        return Device(NVPTX, f"sm_{draw(st.sampled_from(SMS))}")
    processor = draw(st.sampled_from(["gfx90a", "gfx942", "gfx950"]))
    xnack = draw(st.sampled_from(["-", "+"]))
    isas: tuple[str, ...] = ()
    if processor != "gfx90a" and draw(st.booleans()):
        isas = (f"gfx9-4-generic:xnack{xnack}",)
    return Device(AMDGCN, f"{processor}:xnack{xnack}", isas)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Device, list[Img], int]:
    dev = draw(devices())
    imgs = draw(st.lists(images(), min_size=1, max_size=8))
    imgs = [replace(img, uid=i) for i, img in enumerate(imgs)]
    where = draw(st.integers(0, len(imgs)))
    return dev, imgs, where


# --- Running kdl-select -------------------------------------------------------------


def pack(path: Path, imgs: Sequence[Img], dev: Device) -> None:
    triple = {"cubin": NVPTX, "amdgpu": AMDGCN}
    path.write_bytes(
        write_v1(
            make_image(
                img.payload(),
                [
                    ("triple", img.triple or triple.get(img.kind, dev.triple)),
                    ("arch", img.entry_arch()),
                    *img.keys,
                ],
                kind="bc" if img.kind == "bitcode" else "o",
                offload_kind="openmp",
            )
            for img in imgs
        )
    )


class Selector:
    """One ``kdl-select --batch`` process, asked one question at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [str(TOOL), "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __call__(
        self, path: Path, dev: Device, *, posting_stack: bool = True
    ) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        question = {
            "device": dev.spec(),
            "file": str(path),
            "posting_stack": posting_stack,
        }
        self.proc.stdin.write(json.dumps(question) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"kdl-select --batch exited with {self.proc.poll()}"
        result: dict[str, Any] = json.loads(line)
        assert result["status"] in (0, 1), result["error"]
        return result

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def select() -> Iterator[Selector]:
    selector = Selector()
    yield selector
    assert selector.close() == 0


class RankDiff:
    """The rank's own answers: ``kdl-rank-diff``, one run per question set."""

    def _run(self, lines: list[str], *args: str) -> list[str]:
        done = subprocess.run(
            [str(RANK_DIFF), *args],
            input="".join(f"{line}\n" for line in lines),
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.splitlines()

    def fits(
        self, dev: Device, entries: Sequence[tuple[str, str, str]]
    ) -> list[tuple[str, bool]]:
        """(fit, compiled at load) of each (triple, arch, kind) on *dev*."""
        lines = ["\t".join([*e, dev.triple, dev.arch]) for e in entries]
        out = [line.split("\t") for line in self._run(lines)]
        return [(fields[0], fields[1] == "1") for fields in out]

    def loop(self, dev: Device, entries: Sequence[tuple[str, str, str]]) -> list[int]:
        """The order the series' loop tries *entries* in on *dev*."""
        line = "\t".join([dev.triple, dev.arch, *(",".join(e) for e in entries)])
        (order,) = self._run([line], "--loop")
        return [int(i) for i in order.split()]


def priority(img: Img) -> int:
    """*img*'s variant_priority as OffloadBinary::getVariantPriority reads it
    (patches/proposals/0001): a decimal number of at most 32 bits, else 0."""
    value = dict(img.keys).get("variant_priority", "")
    ok = value.isascii() and value.isdigit() and int(value) < 2**32
    return int(value) if ok else 0


def check(
    select: Selector, dev: Device, imgs: list[Img], where: int, workdir: Path
) -> None:
    path = workdir / "set.bin"
    pack(path, imgs, dev)
    got = select(path, dev)
    case = f"{dev} {imgs}"
    images = got["images"]
    assert len(images) == len(imgs), case
    accepted = [i for i, img in enumerate(images) if img["compatible"]]
    for img in images:
        ranked_here = img["rank"] is not None
        assert ranked_here == (img["fit"] is not None) == img["compatible"], case
    ranked = sorted(accepted, key=lambda i: int(images[i]["rank"]))
    assert [images[i]["rank"] for i in ranked] == list(range(1, len(ranked) + 1))
    assert got["first_compatible"] == (accepted[0] if accepted else None), case
    assert got["selected"] == (ranked[0] if ranked else None), case
    assert got["status"] == (0 if accepted else 1), case
    if not accepted:
        return

    # Each accepted image as the rank answers for its entry, in the loop's
    # order.
    entries = [
        (images[i]["triple"], images[i]["arch"], images[i]["kind"]) for i in accepted
    ]
    fits = RankDiff().fits(dev, entries)
    for i, (fit, at_load) in zip(accepted, fits, strict=True):
        assert images[i]["fit"] == fit, case
        assert images[i]["detail"].endswith(", compiled at load") is at_load, case
    order = RankDiff().loop(dev, entries)
    assert [accepted[k] for k in order] == ranked, case
    key_of = {
        i: (fit == "none", at_load, FIT.index(fit))
        for i, (fit, at_load) in zip(accepted, fits, strict=True)
    }
    keys = [key_of[i] for i in ranked]
    assert keys == sorted(keys), case

    # With the proposals' keys: the same verdicts; an image moves before one
    # the posted series tries first only for a higher variant_priority.
    keyed = select(path, dev, posting_stack=False)
    assert [
        {k: v for k, v in img.items() if k != "rank"} for img in keyed["images"]
    ] == [{k: v for k, v in img.items() if k != "rank"} for img in images], case
    by_keys = sorted(accepted, key=lambda i: int(keyed["images"][i]["rank"]))
    assert keyed["selected"] == by_keys[0], case
    assert [key_of[i] for i in by_keys] == sorted(keys), case
    place = {i: n for n, i in enumerate(ranked)}
    for n, i in enumerate(by_keys):
        for j in by_keys[n + 1 :]:
            if place[j] < place[i]:
                assert priority(imgs[i]) > priority(imgs[j]), case
    if not any(priority(imgs[i]) for i in accepted):
        assert by_keys == ranked, case

    # An image no plugin accepts changes nothing.
    extra = Img("junk", uid=len(imgs))
    more = [*imgs[:where], extra, *imgs[where:]]
    pack(path, more, dev)
    again = select(path, dev)
    payload_of = {i: img.payload() for i, img in enumerate(more)}
    assert payload_of[again["selected"]] == imgs[got["selected"]].payload(), case

    # Nor do the keys the rank does not read.
    pack(path, [replace(img, keys=()) for img in imgs], dev)
    bare = select(path, dev)
    assert [i["rank"] for i in bare["images"]] == [i["rank"] for i in images], case


SM90 = Device(NVPTX, "sm_90")
GFX942 = Device(AMDGCN, "gfx942:xnack-", ("gfx9-4-generic:xnack-",))
PINNED = [
    # sm_90a over sm_90 (#139147's NVIDIA analogue), wherever it is listed.
    (SM90, [Img("cubin", "sm_90"), Img("cubin", "sm_90a", uid=1)], 0),
    # gfx942 over gfx9-4-generic, the case #139147 reports.
    (GFX942, [Img("amdgpu", "gfx9-4-generic"), Img("amdgpu", "gfx942", uid=1)], 2),
    # The device's SM before an earlier one; the keys change nothing.
    (
        Device(NVPTX, "sm_86"),
        [
            Img("cubin", "sm_86", keys=(("variant_priority", "x"),)),
            Img("cubin", "sm_80", uid=1),
        ],
        1,
    ),
    (Device(NVPTX, "sm_86"), [Img("cubin", "sm_80", keys=(("min_sm", "90"),))], 0),
    (
        Device(NVPTX, "sm_86"),
        [
            Img("cubin", "sm_86"),
            Img("cubin", "sm_80", keys=(("variant_priority", "1"),), uid=1),
        ],
        0,
    ),
    # sm_100a on 10.3: listed first, refused (it does not run there; 0003).
    (
        Device(NVPTX, "sm_103"),
        [Img("cubin", "sm_100a"), Img("cubin", "sm_100", uid=1)],
        0,
    ),
    # The latest compute capability that runs: sm_86 before sm_80 on 8.7.
    (
        Device(NVPTX, "sm_87"),
        [Img("cubin", "sm_80"), Img("cubin", "sm_86", uid=1)],
        0,
    ),
    # Native code before code compiled at load, whatever its arch; code
    # compiled at load by its arch in turn (gfx90a code does not run on
    # gfx942).
    (
        Device(NVPTX, "sm_86"),
        [Img("bitcode", "sm_86", triple=NVPTX), Img("cubin", "sm_80", uid=1)],
        0,
    ),
    (
        Device(AMDGCN, "gfx942:xnack-"),
        [
            Img("bitcode", "gfx90a", triple=AMDGCN),
            Img("bitcode", "gfx942", triple=AMDGCN, uid=1),
        ],
        0,
    ),
    # The posted series reads no variant_priority: equal ranks keep the
    # file's order (with the proposals' keys the higher first:
    # test_pinned_choices_with_the_keys).
    (
        Device(NVPTX, "sm_86"),
        [
            Img("cubin", "sm_86", keys=(("variant_priority", "1"),)),
            Img("cubin", "sm_86", keys=(("variant_priority", "3"),), uid=1),
        ],
        0,
    ),
    # The code object for the agent's target ID (native) before code for
    # either mode (any mode).
    (
        Device(AMDGCN, "gfx90a:xnack+"),
        [Img("amdgpu", "gfx90a"), Img("amdgpu", "gfx90a", "+", uid=1)],
        1,
    ),
]


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(cases())
@example(PINNED[0])
@example(PINNED[1])
@example(PINNED[2])
@example(PINNED[3])
@example(PINNED[4])
@example(PINNED[5])
@example(PINNED[6])
@example(PINNED[7])
@example(PINNED[8])
@example(PINNED[9])
@example(PINNED[10])
def test_selection_is_the_ranks(
    select: Selector, case: tuple[Device, list[Img], int]
) -> None:
    dev, imgs, where = case
    with tempfile.TemporaryDirectory(prefix="kdl-prop-") as tmp:
        check(select, dev, imgs, where, Path(tmp))


@pytest.mark.parametrize(
    ("dev", "imgs", "want"),
    [
        (dev, imgs, want)
        for (dev, imgs, _), want in zip(
            PINNED, [1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 1], strict=True
        )
    ],
)
def test_pinned_choices(
    select: Selector, dev: Device, imgs: list[Img], want: int, tmp_path: Path
) -> None:
    """The choice each GPU rule gives (the lit tests check the same by
    hand): the rank's, through kdl-select."""
    path = tmp_path / "set.bin"
    pack(path, imgs, dev)
    assert select(path, dev)["selected"] == want


def test_pinned_choices_with_the_keys(select: Selector, tmp_path: Path) -> None:
    """With the proposals' keys: of two sm_86 cubins the higher priority,
    listed second; a priority on an earlier SM does not beat the device's
    own, and a malformed one counts as none."""
    dev = Device(NVPTX, "sm_86")
    path = tmp_path / "set.bin"
    for imgs, want in (
        (PINNED[9][1], 1),
        (PINNED[4][1], 0),
        (PINNED[2][1], 0),
        (
            [
                Img("cubin", "sm_86", keys=(("variant_priority", "2"),)),
                Img("cubin", "sm_86", keys=(("variant_priority", "0x10"),), uid=1),
            ],
            0,
        ),
    ):
        pack(path, imgs, dev)
        assert select(path, dev, posting_stack=False)["selected"] == want, imgs


def test_amdgpu_header_matches_llvm_mc(tmp_path: Path) -> None:
    """The model's code-object header carries what llvm-mc writes there."""
    llvm_mc = paths.llvm_bin() / "llvm-mc"
    out = tmp_path / "g.o"
    subprocess.run(
        [
            str(llvm_mc),
            "--triple=amdgcn-amd-amdhsa",
            "-mcpu=gfx9-4-generic",
            "-mattr=-xnack",
            "-filetype=obj",
            "/dev/null",
            "-o",
            str(out),
        ],
        check=True,
    )
    real = out.read_bytes()[:64]
    ours = Img("amdgpu", "gfx9-4-generic", "-").payload()[:64]
    real_flags = int.from_bytes(real[48:52], "little")
    our_flags = int.from_bytes(ours[48:52], "little")
    # Mach, xnack mode and generic version; llvm-mc also sets sramecc "any".
    assert our_flags & 0xFF0003FF == real_flags & 0xFF0003FF
    assert ours[18:20] == real[18:20]
