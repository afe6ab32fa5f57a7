"""kdl.rfc: posts from templates and results, and the checker that guards them."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from kdl import cli, paths
from kdl import rfc as rfc_pkg
from kdl.errors import WorkspaceError
from kdl.rfc import check, facts, quotes, rst, template
from kdl.series.model import Patch
from tests.rfc_support import DATA, Reply, isolate, workspace

UNIT_NS: dict[str, float] = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def _draft(root: Path, **kwargs: Any) -> dict[str, Path]:
    return {f.stem: f for f in rfc_pkg.draft(root=root, **kwargs)}


def _pointer(doc: Any, ptr: str) -> Any:
    """An independent JSON pointer walk (not kdl.rfc.figures)."""
    node = doc
    if not ptr.strip("/"):
        return node
    for raw in ptr.lstrip("/").split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _value(root: Path, ref: str, src_unit: str | None) -> tuple[Any, float | None]:
    """The value a reference names, and the ns per unit of a time."""
    path, _, selector = ref.partition("#")
    if path.endswith(".patch"):
        diff = (root / path).read_text().split("\n-- \n")[0]
        body = diff[diff.index("\n@@") :].splitlines()
        sign = {"insertions": "+", "deletions": "-"}[selector]
        return sum(
            ln.startswith(sign) and not ln.startswith(("+++ ", "--- ")) for ln in body
        ), None
    if selector.startswith("match="):
        found = re.search(selector[len("match=") :], (root / path).read_text(), re.M)
        assert found, ref
        return (found.group(1) if found.lastindex else found.group(0)), None
    ptr, _, query = selector.partition("?")
    doc = json.loads((root / path).read_text())
    value = _pointer(doc, ptr)
    if query == "len":
        return len(value), None
    assert not query, f"the test does not know query {query}"
    if src_unit:
        return value, UNIT_NS[src_unit]
    key = ptr.rsplit("/", 1)[-1]
    if key.endswith("_ns"):
        return value, 1.0
    parent = _pointer(doc, ptr.rsplit("/", 1)[0])
    unit = parent.get("unit") if isinstance(parent, dict) else None
    return value, UNIT_NS.get(unit) if isinstance(unit, str) else None


# --- the posts drawn from this workspace ------------------------------------------


def test_posts_pass_the_checker(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    posts = _draft(root)
    assert list(posts) == list(rfc_pkg.NAMES)
    assert check.check_files(list(posts.values()), root) == []


def test_a_run_drafts_from_its_own_record(tmp_path: Path) -> None:
    """With a run's record (``kdl all``, ``selftest --full``), a figure comes
    from the run's file where the run wrote one, and the sidecar says so."""
    root = workspace(tmp_path)
    run = root / "build" / "record"
    (run / "real-trees").mkdir(parents=True)
    rank = json.loads((root / "results/real-trees/rank.json").read_text())
    rank["corpus_pairs"] = 1234567
    (run / "real-trees" / "rank.json").write_text(json.dumps(rank))
    posts = _draft(root, record=run)
    assert "rank each of 1234567" in posts["ranked-selection"].read_text()
    side = json.loads(template.sidecar_path(posts["ranked-selection"]).read_text())
    exprs = [f["expr"] for f in side["figures"]]
    assert "build/record/real-trees/rank.json#/corpus_pairs" in exprs
    assert not any(e.startswith("results/real-trees/rank.json") for e in exprs)
    # What the run did not write comes from the recorded results.
    assert any(e.startswith("results/real-trees/check-offload-22.json") for e in exprs)
    assert check.check_files(list(posts.values()), root) == []
    # Without the run's record, the recorded results.
    posts = _draft(root)
    assert "rank each of 1234567" not in posts["ranked-selection"].read_text()
    assert check.check_files(list(posts.values()), root) == []


