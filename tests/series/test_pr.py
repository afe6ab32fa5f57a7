"""kdl pr: pull requests from a fork into main, against a real git remote (the
fork) and a loopback API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kdl.series.pr import token_from
from tests.llvm_tree import (
    OFFLOAD_API,
    Edit,
    SeriesDir,
    default_edits,
    git,
    kdl,
    make_series,
)
from tests.rfc_support import Reply, isolate

TOKEN = "ghp_s3cr3t0123456789abcdefABCDEF012345"
LOGIN = "jdev"
TOPIC = "ranked"


#: A contributor's own identity (the isolated default is at example.org, a
#: placeholder kdl pr refuses).
AUTHOR = ("Jane Developer", "jdev@llvm-contributors.org")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", AUTHOR[0])
        monkeypatch.setenv(f"GIT_{who}_EMAIL", AUTHOR[1])


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return TOKEN


def with_plan(series: SeriesDir, post: str) -> None:
    """*post* as the series' post: lines (instead of any it has)."""
    lines = [ln for ln in series.series.read_text().splitlines(keepends=True)]
    kept = "".join(ln for ln in lines if not ln.startswith("post:"))
    series.series.write_text(kept.replace("\n0001-", f"\n{post}0001-", 1))


@pytest.fixture
def applied(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, tmp_path: Path
) -> tuple[Path, SeriesDir, Path]:
    """The series applied on *llvm*, each patch a fix; llvm/llvm-project as
    upstream and an empty bare repository as the fork."""
    with_plan(series, "post: fix 1-3\n")
    assert (
        kdl(capsys, "apply", "--llvm", str(llvm), "--series", str(series.series))[0]
        == 0
    )
    remote = tmp_path / "fork.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(llvm, "remote", "add", "upstream", "https://github.com/llvm/llvm-project")
    git(llvm, "remote", "add", "fork", str(remote))
    return llvm, series, remote


def pr(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    *extra: str,
) -> tuple[int, str, str]:
    return kdl(
        capsys,
        "pr",
        "--llvm",
        str(llvm),
        "--series",
        str(series.series),
        "--login",
        LOGIN,
        "--topic",
        TOPIC,
        *extra,
    )


def created(number: int) -> Reply:
    return Reply(
        201,
        {
            "number": number,
            "html_url": f"https://github.com/llvm/llvm-project/pull/{number}",
        },
    )


def new_prs(*numbers: int) -> list[Reply]:
    """GitHub's answers for PRs it does not know yet: none open, then created."""
    return [r for n in numbers for r in (Reply(200, []), created(n))]


def branches(n: int) -> list[str]:
    return [f"{TOPIC}-{i}" for i in range(1, n + 1)]


def heads(n: int) -> list[str]:
    return [f"{LOGIN}:{b}" for b in branches(n)]


