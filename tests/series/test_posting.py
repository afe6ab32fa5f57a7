"""kdl pr --dry-run: the posting plan of the real series files, from a fork,
posted as the checkout's own git identity; the backport is never posted."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kdl import paths
from kdl.errors import FormatError
from kdl.series import pr
from kdl.series.model import load
from kdl.series.posting import plan
from tests.llvm_tree import git, kdl, synthesize_bases

JANE = ("Jane Developer", "jdev@llvm-contributors.org")


@pytest.fixture
def checkout(llvm: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small llvm-project checkout whose only identity is its own config
    (no GIT_* identity from the environment, no global one)."""
    for name in ("NAME", "EMAIL"):
        monkeypatch.delenv(f"GIT_AUTHOR_{name}", raising=False)
        monkeypatch.delenv(f"GIT_COMMITTER_{name}", raising=False)
    monkeypatch.delenv("EMAIL", raising=False)
    return llvm


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    return kdl(capsys, "pr", "--dry-run", *argv, "--login", "jdev")


def _with_identity(repo: Path) -> None:
    git(repo, "config", "user.name", JANE[0])
    git(repo, "config", "user.email", JANE[1])


def _steps(out: str) -> tuple[list[str], list[str]]:
    lines = out.splitlines()
    steps = [ln for ln in lines if re.match(r"^ ?\d+\. ", ln)]
    held = [ln for ln in lines if ln.startswith(" - ")]
    return steps, held


def test_the_plan_posts_each_pr_from_a_fork_into_main(
    capsys: pytest.CaptureFixture[str], checkout: Path
) -> None:
    _with_identity(checkout)
    argv = ("--llvm", str(checkout), "--series", str(paths.SERIES))
    status, out, err = _plan(capsys, *argv)
    assert status == 0, err
    series = load(paths.SERIES)
    proposals = load(paths.PROPOSALS_SERIES)
    lines = out.splitlines()
    lines = lines[[ln.startswith("# posting plan") for ln in lines].index(True) :]
    assert lines[0] == (
        f"# posting plan of {series.name} v{series.version}: 8 step(s), "
        f"authored by {JANE[0]} <{JANE[1]}>"
    )
    assert "from jdev's fork of llvm/llvm-project" in lines[1]
    assert "users/" not in out and "depends on #186088" not in out
    steps, held = _steps(out)
    topic = series.name
    # 1-5: each fix its own pull request from the fork into main; 0003's
    # carries 0001, 0005's 0002.
    carries = {3: "0001", 5: "0002"}
    for n, line in enumerate(steps[:5], 1):
        patch = series.patches[n - 1]
        where = f"jdev:{topic}-{n} -> main"
        if n in carries:
            where += f"; carries {carries[n]} first, until that lands"
        assert line == (
            f"{n:>2}. fix, its own PR: {patch.name[:4]}: {patch.subject} [{where}]"
        )
    assert "0005's test uses 0002's TestBinary" in out
    # 6: the RFC, after the fixes.
    assert steps[5].startswith(" 6. the RFC, on Discourse: -: [RFC]")
    assert "ranked-selection.md" in steps[5]
    # 7: the rank, the target ID and PTX: one pull request into main, titled
    # with the change that uses the other two.
    assert steps[6] == (
        " 7. one PR of 3 commits, landing as one: 0006,0007,0008: "
        f"{series.patches[7].subject} [jdev:{topic}-6-8 -> main]"
    )
    assert "0007's getImageTriple" in out and "none of the three touches" in out
    # 8: the comment that offers the rank to #186088's author.
    assert steps[7] == (
        " 8. comment on #186088: -: patches/posting/186088-comment.md "
        "[POST /repos/llvm/llvm-project/issues/186088/comments]"
    )
    assert len(steps) == 8
    # 0009 is held until #186088 lands; then the proposals.
    loop = series.patches[8]
    assert held[0] == (
        f" - held until #186088 lands: 0009: {loop.subject} "
        "[needs PR 186088 merged into main]"
    )
    assert [ln.split(": ")[1] for ln in held[1:]] == [
        p.name[:4] for p in proposals.patches
    ]
    assert all(ln.startswith(" - not posted, a proposal: ") for ln in held[1:])
    # Nothing is pushed or sent without the applied series and a fork.
    assert lines[-1].startswith("# the requests: ")
    assert "POST /repos" not in out.replace("[POST /repos", "")
    assert "git push" not in out