def test_every_figure_is_its_source_recomputed_independently(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    seen = 0
    for post in _draft(root).values():
        lines = post.read_text().split("\n")
        side = json.loads(template.sidecar_path(post).read_text())
        for fig in side["figures"]:
            line = lines[fig["line"] - 1]
            assert line[fig["col"] :].startswith(fig["text"]), fig
            display, _, option = fig["format"].partition(" ")
            src_unit = option.removeprefix("src=") or None
            parts = re.split(r" ([/-]) ", fig["expr"])
            if len(parts) == 3:
                (a, sa), (b, sb) = (_value(root, p, src_unit) for p in parts[::2])
                assert fig["computed"] and sa == sb
                value, scale = (a / b, None) if parts[1] == "/" else (a - b, sa)
            else:
                value, scale = _value(root, fig["expr"], src_unit)
                assert not fig["computed"]
            seen += 1
            if display == "text":
                assert fig["text"] == str(value)
                continue
            number = float(re.match(r"-?[\d.]+", fig["text"])[0])  # type: ignore[index]
            decimals = len(fig["text"].split()[0].rstrip("x").partition(".")[2])
            if display in UNIT_NS:
                assert scale is not None, fig
                value = value * scale / UNIT_NS[display]
            assert abs(number - value) <= 0.5 * 10**-decimals + 1e-9, fig
    assert seen >= 20


def test_posts_are_what_discourse_takes(tmp_path: Path) -> None:
    posts = _draft(workspace(tmp_path))
    for name, post in posts.items():
        text = post.read_text()
        assert "<!--" not in text and len(text) <= check.MAX_CHARS
        low, high = check.WORDS[name]
        assert low <= check.prose_words(text) <= high
        # One line per paragraph: Discourse turns a newline into a line break
        # (a code block keeps its lines).
        prose = check._FENCE.sub("```", text).splitlines()
        for a, b in itertools.pairwise(prose):
            if a and b and not a.startswith(("#", "|")):
                assert b.startswith(("|", "- ", "#")) or b[:1].isdigit(), (a, b)


def test_the_rfc_cites_the_upstream_work_it_builds_on(tmp_path: Path) -> None:
    text = _draft(workspace(tmp_path))["ranked-selection"].read_text()
    for number in (139147, 186088):
        assert f"https://github.com/llvm/llvm-project/pull/{number}" in text
        assert number in {p.number for p in facts.HISTORY}
    # The ask comes first, and the caveats a reviewer would ask for are there.
    ask = text.index("## The ask")
    assert ask < text.index("## The problem, on main") < text.index("## Evidence")
    assert "Main's plugin sources are not packaged" in text
    assert "AMD GPUs: the target-ID rule is tested against main's helpers only" in text
    assert "where my goal was at most" in text
    # The state of the PR it follows up, and the threads a maintainer raises.
    assert "It has been open since 2026-03-12, with no review since 2026-04-07" in text
    for number in (149284, 156955):
        assert f"github.com/llvm/llvm-project/{facts.pr(number).kind}/{number}" in text
    # A measured limit is a result, not something not run.
    assert "`IMG_None`" in text[: text.index("## What I did not run")]
    # First person, one question first, what was not run said plainly.
    assert "I'd like the offload owners' answer to one question" in text
    assert text.index("## What I did not run") < text.index("## Questions")
    assert "Main's plugins and #186088's own loop." in text
    assert text.count("\n| ") - text.count("\n|---") <= 7  # one table
    assert "kdl" not in text.lower()


#: A patch that adds a docs page with a key table (series v2's 0004, kept as
#: test data), and where the workspace copy holds it.
DOCS_PATCH = DATA / "docs-page.patch"
QUOTED = "docs-page.patch"


def _quoting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace copy with one more post, which quotes a patch's table."""
    monkeypatch.setattr(rfc_pkg, "NAMES", (*rfc_pkg.NAMES, "quoted"))
    root = workspace(tmp_path)
    (root / QUOTED).write_bytes(DOCS_PATCH.read_bytes())
    (root / "rfc/templates/quoted.md").write_text(
        f"# Q\n\n## A\n\n{PROSE}\n\n"
        f"{{{{quote {QUOTED}#table:offload/docs/ImageSelection.rst}}}}\n"
    )
    return root


def test_a_post_quotes_a_patch_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    post = _draft(_quoting(tmp_path, monkeypatch))["quoted"]
    side = json.loads(template.sidecar_path(post).read_text())
    (quote,) = side["quotes"]
    lines = post.read_text().splitlines()[quote["start"] - 1 : quote["end"]]
    assert lines[0] == "| Key | Grammar | Meaning | Default |"
    assert any(line.startswith("| `variant_priority` |") for line in lines)


def test_the_vocabulary_is_a_draft_not_a_proposal(tmp_path: Path) -> None:
    text = _draft(workspace(tmp_path))["metadata-vocabulary"].read_text()
    assert text.startswith("# [Draft, not proposed]")
    assert "Not proposed until a producer and a consumer exist upstream" in text
    assert "are header fields, not keys" in text
    for number in (169425, 222774):
        assert f"https://github.com/llvm/llvm-project/pull/{number}" in text


# --- rendering ----------------------------------------------------------------------


def _mini(tmp_path: Path, body: str, data: dict[str, Any] | None = None) -> Path:
    root = tmp_path / "mini"
    (root / "results").mkdir(parents=True, exist_ok=True)
    doc = data or {"a_ns": 1500, "b_ns": 500, "t": "sm_90a", "items": [1, 2, 3]}
    (root / "results" / "r.json").write_text(json.dumps(doc))
    (root / "rfc" / "templates").mkdir(parents=True, exist_ok=True)
    (root / "rfc" / "templates" / "note.md").write_text(body)
    return root


def _render(root: Path) -> template.Rendered:
    from kdl.rfc.figures import Resolver

    resolver = Resolver(root, quotes.QUOTE_RENDERERS)
    return template.render(
        (root / "rfc/templates/note.md").read_text(), resolver, "note.md"
    )


def test_slots_fill_and_are_recorded(tmp_path: Path) -> None:
    root = _mini(
        tmp_path,
        "# T\n\nIt took {{results/r.json#/a_ns | us}} on\n"
        "{{results/r.json#/t | text}}, {{results/r.json#/a_ns / results/r.json#/b_ns"
        " | x}} as long, over {{results/r.json#/items?len | n}} items.\n",
    )
    out = _render(root)
    assert (
        out.text == "# T\n\nIt took 1.50 us on sm_90a, 3.00x as long, over 3 items.\n"
    )
    assert [(f.line, f.col, f.text, f.computed) for f in out.figures] == [
        (3, 8, "1.50 us", False),
        (3, 19, "sm_90a", False),
        (3, 27, "3.00x", True),
        (3, 47, "3", False),
    ]


@pytest.mark.parametrize(
    ("slot", "why"),
    [
        ("{{results/r.json#/a_ns | parsecs}}", "unknown format"),
        ("{{results/r.json#/nope | us}}", "no key"),
        ("{{results/missing.json#/a | n}}", "cannot read"),
        ("{{results/r.json#/t | us}}", "not a number"),
        ("{{results/r.json#/items | text}}", "not a text"),
        ("{{results/r.json#/items?len | us}}", "no time unit"),
        ("{{results/r.json#/a_ns - results/r.json#/t | us}}", "not a number"),
        ("{{results/r.json#/a_ns", "unclosed"),
    ],
)
def test_a_bad_slot_names_the_template_line(
    tmp_path: Path, slot: str, why: str
) -> None:
    root = _mini(tmp_path, f"# T\n\nline\n{slot}\n")
    with pytest.raises(Exception, match=rf"note\.md:4: .*{why}"):
        _render(root)


def test_draft_of_a_bad_template_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    post = root / "rfc/templates/ranked-selection.md"
    post.write_text(post.read_text() + "\n{{results/gone.json#/x | ms}}\n")
    with pytest.raises(WorkspaceError, match=r"ranked-selection\.md:\d+: .*gone"):
        rfc_pkg.draft(root=root)
    _use_root(monkeypatch, root)
    assert cli.main(["rfc"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ranked-selection.md" in err[0]


# --- the checker ---------------------------------------------------------------------

PROSE = " ".join(["The runtime loads the image the plugin accepts."] * 40)


def _checked(tmp_path: Path, body: str, edit: Any = None) -> list[str]:
    root = _mini(tmp_path, body)
    post = root / "rfc" / "out" / "note.md"
    post.parent.mkdir(parents=True, exist_ok=True)
    out = _render(root)
    post.write_text(out.text if edit is None else edit(out.text))
    template.sidecar_path(post).write_text(json.dumps(out.sidecar("note.md", "x")))
    return check.check_files([post], root)


GOOD = f"# T\n\n## A\n\n{PROSE} It took {{{{results/r.json#/a_ns | us}}}}.\n"


def test_checker_accepts_a_good_post(tmp_path: Path) -> None:
    assert _checked(tmp_path, GOOD) == []


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda t: t.replace("1.50 us", "1.40 us"), "expected '1.50 us' here"),
        (lambda t: t + "\nIt ran 17 times.\n", "number 17 is not a traced figure"),
        (lambda t: t + "\n<!-- src: x -->\n", "HTML comment"),
        (lambda t: t + "\nTODO: more\n", "placeholder 'TODO'"),
        (lambda t: t + "\n{{results/r.json#/a_ns}}\n", "unfilled slot"),
        (lambda t: t + "\n```c\nint x;\n", "unclosed code fence"),
        (lambda t: t + "\nSee [x](#nowhere).\n", "no such heading"),
        (lambda t: t + "\n" + "word " * 32_000, "characters; Discourse takes"),
        (lambda t: t.replace(PROSE, "Short."), "words of prose"),
        (
            lambda t: t + "\n| a |\n|---|\n\nx\n\n| b |\n|---|\n\nx\n\n| c |\n|---|\n",
            "3 tables",
        ),
        (lambda t: t + "\n| a | b |\n|---|\n", "table row has 1 cells"),
    ],
)
def test_checker_rejects(tmp_path: Path, edit: Any, why: str) -> None:
    problems = _checked(tmp_path, GOOD, edit)
    assert any(why in p for p in problems), problems
    assert all(re.match(r"rfc/out/note\.md:\d+: ", p) for p in problems)


