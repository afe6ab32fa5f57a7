"""Upstream facts the posts cite: PR history, code owners, other systems.

Each fact was read from the upstream thread or file named next to it (see
/work/shared/research/upstream-llvm.md and selection-semantics.md, and the
llvm/llvm-project commits below). They are data, not measurements: the posts
quote them with their links, and ``kdl rfc --github`` can refresh the state of
the pull requests from api.github.com.
"""

from __future__ import annotations

from dataclasses import dataclass

GITHUB = "https://github.com/llvm/llvm-project"


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str | None  # None: not read verbatim; the table shows the effect
    state: str  # "merged", "open" or "closed", as read in 2026-11
    what: str  # what it did, in one sentence, for the history table

    @property
    def url(self) -> str:
        return f"{GITHUB}/pull/{self.number}"


#: Pull requests the posts cite, oldest first. Titles and states were read
#: from the PR threads; the "what" column states only what the thread says.
HISTORY: tuple[PullRequest, ...] = (
    PullRequest(
        118919,
        "[Offload][AMDGPU] accept generic target",
        "merged",
        "lets the AMDGPU plugin load generic-ISA images; preferring the "
        "specific ISA over the generic one was discussed and left undone",
    ),
    PullRequest(
        139147,
        "[Offload] Do not load images from the same descriptor on the same device",
        "merged",
        "makes libomptarget load only the first compatible image of a "
        "descriptor per device; its description calls this the quick "
        "solution that 'might not be overly optimal'",
    ),
    PullRequest(
        156955,
        None,
        "open",
        "lets the CUDA plugin load fatbinaries, so the CUDA driver chooses "
        "among their images",
    ),
    PullRequest(
        169425,
        "[Offloading] Offload Binary Format V2: Support Multiple Entries",
        "merged",
        "OffloadBinary version 2: several entries in one binary, "
        "`OIF_Metadata` entries without an image",
    ),
    PullRequest(
        180003,
        None,
        "merged",
        "its author notes that the runtime should in future iterate over the "
        "images of a binary",
    ),
    PullRequest(
        185404,
        None,
        "merged",
        "the Level Zero plugin accepts an OffloadBinary and loads it whole",
    ),
    PullRequest(
        185663,
        "[OFFLOAD] Add interface to extend image validation",
        "merged",
        "adds `GenericPluginTy::isImageCompatible` for images the common "
        "layer does not recognise (used by the Level Zero plugin)",
    ),
    PullRequest(
        186088,
        "[OFFLOAD] Generalize support for OffloadBinary images",
        "open",
        "OffloadBinary support for all plugins with `isMetadataCompatible`; "
        "loads the first compatible image and leaves any other policy to a "
        "follow-up",
    ),
    PullRequest(
        197456,
        "[Offload] Make 'llvm-offload-binary' use multi-binaries",
        "merged",
        "`llvm-offload-binary` writes all `--image` arguments into one "
        "version-2 binary instead of concatenating binaries",
    ),
    PullRequest(
        209563,
        None,
        "merged",
        "adds `areTargetsEquivalent` and makes `areTargetsCompatible` ask "
        "whether a provided target serves a requested one",
    ),
    PullRequest(
        222774,
        "[Offloading] Add support for compressed OffloadBinary types",
        "open",
        "OffloadBinary version 3: zlib/zstd compression of everything after "
        "the header; the string map is unchanged",
    ),
    PullRequest(
        225135,
        "[Offload] Add olIterateCompatiblePlatforms API",
        "open",
        "asks which platforms accept an image; review raised what to do when "
        "several plugins accept one image",
    ),
)


def pr(number: int) -> PullRequest:
    for item in HISTORY:
        if item.number == number:
            return item
    raise KeyError(number)


@dataclass(frozen=True)
class Owner:
    github: str
    area: str
    source: str  # file and commit the role was read from


OFFLOAD_MAINTAINERS = (
    "offload/Maintainers.md at llvm/llvm-project "
    "a8eb93652e7c07b81b74b91bcd4a8143ba8c952c"
)
LLVM_MAINTAINERS = (
    "llvm/Maintainers.md at llvm/llvm-project 00cedd1e630ef9190fd64db47f34ba649fc76ead"
)

