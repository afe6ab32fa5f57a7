"""The README's two commands: ``kdl all`` (the main job) and ``kdl selftest``.

Both run end to end with no llvm-project checkout of the user's: the two real
trees come from Debian's registry (:mod:`kdl.trees`), the overlay and the lit
suite use the installed LLVM 22, and the lit suite runs again with main's
tools from the main tree (:mod:`kdl.build.litmain`). Each step is a library
call of another module, or a tool run through
:mod:`kdl.proc`; this module only orders them and reports where the results
went.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

from kdl import paths, proc, record
from kdl.errors import GitError, WorkspaceError

log = logging.getLogger("kdl")

#: How long selftest runs the fuzzer: the fast tier, and --full (CI).
FUZZ_SECONDS = {False: 10, True: 60}


def _pytest_argv(junit: Path, full: bool) -> list[str]:
    """pytest over tests/: every test with *full*, else the fast tier (not
    marked slow); on two workers where there are two cores (pytest-xdist,
    each worker taking the next test as it frees up)."""
    argv = [sys.executable, "-m", "pytest", "-v", f"--junitxml={junit}"]
    if not full:
        argv += ["-m", "not slow"]
    workers = min(2, os.cpu_count() or 1)
    if workers > 1:
        argv += ["-n", str(workers), "--dist", "worksteal"]
    return [*argv, "tests"]


def _draft_and_check_rfc(run: bool) -> tuple[list[Path], list[str]]:
    """The RFC drafts and their problems: with *run*, from this run's record
    (:mod:`kdl.record`) where it has a file, else from the recorded results."""
    from kdl import rfc
    from kdl.rfc import check

    posts = rfc.draft(record=record.RUN if run else None)
    return posts, check.check_files(posts, paths.ROOT)


@contextlib.contextmanager
def _patch_lines_to(log_file: Path) -> Iterator[None]:
    """Print an apply's summary; its line per patch goes to *log_file* only.

    ``kdl apply`` prints a line per patch, as ``git am`` does; in the main
    job the fourteen lines would bury its summary. On a failure everything
    is printed: the failing patch is in the lines."""
    buffer = io.StringIO()
    ok = False
    try:
        with contextlib.redirect_stdout(buffer):
            yield
        ok = True
    finally:
        text = buffer.getvalue()
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.write_text(text)
        for line in text.splitlines():
            if not ok or not line.startswith("  "):
                print(line)
        if ok and text:
            print(f"  each patch: {log_file}")


def real_trees(*, bench: bool = False) -> tuple[int, int, list[str], list[str]]:
    """The series on the real trees: (passed, failed, problems, result lines).

    Makes or reuses both trees, applies the release/22.x backport to the
    22.1.8 tree, builds offload standalone with and without it and runs
    upstream's check-offload and check-offload-unit on both
    (:func:`kdl.build.baseline.compare`); then builds the series' LLVM-side
    unit tests against main's libLLVM in the sid root, and against 22.1.8's
    with the backport's sources (:func:`kdl.build.unittests.run_series_unittests`);
    then the series' rank on both trees, its unit test, the differential test
    of the two builds and, with *bench*, its benchmark (:func:`kdl.build.rank.run`).
    """
    from kdl import trees
    from kdl.build import baseline, rank, unittests
    from kdl.series.apply import apply_series
    from kdl.series.commands import revert_series
    from kdl.series.model import load
    from kdl.trees.source import ensure_identity

    lines: list[str] = []
    problems: list[str] = []
    timings: dict[str, float] = {}

    def timed(name: str, started: float) -> None:
        timings[name] = round(time.monotonic() - started, 1)

    started = time.monotonic()
    main = trees.ensure("main")
    timed("tree main", started)
    started = time.monotonic()
    tree22 = trees.ensure("22")
    timed("tree 22", started)
    lines.append(f"tree main:      {main.path} ({main.describe()})")
    lines.append(f"tree 22:        {tree22.path} ({tree22.describe()})")

    started = time.monotonic()
    backport = load(paths.BACKPORT_SERIES)
    ensure_identity(tree22.path)
    with _patch_lines_to(paths.BUILD / "logs" / "apply-22.log"):
        try:
            apply_series(tree22.path, backport, replace_stale=True)
        except GitError as err:
            # The tree is kdl's own: another version of the series applied
            # there (an earlier run's) goes, then this one is applied.
            log.info("tree 22: %s; reverting the branch and applying again", err)
            revert_series(tree22.path, backport, force=True)
            apply_series(tree22.path, backport)
    timed("apply backport", started)
    started = time.monotonic()
    doc = baseline.compare(tree22.path, paths.BUILD / "real-22", tree22.record)
    timed("22.1.8 base + series: build, check-offload, check-offload-unit", started)
    passed, failed, found = baseline.verdict(doc)
    problems += found
    lines += [f"22.1.8 {line}" for line in baseline.summary(doc)]
    lines.append(f"comparison:     {doc.get('file')}")

    started = time.monotonic()
    units = unittests.run_series_unittests(main, tree22, load(), backport)
    timed("series unit tests: main and 22.1.8", started)
    for where, unit in units.items():
        passed += unit.passed
        failed += unit.failed
        problems += unit.problems
        lines.append(
            f"unit tests, {where + ':':8} {unit.passed} passed, {unit.failed} failed"
        )
    lines.append(f"unit results:   {record.RUN_REAL_TREES / 'unittests.json'}")

    started = time.monotonic()
    ranked = rank.run(main, tree22, bench=bench)
    timed(
        "the rank: main and 22.1.8, differential" + (", bench" if bench else ""),
        started,
    )
    passed += ranked.passed
    failed += ranked.failed
    problems += ranked.problems
    lines += ranked.lines
    lines.append(f"timings:        {record.write('timings.json', timings)}")
    for name, seconds in timings.items():
        lines.append(f"  {seconds:7.1f} s  {name}")
    return passed, failed, problems, lines


def cmd_all(args: argparse.Namespace) -> int:
    """The series on the real trees; the overlay and the lit suite with LLVM
    22's tools and with main's; the RFC drafts."""
    from kdl.build.lit import run_lit
    from kdl.build.litmain import run_lit_main
    from kdl.build.overlay import build_overlay

    start = time.monotonic()
    r_pass, r_fail, real_problems, real_lines = real_trees(bench=True)
    overlay = build_overlay()
    lit = run_lit(overlay=overlay)
    lit_main = run_lit_main(overlay.bin_dir)
    posts, problems = _draft_and_check_rfc(run=True)
    for line in problems:
        print(line)
    print()
    for line in [*real_lines, *real_problems]:
        print(line)
    print(f"overlay build:  {overlay.build_dir}")
    print(f"lit results:    {lit.results_file} ({lit.summary()}; LLVM 22's tools)")
    print(
        f"lit results:    {lit_main.results_file} ({lit_main.summary()}; main's tools)"
    )
    for post in posts:
        print(f"RFC draft:      {post}")
    print(f"RFC check:      {len(problems)} problems")
    real_ok = not real_problems and r_fail == 0 and r_pass > 0
    ok = lit.ok and lit_main.ok and not problems and real_ok
    print(f"run's record:   {record.RUN}")
    if args.record and ok:
        for path in record.record():
            print(f"recorded:       {path.relative_to(paths.ROOT)}")
    elif args.record:
        print(
            "recorded:       nothing (the run failed; 'kdl results record' records it)"
        )
    print(f"done in {time.monotonic() - start:.0f} s")
    return 0 if ok else 1


def _step(name: str, argv: list[str]) -> bool:
    print(f"\n=== {name}: {proc.quote(argv)}", flush=True)
    result = proc.run(argv, cwd=paths.ROOT, capture=False, check=False)
    return result.returncode == 0


def _pytest_counts(report: Path) -> tuple[int, int, int]:
    """(passed, failed, skipped) from pytest's JUnit XML report."""
    try:
        root = ElementTree.parse(report).getroot()
    except (OSError, ElementTree.ParseError):
        return 0, 0, 0
    suites = [root] if root.tag == "testsuite" else list(root)
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return tests - failed - skipped, failed, skipped