def test_checker_notices_a_changed_result(tmp_path: Path) -> None:
    assert _checked(tmp_path, GOOD) == []
    root = tmp_path / "mini"
    (root / "results" / "r.json").write_text(json.dumps({"a_ns": 1700}))
    problems = check.check_files([root / "rfc/out/note.md"], root)
    assert problems == [
        "rfc/out/note.md:5: figure '1.50 us': its source now gives '1.70 us' "
        "(results/r.json#/a_ns)"
    ]


def test_checker_needs_the_sidecar(tmp_path: Path) -> None:
    _checked(tmp_path, GOOD)
    root = tmp_path / "mini"
    template.sidecar_path(root / "rfc/out/note.md").unlink()
    (problem,) = check.check_files([root / "rfc/out/note.md"], root)
    assert "no sidecar" in problem


def test_checker_notices_a_changed_quote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _quoting(tmp_path, monkeypatch)
    posts = _draft(root)
    patch = root / QUOTED
    patch.write_text(patch.read_text().replace("higher is preferred", "bigger wins"))
    problems = check.check_files([posts["quoted"]], root)
    assert any("differs from its source" in p for p in problems), problems


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
    assert "3 drafts, no problems" in capsys.readouterr().out


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


# --- inputs: RST tables, RUN lines ------------------------------------------------


