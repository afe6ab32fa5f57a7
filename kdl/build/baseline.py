"""Upstream's offload tests with the series and on its base, test by test.

For a checkout whose version is an installed LLVM's (the 22.1.8 tree with
the release/22.x backport applied), :func:`compare` builds offload
standalone twice: the checkout as it is (the series) and its base, a sparse
``git worktree`` of the commit ``kdl apply`` recorded as the branch's base
(only the directories offload's build reads). It runs ``check-offload`` and
``check-offload-unit`` in both, and compares every test: a test that passes
on the base and does not pass with the series is a regression; a test only
the series has is one of its own, and must pass (an unsupported one is a
failure: the series' tests must run here). The result, with the tree's
record, goes to the run's record, ``build/record/real-trees/check-offload-<tree>.json``
(:mod:`kdl.record`).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdl import paths, proc, record
from kdl.build.checkoffload import run_check_offload, xunit_cases
from kdl.build.standalone import (
    StandaloneBuild,
    build_standalone,
    standalone_prefix,
)
from kdl.errors import UsageError, WorkspaceError
from kdl.series.checkout import Checkout

log = logging.getLogger("kdl")

#: What offload's standalone build reads of llvm-project.
SPARSE_DIRS = (
    "offload",
    "openmp",
    "libc",
    "third-party",
    "cmake",
    "runtimes",
    "llvm/cmake",
    "llvm/utils/lit",
)
SUITES = ("check-offload", "check-offload-unit")
#: A tool of offload's build that check-offload runs, linked with liboffload.
DEVICE_INFO = "llvm-offload-device-info"


def loaded_liboffload(build: StandaloneBuild) -> dict[str, Any] | None:
    """The libLLVMOffload that the build's llvm-offload-device-info loads (as
    ``ldd`` resolves it; under the workspace, relative to it) and whether it
    is the build's own; None without the tool."""
    tool = build.offload / DEVICE_INFO
    if proc.DRY_RUN or not tool.is_file():
        return None
    for line in proc.output(["ldd", str(tool)]).splitlines():
        name, _, where = line.strip().partition(" => ")
        if name.startswith("libLLVMOffload.so"):
            loaded = Path(where.split(" (")[0]).resolve()
            shown = loaded
            if loaded.is_relative_to(paths.ROOT):
                shown = loaded.relative_to(paths.ROOT)
            own = loaded.is_relative_to(build.build_dir.resolve())
            return {"loaded": str(shown), "own": own}
    return {"loaded": "not found", "own": False}


def lit_states(xml_file: Path) -> dict[str, str]:
    """Every selected test of a lit xunit file: ``pass``, ``fail`` or
    ``unsupported``, by ``classname::name``."""
    return {
        f"{case.get('classname', '')}::{case.get('name', '')}": state
        for _, case, state in xunit_cases(xml_file)
        if state != "excluded"
    }


def base_worktree(llvm: Path, base: str, where: Path) -> Path:
    """A sparse worktree of *llvm* at *base* (reused when it is there)."""
    with Checkout(llvm, require_llvm=False) as co:
        if where.is_dir():
            with Checkout(where, require_llvm=False) as wt:
                if wt.head() == co.rev(base):
                    return where
            co.run("worktree", "remove", "--force", str(where))
        co.run("worktree", "prune")
        co.run("worktree", "add", "--no-checkout", "--detach", str(where), base)
    with Checkout(where, require_llvm=False) as wt:
        wt.run("sparse-checkout", "set", "--cone", *SPARSE_DIRS)
        wt.run("checkout", "--quiet", "--detach", base)
    return where


@dataclass
class SuiteRun:
    states: dict[str, str]
    seconds: float
    returncode: int
    #: The test environment the suite ran with (CHECK_OPENMP_ENV and where from).
    env: dict[str, str | None]

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "unsupported": 0}
        for state in self.states.values():
            out[state] += 1
        return out


def run_suite(build: StandaloneBuild, suite: str, results_dir: Path) -> SuiteRun:
    # The thread limit is in the build (its CHECK_OPENMP_ENV cache entry):
    # kdl runs the suite as the user's own 'ninja check-offload' does.
    result = run_check_offload(build.offload, results_dir=results_dir, target=suite)
    if not result.xml_file.is_file():
        raise WorkspaceError(
            f"{build.offload}: {suite} wrote no results (exit {result.returncode})"
        )
    return SuiteRun(
        lit_states(result.xml_file), result.seconds, result.returncode, result.env
    )


