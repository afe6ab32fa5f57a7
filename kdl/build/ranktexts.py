"""The rank's texts on LLVM 22.1.8, one owner for every build of them.

The series' rank (``llvm/lib/Object/OffloadTargetRank.cpp`` and its header)
builds on LLVM sources that 22.1.8 lacks or has in older texts (the NVPTX
target parser, ``AMDGPU::TargetID``, ``areTargetsEquivalent`` and
``areTargetsCompatible``); the release/22.x backport adds or changes them.
A build of the rank against the installed LLVM 22 takes, from the backport
series applied to the 22.1.8 tree's base texts:

- the rank's files, and every ``llvm/include`` header (and ``.def``) the
  backport changes, put ahead of the installed headers;
- every ``llvm/lib`` ``.cpp`` the backport changes (the rank's own among
  them): the *units*, compiled and linked ahead of LLVM's libraries.

:mod:`kdl.build.rank` builds its "22.1.8" toolchain from these texts, and
the overlay build (:mod:`kdl.build.overlay`) compiles ``kdl-select`` from
them.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kdl.build.unittests import HEADERS, base_texts, series_texts
from kdl.series.model import Series
from kdl.trees.common import Tree

#: The rank's own files, created by the series' rank patch.
RANK_SOURCE = "llvm/lib/Object/OffloadTargetRank.cpp"
RANK_HEADER = "llvm/include/llvm/Object/OffloadTargetRank.h"
RANK_TEST = "llvm/unittests/Object/OffloadTargetRankTest.cpp"
LIBS = "llvm/lib/"


@dataclass(frozen=True)
class BackportTexts:
    """The texts a build of the rank on 22.1.8 needs."""

    #: llvm-project path: text after the backport series.
    texts: dict[str, str]
    #: The ``llvm/lib`` sources to compile and link ahead of the libraries.
    units: list[str]


def llvm_files(series: Series, under: str, suffix: str) -> list[str]:
    """The files under *under* ending in *suffix* the series touches."""
    return sorted(
        {
            f.path
            for p in series.patches
            for f in p.files
            if f.path.startswith(under) and f.path.endswith(suffix)
        }
    )


def write_tree(texts: dict[str, str], where: Path) -> None:
    """*texts* (llvm-project paths) as a fresh tree under *where*."""
    shutil.rmtree(where, ignore_errors=True)
    for name, text in texts.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)


def backport_texts(
    backport: Series, tree22: Tree, where: Path, extra: Sequence[str] = ()
) -> BackportTexts:
    """The rank's header and source, the headers and ``.def`` files under
    ``llvm/include`` and the ``llvm/lib`` sources *backport* changes, and
    *extra* files, after the series, from *tree22*'s base texts (written
    under *where* to seed ``git apply``)."""
    units = llvm_files(backport, LIBS, ".cpp")
    names = sorted(
        {RANK_HEADER, RANK_SOURCE, *extra}
        | set(llvm_files(backport, HEADERS, ".h"))
        | set(llvm_files(backport, HEADERS, ".def"))
        | set(units)
    )
    seeds = base_texts(tree22, names, where)
    return BackportTexts(series_texts(backport, names, seeds), units)