def test_dry_run_is_the_default_and_sends_nothing(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    server = loopback()
    status, out, err = pr(capsys, llvm, series, "--api", server.url)
    assert status == 0, err
    assert server.requests == []
    assert git(remote, "for-each-ref") == ""  # nothing pushed
    assert TOKEN not in out + err
    assert "Authorization: Bearer <redacted>" in out
    assert out.count(f"POST {server.url}/repos/llvm/llvm-project/pulls") == 3
    assert "would run: git push --porcelain --force-with-lease fork " in out
    assert f"from {LOGIN}'s fork of llvm/llvm-project (remote 'fork')" in out
    assert not (series.dir / "prs.json").exists()


def _change(repo: Path, old: str, new: str) -> list[str]:
    """The diff from *old* to *new* without its blob ids and line numbers."""
    diff = git(repo, "diff", old, new).splitlines()
    return [ln for ln in diff if not ln.startswith(("index ", "@@"))]


def _posts(server: Any) -> list[dict[str, Any]]:
    return [r.json() for r in server.requests if r.method == "POST"]


def test_post_pushes_each_fix_to_the_fork_and_opens_it_into_main(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    with_plan(series, "post: fix 1-3, 3 after 1\n")
    base = git(llvm, "rev-parse", "HEAD~3").strip()
    commits = git(llvm, "rev-list", "--reverse", "HEAD~3..HEAD").split()
    server = loopback(*new_prs(101, 102, 103))
    status, out, err = pr(capsys, llvm, series, "--api", server.url, "--post")
    assert status == 0, err
    # Each branch holds its own commit on the base, after what it carries:
    # 1 is the series' own commit; 2 is made again on the base, without 1;
    # 3 carries 1 (the same commit, made again alike), then its own.
    first, second, third = branches(3)
    tips = {b: git(remote, "rev-parse", f"refs/heads/{b}").strip() for b in branches(3)}
    assert tips[first] == commits[0]
    assert git(remote, "rev-parse", f"{tips[second]}^").strip() == base
    assert _change(remote, base, tips[second]) == _change(llvm, commits[0], commits[1])
    assert git(remote, "rev-parse", f"{tips[third]}^").strip() == commits[0]
    assert _change(remote, commits[0], tips[third]) == _change(
        llvm, commits[1], commits[2]
    )
    posts = _posts(server)
    assert [p["head"] for p in posts] == heads(3)
    assert [p["base"] for p in posts] == ["main"] * 3
    edits = default_edits()
    assert [p["title"] for p in posts] == [e.subject for e in edits]
    assert posts[0]["body"].strip() == edits[0].body
    assert posts[1]["body"].strip() == edits[1].body
    assert posts[2]["body"].startswith(edits[2].body + "\n\nDepends on #101\n\n")
    assert posts[2]["body"].endswith(
        "The first commit here is from what it depends on, until that lands; "
        "this pull request's own change is the last commit.\n"
    )
    gets = [r for r in server.requests if r.method == "GET"]
    assert gets[0].path == (
        f"/repos/llvm/llvm-project/pulls?head={LOGIN}%3A{TOPIC}-1&state=open"
    )
    assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in server.requests)
    assert TOKEN not in out + err
    record = json.loads((series.dir / "prs.json").read_text())
    assert [(p["branch"], p["number"]) for p in record["prs"]] == list(
        zip(branches(3), [101, 102, 103], strict=True)
    )
    assert f"created #103 {LOGIN}:{third}" in out
    assert "pushed 3 branch(es) to fork" in out


def test_a_second_run_updates_the_recorded_prs(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    first = loopback(*new_prs(101, 102, 103))
    assert pr(capsys, llvm, series, "--api", first.url, "--post")[0] == 0
    # Amend the last commit: the push must move its branch, the PR be updated.
    git(llvm, "commit", "-q", "--amend", "-m", "[Offload] A better subject")
    second = loopback(created(101), created(102), created(103))
    status, out, err = pr(capsys, llvm, series, "--api", second.url, "--post")
    assert status == 0, err
    assert [(r.method, r.path) for r in second.requests] == [
        ("PATCH", f"/repos/llvm/llvm-project/pulls/{n}") for n in (101, 102, 103)
    ]
    assert second.requests[2].json()["title"] == "[Offload] A better subject"
    third = f"refs/heads/{branches(3)[2]}"
    assert git(remote, "log", "-1", "--format=%s", third).strip() == (
        "[Offload] A better subject"
    )
    assert (
        git(remote, "rev-parse", f"{third}^").strip()
        == git(llvm, "rev-parse", "HEAD~3").strip()
    )
    assert out.count("updated #") == 3


def test_an_open_pr_found_by_branch_is_updated_not_duplicated(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, _ = applied
    with_plan(series, "post: fix 1-3, 2 after 1\n")
    server = loopback(Reply(200, [{"number": 77}]), created(77), *new_prs(78, 79))
    assert pr(capsys, llvm, series, "--api", server.url, "--post")[0] == 0
    assert [r.method for r in server.requests] == [
        "GET",
        "PATCH",
        "GET",
        "POST",
        "GET",
        "POST",
    ]
    assert "Depends on #77\n" in server.requests[3].json()["body"]


def test_validation_error_is_one_line_and_keeps_what_was_made(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, _ = applied
    server = loopback(
        Reply(200, []),
        created(101),
        Reply(200, []),
        Reply(
            422,
            {
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": "No commits between main and jdev:ranked-2",
                    }
                ],
            },
        ),
    )
    status, out, err = pr(capsys, llvm, series, "--api", server.url, "--post")
    assert status != 0
    (line,) = err.strip().splitlines()
    assert "HTTP 422: Validation Failed; No commits between" in line
    assert "Traceback" not in err and TOKEN not in out + err
    record = json.loads((series.dir / "prs.json").read_text())
    assert [p["number"] for p in record["prs"]] == [101]


def test_rate_limit_with_retry_after_is_waited_out(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, _ = applied
    limited = Reply(
        403,
        {"message": "You have exceeded a secondary rate limit."},
        {"Retry-After": "0"},
    )
    server = loopback(
        limited, *new_prs(101), Reply(200, []), limited, created(102), *new_prs(103)
    )
    status, _, err = pr(capsys, llvm, series, "--api", server.url, "--post")
    assert status == 0, err
    assert len(server.requests) == 8


def test_forbidden_without_rate_limit_is_not_retried(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, _ = applied
    server = loopback(Reply(403, {"message": "Resource not accessible by token"}))
    status, _, err = pr(capsys, llvm, series, "--api", server.url, "--post")
    assert status != 0 and len(server.requests) == 1
    assert "HTTP 403: Resource not accessible by token" in err


def test_post_without_a_token_is_refused(
    capsys: pytest.CaptureFixture[str], applied: tuple[Path, SeriesDir, Path]
) -> None:
    llvm, series, remote = applied
    status, _, err = pr(capsys, llvm, series, "--api", "http://127.0.0.1:9", "--post")
    assert status != 0 and "--post needs a token" in err
    assert git(remote, "for-each-ref") == ""


def test_global_dry_run_wins_over_post(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    server = loopback()
    argv = ["--dry-run", "pr", "--llvm", str(llvm), "--series", str(series.series)]
    status, out, _ = kdl(capsys, *argv, "--login", LOGIN, "--api", server.url, "--post")
    assert status == 0 and "# dry run" in out
    assert server.requests == [] and git(remote, "for-each-ref") == ""


def test_unapplied_series_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, token: str
) -> None:
    with_plan(series, "post: fix 1-3\n")
    git(llvm, "remote", "add", "fork", "git@github.com:jdev/llvm-project.git")
    # The dry run prints the plan and says the requests need the series.
    status, out, err = pr(capsys, llvm, series)
    assert status == 0, err
    assert "\n# posting plan of " in out
    assert out.splitlines()[-1].endswith("apply the series first")
    # Posting needs the commits.
    status, _, err = pr(capsys, llvm, series, "--api", "http://127.0.0.1:9", "--post")
    assert status != 0
    assert "apply the series first" in err and "Traceback" not in err


def test_without_a_fork_remote_nothing_is_pushed(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    git(llvm, "remote", "remove", "fork")
    status, out, err = pr(capsys, llvm, series)
    assert status == 0, err
    assert "# posting plan of " in out and "would run" not in out
    assert out.splitlines()[-1].startswith(
        f"# the requests: {llvm}: no remote is a fork of llvm/llvm-project"
    )
    server = loopback()
    for extra in ((), ("--remote", "upstream")):
        argv = ("--api", server.url, "--post", *extra)
        status, out, err = pr(capsys, llvm, series, *argv)
        assert status == 2 and "posting plan" not in out
        (line,) = err.splitlines()
        assert f"git remote add fork git@github.com:{LOGIN}/llvm-project.git" in line
    assert "--remote upstream is llvm/llvm-project itself" in line
    assert server.requests == [] and git(remote, "for-each-ref") == ""


def test_a_patch_that_needs_an_earlier_one_says_which_line_to_change(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    tmp_path: Path,
    loopback: Any,
    token: str,
) -> None:
    """A fix whose change is made on an earlier one's cannot be its own
    branch: the plan stops at its line; 'after' makes its branch carry it."""
    edits = [
        Edit(
            "[Offload] Add a line",
            "One.",
            {OFFLOAD_API: lambda t: (t or "") + "// one\n"},
        ),
        Edit(
            "[Offload] Change that line",
            "Two.",
            {OFFLOAD_API: lambda t: (t or "").replace("// one\n", "// two\n")},
        ),
    ]
    series = make_series(llvm, tmp_path / "patches", edits)
    with_plan(series, "post: fix 1-2\n")
    argv = ["--llvm", str(llvm), "--series", str(series.series)]
    assert kdl(capsys, "apply", *argv)[0] == 0
    git(llvm, "remote", "add", "fork", str(tmp_path))
    base = git(llvm, "rev-parse", "HEAD~2").strip()
    status, out, err = pr(capsys, llvm, series)
    assert status == 1 and "would run" not in out
    assert err == (
        f"error: {series.series}: 0002 does not apply on {base[:12]} with only the "
        "patches its pull request carries before it (none): add '2 after N' to "
        "its post: line\n"
    )
    with_plan(series, "post: fix 1-2, 2 after 1\n")
    status, out, err = pr(capsys, llvm, series)
    assert status == 0, err
    assert f"[{LOGIN}:{TOPIC}-2 -> main; carries 0001 first, until that lands]" in out


def _with_rfc_plan(series: SeriesDir) -> None:
    """Patch 1 a fix, then the RFC, then patches 2-3 as one pull request and
    a comment on #186088 that names it."""
    (series.dir / "comment.md").write_text("The rank is in {{pr 2}}.\n")
    with_plan(
        series,
        "post: fix 1\npost: rfc ranked-selection\npost: pr 2-3\n"
        "post: comment 186088 comment.md\n",
    )


def test_post_goes_as_the_plan_says_the_rfc_between(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    _with_rfc_plan(series)
    first = branches(1)[0]
    both = f"{TOPIC}-2-3"
    # Before the RFC: the fix only.
    server = loopback(*new_prs(101))
    status, out, err = pr(capsys, llvm, series, "--api", server.url, "--post")
    assert status == 0, err
    (post,) = _posts(server)
    assert (post["head"], post["base"]) == (f"{LOGIN}:{first}", "main")
    assert "Depends on" not in post["body"]
    assert git(remote, "for-each-ref", "--format=%(refname)").split() == [
        f"refs/heads/{first}"
    ]
    assert "next: the RFC ('kdl rfc post --which ranked-selection --post')" in out
    # After it: patches 2-3 as one pull request into main, on the base alone;
    # then the comment, which names it.
    comment = Reply(201, {"id": 5, "html_url": "https://github.com/c/5"})
    server = loopback(*new_prs(102), comment)
    argv = ("--api", server.url, "--post", "--after-rfc")
    status, out, err = pr(capsys, llvm, series, *argv)
    assert status == 0, err
    post, note = _posts(server)
    edits = default_edits()
    assert (post["head"], post["base"]) == (f"{LOGIN}:{both}", "main")
    assert post["title"] == edits[2].subject
    assert post["body"].startswith("This pull request has 2 commits")
    assert f"## {edits[1].subject}\n\n{edits[1].body}" in post["body"]
    assert "Depends on" not in post["body"]
    log = git(remote, "log", "--format=%s", f"refs/heads/{both}").splitlines()
    assert log[:2] == [edits[2].subject, edits[1].subject]
    assert edits[0].subject not in log
    assert server.requests[-1].path == "/repos/llvm/llvm-project/issues/186088/comments"
    assert note == {"body": "The rank is in #102.\n"}
    record = json.loads((series.dir / "prs.json").read_text())
    assert [(p["branch"], p["number"]) for p in record["prs"]] == [
        (first, 101),
        (both, 102),
    ]
    assert record["comments"] == [{"on": 186088, "url": "https://github.com/c/5"}]
    # Again: the pull request is updated, the comment not made twice.
    server = loopback(created(102))
    argv = ("--api", server.url, "--post", "--after-rfc")
    status, out, err = pr(capsys, llvm, series, *argv)
    assert status == 0, err
    assert [r.method for r in server.requests] == ["PATCH"]
    assert "# comment on #186088: made before (https://github.com/c/5)" in out


def test_a_comment_names_a_pr_that_is_posted(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, _ = applied
    _with_rfc_plan(series)
    status, out, err = pr(capsys, llvm, series)
    assert status == 0, err
    assert '{"body": "The rank is in #<the pull request of 0002>.\\n"}' in out
    # Posting after the RFC with no number for the pull request the comment
    # names: the pull request is made first, in the same run.
    server = loopback(*new_prs(102), Reply(201, {"id": 6}))
    argv = ("--api", server.url, "--post", "--after-rfc")
    assert pr(capsys, llvm, series, *argv)[0] == 0
    assert _posts(server)[1] == {"body": "The rank is in #102.\n"}


def test_a_stack_from_a_fork_is_prs_into_main_each_carrying_the_one_before(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, _ = applied
    with_plan(series, "post: stack 1-3\n")
    server = loopback()
    status, out, err = pr(capsys, llvm, series, "--api", server.url)
    assert status == 0, err
    bodies = [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]
    first, second, third = branches(3)
    assert [b["base"] for b in bodies] == ["main"] * 3
    assert [b["head"] for b in bodies] == heads(3)
    assert "Depends on" not in bodies[0]["body"]
    assert f"Depends on the pull request of {first}\n" in bodies[1]["body"]
    assert f"Depends on the pull request of {second}\n" in bodies[2]["body"]
    assert "The first 2 commits here are from what it depends on" in bodies[2]["body"]
    assert (
        f" 3. PR 3/3 of a stack, each after the one before: 0003: "
        f"{default_edits()[2].subject} [{LOGIN}:{third} -> main; carries 0001, "
        "0002 first, until they land]"
    ) in out
    assert server.requests == []


def test_token_from_the_github_cli_config(tmp_path: Path) -> None:
    config = tmp_path / ".config" / "gh"
    config.mkdir(parents=True)
    (config / "hosts.yml").write_text(
        "example.com:\n    oauth_token: other\n"
        "github.com:\n    user: jdev\n    oauth_token: gho_abc123\n"
    )
    assert token_from({}, tmp_path) == "gho_abc123"
    assert token_from({"GH_TOKEN": "x"}, tmp_path) == "x"
    assert token_from({}, tmp_path / "nowhere") == ""


def test_unformatted_changes_stop_the_prs(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    (llvm / "offload/Badly.cpp").write_text("int   main( ){return 0 ;}\n")
    git(llvm, "add", "-A")
    git(llvm, "commit", "-q", "--amend", "--no-edit")
    server = loopback()
    status, _, err = pr(capsys, llvm, series, "--api", server.url, "--post")
    assert status != 0
    assert "clang-format-22 would change offload/Badly.cpp" in err
    assert server.requests == [] and git(remote, "for-each-ref") == ""
