"""Fixtures shared by the test files; the helpers they use are in
tests/llvm_tree.py (git repositories shaped like llvm-project) and
tests/rfc_support.py (a loopback HTTP server)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from kdl import proc
from tests.llvm_tree import DATE, SeriesDir, make_llvm_checkout, make_series
from tests.rfc_support import Loopback, Reply, make_handler


@pytest.fixture
def isolated_git(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Temporary HOME, no system or global git config, a fixed identity and
    fixed dates (tests/series uses it everywhere; others ask for it)."""
    home = tmp_path_factory.mktemp("home")
    for var in list(os.environ):
        if var.startswith("GIT_") or var in ("LIT_FILTER", "LIT_OPTS"):
            monkeypatch.delenv(var)
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
    )
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "Kdl Tester",
        "GIT_AUTHOR_EMAIL": "tester@example.org",
        "GIT_COMMITTER_NAME": "Kdl Tester",
        "GIT_COMMITTER_EMAIL": "tester@example.org",
        "GIT_AUTHOR_DATE": DATE,
        "GIT_COMMITTER_DATE": DATE,
        "GIT_TERMINAL_PROMPT": "0",
        "EDITOR": "false",
        "LC_ALL": "C.UTF-8",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(proc, "DRY_RUN", False)
    # kdl.cli.main binds a handler to the sys.stderr of the test that ran it.
    logger = logging.getLogger("kdl")
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "propagate", True)
    yield home


@pytest.fixture
def llvm(tmp_path: Path) -> Path:
    """A small llvm-project checkout (make_llvm_checkout)."""
    return make_llvm_checkout(tmp_path / "llvm-project")


@pytest.fixture
def series(llvm: Path, tmp_path: Path) -> SeriesDir:
    """A patch series against *llvm* (make_series)."""
    return make_series(llvm, tmp_path / "patches")


@pytest.fixture
def loopback() -> Iterator[Callable[..., Loopback]]:
    """Start loopback HTTP servers answering with the given replies."""
    servers: list[ThreadingHTTPServer] = []

    def start(*replies: Reply) -> Loopback:
        state = Loopback("", [], list(replies))
        server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
        servers.append(server)
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        state.url = f"http://127.0.0.1:{server.server_address[1]}"
        return state

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
