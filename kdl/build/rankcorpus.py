"""The differential test's corpus: (entry, device) target pairs for the rank.

Every pair is a line of five tab-separated fields, an entry's triple, arch
and image kind, then a device's triple and target ID, as
``tools/rank/RankDiff.cpp`` reads them. The corpus is the product of
fixed lists, so that both builds of the rank see the same lines in the same
order: NVPTX SMs plain, arch-specific and family-specific, as cubins and as
PTX, on NVPTX devices; AMDGPU processors, aliases and every generic target
22.1.8 knows, bare and with xnack/sramecc modes in either order, on agents
with and without modes; host and SPIR-V targets; empty and garbled arches
and triples. Targets that only LLVM main knows (gfx1250, gfx12-5-generic,
``amdgpu9.42`` triples) are left out: 22.1.8 cannot know them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

NVPTX = "nvptx64-nvidia-cuda"
AMDGCN = "amdgcn-amd-amdhsa"

NVPTX_ARCHS = [
    "sm_50",
    "sm_60",
    "sm_70",
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_87",
    "sm_89",
    "sm_90",
    "sm_90a",
    "sm_100",
    "sm_100a",
    "sm_100f",
    "sm_103",
    "sm_103a",
    "sm_103f",
    "sm_110f",
    "sm_120",
    "sm_120a",
    "sm_120f",
    "sm_121",
    "sm_121f",
    "sm_130",
]
NVPTX_DEVICES = [
    "sm_70",
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_89",
    "sm_90",
    "sm_100",
    "sm_103",
    "sm_120",
    "sm_121",
    # Compute capabilities the NVPTX target parser does not know: the rank
    # reads their SM as a number.
    "sm_122",
    "sm_130",
    "sm_9",
]
AMDGPU_PROCESSORS = [
    "gfx900",
    "gfx906",
    "gfx908",
    "gfx90a",
    "gfx90c",
    "gfx942",
    "gfx950",
    "gfx1010",
    "gfx1030",
    "gfx1036",
    "gfx1100",
    "gfx1103",
    "gfx1151",
    "gfx1200",
    "gfx1201",
    "tahiti",
    "gfx803",
    "polaris10",
    "gfx9-generic",
    "gfx9-4-generic",
    "gfx10-1-generic",
    "gfx10-3-generic",
    "gfx11-generic",
    "gfx12-generic",
]
MODES = (
    "",
    ":xnack+",
    ":xnack-",
    ":sramecc+",
    ":sramecc-",
    ":sramecc+:xnack-",
    ":xnack-:sramecc+",
    ":xnack+:sramecc+",
    ":xnack+:xnack-",
)
AMDGPU_DEVICES = (
    "gfx942:sramecc+:xnack-",
    "gfx942:sramecc-:xnack+",
    "gfx90a:sramecc-:xnack+",
    "gfx90a:sramecc+:xnack-",
    "gfx908:sramecc+:xnack-",
    "gfx906:sramecc+:xnack-",
    "gfx900:xnack-",
    "gfx1030",
    "gfx1100",
    "gfx1201",
    "gfx950:sramecc+:xnack-",
    "gfx942",
)
GARBLED = (
    "",
    "garbage",
    "GFX90A",
    "sm_",
    "sm_999",
    "compute_90",
    "gfx90a:",
    "gfx90a::xnack+",
    "gfx90a:foo+",
    "gfx90a:xnack",
    "x86-64",
    "generic",
)
OTHER_ENTRIES = (
    ("x86_64-unknown-linux-gnu", "x86-64"),
    ("x86_64-unknown-linux-gnu", "generic"),
    ("x86_64-unknown-linux-gnu", ""),
    ("x86_64-pc-linux-gnu", "x86-64"),
    ("spirv64-intel", "pvc"),
    ("spirv64-intel", "generic"),
    ("spirv64-intel", ""),
    (NVPTX, "sm_90"),
    (AMDGCN, "gfx90a"),
    ("", ""),
    ("garbage-triple", "x"),
    ("amdgcn-amd-amdpal", "gfx90a"),
    ("amdgcn--amdhsa", "gfx90a"),
)
OTHER_DEVICES = (
    ("x86_64-unknown-linux-gnu", "x86-64"),
    ("x86_64-unknown-linux-gnu", "generic-64bit"),
    ("spirv64-intel", "pvc"),
    (NVPTX, "sm_90"),
    (AMDGCN, "gfx90a:sramecc-:xnack+"),
)


def pairs() -> Iterator[tuple[str, str, str, str, str]]:
    """Every pair of the corpus once, in a fixed order."""
    seen: set[tuple[str, str, str, str, str]] = set()
    for pair in _products():
        if pair not in seen:
            seen.add(pair)
            yield pair


def _products() -> Iterator[tuple[str, str, str, str, str]]:
    for arch, device in itertools.product(NVPTX_ARCHS + list(GARBLED), NVPTX_DEVICES):
        for kind in ("cubin", "s"):
            yield (NVPTX, arch, kind, NVPTX, device)
    for proc, mode, device in itertools.product(
        AMDGPU_PROCESSORS, MODES, AMDGPU_DEVICES
    ):
        yield (AMDGCN, proc + mode, "o", AMDGCN, device)
    for arch, device in itertools.product(GARBLED, AMDGPU_DEVICES[:4]):
        yield (AMDGCN, arch, "bc", AMDGCN, device)
    for (triple, arch), (dtriple, device) in itertools.product(
        OTHER_ENTRIES, OTHER_DEVICES
    ):
        for kind in ("o", "spv"):
            yield (triple, arch, kind, dtriple, device)


def text() -> str:
    return "".join("\t".join(p) + "\n" for p in pairs())


#: The containers of the series' loop test (offload/unittests/Plugins/
#: OffloadBinarySelection.cpp, the host plugin: device target generic-64bit,
#: every entry an x86-64 object the plugin accepts) and of the H200 runs
#: (results/gpu/real-runtimes-v6/, the entries the CUDA plugin accepts on
#: sm_90), with the order the loop tries them in: (case, device triple,
#: device target, entries as (triple, arch, kind), expected order).
HOST = "x86_64-unknown-linux-gnu"
LOOP_CASES: tuple[tuple[str, str, str, tuple[tuple[str, str, str], ...], str], ...] = (
    (
        "DeviceTargetBeatsEarlierEntries",
        HOST,
        "generic-64bit",
        ((HOST, "x86-64", "o"), (HOST, "generic", "o"), (HOST, "generic-64bit", "o")),
        "2 1 0",
    ),
    (
        "CompatibleCodeBeatsCodeOfAnotherTarget",
        HOST,
        "generic-64bit",
        ((HOST, "x86-64", "o"), (HOST, "generic", "o")),
        "1 0",
    ),
    (
        "EqualRanksKeepContainerOrder",
        HOST,
        "generic-64bit",
        ((HOST, "generic-64bit", "o"), (HOST, "generic-64bit", "o")),
        "0 1",
    ),
    (
        "FailedCandidateFallsBackToTheNext",
        HOST,
        "generic-64bit",
        ((HOST, "x86-64", "o"), (HOST, "generic-64bit", "o")),
        "1 0",
    ),
    (
        "FirstCompatibleEntryIsLoaded",
        HOST,
        "generic-64bit",
        ((HOST, "x86-64", "o"),) * 3,
        "0 1 2",
    ),
    (
        "H200 v1-90-90a.bin",
        NVPTX,
        "sm_90",
        ((NVPTX, "sm_90", "cubin"), (NVPTX, "sm_90a", "cubin")),
        "1 0",
    ),
    (
        "H200 v1-ptx90-90.bin",
        NVPTX,
        "sm_90",
        ((NVPTX, "sm_90", "s"), (NVPTX, "sm_90", "cubin")),
        "1 0",
    ),
    (
        "H200 v1-ptx-bad90.bin (PTX claiming sm_90 the driver refuses, tried first)",
        NVPTX,
        "sm_90",
        ((NVPTX, "sm_80", "s"), (NVPTX, "sm_90", "s")),
        "1 0",
    ),
)


def loop_text() -> str:
    """The loop cases as ``tools/rank/RankDiff.cpp --loop`` reads them."""
    return "".join(
        "\t".join([device, target, *(",".join(e) for e in entries)]) + "\n"
        for _, device, target, entries, _ in LOOP_CASES
    )
