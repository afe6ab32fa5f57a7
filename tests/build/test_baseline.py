"""The base comparison: lit's xunit read test by test, regressions and the
series' own tests, and the sparse worktree of the base."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdl.build.baseline import base_worktree, diff_states, lit_states
from tests.llvm_tree import git

XUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
<testsuite name="libomptarget" tests="4">
<testcase classname="libomptarget.x86_64.offloading" name="a.c" time="0.1"/>
<testcase classname="libomptarget.x86_64.offloading" name="b.c" time="0.1">
  <failure><![CDATA[boom]]></failure>
</testcase>
<testcase classname="libomptarget.nvptx64.offloading" name="c.c" time="0">
  <skipped message="Unsupported configuration"/>
</testcase>
<testcase classname="libomptarget.x86_64.offloading" name="d.c" time="0">
  <skipped message="Test not selected (--filter, ...)"/>
</testcase>
</testsuite>
</testsuites>
"""


def test_states_of_every_test(tmp_path: Path) -> None:
    xml = tmp_path / "x.xml"
    xml.write_text(XUNIT)
    assert lit_states(xml) == {
        "libomptarget.x86_64.offloading::a.c": "pass",
        "libomptarget.x86_64.offloading::b.c": "fail",
        "libomptarget.nvptx64.offloading::c.c": "unsupported",
    }


def test_diff_names_regressions_fixes_and_the_series_tests() -> None:
    base = {"a": "pass", "b": "fail", "c": "pass", "u": "unsupported"}
    series = {
        "a": "pass",
        "b": "pass",
        "c": "unsupported",
        "u": "unsupported",
        "new1": "pass",
        "new2": "unsupported",
    }
    diff = diff_states(base, series)
    assert diff["regressions"] == ["c"]
    assert diff["fixed"] == ["b"]
    assert diff["series_tests"] == {"new1": "pass", "new2": "unsupported"}
    assert diff["series_tests_not_passing"] == ["new2"]


def test_base_worktree_is_sparse_and_reused(isolated_git: Path, tmp_path: Path) -> None:
    repo = tmp_path / "llvm-project"
    for rel in ("offload/CMakeLists.txt", "openmp/x", "llvm/cmake/y", "clang/big"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(rel)
    git(repo, "init", "--quiet")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "offload/CMakeLists.txt").write_text("series")
    git(repo, "commit", "--quiet", "-am", "series")
    where = base_worktree(repo, base, tmp_path / "base-src")
    assert (where / "offload/CMakeLists.txt").read_text() == "offload/CMakeLists.txt"
    assert (where / "llvm/cmake/y").is_file()
    assert not (where / "clang").exists()
    stamp = (where / "openmp/x").stat().st_mtime_ns
    assert base_worktree(repo, base, tmp_path / "base-src") == where
    assert (where / "openmp/x").stat().st_mtime_ns == stamp


