"""The files a user names: only a regular file is opened, and at once.

``open(path)`` of a FIFO with no writer waits for one forever, and a
directory or a device is no input a command reads (/dev/zero never ends).
:func:`open_regular` opens without waiting (``O_NONBLOCK``), then refuses
anything but a regular file in one line; an empty path is refused too, rather
than taken for the current directory (``Path("")`` is ``.``).
"""

from __future__ import annotations

import os
import stat

from kdl.errors import UsageError, WorkspaceError

#: What a file that is not a regular one is called.
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def open_regular(path: str | os.PathLike[str]) -> int:
    """A descriptor of the regular file at *path*, open for reading (the
    caller closes it); a WorkspaceError of one line naming *path* else."""
    name = os.fspath(path)
    if not name:
        raise UsageError("'': an empty path names no file")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise WorkspaceError(f"{name}: cannot read: {exc.strerror or exc}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = _KINDS.get(stat.S_IFMT(mode), "not a file")
        raise WorkspaceError(f"{name}: not a regular file ({kind})")
    return fd


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file at *path* (:func:`open_regular`)."""
    fd = open_regular(path)
    try:
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    except OSError as exc:
        raise WorkspaceError(f"{os.fspath(path)}: cannot read: {exc.strerror}") from exc
    finally:
        os.close(fd)
