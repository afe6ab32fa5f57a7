"""Time ``kdl apply`` (and check, status, revert) on an llvm-project-sized tree.

Makes a git repository with --files tracked files (default 150,000, about
llvm-project's count) laid out like llvm-project, with ``git fast-import``
and one checkout, then runs the series through ``python -m kdl`` (process
start included) several times and writes results/apply-bench.json.

The series is the real one (patches/series) when it exists: the files it
modifies get synthetic bases made from its own hunks
(tests/llvm_tree.synthesize_bases). Otherwise a three-patch series is made
against real LLVM 22 headers. Goal: apply under 10 s on 2 cores.

    .venv/bin/python scripts/bench_apply.py [--files N] [--runs N] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kdl import paths  # noqa: E402
from kdl.series.model import load  # noqa: E402
from tests.llvm_tree import REAL_FILES, make_series, synthesize_bases  # noqa: E402

#: Top-level directories the filler files are spread over (llvm-project's).
TOPS = [
    "llvm/lib",
    "llvm/include/llvm",
    "llvm/test",
    "llvm/unittests",
    "clang/lib",
    "clang/test",
    "mlir/lib",
    "mlir/test",
    "offload/plugins-nextgen",
    "offload/test",
    "openmp/runtime/src",
    "libcxx/include",
    "libcxx/test",
    "compiler-rt/lib",
    "lld/ELF",
    "lldb/source",
]
PER_DIR = 50


def git(repo: Path, *args: str, **kwargs: object) -> str:
    result = subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, **kwargs
    )  # type: ignore[call-overload]
    return str(result.stdout)


def isolate(home: Path) -> None:
    """No user or system git config; a fixed identity."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    os.environ.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.org",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.org",
    )


def make_repo(repo: Path, files: int, real: dict[str, bytes]) -> float:
    """*files* tracked files (one empty blob) plus *real*; returns seconds."""
    started = time.monotonic()
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet")
    chunks = [b"blob\nmark :1\ndata 0\n\n"]
    marks = {}
    for i, (path, data) in enumerate(sorted(real.items()), start=2):
        marks[path] = i
        chunks.append(b"blob\nmark :%d\ndata %d\n%s\n" % (i, len(data), data))
    message = b"llvm-project-sized tree for kdl's apply benchmark"
    chunks.append(
        b"commit refs/heads/main\n"
        b"committer Bench <bench@example.org> 1767322800 +0000\n"
        b"data %d\n%s\n" % (len(message), message)
    )
    filler = files - len(real)
    for n in range(filler):
        d, f = divmod(n, PER_DIR)
        path = f"{TOPS[d % len(TOPS)]}/Dir{d:05d}/File{f:02d}.cpp"
        chunks.append(f"M 100644 :1 {path}\n".encode())
    for path, mark in marks.items():
        chunks.append(f"M 100644 :{mark} {path}\n".encode())
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(chunks), check=True
    )
    git(repo, "reset", "--quiet", "--hard", "main")
    return time.monotonic() - started


def kdl(*args: str) -> tuple[float, str]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "kdl", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(
            f"kdl {' '.join(args)} failed:\n{result.stdout}{result.stderr}"
        )
    return seconds, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--work", type=Path, help="scratch directory, kept (default: a temporary one)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the scratch repository"
    )
    parser.add_argument(
        "--output", type=Path, default=paths.RESULTS / "apply-bench.json"
    )
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="kdl-bench-"))
    try:
        return bench(args, work)
    finally:
        if args.work is None and not args.keep:  # only what we made
            shutil.rmtree(work, ignore_errors=True)


def bench(args: argparse.Namespace, work: Path) -> int:
    isolate(work / "home")
    repo = work / "llvm-project"
    if paths.SERIES.is_file():
        series_file = paths.SERIES
        series = load(series_file)
        bases = synthesize_bases([p.read() for p in series.patches])
        real = {path: text.encode() for path, text in bases.items()}
        source = "patches/series (bases synthesized from its hunks)"
    else:
        real = {rel: src.read_bytes() for rel, src in REAL_FILES.items()}
        source = "generated 3-patch series (patches/series does not exist yet)"
    for marker in (
        "llvm/include/llvm/Object/OffloadBinary.h",
        "offload/CMakeLists.txt",
    ):
        real.setdefault(marker, b"// placeholder\n")
    setup = make_repo(repo, args.files, real)
    if not paths.SERIES.is_file():
        series_file = make_series(repo, work / "patches").series
        series = load(series_file)
    tracked = int(git(repo, "ls-files").count("\n"))
    print(f"repository: {tracked} tracked files at {repo} (made in {setup:.1f} s)")
    print(f"series: {series.name}, {len(series.patches)} patches ({source})")

    common = ["--llvm", str(repo), "--series", str(series_file)]
    timings: dict[str, list[float]] = {
        k: [] for k in ("check", "apply", "reapply", "status", "revert")
    }
    started = time.monotonic()
    subprocess.run(
        ["git", "status", "--porcelain", "-uno"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    git_status = time.monotonic() - started
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "kdl", "--version"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    startup = time.monotonic() - started
    for run in range(args.runs):
        timings["check"].append(kdl("check", *common)[0])
        seconds, out = kdl("apply", *common)
        assert f"{len(series.patches)} applied" in out, out
        timings["apply"].append(seconds)
        seconds, out = kdl("apply", *common)
        assert f"0 applied, {len(series.patches)} already applied" in out, out
        timings["reapply"].append(seconds)
        timings["status"].append(kdl("status", *common)[0])
        timings["revert"].append(kdl("revert", *common)[0])
        git(repo, "checkout", "--quiet", "main")
        git(repo, "branch", "--quiet", "-D", f"kdl/{series.name}")
        print(
            f"run {run + 1}: "
            + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in timings.items())
        )

    doc = {
        "what": "wall time of `python -m kdl <command>`, llvm-project-sized checkout",
        "files": tracked,
        "series": series.name,
        "series_source": source,
        "patches": len(series.patches),
        "runs": args.runs,
        "samples": {k: [round(x, 3) for x in v] for k, v in timings.items()},
        "seconds": {
            k: {
                "min": round(min(v), 3),
                # Of the rounded samples, so that it can be checked against them.
                "median": round(statistics.median([round(x, 3) for x in v]), 3),
            }
            for k, v in timings.items()
        },
        "reference_seconds": {
            "git status -uno": round(git_status, 3),
            "python -m kdl --version": round(startup, 3),
        },
        "goal_apply_seconds": 10,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "git": git(repo, "--version").strip(),
            "platform": platform.platform(),
        },
        "date": time.strftime("%Y-%m-%d"),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=2) + "\n")
    print(
        f"apply: median {doc['seconds']['apply']['median']} s (goal < 10 s); "
        f"wrote {args.output}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
