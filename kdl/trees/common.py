"""What every tree shares: its pins, its record, and how a half-made one goes.

A tree is made under ``NAME.partial`` and renamed into place when complete;
its record (``NAME.json`` beside it) is written last, so a tree counts only
with its record: a ``.partial`` directory left by a run that was killed (or
ran out of disk), or a tree without a record, is removed and made again,
never used. File systems a
maker mounted inside a root (debootstrap mounts ``/proc``) are unmounted
before anything is removed. The unpacker (:func:`unpack`) cannot outlive the
kdl that started it (it is killed with it); one that did all the same (left
by an older kdl) carries kdl's mark and is stopped before its tree is
removed. Any other process still at work in a tree to be removed (its current
directory, its root or an open file or directory there) is named in one line
and nothing is removed.

One run makes or checks a tree at a time (:func:`locked`, a lock beside the
tree): a second run waits for the first, saying which process holds it, and
then finds the tree made.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdl import paths, proc
from kdl.errors import UsageError, WorkspaceError

log = logging.getLogger("kdl")

PINS_FILE = paths.ROOT / "trees.json"
#: The environment variable that marks kdl's unpacker, and its children,
#: with the tree they write: a later run stops one that outlived its kdl.
UNPACKING = "KDL_UNPACKING"
#: How long a stopped unpacker has to end (SIGTERM, then SIGKILL).
STOP_SECONDS = 5.0
TREES_DIR = paths.ROOT / ".work" / "trees"
DOWNLOADS = paths.ROOT / ".work" / "downloads"


def pins() -> dict[str, dict[str, Any]]:
    try:
        data: dict[str, dict[str, Any]] = json.loads(PINS_FILE.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{PINS_FILE}: cannot read the tree pins: {exc}") from exc
    return data


def pin(name: str) -> dict[str, Any]:
    table = pins()
    if name not in table:
        raise UsageError(
            f"{PINS_FILE}: no tree named '{name}' (there are: {', '.join(table)})"
        )
    return table[name]


def write_pin(name: str, entry: dict[str, Any]) -> None:
    table = pins()
    table[name] = entry
    PINS_FILE.write_text(json.dumps(table, indent=2) + "\n")


@dataclass(frozen=True)
class Tree:
    """A made tree: where it is and what it is (its record)."""

    name: str
    path: Path
    record: dict[str, Any]

    def describe(self) -> str:
        r = self.record
        what = f"{r.get('source_package')} {r.get('version')}"
        if self.name == "main":
            what += f" (main at {r.get('commit')})"
        elif r.get("sha256"):
            what += f" (orig sha256 {r['sha256'][:16]}...)"
        return what


def tree_dir(name: str) -> Path:
    return TREES_DIR / name


def record_file(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def read_record(path: Path) -> dict[str, Any] | None:
    """The record of the tree at *path*; None unless both are there."""
    if not path.is_dir():
        return None
    try:
        data: dict[str, Any] = json.loads(record_file(path).read_text())
    except (OSError, ValueError):
        return None
    return data


def current(name: str, *marks: str) -> Tree | None:
    """The tree *name* if it is made and is the pinned one, else None.

    Made: its record is there and names the pinned version (and SHA-256,
    where the pin has one), and every path in *marks* exists in it.
    """
    path = tree_dir(name)
    record = read_record(path)
    pinned = pin(name)
    if record is None or any(
        record.get(key) != pinned[key] for key in ("version", "sha256") if key in pinned
    ):
        return None
    if not all((path / mark).exists() for mark in marks):
        return None
    return Tree(name, path, record)


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below *path*, deepest first."""
    prefix = str(path.resolve())
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    points = []
    for line in lines:
        fields = line.split()
        if len(fields) > 1:
            point = fields[1].replace("\\040", " ")
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return sorted(points, key=len, reverse=True)


def unmount_all(path: Path) -> None:
    for point in mounts_under(path):
        proc.run(["umount", "-l", point], check=False, mutating=True)
    left = mounts_under(path)
    if left and not proc.DRY_RUN:
        raise WorkspaceError(
            f"{path}: cannot unmount {left[0]}; unmount it by hand, then run again"
        )