def test_the_plan_prints_without_a_checkout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = kdl(capsys, "pr", "--dry-run")
    assert status == 0, err
    assert out.startswith("# posting plan of offload-ranked-selection v")
    assert "authored by the checkout's git identity" in out
    steps, _ = _steps(out)
    assert [s.split(": ")[1] for s in steps] == [
        "0001",
        "0002",
        "0003",
        "0004",
        "0005",
        "-",
        "0006,0007,0008",
        "-",
    ]
    assert "[<login>:offload-ranked-selection-1 -> main]" in out
    assert out.splitlines()[-1].startswith("# the requests: the plan alone")


def test_posting_needs_a_checkout(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = kdl(capsys, "pr", "--post")
    assert status == 2 and out == ""
    assert err == "error: --post needs --llvm: the checkout that carries the series\n"


@pytest.mark.parametrize("post", [(), ("--post",)])
def test_the_backport_is_never_posted(
    capsys: pytest.CaptureFixture[str], checkout: Path, post: tuple[str, ...]
) -> None:
    _with_identity(checkout)
    argv = ["pr", "--series", str(paths.BACKPORT_SERIES), *post]
    for extra in ([], ["--llvm", str(checkout)]):
        status, out, err = kdl(capsys, *argv, *extra)
        assert status == 2
        assert "posting plan" not in out
        (line,) = err.splitlines()
        assert line.startswith(
            "error: patches/release-22.x/series: never posted to "
            "llvm/llvm-project main (the backport of ../series"
        )
        assert "Traceback" not in err


def test_a_series_without_post_lines_is_not_posted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    patches = _copy(tmp_path, "")
    status, out, err = kdl(capsys, "pr", "--series", str(patches / "series"))
    assert status == 2 and "posting plan" not in out
    (line,) = err.splitlines()
    assert line.endswith(
        "/patches/series: no post: lines, so no posting plan; "
        "kdl pr posts only a series whose post: lines say how "
        "(docs/series.md#posting)"
    )


def test_no_identity_stops_the_plan(
    capsys: pytest.CaptureFixture[str], checkout: Path
) -> None:
    status, out, err = _plan(
        capsys, "--llvm", str(checkout), "--series", str(paths.SERIES)
    )
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
    status, out, err = _plan(
        capsys, "--llvm", str(checkout), "--series", str(paths.SERIES)
    )
    assert status == 1 and "posting plan" not in out
    (line,) = err.splitlines()
    assert f"<{email}>, a placeholder" in line


def _copy(tmp_path: Path, post: str) -> Path:
    """patches/ (without the backport) with *post* as its post: lines."""
    patches = tmp_path / "patches"
    shutil.copytree(paths.PATCHES, patches, ignore=shutil.ignore_patterns("release-*"))
    text = (patches / "series").read_text()
    text = re.sub(r"^post: .*\n", "", text, flags=re.MULTILINE)
    (patches / "series").write_text(text.replace("llvm: 24\n", f"llvm: 24\n{post}"))
    return patches


@pytest.mark.parametrize(
    ("post", "why"),
    [
        ("post: fix 1-5\npost: stack 5-9\n", "patch 5 is in two steps"),
        ("post: fix 1-5\npost: pr 6-10\n", "patch 10: the series has 9"),
        ("post: fix 1-5\npost: pr 6-8\n", "patch 9 is in no step"),
        ("post: fix one\n", "expected 'post: fix|pr|stack|held"),
        ("post: held 1-9\n", "held needs 'needs TEXT'"),
        (
            "post: fix 1-5\npost: stack 6-9 on 186088\n",
            "'on 186088': a pull request from a fork goes into main",
        ),
        ("post: fix 1-5, 3 after 4\npost: pr 6-9\n", "a patch comes after earlier"),
        ("post: fix 1-5\npost: pr 6-9 after 9\n", "a patch comes after earlier"),
        (
            "post: held 1 needs x\npost: fix 2-9, 2 after 1\n",
            "post: 2 after 1: 1 is held, not posted",
        ),
        (
            "post: pr 6-9 after 2\npost: fix 1-5\n",
            "post: 6 after 2: 2 is not posted before 6",
        ),
        ("post: never a backport\npost: fix 1-9\n", "the only post: line"),
        ("post: pr 1-9\npost: comment 186088 nowhere.md\n", "no file nowhere.md"),
        ("post: fix 1-8\npost: held 9 needs x\npost: pr 1\n", "is in two steps"),
    ],
)
def test_a_bad_post_line_is_a_format_error(tmp_path: Path, post: str, why: str) -> None:
    patches = _copy(tmp_path, post)
    with pytest.raises(FormatError, match=re.escape(why)):
        load(patches / "series")


def test_the_post_lines_read_as_the_plan_needs() -> None:
    series = load(paths.SERIES)
    kinds = [s.kind for s in series.posting]
    assert kinds == ["fix", "rfc", "pr", "comment", "held"]
    fixes = series.posting[0]
    assert list(fixes.numbers) == [1, 2, 3, 4, 5]
    assert fixes.after == ((3, 1), (5, 2))
    assert series.posting[-1].on == 186088
    assert load(paths.BACKPORT_SERIES).never_posted is not None


def _fork_checkout(tmp_path: Path, patches: Path) -> Path:
    """The real series applied on bases made from its hunks, with an
    upstream remote and a fork remote."""
    repo = tmp_path / "llvm-project"
    series = load(patches / "series")
    for rel, text in synthesize_bases([p.read() for p in series.patches]).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "init", "--quiet")
    _with_identity(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "synthetic base")
    git(repo, "remote", "add", "upstream", "https://github.com/llvm/llvm-project.git")
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "fork.git"))
    git(repo, "remote", "add", "fork", str(tmp_path / "fork.git"))
    return repo


