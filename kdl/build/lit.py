"""Run the llvm-tests lit suite: ``kdl test``.

The suite (llvm-tests/lit.cfg.py) takes its tool directories as lit params;
this module only decides which directories to pass, runs lit through
:func:`kdl.proc.run`, and turns lit's JSON report into a :class:`LitResult`
plus ``results/lit/summary.json`` (tool versions, date, counts, and the
first-compatible-wins example the RFC quotes).

Two configurations:

* default: Debian's LLVM 22 (``llvm-offload-binary``, ``FileCheck``) plus
  the overlay build of the series (``kdl-select``), built here if needed;
* ``--build-dir DIR``: an llvm-project build with the series applied, whose
  ``DIR/bin`` provides every tool.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kdl import paths, proc
from kdl.errors import UsageError, WorkspaceError
from kdl.provenance import version
from kdl.series.checkout import describe_tree

if TYPE_CHECKING:
    from kdl.build.overlay import Overlay

log = logging.getLogger("kdl")

#: Where lit's JSON report and our summary go.
LIT_RESULTS = paths.RESULTS / "lit"
#: Where lit puts %t files (the suite's test_exec_root).
LIT_EXEC_ROOT = paths.BUILD / "llvm-tests"

#: lit result codes, by what they mean for the run.
PASSING = frozenset({"PASS", "FLAKYPASS", "XFAIL"})
FAILING = frozenset({"FAIL", "XPASS", "UNRESOLVED", "TIMEOUT"})
SKIPPED = frozenset({"UNSUPPORTED", "SKIPPED", "EXCLUDED"})

#: The test whose output the RFC quotes, and the files it leaves behind
#: (llvm-tests/selection/first-compatible-wins.test writes them as %t.<suffix>).
EXAMPLE_TEST = "selection/first-compatible-wins.test"
EXAMPLE_FILES = {
    "images": "inspect.txt",
    "ranked": "ranked.txt",
    "first_compatible": "first.txt",
}


@dataclass(frozen=True)
class LitResult:
    """Outcome of one lit run."""

    ok: bool
    passed: int
    failed: int
    results_file: Path
    unsupported: int = 0
    summary_file: Path | None = None
    failures: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.unsupported

    def summary(self) -> str:
        text = f"{self.passed} passed, {self.failed} failed"
        if self.unsupported:
            text += f", {self.unsupported} unsupported"
        return text


#: What the default configuration (LLVM 22's tools, the overlay) leaves out.
NOT_RUN = {
    "mlir": (
        "the proposals' #gpu.runtime_select is built against main's MLIR "
        "(kdl test --main runs it)"
    ),
}


@dataclass(frozen=True)
class ToolDirs:
    """The two lit params that locate the tools."""

    llvm_tools_dir: Path
    kdl_tools_dir: Path

    def params(self) -> list[str]:
        return [
            f"--param=llvm_tools_dir={self.llvm_tools_dir}",
            f"--param=kdl_tools_dir={self.kdl_tools_dir}",
        ]


def tool_dirs(
    overlay: Overlay | None = None, build_dir: Path | None = None
) -> ToolDirs:
    """Choose the tool directories for a run (building the overlay if needed).

    With *build_dir* (an llvm-project build) both come from ``build_dir/bin``;
    if that build has no ``kdl-select`` the overlay's driver is used with it.
    """
    if build_dir is not None:
        bin_dir = build_dir.resolve() / "bin"
        if not (bin_dir / "llvm-offload-binary").is_file():
            raise UsageError(
                f"{build_dir}: no bin/llvm-offload-binary (not an LLVM build)"
            )
        if (bin_dir / "kdl-select").is_file():
            return ToolDirs(bin_dir, bin_dir)
        log.info("%s has no kdl-select; using the overlay's", bin_dir)
        return ToolDirs(bin_dir, _overlay(overlay).bin_dir)
    return ToolDirs(paths.llvm_bin(), _overlay(overlay).bin_dir)


def _overlay(overlay: Overlay | None) -> Overlay:
    if overlay is not None:
        return overlay
    from kdl.build.overlay import build_overlay

    return build_overlay()


def lit_command() -> list[str]:
    """lit from the running interpreter's environment (the venv's pinned lit).

    The lit package has no ``__main__``; run the console script beside the
    interpreter, else the one on PATH.
    """
    script = proc.which("lit", Path(sys.executable).parent)
    if script is None:
        raise WorkspaceError("lit is not installed (pip install lit)")
    return [str(script)]


def lit_argv(
    suite: Path,
    dirs: ToolDirs,
    output: Path,
    filter: str | None = None,
    extra_params: dict[str, str] | None = None,
    *,
    filter_out: str | None = None,
) -> list[str]:
    """The lit command line: every test's result line, output of failures."""
    argv = [*lit_command(), "-v", "--order=lexical"]
    argv += dirs.params()
    for name, value in (extra_params or {}).items():
        argv.append(f"--param={name}={value}")
    argv += [f"--param=kdl_python={sys.executable}"]
    argv += ["--output", str(output)]
    if filter:
        argv += ["--filter", filter]
    if filter_out:
        argv += ["--filter-out", filter_out]
    argv.append(str(suite))
    return argv


