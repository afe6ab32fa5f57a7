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
        "Every OffloadBinary image carries a key/value string map, but LLVM gives "
        "only `triple` and `arch` a meaning. This RFC proposes a small documented "
        f"vocabulary of optional keys ({key_list}) in a new `{DOCS_PAGE}`, which "
        "also documents `triple` and `arch`, and a "
        "compatibility check in `llvm/lib/Object` that reads them and reports why "
        "an image was rejected. Binaries without the keys behave exactly as today. "
        f"A companion RFC, *{RANKED_TITLE[6:]}*, proposes how the offload runtime "
        "uses the keys to choose between images.",
        "",
        "## Motivation",
        "",
        "Several images for different targets now travel in one binary: format "
        "version 2 stores them as entries of one binary "
        f"([#169425]({facts.pr(169425).url})), and `llvm-offload-binary` puts every "
        f"`--image` into one binary ([#197456]({facts.pr(197456).url})). The tool "
        "already stores any extra `key=value` verbatim and `OffloadBinary::getString` "
        "reads it back, but no key other than `triple` and `arch` means anything to "
        'any LLVM component. A producer cannot say "this cubin needs sm_80 or '
        'newer in the same major", "this code object needs xnack on" or "prefer '
        'this variant", and every consumer that wants to choose between images '
        "has to invent its own convention.",
        "",
    ]
    o += example(
        src,
        "Without such information the runtime takes the first image that passes "
        f"its target check ([#139147]({facts.pr(139147).url}) in libomptarget; "
        f"[#186088]({facts.pr(186088).url}) proposes the same loop for every plugin).",
    )
    o += ["", "## Proposal", ""]
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
        "- A missing key imposes nothing, and keys a reader does not know are "
        "ignored, so producers can add keys without breaking older runtimes.",
        "- A value that does not match its grammar rejects the image with reason "
        "`malformed-metadata`; nothing is guessed.",
        "- List values are written by repeating the key: `llvm-offload-binary` "
        "splits a value at commas into new keys and joins repeated keys with commas.",
        "- The architecture rules are the vendors' published ones. NVPTX: a cubin "
        "for sm_XY runs on the same major with an equal or higher minor, `sm_XYa` "
        "only on exactly that device, `sm_XYf` within its family, PTX on any device "
        "at or above its version. AMDGPU: the same processor with compatible "
        "xnack/sramecc settings (a feature left out means either), and generic "
        "targets such as gfx9-generic by their generic version, as "
        "`llvm/docs/AMDGPUUsage.rst` specifies.",
        "",
        "The check lives next to `OffloadBinary` so that libomptarget, liboffload "
        "and the tools share one implementation.",
    ]
    functions = sorted(
        (d for d in src.api if d.startswith("LLVM_ABI")),
        key=lambda d: next((i for i, w in enumerate(KEY_API) if w in d), len(KEY_API)),
    )
    if functions:
        o.append(
            "The new header in `llvm/include/llvm/Object/` declares, among others:"
        )
        o.append("")
        o += code("\n".join(_wrap_decl(d) for d in functions[:MAX_DECLS]), "c++")
    o += [
        "",
        "Every rejection carries a stable reason code that tools and debug output "
        "print: " + ", ".join(f"`{r}`" for r in (src.reasons or REASONS)) + ".",
        "",
        "## Compatibility and migration",
        "",
        "- No format change: the keys live in the existing string map of version 1 "
        "and version 2 binaries, and the compression proposal "
        f"([#222774]({facts.pr(222774).url})) leaves that map unchanged.",
        "- Existing binaries carry none of the keys and get the same target check "
        "as today.",
        "- Producers opt in per image with the existing tool: "
        "`llvm-offload-binary -o out.bin --image=file=k.cubin,"
        "triple=nvptx64-nvidia-cuda,arch=sm_90,kind=openmp,min_sm=90,"
        "variant_priority=10`.",
        "- Clang does not write the keys yet, and in LLVM 22 `clang-linker-wrapper` "
        "re-wraps the final device image with only `triple` and producer "
        "metadata, so keys attached at packaging time do not reach the runtime "
        "in the normal OpenMP flow. " + _wrapper_note(src),
        "",
        "## Alternatives considered",
        "",
        "- **Encode more in `arch`** (a target-ID-like string for NVPTX). It covers "
        "the minimum architecture but not priorities or required features, and it "
        "changes what existing code compares.",
        "- **Leave it to each plugin.** That is the status quo: each plugin checks "
        "its own subset, and the tools that pack or inspect binaries cannot say "
        "which image a device would accept.",
        "- **What other systems do**: every one filters first; few rank, and only "
        "HIP and IREE say why an image was refused.",
        "",
    ]
    o += systems_table()
    o += ["", *testing(src)]
    o += ["", "## Measurements", "", *vocab_measurements(src)]
    o += ["", *plan(src)]
    naming = []
    if any("isMetadataCompatible" in d for d in src.api):
        naming = [
            "- The check is called `isMetadataCompatible`, the name that "
            f"[#186088]({facts.pr(186088).url}) gives its plugin hook. Should "
            "that hook call this function, or should one of them be renamed?"
        ]
    o += [
        "",
        "## Open questions",
        "",
        *naming,
        "- `min_sm` and `min_gfx` are vendor-specific on purpose. Would reviewers "
        "prefer one `min_arch` key whose grammar depends on the triple?",
        "- Feature names: vendor tokens, or LLVM target-feature names? Where should "
        "the runtime learn the device's features from?",
        "- Should Clang emit the keys (from `--offload-arch` and attributes)?",
        "- Should `llvm-objdump --offloading` print every key? Today it prints "
        "kind, arch, triple and producer.",
        "",
    ]
    o += history(src, (139147, 169425, 185663, 186088, 197456, 209563, 222774), None)
    o += ["", *cc()]
    return "\n".join(o).rstrip() + "\n"


