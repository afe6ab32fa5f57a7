"""The user's own loop, end to end, as the README tells it (slow: minutes).

A clone of the 22.1.8 tree (``kdl tree 22``, at its recorded commit) is
"your" checkout. ``scripts/apply.py --llvm X`` with no other flag takes the
series made for LLVM 22 and the proposals' OffloadBinary keys on top of it
(patches/proposals/series, ``apply: 1-2``); ``scripts/build.py --llvm X
--build-dir B`` builds it and prints the line that runs the tests; that
line, run as the user runs it (no kdl environment), gives the counts kdl's
own run measured for the series (the run's record,
build/record/real-trees/check-offload-22.json, which selftest --full
writes before pytest runs; without one, the recorded
results/real-trees/check-offload-22.json) and, beside them, the tests the
keys add (their lit tests in check-offload, their offload unit tests in
check-offload-unit); ``revert`` removes both and the same build and line
give the base's counts; status, check and export need no flag on the
branch and name both; a tree of another version is refused in one line
before any configure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from email.utils import parseaddr
from pathlib import Path

import pytest

from kdl import paths, record
from kdl.series.model import Series, file_diff, load
from tests.llvm_tree import git

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("isolated_git")]

TREE = paths.ROOT / ".work" / "trees" / "22"
BACKPORT = paths.PATCHES / "release-22.x" / "series"
_TEST_CASE = re.compile(r"^\+\s*TEST(?:_F|_P)?\(", re.MULTILINE)


def default_proposals() -> Series:
    """The proposals ``apply`` puts on the stack by default, as a series of
    their own."""
    proposals = load(paths.PROPOSALS_SERIES)
    proposals.patches = proposals.patches[: proposals.apply_default]
    return proposals


def added_tests(series: Series) -> tuple[int, int]:
    """(lit tests it adds under offload/test, offload unit-test cases it adds)."""
    lit = unit = 0
    for patch in series.patches:
        text = patch.path.read_text()
        for f in patch.files:
            if f.path.startswith("offload/test/") and "/Inputs/" not in f.path:
                lit += f.is_new and f.path.endswith((".c", ".cpp"))
            elif f.path.startswith("offload/unittests/"):
                unit += len(_TEST_CASE.findall(file_diff(text, f.path) or ""))
    return lit, unit


_LIT_COUNT = re.compile(
    r"^\s*(Passed|Failed|Expectedly Failed|Unexpectedly Passed|Unsupported)\s*:"
    r"\s*(\d+)",
    re.MULTILINE,
)
_GTEST_PASSED = re.compile(r"^\[  PASSED  \] (\d+) tests?\.", re.MULTILINE)


def script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python3 scripts/NAME.py ARGS``, as the user runs it."""
    return subprocess.run(
        [sys.executable, str(paths.ROOT / "scripts" / f"{name}.py"), *args],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def lit_suites(output: str) -> list[dict[str, int]]:
    """lit's closing counts, one dict per suite run, in order."""
    suites: list[dict[str, int]] = []
    for block in re.split(r"^Total Discovered Tests:", output, flags=re.MULTILINE)[1:]:
        counts = {k: 0 for k in ("Passed", "Failed", "Expectedly Failed")}
        for what, n in _LIT_COUNT.findall(block.split("\n\n", 1)[0] + "\n"):
            counts[what] = int(n)
        suites.append(counts)
    return suites


def run_printed_line(build_out: str) -> tuple[list[dict[str, int]], str]:
    """Run the line ``build`` ended with, without kdl's environment."""
    line = build_out.strip().splitlines()[-1]
    assert line.startswith("run the tests: ninja -C "), build_out
    command = line.removeprefix("run the tests: ").split("   (", 1)[0].split()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CHECK_OPENMP_ENV", "LIT_OPTS", "LIT_FILTER")
    }
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    return lit_suites(out), out


