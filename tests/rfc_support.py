"""Helpers of the RFC tests: an isolated workspace, a loopback server (its
fixture, ``loopback``, is in tests/conftest.py)."""

from __future__ import annotations

import json
import shutil
import socket
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from kdl import paths

DATA = Path(__file__).parent / "data" / "rfc"


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Temp HOME, no Discourse/GitHub secrets, no network except loopback."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in (
        "DISCOURSE_API_KEY",
        "DISCOURSE_API_USERNAME",
        "DISCOURSE_URL",
        "GITHUB_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    real_connect = socket.socket.connect

    def loopback_only(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"network access blocked in tests: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)


def workspace(tmp_path: Path) -> Path:
    """A copy of what the posts are drawn from: templates, results, patches.

    The lit counts a post quotes are written by each run and not committed;
    the copy gets fixed ones (tests/data/rfc/run/).
    """
    root = tmp_path / "ws"
    if not root.exists():
        for part in ("rfc/templates", "results", "patches"):
            shutil.copytree(paths.ROOT / part, root / part)
        (root / "results" / "lit").mkdir(exist_ok=True)
        shutil.copy(DATA / "run" / "summary.json", root / "results/lit/summary.json")
    return root


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Loopback:
    """A real HTTP server on 127.0.0.1 answering from a script of replies."""

    url: str
    requests: list[Recorded]
    replies: list[Reply]


def make_handler(state: Loopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            state.requests.append(
                Recorded(self.command, self.path, dict(self.headers.items()), body)
            )
            reply = (
                state.replies.pop(0)
                if state.replies
                else Reply(500, {"errors": ["no reply scripted"]})
            )
            data = json.dumps(reply.body).encode() if reply.body is not None else b""
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = _answer  # noqa: N815
        do_POST = _answer  # noqa: N815
        do_PATCH = _answer  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    return Handler
