"""kdl rfc --check against what the review of RFC v4 found: its 9 wrong or
unsourced claims and the upstream context it missed, each put back into a
copy of the real draft and caught as its own kind of defect."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from kdl import rfc as rfc_pkg
from kdl.rfc import check, claims, figures, quotes
from tests.rfc_support import isolate, workspace

Edit = Callable[[str], str]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def drafts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = workspace(tmp_path_factory.mktemp("review-v4"))
    texts = {f.stem: f.read_text() for f in rfc_pkg.draft(root=root)}
    return root, texts


def _problems(drafts: tuple[Path, dict[str, str]], post: str, edit: Edit) -> list[str]:
    root, texts = drafts
    path = root / "rfc" / "out" / f"{post}.md"
    edited = edit(texts[post])
    assert edited != texts[post], "the edit changed nothing"
    path.write_text(edited)
    try:
        return check.check_files([path], root)
    finally:
        path.write_text(texts[post])


def _swap(pattern: str, new: str) -> Edit:
    """Replace the first match of *pattern* (a regex, across lines)."""

    def edit(text: str) -> str:
        assert re.search(pattern, text, re.DOTALL), pattern
        return re.sub(pattern, lambda _: new, text, count=1, flags=re.DOTALL)

    return edit


RANKED = "ranked-selection"

#: RFC v4's paragraph of the standalone fixes, as the review read it.
V4_FIXES = (
    "Five patches stand alone, and I will post them first as ordinary PRs: "
    "`getNVPTXCPUName` reads every ABI-v2 `sm_90` cubin as `sm_90a` and traps on "
    "an unknown SM; OffloadBinary's reader does not check an entry's string "
    "offsets (main's `llvm-objdump --offloading` crashes); the CUDA plugin "
    "accepts an `sm_100a` cubin on an `sm_103` device (nvcc marks them only in "
    "`.nv.compat`); the plugins free an image without destroying its image "
    "object and never unload PTX; and `OffloadBinary` copies every binary it "
    "reads."
)
_FIXES = r"Five patches stand alone.*?the entry it loads\."

#: (id, post, edit, what the check says): the review's claims in its order
#: (its table's numbers), then the context it found missing.
DEFECTS = [
    (
        "4-getNVPTXCPUName-unsourced",
        RANKED,
        _swap(_FIXES, V4_FIXES),
        "a defect of upstream code ('reads every ABI-v2",
    ),
    (
        "5-string-offsets-unsourced",
        RANKED,
        _swap(_FIXES, V4_FIXES),
        "a defect of upstream code ('does not check')",
    ),
    (
        "6-sm100a-on-sm103-unsourced",
        RANKED,
        _swap(_FIXES, V4_FIXES),
        "a defect of upstream code ('accepts an `sm_100a`",
    ),
    (
        "7-image-objects-unsourced",
        RANKED,
        _swap(_FIXES, V4_FIXES),
        "a defect of upstream code ('without destroying')",
    ),
    (
        "11-unit-test-read-as-a-device-result",
        RANKED,
        _swap(
            r"The AMDGPU plugin reports the agent's target ID;[^.]*\.",
            "The AMDGPU plugin reports the agent's target ID with its modes, so "
            "on an MI300X `gfx942:sramecc+:xnack-` ranks above `gfx9-4-generic`.",
        ),
        "a result put on MI300X, where no figure of its paragraph ran",
    ),
    (
        "17-measured-filed-as-not-run",
        RANKED,
        _swap(
            r"(- A device of another SM than `sm_90`\.)",
            "- PTX in an entry of image kind `IMG_None` ranks as native code.\n"
            "- A device of another SM than `sm_90`.",
        ),
        "PTX in an entry of image kind IMG_None beside a cubin was run "
        "(results/gpu/real-runtimes-v",
    ),
    (
        "18-raw-ptx-accepted",
        RANKED,
        _swap(
            r"3\. Main's `olIsValidBinary`.*?alone and in a container\?",
            "3. Should the CUDA plugin accept PTX in a container, as it does raw PTX?",
        ),
        "as it does raw PTX': results/gpu/real-runtimes/report.json"
        "#/choices/compute_80.ptx/main/valid contradicts it",
    ),
    (
        "amdpal-unsourced",
        "runtime-select",
        _swap(
            r"main's ELF reader names a CUDA 13\.0 cubin's triple `[^`]*`,",
            "main's ELF reader names current ptxas cubins `nvptx64-nvidia-amdpal`,",
        ),
        'what "main\'s ELF reader names"... does is claimed with no source',
    ),
    (
        "feature-unsourced",
        "metadata-vocabulary",
        _swap(
            r"; with `-foffload-lto`, main's clang also writes `feature` \([^)]*\)\.",
            ", and `clang-linker-wrapper` reads `feature` under `-foffload-lto`.",
        ),
        "what '`clang-linker-wrapper` reads'... does is claimed with no source",
    ),
    (
        "186088-state-unsaid",
        RANKED,
        _swap(r" It has been open since 2026-03-12.*?stack on it\.", ""),
        "#186088 is followed up, but the post never says it is open with no "
        "review since 2026-04-07",
    ),
    (
        "149284-not-cited",
        RANKED,
        _swap(r", as\s\[#149284\]\([^)]*\) \(open since\s2025-07-17\) asks", ""),
        "#149284 is not cited (the request the CUDA plugin's PTX patch (0008) answers)",
    ),
    (
        "156955-not-cited",
        RANKED,
        _swap(r"\n4\. Or, for CUDA.*?\)\?", ""),
        "#156955 is not cited (the CUDA alternative, where the driver chooses)",
    ),
]


def test_the_real_drafts_pass(drafts: tuple[Path, dict[str, str]]) -> None:
    root, texts = drafts
    files = [root / "rfc" / "out" / f"{name}.md" for name in texts]
    assert check.check_files(files, root) == []


@pytest.mark.parametrize(
    ("post", "edit", "why"),
    [pytest.param(*case[1:], id=case[0]) for case in DEFECTS],
)
def test_each_finding_of_the_review_is_caught(
    drafts: tuple[Path, dict[str, str]], post: str, edit: Edit, why: str
) -> None:
    problems = _problems(drafts, post, edit)
    assert any(why in p for p in problems), problems
    assert all(re.match(rf"rfc/out/{post}\.md:\d+: ", p) for p in problems)


def test_a_clause_with_its_own_source_passes(
    drafts: tuple[Path, dict[str, str]],
) -> None:
    """The fixes' paragraph as drafted: every defect it claims has a figure
    or a link in its clause; a figure that is not its source's value any more
    (same length, so that the others stay where they are) sources nothing."""
    _, texts = drafts
    assert "(its test on main's libLLVM: crash)" in texts[RANKED]
    problems = _problems(
        drafts,
        RANKED,
        lambda t: t.replace("main's libLLVM: crash)", "main's libLLVM: CRASH)", 1),
    )
    assert any("expected 'crash' here" in p for p in problems), problems
    (problem,) = [p for p in problems if "a defect of upstream code" in p]
    assert "'reads every ABI-v2" in problem


def test_a_device_named_by_its_figure_passes(
    drafts: tuple[Path, dict[str, str]],
) -> None:
    """The table's device is a figure of the run it shows; written out as
    another device, it is a result that run never had."""
    problems = _problems(
        drafts,
        RANKED,
        lambda t: re.sub(
            r"loaded on an \w+ \(containers",
            "loaded on an MI300X (containers",
            t,
            count=1,
        ),
    )
    assert any("a result put on MI300X" in p for p in problems), problems


# --- the two new kinds of source ----------------------------------------------


def test_a_figure_matched_in_a_tool_output(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("kind cubin\ntriple   nvptx64-nvidia-amdpal\n")
    resolver = figures.Resolver(tmp_path)
    assert resolver.value(r"out.txt#match=triple\s+(\S+)") == "nvptx64-nvidia-amdpal"
    assert resolver.value(r"out.txt#match=kind \w+") == "kind cubin"
    with pytest.raises(figures.SourceError, match="no match"):
        resolver.value(r"out.txt#match=arch\s+(\S+)")
    with pytest.raises(figures.SourceError, match="not a regular expression"):
        resolver.value("out.txt#match=(")


def test_a_quote_of_lines_of_a_tool_output(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("a\nb\nc\nd\n")
    assert quotes.quote_lines(path, "lines:2-3") == "```text\nb\nc\n```\n"
    for bad in ("lines:3-2", "lines:0-1", "lines:x", "lines:4-5"):
        with pytest.raises(ValueError):
            quotes.quote_lines(path, bad)


def test_figures_of_another_version_than_the_posted_one(
    drafts: tuple[Path, dict[str, str]],
) -> None:
    """The cost figures must be the posted series version's: against a
    series one version on from the run the draft quotes, they are reported;
    the drafts the series does not post are not checked."""
    root, texts = drafts
    measured = max(
        int(v)
        for v in re.findall(
            r"\bseries v(\d+)\b",
            (root / "results/gpu/real-runtimes-v10/report.json").read_text(),
        )
    )
    series = claims.load_series(root)
    assert series is not None
    sources = [root / "results/gpu/real-runtimes-v10/report.json"]
    for name in texts:
        series.version = measured + 1
        found = claims.check_posted_version(f"{name}.md", root, sources, series)
        if name == RANKED:
            assert found == [
                (
                    0,
                    "its figures from results/gpu/real-runtimes-v10/report.json "
                    f"measured series v{measured}; the series it posts is "
                    f"v{measured + 1}",
                )
            ]
        else:
            assert found == []
        series.version = measured
        assert claims.check_posted_version(f"{name}.md", root, sources, series) == []