def read_results(results_file: Path) -> tuple[Counter[str], list[str]]:
    """Count lit's result codes in its JSON report; list the failing tests."""
    try:
        data = json.loads(results_file.read_text())
        tests = data["tests"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WorkspaceError(f"{results_file}: not a lit JSON report ({exc})") from exc
    codes: Counter[str] = Counter()
    failures: list[str] = []
    for test in tests:
        code = str(test.get("code"))
        codes[code] += 1
        if code in FAILING:
            failures.append(str(test.get("name")))
    return codes, failures


def run_lit(
    overlay: Overlay | None = None,
    build_dir: Path | None = None,
    filter: str | None = None,
    *,
    suite: Path = paths.LLVM_TESTS,
    results_dir: Path = LIT_RESULTS,
    dirs: ToolDirs | None = None,
    extra_params: dict[str, str] | None = None,
    exec_root: Path = LIT_EXEC_ROOT,
    not_run: dict[str, str] | None = None,
    prefix: list[str] | None = None,
) -> LitResult:
    """Run the lit suite and write ``results_dir/<suite>.json`` + summary.json.

    *filter* is lit's ``--filter`` regular expression. *not_run* maps the
    directories and tests of the suite this configuration leaves out to the
    reason (lit's ``--filter-out``; the summary lists them; for the
    llvm-tests suite by default :data:`NOT_RUN`); *prefix* is a command lit
    runs under. lit's own output (one line per test, the output of failing
    tests) goes to the terminal.
    """
    if dirs is None:
        dirs = tool_dirs(overlay, build_dir)
    results_file = results_dir / f"{suite.name}.json"
    params = {"test_exec_root": str(exec_root), **(extra_params or {})}
    if not_run is None:
        not_run = NOT_RUN if suite == paths.LLVM_TESTS else {}
    # A directory matches what lies below it, a test itself.
    left_out = [re.escape(n) + ("$" if n.endswith(".test") else "/") for n in not_run]
    filter_out = ":: (" + "|".join(sorted(left_out)) + ")" if not_run else None
    argv = [
        *(prefix or []),
        *lit_argv(suite, dirs, results_file, filter, params, filter_out=filter_out),
    ]
    if not proc.DRY_RUN:
        results_dir.mkdir(parents=True, exist_ok=True)
        results_file.unlink(missing_ok=True)
    started = datetime.datetime.now(datetime.UTC)
    # lit writes the reports and %t files: under --dry-run it is only printed.
    log_file = exec_root / "lit.log"
    if not proc.DRY_RUN:
        exec_root.mkdir(parents=True, exist_ok=True)
        log_file.unlink(missing_ok=True)
    returncode = proc.run_logged(
        argv, log_file, label=f"lit {suite.name}", cwd=paths.ROOT, check=False
    )
    if proc.DRY_RUN:
        return LitResult(True, 0, 0, results_file)
    if not results_file.is_file():
        if returncode == 2 and filter:
            raise UsageError(f"lit: --filter {filter!r} matched no test")
        proc.print_tail(log_file)
        raise WorkspaceError(
            f"lit exited with status {returncode} before writing "
            f"{results_file} (see the end of {log_file} above)"
        )
    codes, failures = read_results(results_file)
    passed = sum(n for code, n in codes.items() if code in PASSING)
    failed = sum(n for code, n in codes.items() if code in FAILING)
    unsupported = sum(n for code, n in codes.items() if code in SKIPPED)
    # Every test of the suite must run here: a skipped test means a missing
    # tool or package (the set-up installs them all), and it fails the run.
    ok = returncode == 0 and failed == 0 and unsupported == 0 and passed > 0
    if not ok and not proc.verbose():
        proc.print_tail(log_file)
    if unsupported:
        log.error(
            "lit: %d tests did not run here (UNSUPPORTED above); the set-up "
            "installs every package they need, so one is missing",
            unsupported,
        )
    summary_file = results_dir / "summary.json"
    summary = {
        "suite": str(suite),
        "date": started.isoformat(timespec="seconds"),
        "command": proc.quote(argv),
        "exit_status": returncode,
        "log": str(log_file),
        "params": {
            "llvm_tools_dir": str(dirs.llvm_tools_dir),
            "kdl_tools_dir": str(dirs.kdl_tools_dir),
            "filter": filter,
            "test_exec_root": str(exec_root),
        },
        "not_run": dict(sorted((not_run or {}).items())),
        "tools": tool_versions(dirs),
        "workspace": describe_tree(paths.ROOT),
        "counts": {
            "passed": passed,
            "failed": failed,
            "unsupported": unsupported,
            "total": sum(codes.values()),
            "by_code": dict(sorted(codes.items())),
        },
        "failures": failures,
        "results_file": str(results_file),
        "example": read_example(suite, exec_root),
    }
    summary_file.write_text(json.dumps(summary, indent=2) + "\n")
    return LitResult(
        ok=ok,
        passed=passed,
        failed=failed,
        results_file=results_file,
        unsupported=unsupported,
        summary_file=summary_file,
        failures=failures,
    )


def tool_versions(dirs: ToolDirs) -> dict[str, str | None]:
    """``--version`` of the tools the suite uses (None where not available)."""
    return {
        "llvm-offload-binary": version(dirs.llvm_tools_dir / "llvm-offload-binary"),
        "FileCheck": version(dirs.llvm_tools_dir / "FileCheck"),
        "kdl-select": version(dirs.kdl_tools_dir / "kdl-select"),
        "lit": _lit_version(),
    }


def _lit_version() -> str | None:
    try:
        import lit

        return str(lit.__version__)
    except (ImportError, AttributeError):
        return None


def read_example(suite: Path, exec_root: Path = LIT_EXEC_ROOT) -> dict[str, Any] | None:
    """What first-compatible-wins.test left in its %t files, if it ran."""
    if suite != paths.LLVM_TESTS:
        return None
    test = Path(EXAMPLE_TEST)
    base = exec_root / test.parent / "Output" / f"{test.name}.tmp"
    example: dict[str, Any] = {"test": f"llvm-tests/{EXAMPLE_TEST}"}
    for key, suffix in EXAMPLE_FILES.items():
        path = Path(f"{base}.{suffix}")
        if not path.is_file():
            return None
        # Name the test's files as its RUN lines do.
        example[key] = path.read_text().replace(str(base), "%t")
    return example


def _check_offload_against_base(llvm: Path, build_dir: Path | None) -> bool:
    """check-offload and check-offload-unit with the series and on its base."""
    from kdl.build.baseline import compare, summary, verdict

    llvm = llvm.expanduser().resolve()
    root = build_dir or paths.BUILD / f"baseline-{llvm.name}"
    doc = compare(llvm, root.expanduser().resolve(), {"path": str(llvm)})
    passed, failed, problems = verdict(doc)
    for line in summary(doc):
        print(line)
    for problem in problems:
        print(f"FAIL: {problem}")
    print(f"comparison: {doc.get('file')}")
    return not problems and failed == 0 and passed > 0


def _check_standalone(offload: Path, lit_filter: str | None) -> bool:
    """``kdl test --build-dir B --check-offload`` where B is a standalone
    build: the lit suite with the build's tools (the installed LLVM's, with
    the series' llvm-offload-binary where built), then check-offload and
    check-offload-unit as ``ninja -C B check`` runs them."""
    from kdl.build.checkoffload import run_standalone_checks
    from kdl.provenance import cmake_cache

    # The installed LLVM's tools, with the series' llvm-offload-binary over
    # them where build --llvm made one (BUILD_DIR/bin).
    tools = offload.parent / "bin"
    if not (tools / "llvm-offload-binary").is_file():
        cached = cmake_cache(offload).get("OPENMP_LLVM_TOOLS_DIR")
        tools = Path(cached) if cached else paths.llvm_bin()
    lit = run_lit(dirs=ToolDirs(tools, _overlay(None).bin_dir), filter=lit_filter)
    print(f"llvm-tests: {lit.summary()} ({lit.results_file}; tools of {tools})")
    ok, lines = run_standalone_checks(offload, lit_filter)
    for line in lines:
        print(line)
    return lit.ok and ok


def cmd_test(args: argparse.Namespace) -> int:
    """``kdl test [--build-dir DIR] [--check-offload [--llvm TREE]] [--filter RE]``."""
    build_dir: Path | None = args.build_dir
    llvm: Path | None = getattr(args, "llvm", None)
    if args.check_offload and llvm is not None:
        return 0 if _check_offload_against_base(llvm, build_dir) else 1
    if args.check_offload and build_dir is not None:
        from kdl.build.checkoffload import standalone_offload

        standalone = standalone_offload(build_dir.expanduser().resolve())
        if standalone is not None:
            return 0 if _check_standalone(standalone, args.filter) else 1
    if getattr(args, "main", False):
        if args.check_offload or build_dir is not None or args.filter:
            raise UsageError("--main takes no other option")
        from kdl.build.litmain import run_lit_main

        lit = run_lit_main(_overlay(None).bin_dir)
        print(f"\nllvm-tests with main's tools: {lit.summary()}")
        print(f"lit results: {lit.results_file}")
        return 0 if lit.ok else 1
    lit = run_lit(build_dir=build_dir, filter=args.filter)
    print(f"\nllvm-tests: {lit.summary()}")
    print(f"lit results: {lit.results_file}")
    ok = lit.ok
    if args.check_offload:
        # Helper module for the in-tree build (imported only when asked); with
        # no --build-dir it uses the default build of ``kdl build --llvm``.
        from kdl.build.checkoffload import run_check_offload

        offload = run_check_offload(build_dir, args.filter)
        print(f"check-offload: {offload.summary()}")
        ok = ok and offload.ok
        from kdl.build.checkoffload import run_series_tests

        series_ok, steps = run_series_tests(build_dir)
        for step in steps:
            state = (
                "not run"
                if step.returncode is None
                else (
                    "passed" if step.returncode == 0 else f"failed ({step.returncode})"
                )
            )
            print(f"series: {step.what}: {state}")
        ok = ok and series_ok
    return 0 if ok else 1
