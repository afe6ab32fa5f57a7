"""Property test of the C++ driver: ``kdl-select --json`` on random image sets.

Each hypothesis example draws SETS_PER_EXAMPLE (device, image set) cases, so
the test checks MAX_EXAMPLES * SETS_PER_EXAMPLE >= 1000 sets per run. Every
set is packed with kdl's OffloadBinary writer (real version 1 binaries, as
llvm-offload-binary writes them); the first set of each example is also packed
with the real llvm-offload-binary and must get the same verdicts.

The oracle below is an independent model of the GPU rules (CUDA compute
capability, sm_XYa / sm_XYf, PTX JIT, AMDGPU target IDs, generic processors)
and of the documented ranking (variant_priority, tier, then closeness: the
compute-capability distance and how many target-ID features an image leaves
open, then input order). For every set it checks:

* each image's verdict (reason code, tier) is the oracle's;
* the chosen image is compatible and no compatible image outranks it: the
  reported ranks order the compatible images exactly as the oracle's key;
* adding an incompatible image never changes the chosen image (its payload);
* reordering the images changes the choice only among images of equal rank.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kdl import paths
from kdl.offload.binary import make_image, write_v1

MAX_EXAMPLES = 250
SETS_PER_EXAMPLE = 4

TOOL = Path(os.environ.get("KDL_SELECT", paths.OVERLAY_BUILD / "bin" / "kdl-select"))
PACKER = paths.llvm_bin() / "llvm-offload-binary"

pytestmark = [
    pytest.mark.overlay,
    pytest.mark.slow,
    pytest.mark.skipif(not TOOL.is_file(), reason=f"{TOOL} not built (kdl build)"),
]

NVPTX = "nvptx64-nvidia-cuda"
AMDGCN = "amdgcn-amd-amdhsa"
X86 = "x86_64-unknown-linux-gnu"

TIERS = ["native-exact", "native-compatible", "generic", "jit-ir"]

# --- Facts the oracle works from ----------------------------------------------

#: Compute capabilities (10 * major + minor) of real NVIDIA devices.
DEVICE_SM = [70, 72, 75, 80, 86, 87, 89, 90, 100, 103, 120, 121]
#: Targets images are built for (a superset: includes ones no device has).
IMAGE_SM = [*DEVICE_SM, 53, 61, 101, 110]

#: AMDGPU processors: ISA version and which target-ID features they have
#: (llvm/lib/TargetParser/TargetParser.cpp, AMDGPUUsage's processor table).
AMD_PROCESSORS: dict[str, tuple[tuple[int, int, int], frozenset[str]]] = {
    "gfx900": ((9, 0, 0), frozenset({"xnack"})),
    "gfx906": ((9, 0, 6), frozenset({"xnack", "sramecc"})),
    "gfx908": ((9, 0, 8), frozenset({"xnack", "sramecc"})),
    "gfx90a": ((9, 0, 10), frozenset({"xnack", "sramecc"})),
    "gfx90c": ((9, 0, 12), frozenset({"xnack"})),
    "gfx942": ((9, 4, 2), frozenset({"xnack", "sramecc"})),
    "gfx950": ((9, 5, 0), frozenset({"xnack", "sramecc"})),
    "gfx1010": ((10, 1, 0), frozenset({"xnack"})),
    "gfx1030": ((10, 3, 0), frozenset()),
    "gfx1100": ((11, 0, 0), frozenset()),
    "gfx1151": ((11, 5, 1), frozenset()),
    "gfx1201": ((12, 0, 1), frozenset()),
}
#: Generic processors: their ELF e_machine value, features, and members (all
#: joined at generic version 1; AMDGPUUsage "Generic Processor Versioning").
AMD_GENERIC: dict[str, tuple[int, frozenset[str], frozenset[str]]] = {
    "gfx9-generic": (
        0x051,
        frozenset({"xnack"}),
        frozenset({"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}),
    ),
    "gfx9-4-generic": (
        0x05F,
        frozenset({"xnack", "sramecc"}),
        frozenset({"gfx942", "gfx950"}),
    ),
    "gfx10-1-generic": (
        0x052,
        frozenset({"xnack"}),
        frozenset({"gfx1010", "gfx1011", "gfx1012", "gfx1013"}),
    ),
    "gfx10-3-generic": (
        0x053,
        frozenset(),
        frozenset({f"gfx103{i}" for i in range(7)}),
    ),
    "gfx11-generic": (
        0x054,
        frozenset(),
        frozenset(
            {
                "gfx1100",
                "gfx1101",
                "gfx1102",
                "gfx1103",
                "gfx1150",
                "gfx1151",
                "gfx1152",
                "gfx1153",
            }
        ),
    ),
    "gfx12-generic": (0x059, frozenset(), frozenset({"gfx1200", "gfx1201"})),
}
CAPABILITIES = ["tensor_core", "bf16", "fp8", "mfma"]
TAGS = ["fast", "debug", "ref"]

#: Malformed values of each standard key (each one alone makes an image
#: unusable); every value can also be written by llvm-offload-binary.
MALFORMED = {
    "min_sm": ["8.0", "080", "sm_80", ""],
    "min_gfx": ["gfx90a:xnack+", "gfx9-generic", "cdna2", ""],
    "requires_features": ["", "tensor core", "a/b"],
    "variant_priority": ["-1", "high", "4294967296", ""],
    "variant_tag": ["", "a b"],
}


# --- Model ------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    triple: str
    arch: str
    features: tuple[str, ...] = ()
    cc: int = 0  # NVPTX compute capability
    processor: str = ""  # AMDGPU processor
    modes: tuple[tuple[str, str], ...] = ()  # ("xnack", "+"), ...

    def spec(self) -> str:
        parts = [f"triple={self.triple}", f"arch={self.arch}"]
        parts += [f"feature={f}" for f in self.features]
        return ",".join(parts)


@dataclass(frozen=True)
class Img:
    triple: str
    arch: str
    kind: str  # ImageKind name: cubin, s, bc, o, fatbin
    keys: tuple[tuple[str, str], ...] = ()
    generic_version: int = 1
    uid: int = 0  # makes the payload unique: the image's identity

    def get(self, key: str) -> str | None:
        for k, v in self.keys:
            if k == key:
                return v
        return None

    def payload(self) -> bytes:
        body = f"kdl-property-image-{self.uid}\n".encode()
        if self.triple == AMDGCN and self.kind == "o":
            return amdgpu_elf_header(self.arch, self.generic_version) + body
        return body


def amdgpu_elf_header(arch: str, version: int) -> bytes:
    """A 64-byte ELF header of an AMDGPU code object v6 (what llvm-mc writes
    in the fields the driver reads: class, data, e_machine, e_flags)."""
    processor = arch.split(":", maxsplit=1)[0]
    mach = AMD_GENERIC[processor][0] if processor in AMD_GENERIC else 0
    flags = mach | (version << 24)
    ident = b"\x7fELF" + bytes([2, 1, 1, 64, 4]) + bytes(7)
    rest = (1).to_bytes(2, "little") + (224).to_bytes(2, "little")  # ET_REL, EM_AMDGPU
    rest += (1).to_bytes(4, "little") + bytes(24)  # e_version, entry, phoff, shoff
    rest += flags.to_bytes(4, "little") + (64).to_bytes(2, "little") + bytes(10)
    header = ident + rest
    assert len(header) == 64
    return header


@dataclass(frozen=True)
class Verdict:
    reason: str
    tier: str | None = None
    distance: int = 0
    generality: int = 0


def parse_nv_arch(arch: str) -> tuple[int, str, bool] | None:
    virtual = arch.startswith("compute_")
    if not virtual and not arch.startswith("sm_"):
        return None
    rest = arch.split("_", 1)[1]
    suffix = ""
    if rest[-1:] in ("a", "f"):
        suffix, rest = rest[-1], rest[:-1]
    if not rest.isdigit() or not 2 <= len(rest) <= 3 or rest[0] == "0":
        return None
    return int(rest), suffix, virtual


def is_malformed(img: Img) -> bool:
    return any(v in MALFORMED.get(k, ()) for k, v in img.keys)


def nvptx_verdict(img: Img, dev: Device) -> Verdict:
    native = img.kind in ("cubin", "o")
    if img.kind == "fatbin" or not (native or img.kind in ("s", "bc")):
        return Verdict("unsupported-image-kind")
    parsed = parse_nv_arch(img.arch)
    if parsed is None:
        return Verdict("processor-mismatch")
    cap, suffix, virtual = parsed
    if native and virtual:
        return Verdict("processor-mismatch")
    generality = {"a": 0, "f": 1, "": 2}[suffix]
    if suffix == "a" and dev.cc != cap:
        return Verdict("arch-specific-mismatch")
    if suffix == "f" and (dev.cc // 10 != cap // 10 or dev.cc % 10 < cap % 10):
        return Verdict("family-mismatch")
    if not native:
        if dev.cc < cap:
            return Verdict("ptx-too-new")
        return Verdict("compatible", "jit-ir", dev.cc - cap, generality)
    if dev.cc // 10 != cap // 10:
        return Verdict("sm-major-mismatch")
    if dev.cc % 10 < cap % 10:
        return Verdict("sm-minor-too-high")
    tier = "native-exact" if dev.cc == cap else "native-compatible"
    return Verdict("compatible", tier, dev.cc - cap, generality)


def amdgpu_verdict(img: Img, dev: Device) -> Verdict:
    if img.kind not in ("o", "bc"):
        return Verdict("unsupported-image-kind")
    processor, *modes = img.arch.split(":")
    if processor in AMD_GENERIC:
        _, supported, members = AMD_GENERIC[processor]
        if dev.processor not in members:
            return Verdict("generic-family-mismatch")
        version = img.generic_version if img.kind == "o" else 1
        if version < 1:
            return Verdict("generic-version-too-old")
    else:
        supported = AMD_PROCESSORS[processor][1]
        if processor != dev.processor:
            return Verdict("processor-mismatch")
    image_modes = {m[:-1]: m[-1] for m in modes}
    device_modes = dict(dev.modes)
    generality = 0
    for feature in ("sramecc", "xnack"):
        want = image_modes.get(feature)
        if want is None:
            generality += feature in supported
        elif device_modes.get(feature) != want:
            return Verdict("target-feature-mismatch")
    if img.kind == "bc":
        tier = "jit-ir"
    elif processor in AMD_GENERIC:
        tier = "generic"
    else:
        tier = "native-exact"
    return Verdict("compatible", tier, 0, generality)


def x86_verdict(img: Img, dev: Device) -> Verdict:
    if img.kind not in ("o", "bc"):
        return Verdict("unsupported-image-kind")
    generic = img.arch in ("", "generic")
    if not generic and img.arch != dev.arch:
        return Verdict("processor-mismatch")
    if img.kind == "bc":
        return Verdict("compatible", "jit-ir")
    return Verdict("compatible", "generic" if generic else "native-exact")


def oracle(img: Img, dev: Device, tag: str | None) -> Verdict:
    """The verdict the documented rules give, first failing rule first."""
    if is_malformed(img):
        return Verdict("malformed-metadata")
    if tag is not None and img.get("variant_tag") != tag:
        return Verdict("tag-mismatch")
    if img.triple != dev.triple:
        return Verdict("triple-mismatch")
    if dev.triple == NVPTX:
        verdict = nvptx_verdict(img, dev)
    elif dev.triple == AMDGCN:
        verdict = amdgpu_verdict(img, dev)
    else:
        verdict = x86_verdict(img, dev)
    if verdict.reason != "compatible":
        return verdict
    min_sm = img.get("min_sm")
    if min_sm is not None and (dev.triple != NVPTX or dev.cc < int(min_sm)):
        return Verdict("below-min-sm")
    min_gfx = img.get("min_gfx")
    if min_gfx is not None:
        if dev.triple != AMDGCN:
            return Verdict("below-min-gfx")
        want = AMD_PROCESSORS[min_gfx][0]
        have = AMD_PROCESSORS[dev.processor][0]
        if have[0] != want[0] or have[1:] < want[1:]:
            return Verdict("below-min-gfx")
    required = img.get("requires_features")
    if required is not None and not set(required.split(",")) <= set(dev.features):
        return Verdict("missing-feature")
    return verdict


def rank_key(img: Img, v: Verdict) -> tuple[int, int, int, int]:
    """Everything but the index: higher priority, better tier, closer."""
    assert v.tier is not None
    priority = int(img.get("variant_priority") or 0)
    return (-priority, TIERS.index(v.tier), v.distance, v.generality)


# --- Strategies ---------------------------------------------------------------


def one_in(n: int, rare: bool = True) -> st.SearchStrategy[bool]:
    """True once in *n* draws (False once in *n* with ``rare=False``).

    sampled_from keeps the odds; st.integers would favour its bounds.
    """
    return st.sampled_from([not rare] * (n - 1) + [rare])


@st.composite
def devices(draw: st.DrawFn) -> Device:
    features = tuple(
        sorted(draw(st.sets(st.sampled_from(CAPABILITIES), max_size=len(CAPABILITIES))))
    )
    which = draw(st.sampled_from(["nvptx", "nvptx", "amdgpu", "amdgpu", "x86"]))
    if which == "nvptx":
        cc = draw(st.sampled_from(DEVICE_SM))
        return Device(NVPTX, f"sm_{cc}", features, cc=cc)
    if which == "amdgpu":
        processor = draw(st.sampled_from(sorted(AMD_PROCESSORS)))
        modes = []
        for feature in sorted(AMD_PROCESSORS[processor][1], reverse=True):
            mode = draw(st.sampled_from(["+", "-", "+", "-", None]))
            if mode is not None:
                modes.append((feature, mode))
        arch = ":".join([processor] + [f"{f}{m}" for f, m in modes])
        return Device(AMDGCN, arch, features, processor=processor, modes=tuple(modes))
    return Device(X86, draw(st.sampled_from(["generic", "znver4"])), features)


@st.composite
def nvptx_images(draw: st.DrawFn) -> Img:
    kind = draw(
        st.sampled_from(["cubin", "cubin", "cubin", "s", "s", "bc", "o", "fatbin"])
    )
    cap = draw(st.sampled_from(IMAGE_SM))
    suffix = draw(st.sampled_from(["", "", "", "a", "f"]))
    prefix = "compute_" if kind in ("s", "bc") and draw(st.booleans()) else "sm_"
    keys: list[tuple[str, str]] = []
    if draw(one_in(6)):
        keys.append(("min_sm", str(draw(st.sampled_from(IMAGE_SM)))))
    return Img(NVPTX, f"{prefix}{cap}{suffix}", kind, tuple(keys))


@st.composite
def amdgpu_images(draw: st.DrawFn) -> Img:
    processor = draw(st.sampled_from(sorted(AMD_PROCESSORS) + sorted(AMD_GENERIC)))
    supported = (AMD_GENERIC.get(processor) or AMD_PROCESSORS[processor])[1]
    modes = []
    for feature in sorted(supported, reverse=True):
        mode = draw(st.sampled_from([None, None, "+", "-"]))
        if mode is not None:
            modes.append(f"{feature}{mode}")
    kind = draw(st.sampled_from(["o", "o", "o", "bc"]))
    keys: list[tuple[str, str]] = []
    if draw(one_in(6)):
        keys.append(("min_gfx", draw(st.sampled_from(sorted(AMD_PROCESSORS)))))
    version = draw(st.sampled_from([1, 1, 1, 2, 0]))
    return Img(AMDGCN, ":".join([processor, *modes]), kind, tuple(keys), version)


@st.composite
def x86_images(draw: st.DrawFn) -> Img:
    arch = draw(st.sampled_from(["generic", "generic", "", "znver4", "skylake"]))
    return Img(X86, arch, draw(st.sampled_from(["o", "o", "bc"])))


@st.composite
def near_images(draw: st.DrawFn, device: Device) -> Img:
    """An image built for (or close to) the device, so that several
    compatible images compete on every ranking key."""
    if device.triple == NVPTX:
        caps = [c for c in IMAGE_SM if c // 10 == device.cc // 10 or c <= device.cc]
        cap = draw(st.sampled_from(sorted(caps)))
        kind = draw(st.sampled_from(["cubin", "cubin", "s", "o"]))
        suffix = draw(st.sampled_from(["", "f", "a"]))
        return Img(NVPTX, f"sm_{cap}{suffix}", kind)
    if device.triple == AMDGCN:
        family = [
            g
            for g, (_, _, members) in AMD_GENERIC.items()
            if device.processor in members
        ]
        processor = draw(st.sampled_from([device.processor, device.processor, *family]))
        supported = (AMD_GENERIC.get(processor) or AMD_PROCESSORS[processor])[1]
        device_modes = dict(device.modes)
        modes = []
        for feature in sorted(supported, reverse=True):
            mode = draw(st.sampled_from([None, device_modes.get(feature), "+", "-"]))
            if mode is not None:
                modes.append(f"{feature}{mode}")
        kind = draw(st.sampled_from(["o", "o", "o", "bc"]))
        version = draw(st.sampled_from([1, 1, 1, 2, 0]))
        return Img(AMDGCN, ":".join([processor, *modes]), kind, generic_version=version)
    arch = draw(st.sampled_from([device.arch, "generic", ""]))
    return Img(X86, arch, draw(st.sampled_from(["o", "o", "bc"])))


@st.composite
def images(draw: st.DrawFn, device: Device | None = None) -> Img:
    if device is not None and draw(one_in(4, rare=False)):
        img = draw(near_images(device))
    else:
        img = draw(st.one_of(nvptx_images(), amdgpu_images(), x86_images()))
    keys = list(img.keys)
    if not keys and draw(one_in(5)):
        if img.triple == NVPTX:
            keys.append(("min_sm", str(draw(st.sampled_from(DEVICE_SM)))))
        elif img.triple == AMDGCN:
            keys.append(("min_gfx", draw(st.sampled_from(sorted(AMD_PROCESSORS)))))
    if draw(one_in(4)):
        for feature in sorted(draw(st.sets(st.sampled_from(CAPABILITIES), min_size=1))):
            keys.append(("requires_features", feature))
    if draw(one_in(3)):
        keys.append(("variant_priority", str(draw(st.integers(0, 2)))))
    if draw(one_in(3)):
        keys.append(("variant_tag", draw(st.sampled_from(TAGS))))
    if draw(one_in(21)):
        key = draw(st.sampled_from(sorted(MALFORMED)))
        keys = [(k, v) for k, v in keys if k != key]
        keys.append((key, draw(st.sampled_from(MALFORMED[key]))))
    # requires_features is one key whose value lists the tokens.
    features = [v for k, v in keys if k == "requires_features"]
    keys = [(k, v) for k, v in keys if k != "requires_features"]
    if features:
        keys.append(("requires_features", ",".join(features)))
    return replace(img, keys=tuple(keys))


@dataclass
class Case:
    device: Device
    images: list[Img]
    tag: str | None
    extra: Img  # an image that cannot run on the device
    extra_at: int
    order: list[int] = field(default_factory=list)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    device = draw(devices())
    imgs = draw(st.lists(images(device), min_size=1, max_size=12))
    imgs = [replace(img, uid=i) for i, img in enumerate(imgs)]
    tag = draw(st.sampled_from([*[None] * 8, *TAGS]))
    base = draw(images())
    other = {NVPTX: AMDGCN, AMDGCN: X86, X86: NVPTX}[device.triple]
    extra = draw(
        st.sampled_from(
            [
                replace(base, triple=other),
                replace(
                    base,
                    keys=(
                        *[(k, v) for k, v in base.keys if k != "variant_priority"],
                        ("variant_priority", "-1"),
                    ),
                ),
            ]
        )
    )
    extra = replace(extra, uid=len(imgs))
    extra_at = draw(st.integers(0, len(imgs)))
    order = draw(st.permutations(range(len(imgs))))
    return Case(device, imgs, tag, extra, extra_at, list(order))


# --- Running the driver -----------------------------------------------------


def select(path: Path, device: Device, tag: str | None) -> dict[str, Any]:
    argv = [str(TOOL), "--json", f"--device={device.spec()}"]
    if tag is not None:
        argv.append(f"--tag={tag}")
    argv.append(str(path))
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode in (0, 1), f"{argv}: exit {proc.returncode}: {proc.stderr}"
    result: dict[str, Any] = json.loads(proc.stdout)
    assert (result["selected"] is None) == (proc.returncode == 1)
    return result


def pack(path: Path, imgs: Sequence[Img]) -> None:
    path.write_bytes(
        write_v1(
            make_image(
                img.payload(),
                [("triple", img.triple), ("arch", img.arch), *img.keys],
                kind=img.kind,
                offload_kind="openmp",
            )
            for img in imgs
        )
    )


def pack_with_llvm(path: Path, imgs: Sequence[Img]) -> None:
    argv = [str(PACKER), "-o", str(path)]
    for i, img in enumerate(imgs):
        payload = path.with_name(f"{path.name}.{i}.{img.kind}")
        payload.write_bytes(img.payload())
        fields = [
            f"file={payload}",
            f"triple={img.triple}",
            f"arch={img.arch}",
            "kind=openmp",
        ]
        for key, value in img.keys:
            # A list value is written by repeating the key.
            values = (
                value.split(",") if key == "requires_features" and value else [value]
            )
            fields += [f"{key}={v}" for v in values]
        argv.append("--image=" + ",".join(fields))
    subprocess.run(argv, check=True, capture_output=True)


# --- Checks -------------------------------------------------------------------


def check_verdicts(
    case_imgs: Sequence[Img], case: Case, result: dict[str, Any]
) -> None:
    """Every verdict is the oracle's; ranks order the compatible images by the
    oracle's key, ties by input order; the choice is rank 1."""
    assert len(result["images"]) == len(case_imgs)
    keyed = []
    for img, got in zip(case_imgs, result["images"], strict=True):
        want = oracle(img, case.device, case.tag)
        where = f"{img} on {case.device.spec()} tag={case.tag}: {got}"
        assert got["reason"] == want.reason, where
        assert got["compatible"] == (want.reason == "compatible"), where
        assert got["tier"] == want.tier, where
        if want.reason == "compatible":
            keyed.append((rank_key(img, want), got["index"], got["rank"]))
        else:
            assert got["rank"] is None, where
        if want.reason != "malformed-metadata":
            priority = img.get("variant_priority")
            assert got["priority"] == (None if priority is None else int(priority)), (
                where
            )
            assert got["tag"] == img.get("variant_tag"), where
    keyed.sort()
    assert [rank for _, _, rank in keyed] == list(range(1, len(keyed) + 1)), keyed
    assert result["selected"] == (keyed[0][1] if keyed else None)


