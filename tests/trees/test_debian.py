"""The registry helpers: the mirror from apt's sources, verified downloads
over real HTTP on loopback, the disk check."""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kdl.errors import WorkspaceError
from kdl.trees import debian


def test_mirror_from_deb822_skips_security(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KDL_DEBIAN_MIRROR", raising=False)
    sources = tmp_path / "debian.sources"
    sources.write_text(
        "Types: deb\nURIs: http://mirror.invalid/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n\n"
        "Types: deb-src\nURIs: http://src.invalid/debian\nSuites: bookworm\n"
        "Components: main\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.invalid/debian/\n"
        "Suites: bookworm bookworm-updates\nComponents: main contrib\n"
    )
    assert debian.mirror([sources]) == "http://mirror.invalid/debian"


def test_mirror_from_one_line_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KDL_DEBIAN_MIRROR", raising=False)
    other = tmp_path / "other.list"
    other.write_text("deb https://packages.invalid/apt cloud-sdk main-ish\n")
    listed = tmp_path / "sources.list"
    listed.write_text(
        "# deb http://old.invalid/debian sid main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://one.invalid/debian sid main\n"
    )
    assert debian.mirror([other, listed]) == "http://one.invalid/debian"


def test_no_mirror_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KDL_DEBIAN_MIRROR", raising=False)
    with pytest.raises(WorkspaceError, match="no Debian mirror"):
        debian.mirror([tmp_path / "missing.list"])


def test_mirror_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KDL_DEBIAN_MIRROR", "http://override.invalid/debian/")
    assert debian.mirror([]) == "http://override.invalid/debian"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A directory served over HTTP on 127.0.0.1."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def _remote(url: str, root: Path, data: bytes, **change: object) -> debian.RemoteFile:
    (root / "f.tar.xz").write_bytes(data)
    fields = {
        "uri": f"{url}/f.tar.xz",
        "name": "f.tar.xz",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    fields.update(change)
    return debian.RemoteFile(**fields)  # type: ignore[arg-type]


def test_download_verifies_and_reuses(tmp_path: Path, served: tuple[str, Path]) -> None:
    url, root = served
    remote = _remote(url, root, b"tarball bytes" * 100)
    dest = tmp_path / "dl"
    got = debian.download(remote, dest)
    assert got.read_bytes() == b"tarball bytes" * 100
    assert not (dest / "f.tar.xz.part").exists()
    (root / "f.tar.xz").unlink()  # a verified copy is not fetched again
    assert debian.download(remote, dest) == got


def test_download_refuses_a_wrong_hash(
    tmp_path: Path, served: tuple[str, Path]
) -> None:
    url, root = served
    remote = _remote(url, root, b"good", sha256="0" * 64)
    with pytest.raises(WorkspaceError, match=r"f\.tar\.xz: SHA-256 .* does not match"):
        debian.download(remote, tmp_path / "dl")
    assert list((tmp_path / "dl").iterdir()) == []


def test_download_refuses_a_short_file(
    tmp_path: Path, served: tuple[str, Path]
) -> None:
    url, root = served
    remote = _remote(url, root, b"short", size=999)
    with pytest.raises(WorkspaceError, match="downloaded 5 bytes, the index says 999"):
        debian.download(remote, tmp_path / "dl")
    assert list((tmp_path / "dl").iterdir()) == []


def test_a_partial_or_corrupt_file_is_downloaded_again(
    tmp_path: Path, served: tuple[str, Path]
) -> None:
    url, root = served
    remote = _remote(url, root, b"0123456789")
    dest = tmp_path / "dl"
    dest.mkdir()
    (dest / "f.tar.xz.part").write_bytes(b"01234")  # killed mid-way
    (dest / "f.tar.xz").write_bytes(b"0123456780")  # right size, wrong bytes
    assert debian.download(remote, dest).read_bytes() == b"0123456789"
    assert not (dest / "f.tar.xz.part").exists()


def test_download_failure_is_one_line(tmp_path: Path, served: tuple[str, Path]) -> None:
    url, _ = served
    remote = debian.RemoteFile(f"{url}/missing", "missing", 1, "0" * 64)
    with pytest.raises(
        WorkspaceError, match="missing: download failed: HTTP Error 404"
    ):
        debian.download(remote, tmp_path / "dl")


def test_need_disk(tmp_path: Path) -> None:
    debian.need_disk(tmp_path / "not" / "yet", 1, "a test")
    with pytest.raises(WorkspaceError, match=r"GB free, a tree needs [0-9.]+ GB"):
        debian.need_disk(tmp_path, 1 << 60, "a tree")


def test_a_cache_path_that_is_a_directory_is_one_line(
    tmp_path: Path, served: tuple[str, Path]
) -> None:
    url, root = served
    remote = _remote(url, root, b"tarball bytes")
    dest = tmp_path / "dl"
    (dest / "f.tar.xz").mkdir(parents=True)
    with pytest.raises(WorkspaceError) as caught:
        debian.download(remote, dest)
    assert str(caught.value) == (
        f"{dest / 'f.tar.xz'}: not a file (the download of f.tar.xz goes there); "
        "move it away and run again"
    )
    assert (dest / "f.tar.xz").is_dir()
