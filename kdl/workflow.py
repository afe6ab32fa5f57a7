"""The README's two commands: ``kdl all`` (the main job) and ``kdl selftest``.

Both run end to end on Debian's LLVM 22 with no llvm-project checkout. Each
step is a library call of another module, or a tool run through
:mod:`kdl.proc`; this module only orders them and reports where the results
went.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from kdl import paths, proc

log = logging.getLogger("kdl")

#: gtest's JSON report of the series' unit tests; the RFC counts it.
UNITTEST_RESULTS = paths.RESULTS / "unittests.json"


def _unittest_argv(unittests: Path) -> list[str]:
    return [str(unittests), f"--gtest_output=json:{UNITTEST_RESULTS}"]


def _draft_and_check_rfc() -> tuple[list[Path], list[str]]:
    from kdl import rfc
    from kdl.rfc import check

    posts = rfc.draft()
    return posts, check.check_files(posts, paths.ROOT)


def cmd_all(args: argparse.Namespace) -> int:
    """Build against LLVM 22, run unit tests and the lit suite, draft the RFC."""
    from kdl import overlay as overlay_build
    from kdl import testrun

    start = time.monotonic()
    overlay = overlay_build.build_overlay()
    unit = proc.run(_unittest_argv(overlay.unittests), check=False)
    lit = testrun.run_lit(overlay=overlay)
    posts, problems = _draft_and_check_rfc()
    for line in problems:
        print(line)
    print()
    print(f"overlay build:  {overlay.build_dir}")
    state = "passed" if unit.returncode == 0 else "FAILED"
    print(f"unit tests:     {UNITTEST_RESULTS} ({state})")
    print(f"lit results:    {lit.results_file} ({lit.summary()})")
    for post in posts:
        print(f"RFC draft:      {post}")
    print(f"RFC check:      {len(problems)} problems")
    print(f"done in {time.monotonic() - start:.0f} s")
    return 0 if lit.ok and unit.returncode == 0 and not problems else 1


def _step(name: str, argv: list[str]) -> bool:
    print(f"\n=== {name}: {proc.quote(argv)}", flush=True)
    result = proc.run(argv, cwd=paths.ROOT, capture=False, check=False)
    return result.returncode == 0


def cmd_selftest(args: argparse.Namespace) -> int:
    """Lint, build the overlay, run its unit tests, pytest, lit, the RFC check."""
    from kdl import overlay as overlay_build
    from kdl import testrun

    py = sys.executable
    results: dict[str, bool] = {}
    results["ruff"] = _step("ruff", [py, "-m", "ruff", "check", "."])
    results["ruff format"] = _step(
        "ruff format", [py, "-m", "ruff", "format", "--check", "."]
    )
    results["mypy"] = _step("mypy", [py, "-m", "mypy"])
    print("\n=== overlay build", flush=True)
    overlay = overlay_build.build_overlay()
    results["unit tests"] = _step(
        "unit tests (gtest)", _unittest_argv(overlay.unittests)
    )
    results["pytest"] = _step("pytest", [py, "-m", "pytest", "-v", "tests"])
    print("\n=== lit suite (llvm-tests)", flush=True)
    lit = testrun.run_lit(overlay=overlay)
    results["lit"] = lit.ok
    print("\n=== RFC drafts from this run's results, then kdl rfc --check", flush=True)
    posts, problems = _draft_and_check_rfc()
    for line in problems:
        print(line)
    print(f"{len(posts)} drafts, {len(problems)} problems")
    results["rfc --check"] = not problems
    passed = sum(results.values())
    failed = len(results) - passed
    print()
    for name, ok in results.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    print(f"selftest: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1