def chosen(imgs: Sequence[Img], result: dict[str, Any]) -> Img | None:
    index = result["selected"]
    return None if index is None else imgs[index]


def check_case(case: Case, workdir: Path, number: int, with_llvm: bool) -> int:
    """Run the driver on one set and its two variants; return driver calls."""
    imgs = case.images
    with_extra = [*imgs[: case.extra_at], case.extra, *imgs[case.extra_at :]]
    reordered = [imgs[i] for i in case.order]
    assert oracle(case.extra, case.device, case.tag).reason != "compatible"

    runs = {"base": imgs, "extra": with_extra, "reordered": reordered}
    results = {}
    for name, run_imgs in runs.items():
        path = workdir / f"set{number}.{name}.bin"
        pack(path, run_imgs)
        results[name] = select(path, case.device, case.tag)
        check_verdicts(run_imgs, case, results[name])
    calls = len(runs)
    if with_llvm:
        path = workdir / f"set{number}.llvm.bin"
        pack_with_llvm(path, imgs)
        assert select(path, case.device, case.tag) == results["base"]
        calls += 1

    base = chosen(imgs, results["base"])
    # An incompatible image never changes which image is chosen.
    assert chosen(with_extra, results["extra"]) == base
    # Reordering changes the choice only among images of equal rank.
    moved = chosen(reordered, results["reordered"])
    assert (moved is None) == (base is None)
    if base is not None and moved is not None:
        base_key = rank_key(base, oracle(base, case.device, case.tag))
        assert rank_key(moved, oracle(moved, case.device, case.tag)) == base_key
        ties = [
            img
            for img in imgs
            if oracle(img, case.device, case.tag).reason == "compatible"
            and rank_key(img, oracle(img, case.device, case.tag)) == base_key
        ]
        if len(ties) == 1:
            assert moved == base
    return calls


