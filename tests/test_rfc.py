"""kdl.rfc: drafting the posts from results, and the checker that guards them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kdl import cli, paths
from kdl import rfc as rfc_pkg
from kdl.rfc import check, facts, markdown, rst, sources
from kdl.rfc.figures import FIGURE_RE, QUOTE_RE
from tests.rfc_support import DATA, Reply, isolate, loopback, workspace

__all__ = ["loopback"]  # the fixture, used by name below

UNIT_NS: dict[str, float] = {"ns": 1.0, "us": 1e3, "\u00b5s": 1e3, "ms": 1e6, "s": 1e9}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def _draft(root: Path, **kwargs: Any) -> dict[str, str]:
    files = rfc_pkg.draft(root=root, **kwargs)
    return {f.name: f.read_text() for f in files}


def _pointer(doc: Any, ptr: str) -> Any:
    """An independent JSON pointer walk (not kdl.rfc.figures)."""
    node = doc
    if ptr in ("", "/"):
        return node
    for raw in ptr.lstrip("/").split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _expected(root: Path, ref: str) -> tuple[float, float | None]:
    """The value a marker names and the ns per unit of its field (if a time)."""
    path, _, selector = ref.partition("#")
    if path.endswith(".patch"):
        # Count the hunk lines of the diff (between the first hunk and "-- ").
        diff = (root / path).read_text().split("\n-- \n")[0]
        body = [
            ln
            for ln in diff.splitlines()
            if not ln.startswith(("+++ ", "--- ", "diff ", "index ", "new file"))
        ]
        body = body[next(i for i, ln in enumerate(body) if ln.startswith("@@")) :]
        sign = {"insertions": "+", "deletions": "-"}[selector]
        return float(sum(ln.startswith(sign) for ln in body)), None
    ptr, _, query = selector.partition("?")
    doc = json.loads((root / path).read_text())
    value = _pointer(doc, ptr)
    if query == "len":
        return float(len(value)), None
    if query.startswith("count="):
        field, _, want = query.removeprefix("count=").partition(":")
        wanted = json.loads(want) if want in ("true", "false", "null") else want
        hits = [item for item in value if item.get(field) == wanted]
        return float(sum(type(item.get(field)) is type(wanted) for item in hits)), None
    assert not query, f"test does not know query {query}"
    key = ptr.rsplit("/", 1)[-1]
    scale = None
    if key.endswith("_ns"):
        scale = 1.0
    else:
        parent = _pointer(doc, ptr.rsplit("/", 1)[0])
        if isinstance(parent, dict):
            scale = UNIT_NS.get(parent.get("unit", ""))
    return float(value), scale


# --- the drafts from a full workspace -------------------------------------------


def test_draft_returns_both_posts(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    files = rfc_pkg.draft(root=root)
    assert [f.name for f in files] == ["metadata-vocabulary.md", "ranked-selection.md"]
    assert all(f.parent == root / "rfc" / "out" for f in files)


def test_drafts_pass_the_checker(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    files = rfc_pkg.draft(root=root)
    assert check.check_files(files, root) == []


def test_every_figure_matches_its_result_file(tmp_path: Path) -> None:
    """Parse the Markdown, and compare each figure with the file it names."""
    root = workspace(tmp_path)
    posts = _draft(root)
    seen = 0
    for name, text in posts.items():
        for m in FIGURE_RE.finditer(text):
            shown = float(m.group("num"))
            decimals = len(m.group("num").partition(".")[2])
            value, scale = _expected(root, m.group("ref"))
            unit = m.group("unit")
            if unit in UNIT_NS:
                assert scale is not None, (name, m.group(0))
                value = value * scale / UNIT_NS[unit]
            assert abs(shown - value) <= 0.5 * 10**-decimals + 1e-9, (
                name,
                m.group(0),
                value,
            )
            seen += 1
    assert seen > 100  # the bench table alone has that many


def test_measured_numbers_come_from_results(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    text = _draft(root)["ranked-selection.md"]
    bench = json.loads((root / "results/selection-bench.json").read_text())
    last64 = next(c for c in bench["cases"] if c["name"] == "one-compatible-64-last")
    shown = markdown.fmt_ns(last64["ranked"]["median_ns"])
    assert shown in text
    assert "not measured yet" not in text.split("### On a GPU")[0]
    # the goals are reported as measured, not as wished
    assert ("**not met**" in text) == (not all(g["met"] for g in bench["goals"]))


def test_vocabulary_table_is_quoted_from_the_docs_patch(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    text = _draft(root)["metadata-vocabulary.md"]
    quotes = {m.group("ref"): m.group("body") for m in QUOTE_RE.finditer(text)}
    ref = (
        "patches/0001-Object-Offload-Add-standard-OffloadBinary-metadata-keys.patch"
        "#table:offload/docs/ImageSelection.rst"
    )
    assert ref in quotes
    assert "| `min_sm` | decimal `10 * major + minor` |" in quotes[ref]
    assert "higher is preferred among compatible images" in quotes[ref]


def test_example_quotes_the_pack_line_and_outcome(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    text = _draft(root)["ranked-selection.md"]
    assert "llvm-offload-binary -o %t.bin \\" in text
    assert "arch=sm_86,kind=openmp" in text
    assert "selected: image 1" in text  # the ranked outcome, from summary.json
    assert "selected: image 0" in text  # first-compatible-wins
    assert "`PASS`" in text


def test_structure_and_length(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    for name, text in _draft(root).items():
        headings = re.findall(r"^## (.*)$", text, re.M)
        for wanted in (
            "Summary",
            "Motivation",
            "Proposal",
            "Compatibility and migration",
            "Alternatives considered",
            "Testing",
            "Measurements",
            "Implementation plan",
            "Open questions",
            "Upstream history",
            "CC",
        ):
            assert wanted in headings, (name, wanted)
        words = check.prose_words(text)
        assert 800 <= words <= 1500, (name, words)


def test_history_is_not_misattributed(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    for text in _draft(root).values():
        for line in text.splitlines():
            if "isMetadataCompatible" in line and "#" in line:
                # only ever tied to the open PR #186088, never to #185663
                assert "#186088" in line, line
            if "#185663" in line and "|" in line:
                assert "isImageCompatible" in line
        assert "pull/185663" in text or "185663" not in text


def test_cc_names_the_maintainers_with_sources(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    for text in _draft(root).values():
        cc = text.split("## CC", 1)[1]
        for owner in ("jhuber6", "jdoerfert", "jh7370", "MaskRay"):
            assert owner in cc
        assert facts.OFFLOAD_MAINTAINERS in cc and facts.LLVM_MAINTAINERS in cc


# --- missing inputs ---------------------------------------------------------------


def test_empty_workspace_says_not_measured(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    files = rfc_pkg.draft(root=root)
    texts = [f.read_text() for f in files]
    assert all("not measured yet" in t for t in texts)
    assert "not exported yet" in texts[0]
    assert check.check_files(files, root) == []
    # no number appears without a source, so none appears at all
    for t in texts:
        assert not FIGURE_RE.search(t)


def test_missing_bench_and_gpu_only(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "results/selection-bench.json").unlink()
    for f in (root / "results/gpu").iterdir():
        f.unlink()
    posts = _draft(root)
    ranked = posts["ranked-selection.md"]
    assert "Selection cost against first-compatible-wins: not measured yet." in ranked
    assert "Loading the selected image on real devices: not measured yet." in ranked
    assert "41<!-- src: results/lit/summary.json#/counts/passed -->" in ranked
    assert check.check_files(list((root / "rfc/out").glob("*.md")), root) == []


def test_unreadable_result_is_treated_as_missing(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "results/selection-bench.json").write_text("{not json")
    text = _draft(root)["ranked-selection.md"]
    assert "not measured yet" in text


# --- the checker ------------------------------------------------------------------


def _check(tmp_path: Path, text: str) -> list[str]:
    root = workspace(tmp_path)
    path = root / "rfc" / "out" / "post.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return check.check_files([path], root)


def _good(tmp_path: Path) -> str:
    root = workspace(tmp_path / "src")
    return (rfc_pkg.draft(root=root)[1]).read_text()


@pytest.mark.parametrize("word", ["TODO", "TBD", "XXX", "FIXME", "{title}"])
def test_checker_rejects_placeholders(tmp_path: Path, word: str) -> None:
    text = _good(tmp_path).replace(
        "## Open questions\n", f"## Open questions\n\n{word}\n"
    )
    problems = _check(tmp_path, text)
    assert len(problems) == 1 and "placeholder" in problems[0], problems
    assert re.match(r"rfc/out/post\.md:\d+: ", problems[0])


def test_checker_rejects_an_unsourced_number(tmp_path: Path) -> None:
    text = _good(tmp_path).replace(
        "## Open questions\n", "## Open questions\n\nSelection takes 42 ns.\n"
    )
    problems = _check(tmp_path, text)
    assert problems == [problems[0]] and "number 42 has no source marker" in problems[0]


def test_checker_accepts_names_versions_and_dates(tmp_path: Path) -> None:
    text = _good(tmp_path).replace(
        "## Open questions\n",
        "## Open questions\n\nLLVM 22 and 22.1.8, sm_90, gfx9-4-generic, "
        "#139147, 2026-11-22, version 2 and `llvm-offload-binary -o 3.bin`.\n",
    )
    assert _check(tmp_path, text) == []


def test_checker_rejects_a_figure_that_differs(tmp_path: Path) -> None:
    good = _good(tmp_path)
    m = next(m for m in FIGURE_RE.finditer(good) if m.group("unit") == "us")
    bad = (
        good[: m.start()]
        + "999.9 us"
        + good[m.start() + len(m.group(0).split("<")[0]) :]
    )
    problems = _check(tmp_path, bad)
    assert len(problems) == 1 and "shows 999.9 us" in problems[0], problems


def test_checker_notices_a_changed_result_file(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    files = rfc_pkg.draft(root=root)
    bench_file = root / "results/selection-bench.json"
    bench = json.loads(bench_file.read_text())
    bench["cases"][0]["ranked"]["median_ns"] *= 3
    bench_file.write_text(json.dumps(bench))
    problems = check.check_files(files, root)
    assert problems and all("cases/0/ranked/median_ns" in p for p in problems)


def test_checker_notices_a_changed_quote(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    files = rfc_pkg.draft(root=root)
    patch = next((root / "patches").glob("0001-*.patch"))
    patch.write_text(patch.read_text().replace("higher is preferred", "higher wins"))
    problems = check.check_files(files, root)
    assert len(problems) == 1 and "differs from its source" in problems[0]


def test_checker_rejects_unresolvable_marker(tmp_path: Path) -> None:
    text = _good(tmp_path).replace(
        "## Open questions\n",
        "## Open questions\n\n7<!-- src: results/nothing.json#/a -->\n",
    )
    problems = _check(tmp_path, text)
    assert len(problems) == 1 and "does not resolve" in problems[0]


def test_checker_rejects_broken_anchor(tmp_path: Path) -> None:
    good = _good(tmp_path)
    ok = good.replace(
        "## Open questions\n", "## Open questions\n\nSee [above](#measurements).\n"
    )
    assert _check(tmp_path, ok) == []
    bad = good.replace(
        "## Open questions\n", "## Open questions\n\nSee [above](#nowhere).\n"
    )
    problems = _check(tmp_path, bad)
    assert len(problems) == 1 and "#nowhere" in problems[0]


def test_checker_rejects_broken_markdown(tmp_path: Path) -> None:
    good = _good(tmp_path)
    problems = _check(tmp_path, good + "\n```text\nunclosed\n")
    assert any("unclosed code fence" in p for p in problems)
    problems = _check(tmp_path, good + '\n[details="x"]\nhidden\n')
    assert any("[details]" in p for p in problems)
    problems = _check(tmp_path, good + "\n| a | b |\n|---|---|\n| 1 |\n")
    assert any("table row has 1 cells" in p for p in problems)


def test_checker_rejects_length(tmp_path: Path) -> None:
    short = "# [RFC] Short\n\n## Summary\n\nToo short.\n"
    problems = _check(tmp_path, short)
    assert any("words of prose" in p for p in problems)


# --- the command line ------------------------------------------------------------


def _use_root(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setattr(paths, "RFC_OUT", root / "rfc" / "out")


def test_cli_draft_then_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    _use_root(monkeypatch, root)
    assert cli.main(["rfc"]) == 0
    out = capsys.readouterr().out
    assert "draft: " in out and "metadata-vocabulary.md" in out
    assert cli.main(["rfc", "--check"]) == 0
    assert "2 drafts, no problems" in capsys.readouterr().out


def test_cli_check_fails_with_one_line_per_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    _use_root(monkeypatch, root)
    assert cli.main(["rfc"]) == 0
    capsys.readouterr()
    post = root / "rfc/out/ranked-selection.md"
    post.write_text(post.read_text() + "\nTODO: 17 more things\n")
    assert cli.main(["rfc", "--check"]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    assert all(line.startswith("rfc/out/ranked-selection.md:") for line in lines)


def test_cli_check_without_drafts_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _use_root(monkeypatch, workspace(tmp_path))
    assert cli.main(["rfc", "--check"]) == 1
    assert "run 'kdl rfc' first" in capsys.readouterr().err


# --- inputs: RST tables, RUN lines, the header --------------------------------------


@pytest.mark.parametrize(
    "name", ["list-table", "grid-table", "simple-table", "csv-table"]
)
def test_rst_tables(name: str) -> None:
    expected = json.loads((DATA / "tables" / "expected.json").read_text())
    text = (DATA / "tables" / f"{name}.rst").read_text()
    rows = rst.find_table(text, sources.TABLE_HEADER)
    assert rows == expected["rows"]
    assert [[rst.to_markdown(c) for c in row] for row in rows] == expected["markdown"]


def test_rst_table_missing() -> None:
    assert rst.find_table("no table here\n", sources.TABLE_HEADER) is None


def test_new_file_text_only_for_created_files(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    patch = next((root / "patches").glob("0001-*.patch")).read_text()
    text = rst.new_file_text(patch, sources.DOCS_PAGE)
    assert text is not None and text.startswith("==========================\n")
    assert rst.new_file_text(patch, "llvm/lib/Object/Nothing.cpp") is None
    patch2 = next((root / "patches").glob("0002-*.patch")).read_text()
    assert rst.new_file_text(patch2, "offload/libomptarget/PluginManager.cpp") is None


def test_run_lines_join_continuations() -> None:
    text = "# RUN: a \\\n# RUN:   b\n// RUN: c | FileCheck %s\n# CHECK: x\n"
    assert sources.run_lines(text) == ["a b", "c | FileCheck %s"]
    assert sources.run_blocks(text, "FileCheck") == ["c | FileCheck %s"]


def test_header_api_lists_exported_functions(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    patch = next((root / "patches").glob("0001-*.patch")).read_text()
    api = sources.header_api(patch)
    assert (
        "LLVM_ABI bool isBetterImage(const ImageCandidate &Current, const "
        "ImageCandidate &Candidate, const ImageDevice &Device);"
    ) in api


# --- GitHub PR states (loopback only) ---------------------------------------------


def test_github_states_from_loopback(tmp_path: Path, loopback: Any) -> None:
    replies = []
    for item in facts.HISTORY:
        if item.number == 186088:
            replies.append(
                Reply(200, {"state": "closed", "merged_at": "2026-12-01T00:00:00Z"})
            )
        else:
            replies.append(
                Reply(
                    200,
                    {
                        "state": item.state if item.state != "merged" else "closed",
                        "merged_at": "x" if item.state == "merged" else None,
                    },
                )
            )
    server = loopback(*replies)
    root = workspace(tmp_path)
    text = _draft(root, github=True, github_base=server.url)["ranked-selection.md"]
    row = next(
        line
        for line in text.splitlines()
        if "pull/186088" in line and line.startswith("|")
    )
    assert "| merged |" in row
    assert "api.github.com" in text
    assert all(
        r.path.startswith("/repos/llvm/llvm-project/pulls/") for r in server.requests
    )


def test_github_offline_keeps_recorded_states(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    # port 9 on loopback: nothing listens, the connection is refused
    text = _draft(root, github=True, github_base="http://127.0.0.1:9")[
        "ranked-selection.md"
    ]
    row = next(
        line
        for line in text.splitlines()
        if "pull/186088" in line and line.startswith("|")
    )
    assert "| open |" in row
    assert "read from the threads in 2026-11" in text


def test_enum_names_from_the_header_patch() -> None:
    patch = (
        "+enum class ImageCompatibility : uint8_t {\n"
        "+  Compatible,     ///< compatible\n"
        "+  SMMinorTooHigh, ///< sm-minor-too-high: sm_XY cubin on X.Z, Z < Y.\n"
        "+  TagMismatch,    ///< tag-mismatch\n"
        "+};\n"
        "+enum class ImageTier : uint8_t {\n"
        "+  NativeExact, ///< native-exact: machine code for this processor.\n"
        "+};\n"
    )
    assert sources.enum_names(patch, "ImageCompatibility") == [
        "compatible",
        "sm-minor-too-high",
        "tag-mismatch",
    ]
    assert sources.enum_names(patch, "ImageTier") == ["native-exact"]


def test_long_declarations_are_wrapped() -> None:
    from kdl.rfc.render import _wrap_decl

    decl = (
        "LLVM_ABI OffloadImageRanking rankOffloadImages(ArrayRef<OffloadFile> Files, "
        'const OffloadDevice &Device, StringRef RequiredTag = "");'
    )
    lines = _wrap_decl(decl).splitlines()
    assert lines[0] == "LLVM_ABI OffloadImageRanking"
    assert all(len(line) <= 80 for line in lines)
    assert lines[2].startswith(" " * len("rankOffloadImages("))


def test_posts_follow_what_the_stack_contains(tmp_path: Path) -> None:
    from kdl.rfc import render

    src = sources.load(workspace(tmp_path))
    assert render._wrapper_note(src) == "Carrying them through is a follow-up."
    src.patches.append(
        sources.PatchInfo(
            rel="patches/0003-x.patch",
            subject="[Clang][LinkerWrapper] Keep the keys",
            body="",
            files=["clang/tools/clang-linker-wrapper/ClangLinkerWrapper.cpp"],
            new_files=[],
            insertions=1,
            deletions=0,
        )
    )
    note = render._wrapper_note(src)
    assert note.startswith("The third patch of the stack")
    ranked = render.ranked_selection(src)
    assert "return the ordered list to callers" in ranked
