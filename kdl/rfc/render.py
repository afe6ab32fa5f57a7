"""Render the two RFC posts as Discourse-flavoured Markdown.

The prose is written here; every number in it comes from :mod:`kdl.rfc.sources`
and carries a source marker (:mod:`kdl.rfc.figures`). Where an input is missing
the post says so ("not measured yet") instead of showing a number.
"""

from __future__ import annotations

from kdl.rfc import facts, gpu
from kdl.rfc.markdown import NOT_MEASURED, code, quoted, vocab_table_md
from kdl.rfc.sections import (
    bench_section,
    capability_table,
    cc,
    controls,
    example,
    history,
    keys,
    plan,
    systems_table,
    testing,
    vocab_measurements,
)
from kdl.rfc.sources import DOCS_PAGE, Sources

VOCAB_TITLE = "[RFC] Standard metadata keys for OffloadBinary images"
RANKED_TITLE = "[RFC] Rank compatible OffloadBinary images instead of loading the first"

#: Reason codes of the compatibility check (contract of the series' library).
REASONS = (
    "triple-mismatch",
    "processor-mismatch",
    "sm-major-mismatch",
    "sm-minor-too-high",
    "arch-specific-mismatch",
    "family-mismatch",
    "ptx-too-new",
    "target-feature-mismatch",
    "generic-family-mismatch",
    "generic-version-too-old",
    "below-min-sm",
    "below-min-gfx",
    "missing-feature",
    "malformed-metadata",
    "metadata-only",
    "unsupported-image-kind",
    "tag-mismatch",
)
TIERS = ("native-exact", "native-compatible", "generic", "jit-ir")

# --- the vocabulary post ---------------------------------------------------------


