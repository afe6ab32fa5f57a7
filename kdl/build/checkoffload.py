"""``ninja check-offload`` in an llvm-project build, with results kdl can read.

:func:`run_check_offload` runs the upstream offload test suite through the
build's own ``check-offload`` target; lit's options travel in the
environment (``LIT_FILTER``, and ``LIT_OPTS`` with ``--xunit-xml-output``
and ``-j``), so the xunit file lands in results/check-offload.xml whatever
the build passes to lit. results/check-offload.json records the counts, the
tool versions and ``git describe`` of the checkout the build came from.
``kdl test --check-offload`` calls it, and then :func:`run_series_tests`:
the tests the series itself adds (its unit tests, offload unit tests and
MLIR lit tests), which ``check-offload`` does not run.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdl import paths, proc
from kdl.errors import UsageError, WorkspaceError
from kdl.provenance import cmake_cache, first_line
from kdl.series.checkout import Checkout
from kdl.series.choose import choose
from kdl.series.model import Series, file_diff, load

log = logging.getLogger("kdl")


@dataclass
class XunitCounts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0  # unsupported (REQUIRES/UNSUPPORTED)
    excluded: int = 0  # not selected by LIT_FILTER
    failures: list[str] = field(default_factory=list)


@dataclass
class CheckOffloadResult:
    ok: bool
    returncode: int
    counts: XunitCounts
    xml_file: Path
    json_file: Path
    seconds: float
    #: CHECK_OPENMP_ENV as the tests saw it, and where it came from.
    env: dict[str, str | None] = field(default_factory=dict)
    #: lit's whole output.
    log_file: Path | None = None

    @property
    def passed(self) -> int:
        return self.counts.passed

    @property
    def failed(self) -> int:
        return self.counts.failed

    def summary(self) -> str:
        c = self.counts
        return (
            f"{c.passed} passed, {c.failed} failed, {c.skipped} unsupported, "
            f"{c.excluded} not selected"
        )


def tool_versions(build_dir: Path) -> dict[str, str | None]:
    built = build_dir / "bin"
    return {
        "cmake": first_line(["cmake", "--version"]),
        "ninja": first_line(["ninja", "--version"]),
        "clang": first_line([str(built / "clang"), "--version"])
        if (built / "clang").exists()
        else None,
        "llvm-lit": first_line([str(built / "llvm-lit"), "--version"])
        if (built / "llvm-lit").exists()
        else None,
        "python": sys.version.split()[0],
    }


def checkout_of(build_dir: Path) -> dict[str, str | None]:
    """The llvm-project checkout a build was configured from, with ``git describe``."""
    source = cmake_cache(build_dir).get("CMAKE_HOME_DIRECTORY", "")
    doc: dict[str, str | None] = {"path": None, "describe": None, "head": None}
    if not source:
        return doc
    checkout = Checkout.find(Path(source))
    if checkout is None:
        return doc
    with checkout:
        doc["path"] = str(checkout.root)
        try:
            doc["head"] = checkout.head()
            doc["describe"] = checkout.describe("--abbrev=12")
        except WorkspaceError as exc:  # no commit yet
            log.debug("%s", exc)
    return doc


def xunit_cases(path: Path) -> Iterator[tuple[str, ET.Element, str]]:
    """(suite name, testcase, state) of every test in a lit xunit file; the
    state is ``pass``, ``fail``, ``unsupported`` or ``excluded`` (not
    selected by ``LIT_FILTER``)."""
    for suite in ET.parse(path).getroot().iter("testsuite"):
        name = suite.get("name", "")
        for case in suite.iter("testcase"):
            skipped = case.find("skipped")
            if case.find("failure") is not None or case.find("error") is not None:
                state = "fail"
            elif skipped is None:
                state = "pass"
            elif skipped.get("message", "").startswith("Test not selected"):
                state = "excluded"
            else:
                state = "unsupported"
            yield name, case, state


def parse_xunit(path: Path) -> XunitCounts:
    """Count lit's xunit results; failing tests named ``suite :: dir/test``.

    lit writes a test's directory with dots for slashes (``classname``), so
    a directory whose name holds a dot comes back with a slash in it.
    """
    counts = XunitCounts()
    for name, case, state in xunit_cases(path):
        if state == "fail":
            counts.failed += 1
            where = case.get("classname", "").removeprefix(f"{name}.")
            where = "" if where == name else where.replace(".", "/") + "/"
            counts.failures.append(f"{name} :: {where}{case.get('name', '')}")
        elif state == "pass":
            counts.passed += 1
        elif state == "excluded":
            counts.excluded += 1
        else:
            counts.skipped += 1
    return counts


def run_check_offload(
    build_dir: Path | None = None,
    lit_filter: str | None = None,
    jobs: int | None = None,
    results_dir: Path | None = None,
    *,
    target: str = "check-offload",
    env: dict[str, str] | None = None,
) -> CheckOffloadResult:
    """Run ``ninja -C DIR TARGET`` (a lit suite) and collect its results.

    *env* adds to the environment; the results go to
    ``RESULTS_DIR/TARGET.{xml,json}``, with the test environment the suite
    ran with (:func:`test_env`)."""
    from kdl.build.llvm import default_build_dir

    build_dir = (build_dir or default_build_dir()).expanduser().resolve()
    results_dir = results_dir or paths.RESULTS
    if not (build_dir / "build.ninja").is_file():
        raise UsageError(
            f"{build_dir}: not a configured build (no build.ninja); "
            "run 'kdl build --llvm PATH' first"
        )
    query = proc.run(
        ["ninja", "-C", str(build_dir), "-t", "query", target], check=False
    )
    if query.returncode != 0:
        raise WorkspaceError(
            f"{build_dir} has no {target} target (is offload in LLVM_ENABLE_RUNTIMES?)"
        )
    results_dir.mkdir(parents=True, exist_ok=True)
    xml_file = (results_dir / f"{target}.xml").resolve()
    json_file = results_dir / f"{target}.json"
    xml_file.unlink(missing_ok=True)
    lit_opts = shlex.split(os.environ.get("LIT_OPTS", ""))
    lit_opts += ["--xunit-xml-output", str(xml_file)]
    if jobs:
        lit_opts += ["-j", str(jobs)]
    env = {**(env or {}), "LIT_OPTS": shlex.join(lit_opts)}
    if lit_filter:
        env["LIT_FILTER"] = lit_filter
    argv = ["ninja", "-C", str(build_dir), target]
    log.debug(
        "running: %s %s",
        shlex.join(f"{k}={v}" for k, v in env.items()),
        proc.quote(argv),
    )
    started = time.monotonic()
    log_file = build_dir / "logs" / f"{target}.log"
    log_file.unlink(missing_ok=True)
    returncode = proc.run_logged(
        argv, log_file, label=target, env=env, check=False, mutating=False
    )
    seconds = time.monotonic() - started
    counts = parse_xunit(xml_file) if xml_file.is_file() else XunitCounts()
    test = test_env(build_dir, env)
    doc: dict[str, Any] = {
        "command": argv,
        "env": env,
        "test_env": test,
        "returncode": returncode,
        "log": str(log_file),
        "seconds": round(seconds, 3),
        "xunit": str(xml_file) if xml_file.is_file() else None,
        "passed": counts.passed,
        "failed": counts.failed,
        "skipped": counts.skipped,
        "excluded": counts.excluded,
        "failures": counts.failures,
        "tools": tool_versions(build_dir),
        "checkout": checkout_of(build_dir),
        "build_dir": str(build_dir),
    }
    json_file.write_text(json.dumps(doc, indent=2) + "\n")
    ok = returncode == 0 and xml_file.is_file() and counts.failed == 0
    if not ok and not proc.verbose():
        proc.print_tail(log_file)
    return CheckOffloadResult(
        ok, returncode, counts, xml_file, json_file, seconds, test, log_file
    )


def test_env(build_dir: Path, env: dict[str, str]) -> dict[str, str | None]:
    """CHECK_OPENMP_ENV as offload's lit.cfg sees it: from the environment
    where set there, else from the build's cache entry (kdl's standalone
    build sets it: see StandaloneOffload.cmake), else none."""
    given = env.get("CHECK_OPENMP_ENV", os.environ.get("CHECK_OPENMP_ENV"))
    if given is not None:
        return {"CHECK_OPENMP_ENV": given, "from": "the environment"}
    cached = cmake_cache(build_dir).get("CHECK_OPENMP_ENV")
    if cached:
        return {"CHECK_OPENMP_ENV": cached, "from": f"{build_dir}/CMakeCache.txt"}
    return {"CHECK_OPENMP_ENV": None, "from": None}


# --- the series' own tests ---------------------------------------------------------

#: Unit-test directories of the series and the gtest binary each builds.
UNITTEST_BINARIES = {
    "llvm/unittests/Frontend/": "unittests/Frontend/LLVMFrontendTests",
    "llvm/unittests/Object/": "unittests/Object/ObjectTests",
}
_GTEST_SUITE = re.compile(r"^\+\s*TEST(?:_F|_P)?\(\s*(\w+)\s*,", re.MULTILINE)


@dataclass
class SeriesStep:
    what: str
    argv: list[str]
    returncode: int | None = None  # None: not run (dry run)


def series_test_steps(
    the_series: Series, llvm: Path, build_dir: Path
) -> list[SeriesStep]:
    """The commands that run the tests the series adds or changes.

    Unit tests run through their gtest binary filtered to the suites the
    series writes; offload unit tests through ``check-offload-unit``; MLIR
    lit tests through the build's ``llvm-lit``. Offload lit tests are part of
    ``check-offload`` itself. Every file must be in the checkout: the
    series has to be applied there.
    """
    suites: dict[str, set[str]] = {}
    mlir_tests: list[str] = []
    offload_unit = False
    for patch in the_series.patches:
        text = patch.path.read_text(errors="replace")
        for f in patch.files:
            if not (llvm / f.path).is_file():
                raise WorkspaceError(
                    f"{llvm}: no {f.path}; apply the series there first "
                    f"('kdl apply --llvm {llvm}')"
                )
            binary = next(
                (b for d, b in UNITTEST_BINARIES.items() if f.path.startswith(d)), None
            )
            if binary and f.path.endswith(".cpp"):
                diff = file_diff(text, f.path) or ""
                suites.setdefault(binary, set()).update(_GTEST_SUITE.findall(diff))
            elif f.path.startswith("mlir/test/") and f.path.endswith(".mlir"):
                mlir_tests.append(str(llvm / f.path))
            elif f.path.startswith("offload/unittests/") and f.path.endswith(".cpp"):
                offload_unit = True
    steps = [
        SeriesStep(
            f"unit tests {', '.join(sorted(names))}",
            [
                str(build_dir / binary),
                "--gtest_filter=" + ":".join(f"{n}.*" for n in sorted(names)),
            ],
        )
        for binary, names in sorted(suites.items())
        if names
    ]
    if offload_unit:
        steps.append(
            SeriesStep(
                "offload unit tests",
                ["ninja", "-C", str(build_dir), "check-offload-unit"],
            )
        )
    if mlir_tests:
        steps.append(
            SeriesStep(
                "MLIR lit tests",
                [str(build_dir / "bin" / "llvm-lit"), "-sv", *mlir_tests],
            )
        )
    return steps


def run_series_tests(
    build_dir: Path | None = None,
    series_file: Path | None = None,
    results_dir: Path | None = None,
) -> tuple[bool, list[SeriesStep]]:
    """Run :func:`series_test_steps`; results/series-tests.json records them."""
    from kdl.build.llvm import default_build_dir

    build_dir = (build_dir or default_build_dir()).expanduser().resolve()
    results_dir = results_dir or paths.RESULTS
    try:
        source = Path(cmake_cache(build_dir)["CMAKE_HOME_DIRECTORY"])
    except KeyError:
        raise UsageError(
            f"{build_dir}: not a configured llvm-project build (no CMakeCache.txt "
            "naming its source); run 'kdl build --llvm PATH' first"
        ) from None
    llvm = source.parent
    series_file = series_file or choose(llvm).file
    steps = series_test_steps(load(series_file), llvm, build_dir)
    for step in steps:
        print(f"=== series: {step.what}", flush=True)
        if proc.DRY_RUN:
            print(f"would run: {proc.quote(step.argv)}")
            continue
        step.returncode = proc.run(step.argv, capture=False, check=False).returncode
    ok = all(s.returncode == 0 for s in steps) and bool(steps)
    if not proc.DRY_RUN:
        results_dir.mkdir(parents=True, exist_ok=True)
        (results_dir / "series-tests.json").write_text(
            json.dumps(
                {
                    "checkout": checkout_of(build_dir),
                    "build_dir": str(build_dir),
                    "steps": [s.__dict__ for s in steps],
                },
                indent=2,
            )
            + "\n"
        )
    return ok or proc.DRY_RUN, steps


# --- a standalone build (kdl build --llvm on a tree of an installed LLVM) ----------


def standalone_offload(build_dir: Path) -> Path | None:
    """The offload build of a standalone build directory: BUILD_DIR/offload
    (what ``kdl build --llvm`` makes), or BUILD_DIR itself when it is one;
    None for any other directory (a full LLVM build)."""
    for offload in (build_dir / "offload", build_dir):
        home = cmake_cache(offload).get("CMAKE_HOME_DIRECTORY", "")
        if home and Path(home).name == "offload":
            return offload
    return None


def run_standalone_checks(
    offload: Path, lit_filter: str | None = None
) -> tuple[bool, list[str]]:
    """check-offload and check-offload-unit in a standalone offload build, as
    the user's own ``ninja check-offload check-offload-unit`` runs them (the
    thread limit is the build's); (all passed, one line per suite)."""
    ok, lines = True, []
    for target in ("check-offload", "check-offload-unit"):
        result = run_check_offload(offload, lit_filter, target=target)
        where = result.env.get("from")
        limit = (
            f"; CHECK_OPENMP_ENV={result.env['CHECK_OPENMP_ENV']} from {where}"
            if where and target == "check-offload"
            else ""
        )
        lines.append(
            f"{target}: {result.summary()}{limit} ({result.json_file}; "
            f"log: {result.log_file})"
        )
        ok = ok and result.ok
    from kdl.build.llvmside import CHECK_TARGET, TEST_BINARY

    binary = offload.parent / "llvm-side" / TEST_BINARY
    if binary.is_file():
        log_file = offload.parent / "logs" / f"{CHECK_TARGET}.log"
        log_file.unlink(missing_ok=True)
        status = proc.run_logged(
            [binary], log_file, label=CHECK_TARGET, check=False, mutating=False
        )
        text = log_file.read_text(errors="replace")
        passed = re.findall(r"^\[  PASSED  \] (\d+) tests?", text, re.MULTILINE)
        state = f"{passed[-1]} passed" if status == 0 and passed else "FAILED"
        if status != 0:
            proc.print_tail(log_file)
        lines.append(
            f"{CHECK_TARGET}: {state} (the series' LLVM-side unit tests; "
            f"log: {log_file})"
        )
        ok = ok and status == 0
    return ok, lines
