"""kdl.provenance: the one way each provenance fact is read."""

from __future__ import annotations

import sys
from pathlib import Path

from kdl import provenance


def test_cmake_cache_entries_and_a_missing_cache(tmp_path: Path) -> None:
    (tmp_path / "CMakeCache.txt").write_text(
        "// a comment\n#another\nCMAKE_HOME_DIRECTORY:INTERNAL=/src/llvm\n"
        "LLVM_ENABLE_PROJECTS:STRING=clang;lld\nnot an entry\n"
    )
    assert provenance.cmake_cache(tmp_path) == {
        "CMAKE_HOME_DIRECTORY": "/src/llvm",
        "LLVM_ENABLE_PROJECTS": "clang;lld",
    }
    assert provenance.cmake_cache(tmp_path / "none") == {}


def test_first_line_and_version(tmp_path: Path) -> None:
    code = "print(); print('  first  '); print('second')"
    assert provenance.first_line([sys.executable, "-c", code]) == "first"
    assert provenance.first_line([sys.executable, "-c", "raise SystemExit(3)"]) is None
    assert provenance.first_line([str(tmp_path / "no-such-tool")]) is None
    assert provenance.version(tmp_path / "no-such-tool") is None
