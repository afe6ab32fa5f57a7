"""The README's two commands: ``kdl all`` (the main job) and ``kdl selftest``.

Both run end to end on Debian's LLVM 22 with no llvm-project checkout. Each
step is a library call of another module; this module only orders them and
reports where the results went.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from kdl import paths, proc

log = logging.getLogger("kdl")


def cmd_all(args: argparse.Namespace) -> int:
    from kdl import overlay as overlay_build
    from kdl import rfc, testrun

    start = time.monotonic()
    overlay = overlay_build.build_overlay()
    lit = testrun.run_lit(overlay=overlay)
    posts = rfc.draft()
    print()
    print(f"overlay build:  {overlay.build_dir}")
    print(f"lit results:    {lit.results_file} ({lit.summary()})")
    for post in posts:
        print(f"RFC draft:      {post}")
    print(f"done in {time.monotonic() - start:.0f} s")
    return 0 if lit.ok else 1


def _step(name: str, argv: list[str]) -> bool:
    print(f"\n=== {name}: {proc.quote(argv)}", flush=True)
    result = proc.run(argv, cwd=paths.ROOT, capture=False, check=False)
    return result.returncode == 0


def cmd_selftest(args: argparse.Namespace) -> int:
    """Lint, build the overlay, run its unit tests, pytest and the lit suite."""
    from kdl import overlay as overlay_build
    from kdl import testrun

    py = sys.executable
    results: dict[str, bool] = {}
    results["ruff"] = _step("ruff", [py, "-m", "ruff", "check", "."])
    results["mypy"] = _step("mypy", [py, "-m", "mypy"])
    print("\n=== overlay build", flush=True)
    overlay = overlay_build.build_overlay()
    results["unittests"] = _step("unit tests (gtest)", [str(overlay.unittests)])
    results["pytest"] = _step("pytest", [py, "-m", "pytest", "-v", "tests"])
    print("\n=== lit suite (llvm-tests)", flush=True)
    lit = testrun.run_lit(overlay=overlay)
    results["lit"] = lit.ok
    passed = sum(results.values())
    failed = len(results) - passed
    print()
    for name, ok in results.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    print(f"selftest: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1