def pinned_cases() -> list[Case]:
    """Sets random generation reaches only rarely, always checked first:
    closeness against specificity within a tier, on both vendors."""
    sm103 = Device(NVPTX, "sm_103", cc=103)
    gfx90a = Device(
        AMDGCN,
        "gfx90a:sramecc+:xnack+",
        processor="gfx90a",
        modes=(("sramecc", "+"), ("xnack", "+")),
    )
    nv = [
        Img(NVPTX, "sm_100f", "cubin"),
        Img(NVPTX, "sm_101", "cubin"),
        Img(NVPTX, "compute_100f", "s"),
        Img(NVPTX, "compute_101", "s"),
    ]
    amd = [
        Img(AMDGCN, "gfx90a", "o"),
        Img(AMDGCN, "gfx90a:xnack+", "o"),
        Img(AMDGCN, "gfx90a:sramecc+:xnack+", "bc"),
        Img(AMDGCN, "gfx90a", "bc"),
    ]
    out = []
    for device, given_imgs in ((sm103, nv), (gfx90a, amd)):
        imgs = [replace(img, uid=i) for i, img in enumerate(given_imgs)]
        extra = Img(X86, "generic", "o", uid=len(imgs))
        order = list(reversed(range(len(imgs))))
        out.append(Case(device, imgs, None, extra, 1, order))
    return out


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(cases(), min_size=SETS_PER_EXAMPLE, max_size=SETS_PER_EXAMPLE))
@example(pinned_cases())
def test_ranking_properties(batch: list[Case]) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="kdl-prop-") as tmp,
        ThreadPoolExecutor(2) as pool,
    ):
        workdir = Path(tmp)
        checked = pool.map(
            lambda item: check_case(item[1], workdir, item[0], with_llvm=item[0] == 0),
            enumerate(batch),
        )
        assert sum(checked) >= 3 * len(batch)


