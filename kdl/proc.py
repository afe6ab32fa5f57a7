"""The one helper that runs subprocesses.

Every external tool (cmake, ninja, lit, the LLVM tools, the C++ drivers) runs
through :func:`run`: an argv list, never a shell; ``cwd=`` instead of
``os.chdir``; the command logged at debug level; :class:`CommandError` with the
exit status and the tail of stderr on failure. ``--dry-run`` is honoured here
so that every command prints what it would have run.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from kdl.errors import CommandError, WorkspaceError

log = logging.getLogger("kdl")

#: Set by ``kdl --dry-run``: commands marked ``mutating`` are printed, not run.
DRY_RUN = False


def quote(argv: Sequence[str | os.PathLike[str]]) -> str:
    """Return *argv* as a copy-pasteable shell line."""
    return shlex.join(str(a) for a in argv)


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    capture: bool = True,
    check: bool = True,
    input: bytes | None = None,
    timeout: float | None = None,
    mutating: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """Run *argv* and return the completed process.

    With ``capture`` (the default) stdout and stderr are collected as bytes;
    without it they go to the terminal (ninja's progress, lit's output).
    ``mutating`` commands are only printed under ``--dry-run``.
    """
    args = [str(a) for a in argv]
    where = f" (in {cwd})" if cwd else ""
    if mutating and DRY_RUN:
        print(f"would run: {quote(args)}{where}")
        return subprocess.CompletedProcess(args, 0, b"", b"")
    log.debug("running: %s%s", quote(args), where)
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        proc = subprocess.run(
            args,
            cwd=cwd,
            env=full_env,
            input=input,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.PIPE if capture else None,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise WorkspaceError(f"{args[0]}: command not found") from exc
    except subprocess.TimeoutExpired as exc:
        raise WorkspaceError(f"{args[0]}: timed out after {timeout} s") from exc
    if check and proc.returncode != 0:
        stderr = (proc.stderr or b"").decode(errors="replace")
        if not stderr.strip():
            stderr = (proc.stdout or b"").decode(errors="replace")
        raise CommandError(args, proc.returncode, stderr)
    return proc


def output(argv: Sequence[str | os.PathLike[str]], **kwargs: object) -> str:
    """Run *argv* and return its stdout as text (stripped)."""
    proc = run(argv, **kwargs)  # type: ignore[arg-type]
    return proc.stdout.decode(errors="replace").strip()


def clang_cxx(prefix: Path) -> Path:
    """clang++ 22: Debian's ``clang++-22`` on PATH, else ``PREFIX/bin/clang++``."""
    return which("clang++-22") or prefix / "bin" / "clang++"


def which(name: str, *dirs: Path) -> Path | None:
    """Find *name* in *dirs* first, then on PATH."""
    for d in dirs:
        candidate = d / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    from shutil import which as _which

    found = _which(name)
    return Path(found) if found else None
