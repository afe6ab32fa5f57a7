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
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kdl.errors import CommandError, WorkspaceError

log = logging.getLogger("kdl")

#: Set by ``kdl --dry-run``: commands marked ``mutating`` are printed, not run.
DRY_RUN = False


def quote(argv: Sequence[str | os.PathLike[str]]) -> str:
    """Return *argv* as a copy-pasteable shell line."""
    return shlex.join(str(a) for a in argv)


#: prctl(2) option: the signal a process gets when its parent ends.
_PR_SET_PDEATHSIG = 1


def _dies_with_this_process() -> Callable[[], None]:
    """What a child runs before exec so that it is killed (SIGKILL) when
    this process ends, however it ends (``kill -9`` included): PR_SET_PDEATHSIG
    on Linux, which exec keeps."""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # it ended before the line above
            os.kill(os.getpid(), signal.SIGKILL)

    return in_child


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
    bound: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """Run *argv* and return the completed process.

    With ``capture`` (the default) stdout and stderr are collected as bytes;
    without it they go to the terminal (ninja's progress, lit's output).
    ``mutating`` commands are only printed under ``--dry-run``. A ``bound``
    command cannot outlive this process: killed with it (Linux), it stops
    writing where a later run is about to remove what it writes.
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
            preexec_fn=_dies_with_this_process() if bound else None,
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


@dataclass(frozen=True)
class Measured:
    """How a command ended and what it cost."""

    returncode: int
    seconds: float
    peak_rss_mb: float  # the command's own maximum resident set size
    stderr: str


#: Starts the measured command and reports its status and ru_maxrss. Linux
#: carries a process's peak RSS across fork and exec (the copy of the parent
#: counts), so the command is forked from this small interpreter, not from
#: kdl: its floor is the launcher's own few MB, not kdl's memory.
_LAUNCHER = """\
import os, sys
out, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}\\n")
"""


def measure(
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> Measured:
    """Run *argv* with stdout discarded; its exit status, time and peak RSS
    (its own: see :data:`_LAUNCHER`; at least the launcher's few MB)."""
    import sys

    args = [str(a) for a in argv]
    log.debug("measuring: %s", quote(args))
    full_env = dict(os.environ) | dict(env or {})
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kdl-measure-") as scratch:
        report = Path(scratch) / "status"
        with (Path(scratch) / "stderr").open("w+b") as err:
            child = subprocess.Popen(
                [sys.executable, "-S", "-c", _LAUNCHER, str(report), *args],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=full_env,
                start_new_session=True,
            )
            try:
                child.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, 9)
                child.wait()
                raise WorkspaceError(
                    f"{args[0]}: timed out after {timeout} s"
                ) from None
            err.seek(0)
            text = err.read().decode(errors="replace")
        try:
            status, maxrss = report.read_text().split()
        except (OSError, ValueError) as exc:
            raise WorkspaceError(f"{args[0]}: could not be measured ({text})") from exc
    if int(status) == 127 and not text:
        raise WorkspaceError(f"{args[0]}: command not found")
    return Measured(int(status), time.monotonic() - started, int(maxrss) / 1024, text)


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


#: Lines of a failing step's log printed with its error.
TAIL_LINES = 30
#: ninja's ``[N/M]`` and lit's ``PASS: suite :: test (N of M)``.
_PROGRESS = re.compile(rb"^\[(\d+)/(\d+)\]|^[A-Z]+: .* \((\d+) of (\d+)\)$")


def verbose() -> bool:
    """``-v``: every tool's output goes to the terminal as well."""
    return logging.getLogger("kdl").isEnabledFor(logging.DEBUG)


def run_logged(
    argv: Sequence[str | os.PathLike[str]],
    log_file: Path,
    *,
    label: str,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    check: bool = True,
    mutating: bool = True,
) -> int:
    """Run *argv* with its output appended to *log_file*; return its status.

    On a terminal one line shows *label*, ninja's ``[N/M]`` counter (or
    lit's ``N of M``) and the time so far; with ``-v`` the output goes to
    the terminal too. A failure (with *check*) prints the log's last
    :data:`TAIL_LINES` lines and raises :class:`CommandError` naming it.
    """
    args = [str(a) for a in argv]
    if mutating and DRY_RUN:
        print(f"would run: {quote(args)}")
        return 0
    log.debug("running: %s (output in %s)", quote(args), log_file)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **env} if env is not None else None
    show = verbose()
    live = sys.stdout.isatty() and not show
    started = time.monotonic()
    with log_file.open("ab") as out:
        out.write(f"$ {quote(args)}\n".encode())
        out.flush()
        try:
            child = subprocess.Popen(
                args,
                cwd=cwd,
                env=full_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        except FileNotFoundError as exc:
            raise WorkspaceError(f"{args[0]}: command not found") from exc
        assert child.stdout is not None
        for line in child.stdout:
            out.write(line)
            if show:
                sys.stdout.buffer.write(line)
                sys.stdout.flush()
            elif live:
                m = _PROGRESS.match(line.rstrip())
                done = [g.decode() for g in (m.groups() if m else ()) if g]
                count = f" [{done[0]}/{done[1]}]" if done else ""
                seconds = time.monotonic() - started
                sys.stdout.write(f"\r\033[K{label}:{count} {seconds:.0f} s")
                sys.stdout.flush()
        status = child.wait()
    if live:
        sys.stdout.write("\r\033[K")
        sys.stdout.flush()
    if check and status != 0:
        print_tail(log_file)
        raise CommandError(args, status, f"see {log_file} (its end is above)")
    return status


def print_tail(log_file: Path, lines: int = TAIL_LINES) -> None:
    """The last *lines* lines of a failing step's log, on stderr."""
    text = log_file.read_bytes().decode(errors="replace")
    print(f"  the end of {log_file}:", file=sys.stderr)
    for tail_line in text.splitlines()[-lines:]:
        print(f"  | {tail_line}", file=sys.stderr)