SM = {cc: Device(NVPTX, f"sm_{cc}", cc=cc) for cc in (80, 86, 90, 100, 103, 120)}
GFX90A_XNACK_ON = Device(
    AMDGCN, "gfx90a:xnack+", processor="gfx90a", modes=(("xnack", "+"),)
)
GFX900 = Device(AMDGCN, "gfx900", processor="gfx900")


@pytest.mark.parametrize(
    ("img", "device", "want"),
    [
        (Img(NVPTX, "sm_80", "cubin"), SM[86], "native-compatible"),
        (Img(NVPTX, "sm_86", "cubin"), SM[80], "sm-minor-too-high"),
        (Img(NVPTX, "sm_80", "cubin"), SM[90], "sm-major-mismatch"),
        (Img(NVPTX, "sm_90a", "cubin"), SM[90], "native-exact"),
        (Img(NVPTX, "sm_90a", "cubin"), SM[100], "arch-specific-mismatch"),
        (Img(NVPTX, "sm_100f", "cubin"), SM[103], "native-compatible"),
        (Img(NVPTX, "sm_100f", "cubin"), SM[120], "family-mismatch"),
        (Img(NVPTX, "compute_80", "s"), SM[90], "jit-ir"),
        (Img(NVPTX, "compute_90", "s"), SM[86], "ptx-too-new"),
        (Img(AMDGCN, "gfx90a", "o"), GFX90A_XNACK_ON, "native-exact"),
        (Img(AMDGCN, "gfx90a:xnack-", "o"), GFX90A_XNACK_ON, "target-feature-mismatch"),
        (Img(AMDGCN, "gfx9-generic", "o"), GFX90A_XNACK_ON, "generic-family-mismatch"),
        (Img(AMDGCN, "gfx9-generic", "o"), GFX900, "generic"),
        (
            Img(AMDGCN, "gfx9-generic", "o", generic_version=0),
            GFX900,
            "generic-version-too-old",
        ),
    ],
)
def test_oracle_on_the_cases_the_lit_suite_pins(
    img: Img, device: Device, want: str
) -> None:
    """The oracle gives the verdicts the lit tests check by hand."""
    verdict = oracle(img, device, None)
    assert (verdict.tier or verdict.reason) == want


def test_amdgpu_header_matches_llvm_mc(tmp_path: Path) -> None:
    """The synthetic code-object header carries what llvm-mc writes there."""
    llvm_mc = paths.llvm_bin() / "llvm-mc"
    if not llvm_mc.is_file():
        pytest.skip("no llvm-mc")
    out = tmp_path / "g.o"
    subprocess.run(
        [
            str(llvm_mc),
            "--triple=amdgcn-amd-amdhsa",
            "-mcpu=gfx9-4-generic",
            "--amdgpu-force-generic-version=2",
            "-filetype=obj",
            "/dev/null",
            "-o",
            str(out),
        ],
        check=True,
    )
    real = out.read_bytes()[:64]
    ours = amdgpu_elf_header("gfx9-4-generic", 2)
    # class, data, OS/ABI, ABI version; e_machine; generic version and mach.
    assert ours[4:9] == real[4:9]
    assert ours[18:20] == real[18:20]
    real_flags = int.from_bytes(real[48:52], "little")
    our_flags = int.from_bytes(ours[48:52], "little")
    assert our_flags >> 24 == real_flags >> 24 == 2
    assert our_flags & 0xFF == real_flags & 0xFF
