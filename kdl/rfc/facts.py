"""Upstream pull requests the posts cite, with their state as read.

Each fact was read from the upstream pull-request thread it names. They are
data, not measurements: the posts link them, and ``kdl rfc --github`` warns
when a linked pull request's state on api.github.com differs from the one
recorded here.
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
    #: Its first and its latest dated entry in the stored thread (description,
    #: review, comment), where read: a post that follows it up says both.
    opened: str | None = None
    last_seen: str | None = None
    kind: str = "pull"  # or "issues": an issue, linked as such

    @property
    def url(self) -> str:
        return f"{GITHUB}/{self.kind}/{self.number}"


#: Pull requests the posts cite, oldest first. Titles and states were read
#: from the PR threads; the "what" column states only what the thread says.
HISTORY: tuple[PullRequest, ...] = (
    PullRequest(
        78117,
        "[mlir][gpu] Add the `OffloadEmbeddingAttr` offloading translation attr",
        "open",
        "embeds GPU binaries with LLVM's offloading infrastructure, which "
        "registers kernels and variables with CUDA RT, HIP RT or libomptarget "
        "at program start",
    ),
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
        149284,
        "[offload] Allow liboffload cuda plugin to accept PTX binaries as input",
        "open",
        "an issue: users of liboffload build PTX into a cubin themselves; "
        "liboffload should detect PTX, build and link it",
        opened="2025-07-17",
        last_seen="2025-07-17",
        kind="issues",
    ),
    PullRequest(
        156955,
        "[Offload] Support loading CUDA fat binaries",
        "open",
        "lets the CUDA plugin load fatbinaries, so the CUDA driver chooses "
        "among their images",
        opened="2025-09-04",
        last_seen="2025-09-04",
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
        185413,
        None,
        "merged",
        "writes keys of the Level Zero plugin's own (version, format, compile "
        "and link options) into an OffloadBinary's string map",
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
        opened="2026-03-12",
        last_seen="2026-04-07",
    ),
    PullRequest(
        167580,
        None,
        "merged",
        "its review records that OpenMP's wrapping of OffloadBinary images is "
        "'only for llvm-objdump' (the runtime does not read the keys)",
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
        221947,
        None,
        "open",
        "libomptarget initializes devices and loads binaries through liboffload "
        "(with #221733-#221735)",
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


#: What each post must cite, and why: the upstream threads a maintainer
#: would bring up first (the review of RFC v4).
CITES: dict[str, tuple[tuple[int, str], ...]] = {
    "ranked-selection": (
        (186088, "the PR it follows up"),
        (139147, "libomptarget's first-compatible rule"),
        (149284, "the request the CUDA plugin's PTX patch (0008) answers"),
        (156955, "the CUDA alternative, where the driver chooses"),
    ),
}


def pr(number: int) -> PullRequest:
    for item in HISTORY:
        if item.number == number:
            return item
    raise KeyError(number)