#: Who to CC. Maintainers come from the Maintainers files; the rest wrote the
#: upstream changes this work builds on (authors as shown on the PR threads).
OWNERS: tuple[Owner, ...] = (
    Owner("jhuber6", "offload maintainer", OFFLOAD_MAINTAINERS),
    Owner("jdoerfert", "offload maintainer", OFFLOAD_MAINTAINERS),
    Owner("jh7370", "binary utilities maintainer", LLVM_MAINTAINERS),
    Owner("MaskRay", "binary utilities maintainer", LLVM_MAINTAINERS),
    Owner("Artem-B", "NVPTX backend maintainer", LLVM_MAINTAINERS),
    Owner("arsenm", "AMDGPU backend maintainer", LLVM_MAINTAINERS),
    Owner("YuriPlyakhin", "author of #169425, OffloadBinary v2", "PR #169425"),
    Owner("adurang", "author of #185663 and #186088", "PRs #185663, #186088"),
)


@dataclass(frozen=True)
class System:
    name: str
    filters: str
    ranks: str
    explains: str
    source: str  # a link a reader can check


#: How other systems choose among several device images
#: (/work/shared/research/selection-semantics.md).
SYSTEMS: tuple[System, ...] = (
    System(
        "CUDA driver",
        "a cubin for sm_XY runs on X.Z with Z >= Y, never across a major; "
        "`sm_XYa` only on exactly X.Y; `sm_XYf` on the same major with equal "
        "or higher minor; PTX is JIT-compiled on any newer device",
        "prefers matching machine code, falls back to PTX "
        "(`CU_JIT_FALLBACK_STRATEGY`, `CUDA_FORCE_PTX_JIT`)",
        "no: `CUDA_ERROR_NO_BINARY_FOR_GPU` without saying what was there",
        "https://docs.nvidia.com/cuda/blackwell-compatibility-guide/",
    ),
    System(
        "HIP (ROCm CLR)",
        "target ID `processor(:feature(+|-))*`; a feature left out means "
        "either setting; generic processors carry a version",
        "fixed tiers: native ISA, then generic family, then SPIR-V; the first "
        "entry wins within a tier",
        "log lines, and 'No compatible code objects found for: ... Available: [...]'",
        "https://github.com/ROCm/clr (hipamd/src/hip_fatbin.cpp); "
        "clang/docs/ClangOffloadBundler.rst; llvm/docs/AMDGPUUsage.rst",
    ),
    System(
        "IREE HAL",
        "target match plus an optional condition region per variant",
        "op order: the first valid variant loads (ranking is listed as future work)",
        "the AMDGPU driver reports a bit mask of mismatch reasons",
        "https://github.com/iree-org/iree (HALOps.td; "
        "runtime/src/iree/hal/drivers/amdgpu/util/target_id.c)",
    ),
    System(
        "Function multi-versioning",
        "CPU features present at run time",
        "the highest-priority version whose features are present; "
        "`default` as fallback; `priority=N` overrides",
        "GCC can dump the resolver; nothing at run time",
        "https://gcc.gnu.org/onlinedocs/gcc/Common-Function-Attributes.html",
    ),
    System(
        "SYCL (DPC++)",
        "compile target and device aspects",
        "Level Zero prefers AOT images over SPIR-V; otherwise first match",
        "Unified Runtime traces",
        "https://github.com/intel/llvm (sycl/doc/design/OptionalDeviceFeatures.md)",
    ),
)


@dataclass(frozen=True)
class Capability:
    name: str
    answers: tuple[str, str, str, str, str]


CAPABILITY_COLUMNS = (
    "explicit priority",
    "specific over generic",
    "native over JIT IR",
    "explains its choice",
    "user override",
)

#: The summary table of selection-semantics.md, plus this proposal.
CAPABILITIES: tuple[Capability, ...] = (
    Capability("CUDA driver", ("no", "n/a", "yes", "no", "`CUDA_FORCE_PTX_JIT`")),
    Capability(
        "HIP (ROCm CLR)",
        ("fixed tiers", "yes", "yes", "log lines", "`HIP_FORCE_SPIRV_CODEOBJECT`"),
    ),
    Capability("IREE HAL", ("op order", "no", "no", "AMDGPU reasons", "variant order")),
    Capability(
        "Function multi-versioning",
        ("`priority=`", "yes", "n/a", "GCC dump", "`priority=`"),
    ),
    Capability(
        "SYCL (DPC++)", ("fixed (Level Zero)", "no", "yes", "UR trace", "build targets")
    ),
    Capability("LLVM offload today", ("no", "no", "no", "debug line", "none")),
    Capability(
        "this proposal",
        ("`variant_priority`", "yes", "yes", "reason per image", "`variant_tag`"),
    ),
)