def diff_states(base: dict[str, str], series: dict[str, str]) -> dict[str, Any]:
    """Regressions, fixes and the series' own tests between two runs."""
    regressions = sorted(
        t for t, s in base.items() if s == "pass" and series.get(t) != "pass"
    )
    fixed = sorted(
        t for t, s in base.items() if s == "fail" and series.get(t) == "pass"
    )
    own = {t: s for t, s in sorted(series.items()) if t not in base}
    return {
        "regressions": regressions,
        "fixed": fixed,
        "series_tests": own,
        "series_tests_not_passing": sorted(t for t, s in own.items() if s != "pass"),
    }


def compare(
    llvm: Path, build_root: Path, tree_record: dict[str, Any]
) -> dict[str, Any]:
    """Build base and series, run both suites on each, write the comparison.

    Both are built standalone against the installed LLVM of the checkout's
    version (:func:`kdl.build.standalone.standalone_prefix`); a checkout of another
    version is a usage error."""
    prefix = standalone_prefix(llvm)
    if prefix is None:
        raise UsageError(
            f"{llvm}: no installed LLVM of its version to build offload against "
            "standalone; build it with 'kdl build --llvm --full' instead"
        )
    with Checkout(llvm) as co:
        branch, meta = co.kdl_branch()
        base = co.rev(meta.base)
        head = co.head()
    started = time.monotonic()
    worktree = base_worktree(llvm, base, build_root / "base-src")
    builds = {
        "base": build_standalone(worktree, build_root / "base", prefix),
        "series": build_standalone(llvm, build_root / "series", prefix),
    }
    doc: dict[str, Any] = {
        "tree": tree_record,
        "checkout": {
            "path": os.path.relpath(llvm, paths.ROOT),
            "branch": branch,
            "base": base,
            "head": head,
        },
        "series": meta.series,
        "build_seconds": {k: b.steps for k, b in builds.items()},
        "device_runtimes": builds["series"].device_runtimes,
        # The installed LLVM's liboffload sits beside its libLLVM: each
        # build's tools must load their own (StandaloneOffload.cmake).
        "liboffload": {k: loaded_liboffload(b) for k, b in builds.items()},
        "notes": builds["series"].notes,
        "suites": {},
    }
    for suite in SUITES:
        runs = {
            k: run_suite(b, suite, build_root / k / "results")
            for k, b in builds.items()
        }
        doc["suites"][suite] = {
            **{
                k: {
                    "counts": r.counts(),
                    "seconds": round(r.seconds, 1),
                    "test_env": r.env,
                }
                for k, r in runs.items()
            },
            **diff_states(runs["base"].states, runs["series"].states),
        }
    doc["seconds"] = round(time.monotonic() - started, 1)
    if not proc.DRY_RUN:
        out = record.write(
            f"check-offload-{tree_record.get('tree', llvm.name)}.json", doc
        )
        doc["file"] = str(out)
    return doc


def summary(doc: dict[str, Any]) -> list[str]:
    """One line per suite: both runs' counts, regressions, the series' tests."""
    lines = []
    for suite, entry in doc["suites"].items():
        b, s = entry["base"]["counts"], entry["series"]["counts"]
        lines.append(
            f"{suite + ':':19} base {b['pass']} passed, {b['fail']} failed, "
            f"{b['unsupported']} unsupported; with the series {s['pass']} passed, "
            f"{s['fail']} failed, {s['unsupported']} unsupported; "
            f"{len(entry['regressions'])} regressions, "
            f"{len(entry['series_tests'])} tests of the series"
        )
    return lines


def verdict(doc: dict[str, Any]) -> tuple[int, int, list[str]]:
    """(tests passing with the series, failing ones, what went wrong)."""
    passed = failed = 0
    problems = []
    for suite, entry in doc["suites"].items():
        counts = entry["series"]["counts"]
        passed += counts["pass"]
        failed += counts["fail"]
        for t in entry["regressions"]:
            problems.append(f"{suite}: {t} passes on the base, not with the series")
        for t in entry["series_tests_not_passing"]:
            problems.append(f"{suite}: the series' own {t} did not pass")
    for build, lib in doc.get("liboffload", {}).items():
        if lib is not None and not lib["own"]:
            problems.append(
                f"{build}: {DEVICE_INFO} loads {lib['loaded']}, "
                "not its build's liboffload"
            )
    return passed, failed, problems
