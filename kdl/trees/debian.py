"""Debian's registry, as this machine's apt configuration names it.

The mirror is read from the machine's own apt sources (one-line ``.list``
files and deb822 ``.sources`` files); no registry host is written anywhere in
the workspace. Index look-ups run the machine's ``apt-get`` with a private
configuration under ``.work/apt`` (its own sources, lists and cache, so the
system's are never touched), which checks the index's signature as apt
always does; a file is then downloaded with the size and SHA-256 that index
gives, into ``NAME.part`` first, and only a file whose size and hash match is
renamed into place.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kdl import paths, proc
from kdl.errors import WorkspaceError

log = logging.getLogger("kdl")

APT_SOURCES = Path("/etc/apt/sources.list")
APT_SOURCES_D = Path("/etc/apt/sources.list.d")


def _deb_entries(text: str, deb822: bool) -> list[tuple[str, list[str], list[str]]]:
    """(uri, suites, components) of every ``deb`` entry in an apt sources file."""
    entries = []
    if deb822:
        for stanza in re.split(r"\n\s*\n", text):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.strip()
            if "deb" not in fields.get("types", "").split():
                continue
            if fields.get("enabled", "yes").lower() == "no":
                continue
            for uri in fields.get("uris", "").split():
                entries.append(
                    (
                        uri,
                        fields.get("suites", "").split(),
                        fields.get("components", "").split(),
                    )
                )
        return entries
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb":
            entries.append((words[1], [words[2]], words[3:]))
    return entries


def mirror(sources: list[Path] | None = None) -> str:
    """The Debian archive URI of this machine's apt configuration.

    The first ``deb`` entry with the ``main`` component whose suite is a
    release (``bookworm``, ``sid``; not ``-security`` or ``-updates``).
    ``KDL_DEBIAN_MIRROR`` overrides it.
    """
    override = os.environ.get("KDL_DEBIAN_MIRROR")
    if override:
        return override.rstrip("/")
    if sources is None:
        sources = [APT_SOURCES] if APT_SOURCES.is_file() else []
        if APT_SOURCES_D.is_dir():
            sources += sorted(
                p for p in APT_SOURCES_D.iterdir() if p.suffix in (".list", ".sources")
            )
    for path in sources:
        try:
            text = path.read_text()
        except OSError:
            continue
        for uri, suites, components in _deb_entries(text, path.suffix == ".sources"):
            if "main" in components and any("-" not in s for s in suites):
                return uri.rstrip("/")
    raise WorkspaceError(
        "no Debian mirror in this machine's apt configuration "
        "(/etc/apt/sources.list{,.d}); set KDL_DEBIAN_MIRROR"
    )


@dataclass(frozen=True)
class RemoteFile:
    """A file of the registry as a signed index describes it."""

    uri: str
    name: str
    size: int
    sha256: str


class PrivateApt:
    """The machine's apt-get with its own sources, lists and cache."""

    def __init__(self, lines: list[str], where: Path | None = None) -> None:
        self.where = where or paths.ROOT / ".work" / "apt"
        self.lines = lines

    def _options(self) -> list[str]:
        return [
            "-o",
            f"Dir::Etc::SourceList={self.where / 'sources.list'}",
            "-o",
            "Dir::Etc::SourceParts=/nonexistent",
            "-o",
            f"Dir::State::Lists={self.where / 'lists'}",
            "-o",
            f"Dir::Cache={self.where / 'cache'}",
            "-o",
            "Acquire::Check-Valid-Until=false",
            "-o",
            "Debug::NoLocking=1",
        ]

    def update(self) -> None:
        for sub in ("lists/partial", "cache/archives/partial"):
            (self.where / sub).mkdir(parents=True, exist_ok=True)
        (self.where / "sources.list").write_text("\n".join(self.lines) + "\n")
        proc.run(["apt-get", *self._options(), "-qq", "update"])

    def source_files(self, package: str, version: str) -> list[RemoteFile]:
        """The files of source package *package* at *version*, from the index."""
        out = proc.run(
            [
                "apt-get",
                *self._options(),
                "-qq",
                "--print-uris",
                "source",
                f"{package}={version}",
            ],
            check=False,
        )
        files = []
        for line in out.stdout.decode(errors="replace").splitlines():
            m = re.match(r"^'([^']+)' (\S+) (\d+) SHA256:([0-9a-f]{64})$", line)
            if m:
                files.append(
                    RemoteFile(m.group(1), m.group(2), int(m.group(3)), m.group(4))
                )
        return files

    def source_versions(self, package: str) -> list[str]:
        """Every version of source package *package* the index carries."""
        out = proc.run(["apt-cache", *self._options(), "showsrc", package], check=False)
        return re.findall(
            r"^Version: (\S+)$", out.stdout.decode(errors="replace"), re.MULTILINE
        )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def download(remote: RemoteFile, dest_dir: Path) -> Path:
    """*remote* in *dest_dir*, downloaded unless a verified copy is there.

    The bytes go to ``NAME.part`` and are renamed only once size and SHA-256
    match the index: a killed or corrupt download is never used, and the
    next call starts it again.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    final = dest_dir / remote.name
    part = dest_dir / (remote.name + ".part")
    for path in (final, part):
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise WorkspaceError(
                f"{path}: not a file (the download of {remote.name} goes there); "
                "move it away and run again"
            )
    if final.is_file() and final.stat().st_size == remote.size:
        if sha256_of(final) == remote.sha256:
            return final
        log.warning("%s: wrong SHA-256, downloading it again", final)
    final.unlink(missing_ok=True)
    part.unlink(missing_ok=True)
    need_disk(dest_dir, remote.size, f"downloading {remote.name}")
    log.info("downloading %s (%d MB)", remote.name, remote.size >> 20)
    try:
        with (
            urllib.request.urlopen(remote.uri, timeout=60) as answer,
            part.open("wb") as out,
        ):
            shutil.copyfileobj(answer, out, 1 << 20)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise WorkspaceError(f"{remote.name}: download failed: {exc}") from exc
    size = part.stat().st_size
    if size != remote.size:
        part.unlink()
        raise WorkspaceError(
            f"{remote.name}: downloaded {size} bytes, the index says {remote.size}"
        )
    got = sha256_of(part)
    if got != remote.sha256:
        part.unlink()
        raise WorkspaceError(
            f"{remote.name}: SHA-256 {got} does not match the index's {remote.sha256}"
        )
    part.rename(final)
    return final


def need_disk(where: Path, need: int, what: str) -> None:
    """Fail with one line unless *where*'s file system has *need* bytes free."""
    probe = where
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < need:
        raise WorkspaceError(
            f"{probe}: {free / 1e9:.1f} GB free, {what} needs {need / 1e9:.1f} GB"
        )
