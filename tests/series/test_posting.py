"""kdl pr --dry-run: the posting plan of the real series files, in a real
git checkout, posted as the checkout's own git identity."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kdl import paths
from kdl.errors import FormatError
from kdl.series.model import load
from kdl.series.posting import plan
from tests.llvm_tree import git, kdl


@pytest.fixture
def checkout(llvm: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small llvm-project checkout whose only identity is its own config
    (no GIT_* identity from the environment, no global one)."""
    for name in ("NAME", "EMAIL"):
        monkeypatch.delenv(f"GIT_AUTHOR_{name}", raising=False)
        monkeypatch.delenv(f"GIT_COMMITTER_{name}", raising=False)
    monkeypatch.delenv("EMAIL", raising=False)
    return llvm


def _plan(capsys: pytest.CaptureFixture[str], repo: Path) -> tuple[int, str, str]:
    argv = ["pr", "--dry-run", "--llvm", str(repo), "--series", str(paths.SERIES)]
    return kdl(capsys, *argv, "--login", "jdev")


def test_the_plan_posts_the_fixes_then_the_rfc_then_the_stack(
    capsys: pytest.CaptureFixture[str], checkout: Path
) -> None:
    git(checkout, "config", "user.name", "Jane Developer")
    git(checkout, "config", "user.email", "jdev@llvm-contributors.org")
    status, out, err = _plan(capsys, checkout)
    assert status == 0, err
    series = load(paths.SERIES)
    proposals = load(paths.PROPOSALS_SERIES)
    lines = out.splitlines()
    lines = lines[[ln.startswith("# posting plan") for ln in lines].index(True) :]
    assert lines[0] == (
        f"# posting plan of {series.name} v{series.version}: 10 step(s), "
        "authored by Jane Developer <jdev@llvm-contributors.org>"
    )
    steps = [ln for ln in lines if re.match(r"^ ?\d+\. ", ln)]
    held = [ln for ln in lines if ln.startswith(" - ")]
    topic = series.name
    # 1-5: each fix its own pull request into main, titled with its subject.
    for n, line in enumerate(steps[:5], 1):
        patch = series.patches[n - 1]
        assert line == (
            f"{n:>2}. fix, its own PR: {patch.name[:4]}: {patch.subject} "
            f"[users/jdev/{topic}-{n} -> main]"
        )
    # 6: the RFC, after the fixes and before the follow-up.
    assert steps[5].startswith(" 6. the RFC, on Discourse: -: [RFC]")
    assert "rfc/" in steps[5] and "ranked-selection.md" in steps[5]
    # 7-10: one stack on #186088, each on the one before.
    for i, line in enumerate(steps[6:], 1):
        n = 5 + i
        patch = series.patches[n - 1]
        base = f"users/jdev/{topic}-{n - 1}" if i > 1 else "main"
        on = " (depends on #186088)" if i == 1 else ""
        assert line == (
            f"{n + 1:>2}. stacked PR {i}/4 on #186088: {patch.name[:4]}: "
            f"{patch.subject} [users/jdev/{topic}-{n} -> {base}{on}]"
        )
    assert len(steps) == 10
    # The proposals: listed, not posted, each with what it needs.
    assert [ln.split(": ")[1] for ln in held] == [p.name[:4] for p in proposals.patches]
    assert all(ln.startswith(" - not posted, a proposal: ") for ln in held)
    assert "[needs an RFC that gives the string map" in held[0]
    assert "[needs an in-tree consumer" in held[2]
    # Nothing is pushed or sent without the applied series.
    assert lines[-1].startswith("# the requests: ") and "apply the series" in lines[-1]
    assert "POST " not in out and "git push" not in out


def test_no_identity_stops_the_plan(
    capsys: pytest.CaptureFixture[str], checkout: Path
) -> None:
    status, out, err = _plan(capsys, checkout)
    assert status == 1
    assert "posting plan" not in out
    (line,) = err.splitlines()
    assert line.startswith("error: ") and "no git identity is configured" in line


def test_a_placeholder_identity_stops_the_plan(
    capsys: pytest.CaptureFixture[str], checkout: Path
) -> None:
    git(checkout, "config", "user.name", "Seed 7e91ae85 maintainers")
    email = "maintainers@users.noreply.a-seed-7e91ae85.example"
    git(checkout, "config", "user.email", email)
    status, out, err = _plan(capsys, checkout)
    assert status == 1 and "posting plan" not in out
    (line,) = err.splitlines()
    assert f"<{email}>, a placeholder" in line


@pytest.mark.parametrize(
    ("post", "why"),
    [
        ("post: fix 1-5\npost: stack 5-9 on 186088\n", "patch 5 is in two steps"),
        ("post: fix 1-5\npost: stack 6-10\n", "patch 10: the series has 9"),
        ("post: fix 1-5\npost: stack 6-8\n", "patch 9 is in no step"),
        ("post: fix one\n", "expected 'post: fix|stack|held"),
        ("post: held 1-9\n", "held needs 'needs TEXT'"),
    ],
)
def test_a_bad_post_line_is_a_format_error(tmp_path: Path, post: str, why: str) -> None:
    patches = tmp_path / "patches"
    shutil.copytree(paths.PATCHES, patches, ignore=shutil.ignore_patterns("*.md"))
    text = (patches / "series").read_text()
    text = re.sub(r"^post: .*\n", "", text, flags=re.MULTILINE)
    (patches / "series").write_text(text.replace("llvm: 24\n", f"llvm: 24\n{post}"))
    with pytest.raises(FormatError, match=re.escape(why)):
        load(patches / "series")


def test_a_series_without_post_lines_is_one_stack() -> None:
    backport = load(paths.BACKPORT_SERIES)
    assert backport.posting == []
    assert [s.kind for s in load(paths.SERIES).posting] == ["fix", "rfc", "stack"]


def test_the_backport_s_plan_names_borrowed_patches_as_its_series_does() -> None:
    """kdl pr finds each step's commit by the name status gives it (the
    series' line): a borrowed patch's step carries ../NAME, shown by its
    place in the backport."""
    backport = load(paths.BACKPORT_SERIES)
    steps = plan(backport, None, "someone", "topic")
    assert [s.patches[0] for s in steps] == [p.listed_as for p in backport.patches]
    tenth = steps[9]
    assert tenth.patches[0].startswith("../0006-Object-Add-a-rank")
    assert tenth.line().startswith("10. stacked PR 10/17: 0010: [Object] Add a rank")
