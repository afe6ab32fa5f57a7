"""kdl pr: stacked pull requests, against a real git remote and a loopback API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kdl.series.pr import token_from
from tests.llvm_tree import (
    SeriesDir,
    default_edits,
    git,
    kdl,
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


@pytest.fixture
def applied(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, tmp_path: Path
) -> tuple[Path, SeriesDir, Path]:
    """The series applied on *llvm*, with an empty bare repository as origin."""
    assert (
        kdl(capsys, "apply", "--llvm", str(llvm), "--series", str(series.series))[0]
        == 0
    )
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(llvm, "remote", "add", "origin", str(remote))
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
    return [f"users/{LOGIN}/{TOPIC}-{i}" for i in range(1, n + 1)]


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
    assert "would run: git push --porcelain --force-with-lease origin" in out
    assert not (series.dir / "prs.json").exists()


def test_post_pushes_stacked_branches_and_creates_prs(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    server = loopback(*new_prs(101, 102, 103))
    status, out, err = pr(capsys, llvm, series, "--api", server.url, "--post")
    assert status == 0, err
    # The branches point at the applied commits, in order.
    commits = git(llvm, "rev-list", "--reverse", "HEAD~3..HEAD").split()
    for name, sha in zip(branches(3), commits, strict=True):
        assert git(remote, "rev-parse", f"refs/heads/{name}").strip() == sha
    posts = [r for r in server.requests if r.method == "POST"]
    assert [p.json()["head"] for p in posts] == branches(3)
    assert [p.json()["base"] for p in posts] == ["main", *branches(2)]
    edits = default_edits()
    assert [p.json()["title"] for p in posts] == [e.subject for e in edits]
    assert edits[1].body in posts[1].json()["body"]
    assert posts[0].json()["body"].strip() == edits[0].body
    assert posts[1].json()["body"].endswith("Depends on #101\n")
    assert posts[2].json()["body"].endswith("Depends on #102\n")
    gets = [r for r in server.requests if r.method == "GET"]
    assert gets[0].path == (
        f"/repos/llvm/llvm-project/pulls?head=llvm%3Ausers%2F{LOGIN}%2F{TOPIC}-1"
        "&state=open"
    )
    assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in server.requests)
    assert TOKEN not in out + err
    record = json.loads((series.dir / "prs.json").read_text())
    assert [(p["branch"], p["number"]) for p in record["prs"]] == list(
        zip(branches(3), [101, 102, 103], strict=True)
    )
    assert "created #103" in out


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
    head = git(llvm, "rev-parse", "HEAD").strip()
    assert git(remote, "rev-parse", f"refs/heads/{branches(3)[2]}").strip() == head
    assert out.count("updated #") == 3


def test_an_open_pr_found_by_branch_is_updated_not_duplicated(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, _ = applied
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
    assert server.requests[3].json()["body"].endswith("Depends on #77\n")


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
                        "message": "No commits between users/jdev/ranked-1 and "
                        "users/jdev/ranked-2",
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
    # The dry run prints the plan and says the requests need the series.
    status, out, err = pr(capsys, llvm, series)
    assert status == 0, err
    assert "\n# posting plan of " in out
    assert out.splitlines()[-1].endswith("apply the series first")
    # Posting needs the commits.
    status, _, err = pr(capsys, llvm, series, "--api", "http://127.0.0.1:9", "--post")
    assert status != 0
    assert "apply the series first" in err and "Traceback" not in err


def _with_plan(series: SeriesDir) -> None:
    """Patch 1 a fix, then the RFC, then patches 2-3 stacked on #186088."""
    plan = "post: fix 1\npost: rfc ranked-selection\npost: stack 2-3 on 186088\n"
    text = series.series.read_text()
    series.series.write_text(text.replace("\n0001-", f"\n{plan}0001-", 1))


def test_post_goes_as_the_plan_says_the_rfc_between(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, remote = applied
    _with_plan(series)
    first, second, third = branches(3)
    # Before the RFC: the fix only.
    server = loopback(*new_prs(101))
    status, out, err = pr(capsys, llvm, series, "--api", server.url, "--post")
    assert status == 0, err
    (post,) = [r.json() for r in server.requests if r.method == "POST"]
    assert (post["head"], post["base"]) == (first, "main")
    assert "Depends on" not in post["body"]
    assert git(remote, "for-each-ref", "--format=%(refname)").split() == [
        f"refs/heads/{first}"
    ]
    assert "next: the RFC ('kdl rfc post --which ranked-selection --post')" in out
    # After it: the stack, on #186088, its first into main.
    server = loopback(*new_prs(102, 103))
    argv = ("--api", server.url, "--post", "--after-rfc")
    status, out, err = pr(capsys, llvm, series, *argv)
    assert status == 0, err
    posts = [r.json() for r in server.requests if r.method == "POST"]
    assert [(p["head"], p["base"]) for p in posts] == [
        (second, "main"),
        (third, second),
    ]
    assert posts[0]["body"].endswith("Depends on #186088\n")
    assert posts[1]["body"].endswith("Depends on #102\n")
    record = json.loads((series.dir / "prs.json").read_text())
    assert [(p["branch"], p["number"]) for p in record["prs"]] == [
        (first, 101),
        (second, 102),
        (third, 103),
    ]


def test_fixes_go_into_main_and_the_stack_onto_its_pr(
    capsys: pytest.CaptureFixture[str],
    applied: tuple[Path, SeriesDir, Path],
    loopback: Any,
    token: str,
) -> None:
    llvm, series, _ = applied
    _with_plan(series)
    server = loopback()
    status, out, err = pr(capsys, llvm, series, "--api", server.url)
    assert status == 0, err
    bodies = [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]
    first, second, third = branches(3)
    assert [b["base"] for b in bodies] == ["main", "main", second]
    assert [b["head"] for b in bodies] == [first, second, third]
    assert "Depends on" not in bodies[0]["body"]
    assert bodies[1]["body"].endswith("Depends on #186088\n")
    assert bodies[2]["body"].endswith(f"Depends on the pull request of {second}\n")
    assert " 1. fix, its own PR: 0001: " in out
    assert " 2. the RFC, on Discourse: -: [RFC]" in out
    assert " 4. stacked PR 2/2 on #186088: 0003: " in out
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