def test_the_users_own_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record_file = TREE.with_suffix(".json")
    assert record_file.is_file(), "the 22.1.8 tree is not made: run 'kdl tree 22'"
    tree = json.loads(record_file.read_text())
    recorded = json.loads(record.last("check-offload-22.json").read_text())["suites"]
    llvm, build = tmp_path / "llvm-project", tmp_path / "build"
    git(
        tmp_path,
        "clone",
        "--quiet",
        "--no-local",
        "--no-checkout",
        str(TREE),
        str(llvm),
    )
    git(llvm, "checkout", "--quiet", "-B", "main", tree["commit"])
    for branch in git(
        llvm, "for-each-ref", "--format=%(refname:short)", "refs/heads"
    ).split():
        if branch != "main":
            git(llvm, "branch", "--quiet", "-D", branch)
    name = load(BACKPORT).name
    keys = default_proposals()
    stack = len(load(BACKPORT).patches)
    patches = stack + len(keys.patches)
    keys_lit, keys_unit = added_tests(keys)
    assert keys_lit >= 1  # variant_priority.c
    # The user is the patches' author: apply then export leaves them as they
    # are (another user's export would make them theirs).
    who, email = parseaddr(load(BACKPORT).patches[0].author)
    monkeypatch.setenv("GIT_AUTHOR_NAME", who)
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", email)

    # apply, with no flag but --llvm
    done = script("apply", "--llvm", str(llvm))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == (
        f"series: patches/release-22.x/series + patches/proposals/series "
        f"1-{len(keys.patches)} ({name}, made for LLVM 22): the checkout is "
        "LLVM 22.1.8"
    )
    assert f"kdl/{name}: {patches} applied" in done.stdout
    kdl = [sys.executable, "-m", "kdl"]
    for command in (["status"], ["check"], ["--dry-run", "export"]):
        done = subprocess.run(
            [*kdl, *command, "--llvm", str(llvm)],
            cwd=paths.ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[0].endswith(f"kdl/{name} carries it")
        assert " + patches/proposals/series 1-" in done.stdout.splitlines()[0]
        if command == ["status"]:
            assert f"({stack} of patches/release-22.x/series and " in done.stdout
    # (the last one is export's: every patch unchanged, nothing written)
    assert done.stdout.count(": unchanged") == patches

    # build, and the line it prints
    done = script("build", "--llvm", str(llvm), "--build-dir", str(build))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "check-series-llvm" in done.stdout.splitlines()[-1]
    suites, out = run_printed_line(done.stdout)
    offload, unit = suites[0], suites[1]
    want = recorded["check-offload"]["series"]["counts"]
    assert offload["Failed"] == 0
    assert offload["Passed"] + offload["Expectedly Failed"] == want["pass"] + keys_lit
    unit_want = recorded["check-offload-unit"]["series"]["counts"]["pass"]
    assert unit["Passed"] == unit_want + keys_unit
    assert int(_GTEST_PASSED.findall(out)[-1]) > 0  # the series' LLVM-side tests
    assert "OffloadBinaryVariantTest" in out  # the keys' LLVM-side tests

    # revert, with no flag, and the same build: the base's counts
    done = subprocess.run(
        [*kdl, "revert", "--llvm", str(llvm)],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"  dropped {stack} of patches/release-22.x/series and " in done.stdout
    done = script("build", "--llvm", str(llvm), "--build-dir", str(build))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "check-series-llvm" not in done.stdout.splitlines()[-1]
    assert not (build / "bin").exists()
    suites, _ = run_printed_line(done.stdout)
    offload, unit = suites[0], suites[1]
    want = recorded["check-offload"]["base"]["counts"]
    assert offload["Failed"] == 0
    assert offload["Passed"] + offload["Expectedly Failed"] == want["pass"]
    assert unit["Passed"] == recorded["check-offload-unit"]["base"]["counts"]["pass"]

    # a tree of another version, on the branch and off it: one line, before
    # anything is touched or configured
    version = llvm / "cmake/Modules/LLVMVersion.cmake"
    for branch in (f"kdl/{name}", "main"):
        git(llvm, "checkout", "--quiet", "--force", branch)
        version.write_text(
            version.read_text().replace("VERSION_MAJOR 22", "VERSION_MAJOR 21")
        )
        for name_, args in (
            ("apply", ["--llvm", str(llvm)]),
            ("build", ["--llvm", str(llvm), "--build-dir", str(tmp_path / "b21")]),
        ):
            done = script(name_, *args)
            assert done.returncode == 2, done.stdout + done.stderr
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr
            assert "LLVM 21.1.8" in done.stderr
        assert not (tmp_path / "b21").exists()
