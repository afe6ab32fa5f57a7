"""Errors raised by the kdl library.

Only :func:`kdl.cli.main` turns these into ``error: ...`` lines and exit codes.
"""

from __future__ import annotations


class WorkspaceError(Exception):
    """A failure the user can act on; ``str()`` is a one-line message."""

    exit_code = 1


class UsageError(WorkspaceError):
    """Bad arguments or configuration (exit status 2)."""

    exit_code = 2


class FormatError(WorkspaceError):
    """Malformed input file: ``FILE: <what> at offset N``."""

    def __init__(self, path: str, what: str, offset: int | None = None) -> None:
        self.path = path
        self.what = what
        self.offset = offset
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"{path}: {what}{where}")


class CommandError(WorkspaceError):
    """A subprocess exited non-zero."""

    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr
        tail = stderr.strip().splitlines()[-1:] if stderr.strip() else []
        detail = f": {tail[0]}" if tail else ""
        super().__init__(f"'{argv[0]}' exited with status {returncode}{detail}")


class GitError(WorkspaceError):
    """A git repository is not in a state we may touch."""