@pytest.mark.parametrize(
    "name", ["list-table", "grid-table", "simple-table", "csv-table"]
)
def test_rst_tables(name: str) -> None:
    expected = json.loads((DATA / "tables" / "expected.json").read_text())
    text = (DATA / "tables" / f"{name}.rst").read_text()
    rows = rst.find_table(text, quotes.TABLE_HEADER)
    assert rows == expected["rows"]
    assert [[rst.to_markdown(c) for c in row] for row in rows] == expected["markdown"]


def test_rst_table_missing() -> None:
    assert rst.find_table("no table here\n", quotes.TABLE_HEADER) is None


def test_new_file_text_only_for_created_files() -> None:
    patch = Patch(DOCS_PATCH)
    text = patch.new_file_text(quotes.DOCS_PAGE)
    assert text is not None and "Selection keys" in text
    assert text.endswith("\n") and "\n+" not in text
    assert patch.new_file_text("offload/docs/index.rst") is None
    index = patch.file_diff("offload/docs/index.rst")
    assert index is not None and index.startswith("diff --git ")
    assert "ImageSelection" in index and "diff --git" not in index[1:]
    assert patch.file_diff("no/such/file") is None


def test_run_lines_join_continuations() -> None:
    text = "# RUN: a \\\n# RUN:   b\n// RUN: c | FileCheck %s\n# CHECK: x\n"
    assert quotes.run_lines(text) == ["a b", "c | FileCheck %s"]
    assert quotes.run_blocks(text, "FileCheck") == ["c | FileCheck %s"]


