"""kdl.rfc.post: the Discourse client, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from kdl import cli, paths, proc
from kdl import rfc as rfc_pkg
from kdl.errors import UsageError, WorkspaceError
from kdl.rfc import post
from tests.rfc_support import Reply, isolate, workspace

KEY = "s3cr3t-api-key-0123456789abcdef"
USER = "rfc-bot"
CREATED = {"id": 11, "topic_id": 4242, "topic_slug": "rfc-standard-metadata-keys"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


@pytest.fixture
def drafts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = workspace(tmp_path)
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setattr(paths, "RFC_OUT", root / "rfc" / "out")
    rfc_pkg.draft(root=root)
    return root / "rfc" / "out"


@pytest.fixture
def secrets_watch(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> Any:
    """Capture every log record (kdl, urllib3, requests) at DEBUG."""
    caplog.set_level(logging.DEBUG)
    for name in ("kdl", "urllib3", "requests"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    kdl_log = logging.getLogger("kdl")
    old = kdl_log.propagate
    kdl_log.propagate = True
    yield
    kdl_log.propagate = old
    out, err = capsys.readouterr()
    everything = (
        out + err + "\n".join(r.getMessage() + repr(r.args) for r in caplog.records)
    )
    assert KEY not in everything


def _client(url: str, sleeps: list[float] | None = None, **kw: Any) -> post.Client:
    record = sleeps if sleeps is not None else []
    return post.Client(url, KEY, USER, sleep=record.append, **kw)


def _body() -> dict[str, Any]:
    return {"title": "[RFC] Test", "raw": "Body text.", "category": 7}


def test_post_sends_headers_and_body(loopback: Any, secrets_watch: None) -> None:
    server = loopback(Reply(200, CREATED))
    answer = _client(server.url).create_post(_body())
    assert answer == CREATED
    (req,) = server.requests
    assert (req.method, req.path) == ("POST", "/posts.json")
    assert req.headers["Api-Key"] == KEY
    assert req.headers["Api-Username"] == USER
    assert req.headers["Content-Type"] == "application/json"
    assert req.json() == _body()


def test_429_then_200_honours_retry_after(loopback: Any, secrets_watch: None) -> None:
    server = loopback(
        Reply(429, {"errors": ["slow down"]}, {"Retry-After": "3"}), Reply(200, CREATED)
    )
    sleeps: list[float] = []
    assert _client(server.url, sleeps).create_post(_body()) == CREATED
    assert sleeps == [3.0]
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


def test_retry_after_as_http_date(loopback: Any) -> None:
    now = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
    when = format_datetime(now + timedelta(seconds=5), usegmt=True)
    server = loopback(Reply(503, None, {"Retry-After": when}), Reply(200, CREATED))
    sleeps: list[float] = []
    client = _client(server.url, sleeps, now=lambda: now)
    assert client.create_post(_body()) == CREATED
    assert sleeps == [5.0]


def test_5xx_backs_off_and_gives_up(loopback: Any, secrets_watch: None) -> None:
    server = loopback(*[Reply(500, {"errors": ["boom"]})] * 4)
    sleeps: list[float] = []
    with pytest.raises(WorkspaceError) as err:
        _client(server.url, sleeps, attempts=4, backoff=0.5).create_post(_body())
    assert "gave up after 4 attempts: HTTP 500: boom" in str(err.value)
    assert sleeps == [0.5, 1.0, 2.0]  # exponential, no sleep after the last
    assert len(server.requests) == 4


def test_retry_delay_is_capped(loopback: Any) -> None:
    server = loopback(Reply(429, None, {"Retry-After": "3600"}), Reply(200, CREATED))
    sleeps: list[float] = []
    _client(server.url, sleeps, max_delay=10).create_post(_body())
    assert sleeps == [10]


def test_422_is_one_line_with_discourse_errors(
    loopback: Any, secrets_watch: None
) -> None:
    errors = ["Title is too short", "Body is too similar to what you recently posted"]
    server = loopback(
        Reply(422, {"errors": errors, "error_type": "invalid_parameters"})
    )
    with pytest.raises(WorkspaceError) as err:
        _client(server.url).create_post(_body())
    message = str(err.value)
    assert "\n" not in message
    assert message.endswith("HTTP 422: " + "; ".join(errors))
    assert len(server.requests) == 1  # a 4xx is not retried


def test_403_without_json(loopback: Any) -> None:
    server = loopback(Reply(403, None))
    with pytest.raises(WorkspaceError, match="HTTP 403"):
        _client(server.url).create_post(_body())


def test_server_echoing_the_key_is_redacted(loopback: Any, secrets_watch: None) -> None:
    server = loopback(Reply(401, {"errors": [f"bad key {KEY}"]}))
    with pytest.raises(WorkspaceError) as err:
        _client(server.url).create_post(_body())
    assert KEY not in str(err.value) and "<redacted>" in str(err.value)


def test_unreachable_server_gives_up(secrets_watch: None) -> None:
    sleeps: list[float] = []
    with pytest.raises(
        WorkspaceError, match="gave up after 2 attempts: ConnectionError"
    ):
        _client("http://127.0.0.1:9", sleeps, attempts=2, timeout=2).create_post(
            _body()
        )
    assert sleeps == [1.0]


# --- the command ---------------------------------------------------------------------


def test_dry_run_prints_the_request_without_the_key(
    drafts: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DISCOURSE_API_KEY", KEY)
    monkeypatch.setenv("DISCOURSE_API_USERNAME", USER)
    monkeypatch.setenv("DISCOURSE_URL", "https://discourse.example.org")
    assert (
        cli.main(["rfc", "post", "--which", "metadata-vocabulary", "--category", "7"])
        == 0
    )
    out = capsys.readouterr().out
    assert KEY not in out
    assert "POST https://discourse.example.org/posts.json" in out
    assert "Api-Key: <redacted>" in out
    assert f"Api-Username: {USER}" in out
    title = "[Draft, not proposed][Offload] Selection keys for OffloadBinary entries"
    assert f'"title": "{title}"' in out
    assert '"category": 7' in out
    assert "## What an entry carries today" in out  # the raw body, as sent


def test_dry_run_of_every_draft_without_settings(
    drafts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["rfc", "post"]) == 0
    out = capsys.readouterr().out
    assert out.count("# dry run for") == 3
    assert "Api-Key: <unset: DISCOURSE_API_KEY>" in out
    assert "<unset: DISCOURSE_URL or --url>/posts.json" in out


def test_post_needs_the_environment(
    drafts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        cli.main(
            [
                "rfc",
                "post",
                "--which",
                "ranked-selection",
                "--post",
                "--url",
                "http://127.0.0.1:9",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "DISCOURSE_API_KEY" in err and "DISCOURSE_API_USERNAME" in err


def test_post_needs_which(drafts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCOURSE_API_KEY", KEY)
    monkeypatch.setenv("DISCOURSE_API_USERNAME", USER)
    with pytest.raises(UsageError, match="--which"):
        post.cmd_post(
            sorted(drafts.glob("*.md")),
            url="http://127.0.0.1:9",
            category=None,
            really=True,
        )


def _post_to_loopback(
    loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, list[str]]:
    """A loopback server that accepts a post, credentials, and the argv that
    posts the vocabulary draft to it for real."""
    server = loopback(Reply(200, CREATED))
    monkeypatch.setenv("DISCOURSE_API_KEY", KEY)
    monkeypatch.setenv("DISCOURSE_API_USERNAME", USER)
    argv = ["rfc", "post", "--which", "metadata-vocabulary", "--post"]
    return server, [*argv, "--url", server.url, "--category", "7"]


def test_post_really_sends(
    drafts: Path,
    loopback: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    secrets_watch: None,
) -> None:
    server, argv = _post_to_loopback(loopback, monkeypatch)
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert f"{server.url}/t/rfc-standard-metadata-keys/4242" in captured.out
    assert KEY not in captured.out + captured.err
    (req,) = server.requests
    body = req.json()
    assert (
        body["title"]
        == "[Draft, not proposed][Offload] Selection keys for OffloadBinary entries"
    )
    assert body["category"] == 7
    assert body["raw"].startswith("*Not proposed until")
    assert (
        body["raw"] == (drafts / "metadata-vocabulary.md").read_text().split("\n", 2)[2]
    )


@pytest.mark.parametrize("where", ["before", "after"])
def test_dry_run_sends_nothing_even_with_post(
    drafts: Path,
    loopback: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    """--dry-run, before or after the subcommand, wins over --post."""
    server, argv = _post_to_loopback(loopback, monkeypatch)
    argv = ["--dry-run", *argv] if where == "before" else [*argv, "--dry-run"]
    try:
        assert cli.main(argv) == 0
    finally:
        proc.DRY_RUN = False
    assert server.requests == []
    assert KEY not in capsys.readouterr().out


def test_post_refuses_a_draft_with_problems(
    drafts: Path,
    loopback: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = loopback(Reply(200, CREATED))
    monkeypatch.setenv("DISCOURSE_API_KEY", KEY)
    monkeypatch.setenv("DISCOURSE_API_USERNAME", USER)
    draft = drafts / "ranked-selection.md"
    draft.write_text(draft.read_text() + "\nTBD\n")
    argv = ["rfc", "post", "--which", "ranked-selection", "--post", "--url", server.url]
    assert cli.main(argv) == 1
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err
    assert "placeholder 'TBD'" in captured.out
    assert "not posting" in captured.err
    assert server.requests == []


def test_read_draft_splits_title(tmp_path: Path) -> None:
    path = tmp_path / "x.md"
    path.write_text("# [RFC] A title\n\n## Summary\n\nText.\n")
    draft = post.read_draft(path)
    assert (draft.title, draft.raw) == ("[RFC] A title", "## Summary\n\nText.\n")
    path.write_text("no title\n")
    with pytest.raises(WorkspaceError):
        post.read_draft(path)