def test_a_checkout_of_no_installed_version_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kdl.cli import main

    version = tmp_path / "cmake" / "Modules" / "LLVMVersion.cmake"
    version.parent.mkdir(parents=True)
    version.write_text(
        "set(LLVM_VERSION_MAJOR 99)\nset(LLVM_VERSION_MINOR 0)\n"
        "set(LLVM_VERSION_PATCH 0)\n"
    )
    assert main(["test", "--check-offload", "--llvm", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: {tmp_path}: no installed LLVM of its version to build offload "
        "against standalone; build it with 'kdl build --llvm --full' instead"
    ]


def test_offload_compiles_against_the_series_llvm_headers(
    isolated_git: Path, tmp_path: Path
) -> None:
    from kdl.build.standalone import offload_argv, series_headers

    repo = tmp_path / "llvm-project"
    header = repo / "llvm/include/llvm/Object/OffloadBinary.h"
    header.parent.mkdir(parents=True)
    header.write_text("// as released\n")
    (repo / "offload").mkdir()
    (repo / "offload/x.cpp").write_text("base\n")
    git(repo, "init", "--quiet")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    where = tmp_path / "llvm-include"
    # Not a branch kdl apply made (the base's worktree is one): no headers.
    assert series_headers(repo, where) is None
    git(repo, "checkout", "--quiet", "-b", "kdl/s")
    git(repo, "config", "branch.kdl/s.kdlbase", base)
    (repo / "offload/x.cpp").write_text("series\n")
    git(repo, "commit", "--quiet", "-am", "offload only")
    assert series_headers(repo, where) is None
    header.write_text("// with the series\n")
    git(repo, "commit", "--quiet", "-am", "a header")
    assert series_headers(repo, where) == where
    copy = where / "llvm/Object/OffloadBinary.h"
    assert copy.read_text() == "// with the series\n"
    # A copy the series no longer changes does not stay ahead.
    stale = where / "llvm/IR/Old.h"
    stale.parent.mkdir(parents=True)
    stale.write_text("// an earlier series'\n")
    assert series_headers(repo, where) == where
    assert not stale.exists() and copy.is_file()
    argv = offload_argv(repo, tmp_path / "b", Path("/p"), Path("/l"), headers=where)
    assert f"-DCMAKE_CXX_FLAGS=-iquote {where}" in argv
    assert not any(
        "iquote" in a for a in offload_argv(repo, tmp_path, Path("/p"), Path("/l"))
    )


def test_the_plugins_compile_the_series_llvm_sources(
    isolated_git: Path, tmp_path: Path
) -> None:
    """What the series changes or adds under llvm/lib goes into the offload
    build's cache; nothing off a kdl branch, and nothing again after a revert
    (the entry is always given, so the cache forgets an earlier list)."""
    from kdl.build.standalone import OFFLOAD_INCLUDE, offload_argv, series_llvm_sources

    repo = tmp_path / "llvm"
    (repo / "llvm/lib/Object").mkdir(parents=True)
    (repo / "llvm/lib/Object/OffloadBinary.cpp").write_text("base\n")
    git(repo, "init", "--quiet")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    assert series_llvm_sources(repo) == []
    git(repo, "checkout", "--quiet", "-b", "kdl/s")
    git(repo, "config", "branch.kdl/s.kdlbase", base)
    (repo / "llvm/lib/Object/OffloadBinary.cpp").write_text("series\n")
    (repo / "llvm/lib/Object/OffloadTargetRank.cpp").write_text("new\n")
    (repo / "llvm/lib/Object/CMakeLists.txt").write_text("new\n")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "the series")
    sources = series_llvm_sources(repo)
    assert sources == [
        repo / "llvm/lib/Object/OffloadBinary.cpp",
        repo / "llvm/lib/Object/OffloadTargetRank.cpp",
    ]
    argv = offload_argv(repo, tmp_path / "b", Path("/p"), Path("/l"), sources=sources)
    assert f"-DKDL_SERIES_LLVM_SOURCES={';'.join(map(str, sources))}" in argv
    assert "-DKDL_SERIES_LLVM_SOURCES=" in offload_argv(
        repo, tmp_path / "b", Path("/p"), Path("/l")
    )
    # The cmake side: the list goes into the plugins' common code, linked with
    # offload's version scripts.
    cmake = OFFLOAD_INCLUDE.read_text()
    assert "target_sources(PluginCommon PRIVATE ${KDL_SERIES_LLVM_SOURCES})" in cmake
    assert "set(LLVM_HAVE_LINK_VERSION_SCRIPT 1)" in cmake


def test_a_tool_that_loads_another_liboffload_is_a_problem() -> None:
    """The installed LLVM's liboffload beside its libLLVM must not stand in
    for the build's own (StandaloneOffload.cmake puts the build's first)."""
    from kdl.build.baseline import verdict

    doc = {
        "suites": {},
        "liboffload": {
            "base": {"loaded": "build/real-22/base/offload/x.so", "own": True},
            "series": {
                "loaded": "/usr/lib/llvm-22/lib/libLLVMOffload.so.22.1",
                "own": False,
            },
        },
    }
    assert verdict(doc)[2] == [
        "series: llvm-offload-device-info loads "
        "/usr/lib/llvm-22/lib/libLLVMOffload.so.22.1, not its build's liboffload"
    ]