def test_each_branch_of_the_real_plan_holds_its_own_commits(
    capsys: pytest.CaptureFixture[str],
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real series on bases made from its hunks: a fix's branch holds
    its commit on the base, after only what it carries; a patch that does
    not apply without an earlier one stops the plan, naming the line."""
    monkeypatch.setattr(pr, "unformatted", lambda llvm, base: [])
    patches = _copy(tmp_path, "")
    series_file = patches / "series"
    series_file.write_text(paths.SERIES.read_text())
    repo = _fork_checkout(tmp_path, patches)
    argv = ["--llvm", str(repo), "--series", str(series_file)]
    base = git(repo, "rev-parse", "HEAD").strip()
    # The posting stack alone: the proposals' bases are not synthesized.
    assert kdl(capsys, "apply", "--posting-stack", *argv)[0] == 0
    status, out, err = _plan(capsys, *argv)
    assert status == 0, err
    assert "(remote 'fork')" in out
    (push,) = [ln for ln in out.splitlines() if ln.startswith("would run: git push")]
    refs = dict(ref.split(":refs/heads/") for ref in push.split()[7:])
    assert push.split()[6] == "fork"

    def subjects(branch: str) -> list[str]:
        (commit,) = [c for c, b in refs.items() if b == branch]
        log = git(repo, "log", "--reverse", "--format=%s", f"{base}..{commit}")
        return [s[:24] for s in log.splitlines()]

    series = load(series_file)
    subject = {n: p.subject[:24] for n, p in enumerate(series.patches, 1)}
    topic = series.name
    assert subjects(f"{topic}-2") == [subject[2]]
    assert subjects(f"{topic}-3") == [subject[1], subject[3]]
    assert subjects(f"{topic}-4") == [subject[4]]
    assert subjects(f"{topic}-5") == [subject[2], subject[5]]
    assert subjects(f"{topic}-6-8") == [subject[6], subject[7], subject[8]]
    assert len(refs) == 6
    bodies = [ln for ln in out.splitlines() if ln.startswith('{"head"')]
    assert '"head": "jdev:' + f'{topic}-5", "title"' in bodies[4]
    assert "Depends on the pull request of " + f"{topic}-2" in bodies[4]
    assert "This pull request has 3 commits" in bodies[5]
    assert "#<the pull request of 0006>" in out  # the comment's slot

    # Without '5 after 2', 0005's branch cannot be made: one line, no push.
    text = series_file.read_text()
    series_file.write_text(text.replace(", 5 after 2", ""))
    status, out, err = _plan(capsys, *argv)
    assert status == 1 and "would run" not in out
    (line,) = err.splitlines()
    assert line == (
        f"error: {series_file}: 0005 does not apply on {base[:12]} with only the "
        "patches its pull request carries before it (none): add '5 after N' to "
        "its post: line"
    )


def test_the_backport_s_plan_is_refused_by_the_planner_too() -> None:
    backport = load(paths.BACKPORT_SERIES)
    with pytest.raises(Exception, match="never posted to llvm/llvm-project main"):
        plan(backport, None, "someone", "topic")