MAX_DECLS = 6
#: The declarations the post shows first, in this order.
KEY_API = ("isMetadataCompatible", "rankOffloadImages", "getSelected", "Name(")


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
        "When one binary holds several images that a device can run, the offload "
        "runtime loads the first one in file order. This RFC proposes that the "
        "runtime ask one function in `llvm/lib/Object` to rank them and load the "
        "best: highest `variant_priority`, then native code over generic code over "
        "IR compiled at load time, then the image closest to the device, then file "
        "order. A binary with one compatible image loads what it loads today, and "
        "every choice can be explained image by image. It builds on the companion "
        f"RFC, *{VOCAB_TITLE[6:]}*.",
        "",
        "## Motivation",
        "",
        f"libomptarget loads one image per device and descriptor since "
        f"[#139147]({facts.pr(139147).url}), whose description says it will "
        '"use the first one we find, which might not be overly optimal". '
        "`DeviceImageTy` keeps only the first entry of an OffloadBinary, and "
        f'[#186088]({facts.pr(186088).url}) loads "the first compatible image" and '
        "defers any other policy. The order in the file is set by the build, for "
        "example by the order of `--offload-arch` flags, so the code a device runs "
        "depends on command-line order:",
        "",
        "- an sm_86 device given `sm_80` and `sm_86` cubins, in that order, runs "
        "the `sm_80` code;",
        "- a gfx942 device given `gfx9-4-generic` before `gfx942` runs the generic "
        f"code; the duplicate loads that [#139147]({facts.pr(139147).url}) "
        "stopped were reported with exactly this pair of targets, and "
        f"[#118919]({facts.pr(118919).url}) left preferring the specific ISA "
        "undone.",
        "",
    ]
    o += example(src, "")
    o += [
        "",
        "## Proposal",
        "",
        "1. **Filter** every image with the compatibility check of the companion "
        "RFC; a rejected image keeps its reason code.",
        "2. **Rank** the compatible images: higher `variant_priority` first "
        "(absent means zero); then the tier, "
        + ", ".join(f"`{x}`" for x in (src.tiers or TIERS))
        + "; then closeness to the device (the smallest gap in minor version, or "
        "the most specific target); then the lower index.",
        "3. **Load** the image ranked first. The plugin's own checks still "
        "apply: an image its plugin rejects is never loaded.",
        "4. **Explain**: every image keeps its rank or its rejection reason, so "
        "debug output and tools can show the choice"
        + (
            ", as in the example above." if src.example and src.example.outputs else "."
        ),
        "",
        "`variant_tag` does not take part in ranking; a caller that asks for a "
        "tag keeps only the images with that tag (`tag-mismatch` for the others).",
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
        "- Binaries with a single compatible image load exactly what they load today.",
        "- Binaries with several compatible images and no keys may now load a "
        "different image (native before generic, closer before farther). That is "
        "the point, but it changes which code runs: the runtime logs the choice and "
        + (
            "has a switch back to the old behaviour for bisection (the controls above)."
            if src.controls is not None
            else "should offer a way back for bisection (see open questions)."
        ),
        "- No format or API is removed; the keys are optional.",
        "- liboffload in LLVM 22 hands a whole OffloadBinary to the CUDA driver, "
        "which rejects it (see the measurements); selecting an image first fixes "
        "that.",
        "",
        "## Alternatives considered",
        "",
        "- **Keep first-compatible-wins and ask producers to order images.** In "
        f"the review of [#186088]({facts.pr(186088).url}) the container's job was "
        'described as "a loop in the is_valid / load routines to just grab the '
        "first one that's compatible\". The ranking is that loop with a sort key "
        "instead of an early exit; no producer order is best for every device, "
        "and linking or archiving merges binaries in an order nobody chose.",
        "- **Load every compatible image.** This is what "
        f"[#139147]({facts.pr(139147).url}) stopped: the same symbols would be "
        "loaded twice.",
        "- **Rank in each plugin** as HIP's runtime does (native, then generic, "
        "then SPIR-V). Each runtime would re-implement the same rules, and LLVM's "
        "tools could not show a choice before run time.",
        "- **What other systems do**, in brief (function multi-versioning is the "
        "closest to this proposal):",
        "",
    ]
    o += capability_table()
    o += ["", *testing(src)]
    o += ["", "## Measurements", "", *_ranked_measurements(src)]
    o += ["", *plan(src)]
    o += [
        "",
        "## Open questions",
        "",
        "- Should `variant_priority` override the tier, as proposed and as "
        "`priority=` does for function multi-versioning, or only break ties "
        "within a tier?",
        "- How close is close: for NVPTX the smallest minor gap, for AMDGPU "
        "generic targets the highest generic version?",
        *(
            []
            if src.controls is not None
            else [
                "- An environment variable to restore first-compatible-wins or to "
                "force a tag, for bisection?"
            ]
        ),
        "- Should the runtime try the next image when loading the first fails?",
        (
            "- The liboffload patch selects inside `olCreateProgram`. Should a new "
            "entry point also return the ranked list to callers that choose "
            "themselves?"
            if src.touching("offload/liboffload/")
            else "- liboffload: should `olCreateProgram` select internally, or "
            "should a new entry point return the ranked list to the caller?"
        ),
        "- What to do when several plugins accept one image "
        f"([#225135]({facts.pr(225135).url}))?",
        "",
    ]
    o += history(
        src, (118919, 139147, 169425, 185663, 186088, 197456, 209563, 225135), states
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