def metadata_vocabulary(src: Sources) -> str:
    new_keys = [k for k in keys(src) if k not in ("`triple`", "`arch`")]
    key_list = ", ".join(new_keys) if new_keys else "the keys of the docs patch"
    o: list[str] = [f"# {VOCAB_TITLE}", ""]
    o += [
        "## Summary",
        "",
        "Every OffloadBinary entry carries a key/value string map. LLVM's tools "
        "write `triple`, `arch`, `producer` and, under `-foffload-lto`, "
        "`feature` (read by `clang-linker-wrapper`), but nothing says how a "
        "runtime should choose between entries. This RFC proposes five optional "
        f"keys ({key_list}), documented in `{DOCS_PAGE}`, that order the entries "
        "a device's plugin accepts and never make an entry loadable or remove "
        "one. Binaries without them behave exactly as today. A companion RFC, "
        f"*{RANKED_TITLE[6:]}*, proposes the choice itself, which works from the "
        "images alone; the keys only refine it.",
        "",
        "## Motivation",
        "",
        "Several images for different targets travel in one binary: format "
        f"version 2 stores them as entries of one binary ([#169425]"
        f"({facts.pr(169425).url})), and `llvm-offload-binary` puts every "
        f"`--image` into one binary ([#197456]({facts.pr(197456).url})). A "
        "producer that builds a tuned and a portable variant, or PTX that needs "
        "a newer device than its target says, has no way to tell the runtime, "
        "and every consumer that wants to choose invents its own convention.",
        "",
    ]
    o += ["## Proposal", ""]
    if src.vocab is not None:
        o.append(f"The keys, as the docs patch defines them (`{DOCS_PAGE}`):")
        o.append("")
        o += quoted(src.vocab.ref, vocab_table_md(src.vocab.rows))
    else:
        o.append(
            f"The key table comes from `{DOCS_PAGE}` in the docs patch, which is "
            "not exported yet."
        )
    o += [
        "",
        "Rules for all keys:",
        "",
        "- They order only the entries the device's plugin already accepts; an "
        "unmet `min_sm`, `min_gfx` or `requires_features` ranks an entry last, "
        "and the entry still loads when it is the only one accepted.",
        "- A missing key imposes nothing; keys a reader does not know are ignored.",
        "- A malformed value makes its entry unrankable: it is never chosen over "
        "an earlier entry, and, listed first, it is kept.",
        "- List values are written by repeating the key: `llvm-offload-binary` "
        "joins repeated keys with commas.",
        "- `min_sm` and `min_gfx` are for code whose target does not say what it "
        "needs (PTX, bitcode, generic code objects); `min_gfx` compares "
        "features as well as ISA versions (`AMDGPU::getArchAttrAMDGCN`), so "
        "gfx90c does not meet `min_gfx=gfx906`. `requires_features` says what "
        "the device must offer at run time, unlike `feature`, which says how the "
        "code was compiled.",
    ]
    functions = sorted(
        (d for d in src.api if d.startswith("LLVM_ABI")),
        key=lambda d: next((i for i, w in enumerate(KEY_API) if w in d), len(KEY_API)),
    )
    if functions:
        o.append("")
        o.append(
            "The ranking helpers (`llvm/Frontend/Offloading/ImageRanking.h`) "
            "declare, among others:"
        )
        o.append("")
        o += code("\n".join(_wrap_decl(d) for d in functions[:MAX_DECLS]), "c++")
    o += [
        "",
        "## Compatibility and migration",
        "",
        "- No format change: the keys live in the existing string map of version 1 "
        "and version 2 binaries, and the compression proposal "
        f"([#222774]({facts.pr(222774).url})) leaves that map unchanged.",
        "- Producers opt in per image with the existing tool: "
        "`llvm-offload-binary -o out.bin --image=file=k.cubin,"
        "triple=nvptx64-nvidia-cuda,arch=sm_90,kind=openmp,variant_priority=10`.",
        "- The keys reach the runtime where the container does (an OffloadBinary "
        "given to `olCreateProgram`). clang's OpenMP flow registers each image "
        "inside its binary, so `registerLib` sees no string map and chooses from "
        "the images alone.",
        *_producer(src),
        "",
        "## Alternatives considered",
        "",
        "- **Encode more in `arch`** (a target-ID-like string for NVPTX). It covers "
        "the minimum architecture but not priorities, and it changes what existing "
        "code compares.",
        "- **No keys at all**: the companion proposal chooses from the images "
        "alone, which is enough for clang-built programs; the keys matter only "
        "where a producer knows more than the code says.",
        "- **What other systems do**: every one filters first; few rank, and only "
        "HIP and IREE say why an image was refused.",
        "",
    ]
    o += systems_table()
    o += ["", *testing(src)]
    o += ["", "## Measurements", "", *vocab_measurements(src)]
    o += ["", *plan(src)]
    o += [
        "",
        "## Open questions",
        "",
        "- `min_sm` and `min_gfx` are vendor-specific on purpose. Would reviewers "
        "prefer one `min_arch` key whose grammar depends on the triple?",
        "- Feature names: vendor tokens, or LLVM target-feature names? Where should "
        "the runtime learn the device's features from?",
        "- Should `llvm-objdump --offloading` print every key? Today it prints "
        "kind, arch, triple and producer.",
        "",
    ]
    o += history(src, (139147, 169425, 185663, 186088, 197456, 209563, 222774), None)
    o += ["", *cc()]
    return "\n".join(o).rstrip() + "\n"


MAX_DECLS = 6
#: The declarations the post shows first, in this order.
KEY_API = ("selectImage", "isBetterImage", "rankImage", "scoreImage")


def _producer(src: Sources) -> list[str]:
    """Who writes the keys: MLIR's #gpu.runtime_select, if the series has it."""
    mlir = src.touching("mlir/lib/Target/LLVMIR/Dialect/GPU/")
    if not mlir:
        return ["- No producer in LLVM writes the keys yet."]
    i, patch = mlir[0]
    return [
        f"- The series' {_ordinal(i)} patch ({patch.subject}) makes MLIR the "
        "first producer: `#gpu.runtime_select` packs every object of a "
        "`gpu.binary` into one OffloadBinary with `triple` and `arch` from the "
        "object's target and the keys from its properties, and lets the "
        "runtime choose. On an H100, through LLVM 22's liboffload with the "
        "series' policy applied by a preloaded shim, it ran the sm_90a object "
        "of an sm_80/sm_90/sm_90a/PTX binary "
        "(`results/gpu/runtime-select-h100.json`); LLVM 22 alone refuses the "
        "container."
    ]