# --- GitHub PR states (loopback only) ---------------------------------------------


def test_github_states_from_loopback(
    tmp_path: Path, loopback: Any, caplog: pytest.LogCaptureFixture
) -> None:
    root = workspace(tmp_path)
    cited = sorted(
        {
            int(n)
            for name in rfc_pkg.NAMES
            for n in re.findall(
                r"pull/(\d+)", (root / "rfc/templates" / f"{name}.md").read_text()
            )
        }
    )
    recorded = {p.number: p.state for p in facts.HISTORY}
    replies = [
        Reply(200, {"state": "closed", "merged_at": "2026-12-01T00:00:00Z"})
        if n == 186088
        else Reply(
            200,
            {
                "state": "closed" if recorded[n] == "merged" else recorded[n],
                "merged_at": "x" if recorded[n] == "merged" else None,
            },
        )
        for n in cited
    ]
    server = loopback(*replies)
    caplog.set_level("WARNING", logger="kdl")
    _draft(root, github=True, github_base=server.url)
    assert [r.path for r in server.requests] == [
        f"/repos/llvm/llvm-project/pulls/{n}" for n in cited
    ]
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "rfc: #186088 is merged now (recorded: open); check what the posts say of it"
    ]


def test_github_offline_keeps_recorded_states(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("WARNING", logger="kdl")
    # port 9 on loopback: nothing listens, the connection is refused
    _draft(workspace(tmp_path), github=True, github_base="http://127.0.0.1:9")
    assert any("GitHub not reachable" in r.getMessage() for r in caplog.records)


# --- upstream claims need their source --------------------------------------------


def test_a_pr_named_but_never_linked_fails(tmp_path: Path) -> None:
    body = f"# T\n\n## A\n\n{PROSE} As #186088 does.\n"
    problems = _checked(tmp_path, body)
    assert any("#186088 is named but the post never links it" in p for p in problems)
    linked = body.replace(
        "As #186088 does.",
        "As [#186088](https://github.com/llvm/llvm-project/pull/186088) does.",
    )
    assert _checked(tmp_path, linked) == []


def test_an_unsourced_quotation_fails(tmp_path: Path) -> None:
    quote = '"the first one we find, which might not be optimal"'
    body = f"# T\n\n## A\n\n{PROSE}\n\nA reviewer wrote {quote}.\n"
    (problem,) = _checked(tmp_path, body)
    assert "names no source in its paragraph" in problem
    sourced = body.replace(
        "A reviewer wrote",
        "[#139147](https://github.com/llvm/llvm-project/pull/139147) says",
    )
    assert _checked(tmp_path, sourced) == []


def test_the_runtime_select_draft_says_what_loads_it(tmp_path: Path) -> None:
    text = _draft(workspace(tmp_path))["runtime-select"].read_text()
    assert text.startswith("# [Draft, not proposed yet][mlir][gpu]")
    assert "No upstream runtime does today" in text
    assert "`cuModuleLoadData`" in text and "`olCreateProgram`" in text
    assert "https://github.com/llvm/llvm-project/pull/78117" in text
    assert "cooperative" in text
