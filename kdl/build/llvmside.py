"""The series' LLVM-side changes in the user's standalone build.

offload builds standalone against the installed LLVM, so the LLVM sources
the series changes (``llvm/lib``: ELFObjectFile.cpp today) and its LLVM unit
tests (``llvm/unittests``) are not in that build. Here they are compiled
from the checkout as :mod:`kdl.build.unittests` compiles them (its
:class:`~kdl.build.toolchain.Toolchain`: the installed LLVM's clang++ and
llvm-config, the series' changed sources linked ahead of the installed
static libraries, its changed headers ahead of the installed ones):

- ``llvm-side/SeriesLLVMTests``: every unit-test file the branch changes or
  adds, with the changed sources ahead; ``ninja -C BUILD_DIR check-series-llvm``
  runs it;
- ``bin/``: the installed LLVM's tools, with ``llvm-offload-binary`` (and its
  ``clang-offload-packager`` name) built from the checkout with the changed
  sources ahead, so the lit suite can run with the patched tool.

What counts as changed is the branch's own diff from the base ``kdl
apply`` recorded (``git diff BASE HEAD``), so a new file the series adds
under ``llvm/lib`` is taken as well. With no change (the base, after
``kdl revert``) both are removed: base and series never share them.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kdl.build.standalone import series_changes
from kdl.build.toolchain import GOOGLETEST, Toolchain, link_components
from kdl.build.unittests import TESTING_SUPPORT

log = logging.getLogger("kdl")

#: The tool the lit suite packs with, and its other name (a symlink upstream).
TOOL = "llvm/tools/llvm-offload-binary"
TOOL_ALIASES = ("clang-offload-packager",)
TEST_BINARY = "SeriesLLVMTests"
CHECK_TARGET = "check-series-llvm"


@dataclass
class LLVMSide:
    """What was built, under ``BUILD_DIR/llvm-side`` and ``BUILD_DIR/bin``."""

    sources: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    test_binary: Path | None = None
    bin_dir: Path | None = None


def changed_files(llvm: Path) -> list[str]:
    """The files the applied series changes or adds (a kdl branch's diff from
    its base, deletions left out); none off a kdl branch."""
    return series_changes(llvm, ".") or []


def build_llvm_side(
    llvm: Path, build_dir: Path, prefix: Path, headers: Path | None
) -> LLVMSide:
    """Build the series' LLVM sources, unit tests and llvm-offload-binary."""
    work, bin_dir = build_dir / "llvm-side", build_dir / "bin"
    changed = changed_files(llvm)
    sources = [f for f in changed if f.startswith("llvm/lib/") and f.endswith(".cpp")]
    tests = [
        f for f in changed if f.startswith("llvm/unittests/") and f.endswith(".cpp")
    ]
    side = LLVMSide(sources, tests)
    # What an earlier build (the series, before a revert) left must go.
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(bin_dir, ignore_errors=True)
    if not sources and not tests:
        return side
    work.mkdir(parents=True)
    googletest = llvm / GOOGLETEST
    tc = Toolchain(
        prefix.name, prefix, None, work, googletest if googletest.is_dir() else None
    )
    includes = [headers] if headers else []
    units = []
    for rel in sources:
        obj = work / (rel.replace("/", "_") + ".o")
        tc.compile(llvm / rel, obj, includes)
        units.append(obj)
    if tests:
        objects = []
        for rel in [*tests, TESTING_SUPPORT]:
            obj = work / (rel.replace("/", "_") + ".o")
            tc.compile(llvm / rel, obj, includes)
            objects.append(obj)
        components = sorted(
            {
                c
                for t in tests
                for c in link_components(llvm / Path(t).parent / "CMakeLists.txt")
            }
        )
        side.test_binary = work / TEST_BINARY
        # The series' objects first: they replace the archives' members.
        tc.link([*units, *objects], side.test_binary, components)
    tool = llvm / TOOL / f"{Path(TOOL).name}.cpp"
    if tool.is_file():
        obj = work / f"{tool.stem}.o"
        tc.compile(tool, obj, includes)
        bin_dir.mkdir()
        for installed in sorted((prefix / "bin").iterdir()):
            (bin_dir / installed.name).symlink_to(installed)
        built = bin_dir / tool.stem
        built.unlink()
        components = link_components(llvm / TOOL / "CMakeLists.txt")
        tc.link([*units, obj], built, components)
        for alias in TOOL_ALIASES:
            (bin_dir / alias).unlink(missing_ok=True)
            (bin_dir / alias).symlink_to(tool.stem)
        side.bin_dir = bin_dir
    log.debug("LLVM side of the series: %s; tests %s", sources, tests)
    return side