def cmd_selftest(args: argparse.Namespace) -> int:
    """Lint, build the overlay, run pytest, lit, the fuzzer, the RFC check.

    The fast tier leaves out pytest's slow tests and fuzzes for less time;
    ``--full`` (CI) runs everything. The closing line counts tests (the
    real trees', pytest's and lit's together), not stages; a stage that runs no test, or
    skips one, fails.
    """
    full = bool(getattr(args, "full", False))
    fuzz_seconds = FUZZ_SECONDS[full]
    from kdl.build.lit import run_lit
    from kdl.build.overlay import build_overlay

    py = sys.executable
    stages: dict[str, str] = {}
    failed_stages: list[str] = []
    passed = failed = 0

    def stage(name: str, ok: bool, detail: str) -> None:
        stages[name] = f"{'PASS' if ok else 'FAIL'}  {name}: {detail}"
        if not ok:
            failed_stages.append(name)

    for name, argv in (
        ("ruff", [py, "-m", "ruff", "check", "."]),
        ("ruff format", [py, "-m", "ruff", "format", "--check", "."]),
        ("mypy", [py, "-m", "mypy"]),
    ):
        ok = _step(name, argv)
        stage(name, ok, "clean" if ok else "problems above")
    r_pass = r_fail = 0
    if full:
        print("\n=== the series on the real trees (main snapshot, 22.1.8)", flush=True)
        try:
            r_pass, r_fail, problems, lines = real_trees(bench=True)
        except WorkspaceError as exc:
            problems, lines = [str(exc)], []
        for line in [*lines, *problems]:
            print(line)
        stage(
            "real trees",
            not problems and r_fail == 0 and r_pass > 0,
            f"{r_pass} passed, {r_fail} failed, {len(problems)} problems",
        )

    print("\n=== overlay build", flush=True)
    overlay = build_overlay()

    junit = paths.BUILD / "pytest.xml"
    junit.unlink(missing_ok=True)
    _step("pytest" if full else "pytest (fast tier)", _pytest_argv(junit, full))
    p_pass, p_fail, p_skip = _pytest_counts(junit)
    stage(
        "pytest",
        p_pass > 0 and p_fail == 0 and p_skip == 0,
        f"{p_pass} passed, {p_fail} failed, {p_skip} skipped",
    )

    print("\n=== lit suite (llvm-tests), LLVM 22's tools", flush=True)
    lit = run_lit(overlay=overlay)
    stage("lit", lit.ok, lit.summary())
    lit_passed, lit_failed = lit.passed, lit.failed + lit.unsupported
    if full:
        from kdl.build.litmain import run_lit_main

        print("\n=== lit suite (llvm-tests), main's tools (the sid root)", flush=True)
        try:
            main_lit = run_lit_main(overlay.bin_dir)
            ok, detail = main_lit.ok, main_lit.summary()
            lit_passed += main_lit.passed
            lit_failed += main_lit.failed + main_lit.unsupported
        except WorkspaceError as exc:
            ok, detail = False, str(exc)
        stage("lit, main's tools", ok, detail)

    print(
        f"\n=== libFuzzer on the ranking and the container reader "
        f"({fuzz_seconds} s, seeded from lit)"
    )
    from kdl.fuzz import run_fuzz

    fuzz_ok = run_fuzz(fuzz_seconds)
    stage("fuzz", fuzz_ok, "no finding" if fuzz_ok else "a finding in build/fuzz/")

    print("\n=== RFC drafts from this run's results, then kdl rfc --check", flush=True)
    posts, problems = _draft_and_check_rfc(run=full)
    for line in problems:
        print(line)
    stage("rfc --check", not problems, f"{len(posts)} drafts, {len(problems)} problems")

    passed = p_pass + lit_passed + r_pass
    failed = p_fail + p_skip + lit_failed + r_fail
    print()
    for line in stages.values():
        print(f"  {line}")
    if failed_stages:
        print(f"  failed stages: {', '.join(failed_stages)}")
    # One line in the form test runners print: tests, not stages. Skipped
    # tests count as failed: every test must run here.
    print(f"  tier: {'full (pytest all, fuzz 60 s)' if full else 'fast'}")
    print(f"selftest: {passed} passed, {failed} failed")
    return 0 if not failed_stages and failed == 0 else 1