def _ordinal(i: int) -> str:
    words = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh")
    return words[i - 1] if 0 < i <= len(words) else "a later"


def _wrapper_note(src: Sources) -> str:
    """Whether the series carries the keys through clang-linker-wrapper."""
    wrapper = src.touching("clang/tools/clang-linker-wrapper/")
    if wrapper:
        i, patch = wrapper[0]
        return f"The {_ordinal(i)} patch of the stack (`{patch.subject}`) keeps them."
    return "Carrying them through is a follow-up."


def _wrap_decl(decl: str, width: int = 80) -> str:
    """One declaration laid out as clang-format's LLVM style would, roughly:
    the return type on its own line when long, parameters aligned after '('.
    """
    if len(decl) <= width or "(" not in decl:
        return decl
    head, _, rest = decl.partition("(")
    ret, _, name = head.rpartition(" ")
    lines = [ret]
    current = f"{name}("
    indent = " " * len(current)
    params = rest.split(", ")
    for i, param in enumerate(params):
        piece = param + ("," if i + 1 < len(params) else "")
        if len(current) + len(piece) > width and not current.endswith("("):
            lines.append(current.rstrip())
            current = indent
        current += piece + " "
    lines.append(current.rstrip())
    return "\n".join(lines)


# --- the ranked-selection post ---------------------------------------------------


