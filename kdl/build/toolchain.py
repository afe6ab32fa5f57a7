"""An installed LLVM to build and run unit tests with, outside an LLVM tree.

Upstream's unit tests build inside an LLVM build tree. A :class:`Toolchain`
compiles them against an *installed* LLVM instead, with its own ``clang++``
and ``llvm-config``, and links them with its static libraries, the sources
a series changes compiled ahead of the archives that hold them: LLVM main in
the sid root of the ``main`` tree (every command through ``chroot``), or an
LLVM installed on this machine. googletest is the system's, or LLVM's own
from an LLVM tree (:data:`GOOGLETEST`).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kdl import proc
from kdl.errors import WorkspaceError
from kdl.trees.common import Tree
from kdl.trees.sidroot import run_in

#: LLVM's googletest in an LLVM tree, as upstream's unit tests build it: with
#: its printers for LLVM's types (a Twine in a SCOPED_TRACE, say), which the
#: system's libgtest-dev lacks.
GOOGLETEST = "third-party/unittest"


_COMPONENTS = re.compile(r"set\(LLVM_LINK_COMPONENTS(.*?)\)", re.DOTALL)


def link_components(cmake_lists: Path) -> list[str]:
    """``LLVM_LINK_COMPONENTS`` of a CMakeLists.txt, as llvm-config names them."""
    m = _COMPONENTS.search(cmake_lists.read_text())
    if m is None:
        raise WorkspaceError(f"{cmake_lists}: no LLVM_LINK_COMPONENTS")
    return [c.lower() for c in m.group(1).split()]


class Toolchain:
    """An installed LLVM: its prefix, and the root it runs in (or none)."""

    def __init__(
        self,
        name: str,
        prefix: Path,
        root: Path | None,
        work: Path,
        googletest: Path | None = None,
    ) -> None:
        self.name = name
        self.prefix = prefix
        self.root = root
        #: Where files go, as this machine sees it.
        self.work = work
        #: LLVM's googletest (a tree's :data:`GOOGLETEST`) the tests build
        #: with; None: the system's.
        self.googletest = googletest

    def path(self, host: Path) -> str:
        """*host* as the toolchain sees it (inside the root, if any)."""
        return "/" + str(host.relative_to(self.root)) if self.root else str(host)

    def run(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        if self.root:
            return run_in(self.root, argv, **kwargs)
        return proc.run(argv, **kwargs)

    def config(self, *args: str) -> list[str]:
        out = self.run([str(self.prefix / "bin" / "llvm-config"), *args])
        words = out.stdout.decode().split()
        # The roots have libzstd.so.1 without the -dev symlink.
        return ["-l:libzstd.so.1" if w == "-lzstd" else w for w in words]

    def compile(
        self,
        source: Path,
        obj: Path,
        includes: list[Path],
        extra: Sequence[str] = (),
    ) -> None:
        """*source* into *obj*, *includes* ahead of the installed headers,
        *extra* (compiler options) last before the source."""
        self.run(
            [
                str(self.prefix / "bin" / "clang++"),
                # Ahead of the installed headers llvm-config names.
                *[f"-I{self.path(i)}" for i in [*includes, *self._gtest_includes()]],
                *self.config("--cxxflags"),
                # The libraries' build: RTTI on, assertions off.
                "-O2",
                "-DNDEBUG",
                *extra,
                "-c",
                self.path(source),
                "-o",
                self.path(obj),
            ]
        )

    def link(
        self,
        objects: list[Path],
        out: Path,
        components: list[str],
        libs: Sequence[str] = (),
    ) -> None:
        """*objects* into *out*, ahead of the static libraries of LLVM's
        *components*, googletest and *libs* (linker options)."""
        gtest = (
            [self.path(self._googletest_archive())]
            if self.googletest
            else [
                f"/usr/lib/x86_64-linux-gnu/lib{n}.a"
                for n in ("gtest_main", "gmock", "gtest")
            ]
        )
        self.run(
            [
                str(self.prefix / "bin" / "clang++"),
                "-fuse-ld=lld",
                *[self.path(o) for o in objects],
                *self.config("--ldflags"),
                *self.config("--link-static", "--libs", *components),
                *gtest,
                *libs,
                *self.config("--link-static", "--system-libs", *components),
                "-lpthread",
                "-o",
                self.path(out),
            ]
        )

    def _gtest_includes(self) -> list[Path]:
        gt = self.googletest
        return [gt / "googletest/include", gt / "googlemock/include"] if gt else []

    def _googletest_archive(self) -> Path:
        """LLVM's googletest, googlemock and test main, compiled once into
        ``WORK/googletest/libllvm_gtest.a`` (clang and llvm-ar write their
        outputs whole or not at all). An archive, as the system's are: a
        program with its own main (a tool) takes no member for it."""
        gt = self.googletest
        assert gt is not None
        out = self.work / "googletest"
        archive = out / "libllvm_gtest.a"
        if archive.exists():
            return archive
        out.mkdir(parents=True, exist_ok=True)
        objects = []
        for source, own in (
            (gt / "googletest/src/gtest-all.cc", [gt / "googletest"]),
            (gt / "googlemock/src/gmock-all.cc", [gt / "googlemock"]),
            (gt / "UnitTestMain/TestMain.cpp", []),
        ):
            obj = out / f"{source.stem}.o"
            self.compile(source, obj, own)
            objects.append(self.path(obj))
        self.run(
            [str(self.prefix / "bin" / "llvm-ar"), "rcs", self.path(archive), *objects]
        )
        return archive

    def gtest(self, binary: Path) -> dict[str, str]:
        """Every test of *binary*: ``pass``, ``fail`` or ``crash``, each run
        in its own process (a crash ends only its own test)."""
        listing = self.run([self.path(binary), "--gtest_list_tests"])
        names, suite = [], ""
        for line in listing.stdout.decode().splitlines():
            if not line.startswith(" "):
                suite = line.strip()
            elif line.strip():
                names.append(suite + line.split("#")[0].strip())
        states = {}
        for name in names:
            rc = self.run(
                [self.path(binary), f"--gtest_filter={name}"], check=False
            ).returncode
            states[name] = "pass" if rc == 0 else "fail" if rc == 1 else "crash"
        return states


def main_toolchain(main: Tree, work: str) -> Toolchain:
    """LLVM main in the sid root of *main*, working under its /tmp/*work*."""
    prefix = Path(main.record.get("prefix", "/usr/lib/llvm-24"))
    return Toolchain("main", prefix, main.path, main.path / "tmp" / work)