@contextmanager
def locked(name: str) -> Iterator[None]:
    """Hold the lock of tree *name* (``.work/trees/NAME.lock``); while another
    run holds it, say which process that is and wait."""
    if proc.DRY_RUN:
        yield
        return
    TREES_DIR.mkdir(parents=True, exist_ok=True)
    path = TREES_DIR / f"{name}.lock"
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "a process"
            print(
                f"kdl tree {name}: waiting for {holder}, which is making or "
                f"checking it (it holds {path})",
                file=sys.stderr,
                flush=True,
            )
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(f"kdl (pid {os.getpid()})\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _under(where: str, top: str) -> bool:
    return where == top or where.startswith(top + "/")


def users(path: Path) -> list[tuple[int, str]]:
    """(pid, command) of the processes at work in *path* or below it: their
    current directory or root is there, or a file or directory they hold
    open (GNU ``tar -C`` keeps its own directory and writes through one)."""
    top = str(path.resolve())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            where = [os.readlink(f"/proc/{entry}/{w}") for w in ("cwd", "root")]
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().rstrip(b"\0")
        except OSError:
            continue
        if not any(_under(w, top) for w in where):
            where = _open_files(entry)
        if any(_under(w, top) for w in where):
            command = argv.replace(b"\0", b" ").decode(errors="replace")
            found.append((int(entry), command[:60]))
    return sorted(found)


def _open_files(pid: str) -> list[str]:
    """What process *pid* holds open (none where it is not ours to see)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    found = []
    for fd in fds:
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return found


def _unpacks(pid: int, path: Path) -> bool:
    """Whether process *pid* is kdl's unpacker of *path* (:data:`UNPACKING`)."""
    mark = f"{UNPACKING}={path.resolve()}".encode()
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return mark in environ.split(b"\0")


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def _stop(pid: int, argv: str) -> None:
    """End an unpacker an interrupted run left: SIGTERM, then SIGKILL."""
    log.info("stopping pid %d (%s), left unpacking by an interrupted run", pid, argv)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline:
            if not _running(pid):
                return
            time.sleep(0.05)
    raise WorkspaceError(
        f"pid {pid} ({argv}), left unpacking by an interrupted run, does not "
        "end; stop it by hand, then run again"
    )


def remove(path: Path) -> None:
    """Remove a tree directory, after unmounting what a maker mounted in it.

    A process still at work in it (left by a run killed alone) is named in
    one line instead; so is anything that cannot be removed."""
    if not path.exists() and not path.is_symlink():
        return
    if path.is_symlink() or not path.is_dir():
        if proc.DRY_RUN:
            print(f"would remove {path}")
            return
        path.unlink()
        return
    busy = users(path)
    if busy and not proc.DRY_RUN:
        for pid, argv in busy:
            if _unpacks(pid, path):
                _stop(pid, argv)
        busy = [(pid, argv) for pid, argv in users(path) if _running(pid)]
    if busy:
        pid, argv = busy[0]
        raise WorkspaceError(
            f"{path}: a process still works there (pid {pid}: {argv}), perhaps "
            "left by an interrupted run; wait for it to end (or stop it), then "
            "run again"
        )
    unmount_all(path)
    if proc.DRY_RUN:
        print(f"would remove {path}")
        return
    try:
        shutil.rmtree(path)
    except OSError as exc:
        raise WorkspaceError(
            f"{path}: cannot remove it ({exc.strerror or exc}: {exc.filename}); "
            "is a process still writing there? remove it by hand, then run again"
        ) from exc


def drop_partial(name: str) -> None:
    """Remove ``NAME.partial`` left by a killed run once the tree is current."""
    partial = TREES_DIR / f"{name}.partial"
    if partial.exists() or partial.is_symlink():
        log.info("removing %s, left by an interrupted run", partial)
        remove(partial)


def staging(name: str) -> Path:
    """A fresh ``NAME.partial``; whatever an interrupted run left there goes."""
    partial = TREES_DIR / f"{name}.partial"
    if partial.exists():
        log.info("removing %s, left by an interrupted run", partial)
        remove(partial)
    if not proc.DRY_RUN:
        partial.mkdir(parents=True)
    return partial


def unpack(tarball: Path, tree: Path) -> None:
    """Unpack *tarball* (xz) into *tree*, its top directory left out.

    tar runs in *tree*, marked as kdl's unpacker of it (:data:`UNPACKING`),
    and is killed with this process (``proc.run(bound=True)``): a kdl killed
    alone leaves no tar writing into a tree the next run removes."""
    proc.run(
        [
            "tar",
            "-xJf",
            os.path.abspath(tarball),
            "--strip-components=1",
            "--no-same-owner",
        ],
        cwd=tree,
        env={UNPACKING: str(tree.resolve())},
        bound=True,
    )


def finish(name: str, partial: Path, record: dict[str, Any]) -> Tree:
    """Rename *partial* into place, then write its record (the commit point)."""
    final = tree_dir(name)
    if proc.DRY_RUN:
        return Tree(name, final, record)
    record_file(final).unlink(missing_ok=True)
    remove(final)
    partial.rename(final)
    record_file(final).write_text(json.dumps(record, indent=2) + "\n")
    return Tree(name, final, record)