def ranked_selection(src: Sources, states: dict[int, str] | None = None) -> str:
    o: list[str] = [f"# {RANKED_TITLE}", ""]
    runtime = [p for p in src.patches if any(f.startswith("offload/") for f in p.files)]
    o += [
        "## Summary",
        "",
        "When a device's plugin accepts several images of one program, the "
        "offload runtime loads the first. This RFC proposes that a later image "
        "the plugin also accepts replace it only when it is known to fit the "
        "device better, judged from the images themselves: machine code for the "
        "device's own processor, then for a compatible processor, then generic "
        "code, then code compiled at load; within one fit `sm_90a` before "
        "`sm_90`, the closest compute capability, the highest generic version. "
        "Nothing the plugin accepts is rejected, and a program with one image "
        "runs what it runs today. The same rule picks the entry of an OffloadBinary "
        "given to `olCreateProgram`. It builds on the companion RFC, "
        f"*{VOCAB_TITLE[6:]}*.",
        "",
        "## Motivation",
        "",
        f"libomptarget loads one image per device and descriptor since "
        f"[#139147]({facts.pr(139147).url}), whose description says it will "
        '"use the first one we find, which might not be overly optimal"; '
        f"[#180003]({facts.pr(180003).url}) noted that the runtime should iterate "
        "over the images. Which image is first is decided by the build, not by "
        "the device:",
        "",
        "- clang lists a `gfx9-4-generic` code object before a `gfx942` one, "
        "and a gfx942 agent reports the gfx9-4-generic ISA too, so the plugin "
        "accepts both and the generic code runs; the duplicate loads that "
        f"[#139147]({facts.pr(139147).url}) stopped were reported with exactly "
        f"this pair, and [#118919]({facts.pr(118919).url}) left preferring the "
        "specific ISA undone;",
        "- for NVIDIA, clang lists `sm_90a` before `sm_90` in the executable it "
        "links, so there the first image is already the better one; an image "
        "order made elsewhere (packaged binaries, libraries) is not.",
        "",
    ]
    o += example(src, "")
    o += [
        "",
        "## Proposal",
        "",
        "1. **Accept** as today: the plugin's `isDeviceCompatible` decides which "
        "images a device can run. Nothing here changes it.",
        "2. **Compare** only accepted images, from their ELF headers: exact "
        "processor, compatible processor, generic processor, compiled at load "
        "(bitcode, PTX, SPIR-V); then closeness. An OffloadBinary entry's "
        "`variant_priority` orders before the fit, and an unmet `min_sm`, "
        "`min_gfx` or `requires_features` ranks an image last (never removes it).",
        "3. **Keep the first** unless a later image scores strictly higher; an "
        "image that cannot be ranked (unreadable, a fatbinary, a container, a "
        "malformed key) is neither chosen over an earlier one nor displaced.",
        "4. **Where**: `registerLib` asks the plugin "
        "(`GenericPluginTy::isBetterImage`) when a second compatible image "
        "comes for a device; the plugin common layer picks the entry of an "
        "OffloadBinary in `loadBinary`: the loop of "
        f"[#186088]({facts.pr(186088).url}), ranked. The helpers live in "
        "FrontendOffloading.",
    ]
    if runtime:
        o += [
            "",
            "The runtime patches: "
            + "; ".join(f"`{p.subject}`" for p in runtime)
            + ".",
        ]
    if src.controls is not None:
        o += ["", *controls(src)]
    o += [
        "",
        "## Compatibility and migration",
        "",
        "- A device gets an image whenever it gets one today; a program with one "
        "image, or whose images tie, loads exactly what it loads today.",
        "- A program whose later image fits better now runs that image. That is "
        "the point, but it changes which code runs: "
        + (
            "`OFFLOAD_IMAGE_SELECTION=first` restores the old rule for bisection."
            if src.controls is not None
            else "an environment variable should restore the old rule."
        ),
        "- The Level Zero plugin keeps loading its OffloadBinaries whole.",
        "- No format or API is removed; the keys are optional.",
        "",
        "## Alternatives considered",
        "",
        "- **Keep first-compatible and ask producers to order images.** In the "
        f"review of [#186088]({facts.pr(186088).url}) the container's job was "
        'described as "a loop in the is_valid / load routines to just grab the '
        "first one that's compatible\". This proposal is that loop, where a "
        "later image may replace the first only when it is known to be better; "
        "no producer order is best for every device of a family.",
        "- **Load a CUDA fatbinary and let the driver choose** "
        f"([#156955]({facts.pr(156955).url})): the driver prefers matching machine "
        "code over PTX, but says nothing about its choice, and it covers only "
        "NVIDIA.",
        "- **Let HSA/comgr choose for AMDGPU**, as HIP's runtime does: the same "
        "order, inside one vendor's runtime.",
        "- **What other systems do**, in brief (function multi-versioning is the "
        "closest to this proposal):",
        "",
    ]
    o += capability_table()
    o += ["", *testing(src)]
    o += ["", "## Measurements", "", *_ranked_measurements(src)]
    o += ["", *plan(src, skip="mlir/")]
    o += [
        "",
        "## Open questions",
        "",
        "- Should `variant_priority` order before the fit, as proposed and as "
        "`priority=` does for function multi-versioning, or only break ties?",
        "- ptxas of CUDA 13 writes the same ELF flags for `sm_90` and `sm_90a`; "
        "is there a better source for the suffix than the entry's `arch`?",
        *(
            []
            if src.controls is not None
            else [
                "- An environment variable to restore first-compatible-wins or to "
                "force a tag, for bisection?"
            ]
        ),
        "- Should the runtime try the next image when loading the chosen one fails?",
        "- Should a liboffload entry point return the ordered list to callers "
        "that choose themselves?",
        "- What to do when several plugins accept one image "
        f"([#225135]({facts.pr(225135).url}))?",
        "",
    ]
    o += history(
        src,
        (118919, 139147, 156955, 169425, 180003, 185404, 185663, 186088, 225135),
        states,
    )
    o += ["", *cc()]
    return "\n".join(o).rstrip() + "\n"


def _ranked_measurements(src: Sources) -> list[str]:
    out = ["### Cost of selection", ""]
    bench = src.bench
    if bench is None:
        out.append(f"Selection cost against first-compatible-wins: {NOT_MEASURED}.")
    else:
        out += bench_section(bench)
    out += ["", "### On a GPU", ""]
    if not src.gpu:
        out.append(f"Loading the selected image on real devices: {NOT_MEASURED}.")
    else:
        for rel, data in src.gpu:
            out += gpu.section(rel, data)
    return out


def render_all(src: Sources, states: dict[int, str] | None = None) -> dict[str, str]:
    """File name -> Markdown text for both posts."""
    return {
        "metadata-vocabulary.md": metadata_vocabulary(src),
        "ranked-selection.md": ranked_selection(src, states),
    }
