"""Which series a checkout takes: the one made for its LLVM version.

Every series index under patches/ that says ``llvm: N`` (``patches/series``
for main's major, ``patches/release-22.x/series`` for 22) is made for the
checkouts of LLVM N.x.y; the mapping is that data, read here, not a list in
code. The series commands (apply, check, status, revert, export, pr) choose
in this order, and say which in one line:

1. ``--series FILE``, as given (apply and check refuse a series whose
   ``llvm:`` is not the checkout's major, before touching anything);
2. the series the current branch carries: ``kdl apply`` records its name
   (``branch.<name>.kdlSeries``), so later commands need no ``--series``
   (apply and check refuse it, too, where the checkout's major changed);
3. the series made for the checkout's version (its
   ``cmake/Modules/LLVMVersion.cmake``, or ``llvm/CMakeLists.txt`` in older
   trees). A version no series is made for is an error naming the versions
   there are series for.

A source tree without git (a release tarball) gets the commands that make
it a checkout.

On top of the stack go the proposals whose series names it (``on:``):
by default the first ones its ``apply: 1-N`` names (the metadata keys and
the loop's use of them), all of them with ``--proposals``, none with
``--posting-stack``; a branch records what it carries, and later commands
take that.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from kdl import paths
from kdl.errors import UsageError, WorkspaceError
from kdl.series.checkout import LLVM_MARKERS, Checkout
from kdl.series.model import Header, patch_range, read_header, split_recorded

#: Where the version is set, newest layout first.
VERSION_FILES = ("cmake/Modules/LLVMVersion.cmake", "llvm/CMakeLists.txt")


def tree_version(llvm: Path) -> str | None:
    """``MAJOR.MINOR.PATCH`` of an llvm-project source tree, or None."""
    for rel in VERSION_FILES:
        try:
            text = (llvm / rel).read_text()
        except OSError:
            continue
        parts = [
            re.search(rf"set\(LLVM_VERSION_{p} (\d+)\)", text)
            for p in ("MAJOR", "MINOR", "PATCH")
        ]
        if all(parts):
            return ".".join(m.group(1) for m in parts if m)
    return None


def major_of(version: str) -> int:
    return int(version.split(".", 1)[0])


def index_files(patches: Path | None = None) -> list[Path]:
    """The series indices under patches/: ``series`` and ``*/series``, not
    the kept versions (``versions/``)."""
    root = patches or paths.PATCHES
    found = [root / "series", *sorted(root.glob("*/series"))]
    return [f for f in found if f.is_file() and f.parent.name != "versions"]


def headers(patches: Path | None = None) -> list[Header]:
    return [read_header(f) for f in index_files(patches)]


def shown(path: Path) -> str:
    """*path* relative to the workspace where it is inside it."""
    if path.is_absolute() and path.is_relative_to(paths.ROOT):
        return os.path.relpath(path, paths.ROOT)
    return str(path)


def made_for(found: list[Header]) -> str:
    """``LLVM 24 (patches/series), LLVM 22 (patches/release-22.x/series)``."""
    listed = [f"LLVM {h.llvm} ({shown(h.path)})" for h in found if h.llvm]
    return ", ".join(listed) or "no LLVM version (no series says 'llvm: N')"


@dataclass(frozen=True)
class Choice:
    """The series a command works with, and why."""

    file: Path
    header: Header
    #: The checkout's version (None where it has no version file).
    version: str | None
    why: str
    #: How many of the proposals go on top (the first N of
    #: :attr:`proposals_file`; 0: the posting stack alone).
    proposals: int = 0
    #: The series of proposals that goes on this stack, if one does.
    proposals_file: Path | None = None

    def line(self) -> str:
        made = f", made for LLVM {self.header.llvm}" if self.header.llvm else ""
        top = ""
        if self.proposals and self.proposals_file is not None:
            top = f" + {shown(self.proposals_file)} {patch_range(self.proposals)}"
        return f"series: {shown(self.file)}{top} ({self.header.name}{made}): {self.why}"


#: What ``--posting-stack`` and ``--proposals`` ask for.
POSTING_STACK, ALL_PROPOSALS = "posting-stack", "proposals"


def proposals_for(stack: Header, roots: list[Path]) -> Header | None:
    """The series of proposals under *roots* that names *stack* in its
    ``on:`` line, if one does; two are an error."""
    seen: dict[Path, Header] = {}
    for root in roots:
        for f in index_files(root):
            if f.resolve() not in seen and f.resolve() != stack.path.resolve():
                seen[f.resolve()] = read_header(f)
    found = [h for h in seen.values() if stack.name in h.on]
    if len(found) > 1:
        raise UsageError(
            f"several series of proposals go on '{stack.name}' "
            f"({', '.join(shown(h.path) for h in found)}); one may"
        )
    return found[0] if found else None


def not_a_checkout(llvm: Path) -> WorkspaceError | None:
    """The error for a source tree git does not know (a tarball), or None."""
    if Checkout.find(llvm) is not None or not llvm.is_dir():
        return None
    if not all((llvm / m).exists() for m in LLVM_MARKERS[:2]):
        return None
    version = tree_version(llvm) or "llvm-project"
    commit = f"git commit -q -m 'llvm-project {version} (source tarball)'"
    return WorkspaceError(
        f"{llvm}: an llvm-project source tree without git (a tarball?); make it "
        f"a checkout first: cd {llvm} && git init -q && git add -A && {commit} "
        "(a minute or two for 160,000 files)"
    )


def carried_by_branch(llvm: Path) -> tuple[str, str] | None:
    """(branch, series name) where the current branch is one kdl apply made."""
    checkout = Checkout.find(llvm)
    if checkout is None:
        return None
    with checkout:
        branch = checkout.current_branch()
        meta = checkout.meta(branch) if branch else None
    if branch is None or meta is None or not meta.series:
        return None
    return branch, meta.series


def choose(
    llvm: Path,
    given: Path | None = None,
    *,
    check_version: bool = False,
    patches: Path | None = None,
    proposals: str | None = None,
) -> Choice:
    """The series for the checkout at *llvm* (see the module's docstring).

    *check_version* (apply, check): a given or carried series made for
    another major than the checkout's is refused. *proposals*:
    :data:`POSTING_STACK` or :data:`ALL_PROPOSALS` as the user asked, None
    for what the branch carries, else the proposals' default."""
    choice, carried = _choose_stack(
        llvm, given, check_version=check_version, patches=patches
    )
    # The proposals beside a given series (or one folder up, as a backport's
    # folder is), else those under patches/.
    where = choice.file.parent
    roots = [where, where.parent] if given is not None else [patches or paths.PATCHES]
    top = proposals_for(choice.header, roots)
    if given is not None and top is not None and proposals is None:
        # A given stack: the branch's record still says which proposals it
        # carries on it.
        recorded = carried_by_branch(llvm)
        name, on_top = split_recorded(recorded[1]) if recorded else ("", 0)
        if name == choice.header.name:
            carried = -1 if on_top is None else on_top
    if proposals == POSTING_STACK:
        count = 0
    elif proposals == ALL_PROPOSALS:
        if top is None:
            raise UsageError(
                f"--proposals: no series of proposals goes on "
                f"'{choice.header.name}' (none under "
                f"{shown(roots[0])} names it in an 'on:' line)"
            )
        count = _total(top)
    elif carried is None:
        count = top.apply_default if top is not None else 0
    elif carried == 0:
        count = 0  # the branch carries the stack alone
    elif top is None:
        raise UsageError(
            f"{choice.why.removesuffix(' carries it')} carries proposals on "
            f"'{choice.header.name}', and no series of proposals under "
            f"{shown(roots[0])} goes on it (none names it in an 'on:' line); "
            "pass --posting-stack"
        )
    else:
        count = _total(top) if carried < 0 else min(carried, _total(top))
    return dataclasses.replace(
        choice,
        proposals=count,
        proposals_file=top.path if top is not None else None,
    )


def _total(proposals: Header) -> int:
    """How many patches the series of proposals has."""
    from kdl.series.model import load

    return len(load(proposals.path).patches)


def _choose_stack(
    llvm: Path,
    given: Path | None,
    *,
    check_version: bool,
    patches: Path | None,
) -> tuple[Choice, int | None]:
    """The stack: given, carried by the branch or made for the version; and
    how many proposals the branch carries on it (-1: all of them; None: the
    stack is not the branch's)."""
    llvm = llvm.expanduser()
    if not llvm.exists():
        raise UsageError(f"{llvm}: no such directory (an llvm-project checkout)")
    if not llvm.is_dir():
        raise UsageError(f"{llvm}: not a directory (an llvm-project checkout)")
    tarball = not_a_checkout(llvm)
    if tarball is not None:
        raise tarball
    version = tree_version(llvm) if llvm.is_dir() else None
    found = headers(patches)
    choice: Choice | None = None
    on_branch: int | None = None
    if given is not None:
        header = read_header(given.expanduser().absolute())
        choice = Choice(header.path, header, version, "given with --series")
    carried = carried_by_branch(llvm) if choice is None else None
    if carried is not None:
        branch, recorded = carried
        name, on_top = split_recorded(recorded)
        match = [h for h in found if h.name == name]
        if not match:
            raise UsageError(
                f"{branch} carries the series '{recorded}', which no index under "
                f"{shown(patches or paths.PATCHES)} names; pass --series FILE"
            )
        choice = Choice(match[0].path, match[0], version, f"{branch} carries it")
        on_branch = -1 if on_top is None else on_top
    if choice is not None:
        header = choice.header
        mismatch = bool(version and header.llvm and major_of(version) != header.llvm)
        if check_version and version and mismatch:
            ours = [h for h in found if h.llvm == major_of(version)]
            instead = f"; {shown(ours[0].path)} is" if ours else "; no series is"
            raise UsageError(
                f"{llvm} is LLVM {version} and {shown(header.path)} is made for "
                f"LLVM {header.llvm}{instead} made for LLVM {major_of(version)} "
                "(nothing was changed)"
            )
        return choice, on_branch
    if version is None:
        raise UsageError(
            f"{llvm}: cannot tell its LLVM version (no {' or '.join(VERSION_FILES)} "
            f"setting LLVM_VERSION_MAJOR); series are made for {made_for(found)}: "
            "pass --series FILE"
        )
    major = major_of(version)
    match = [h for h in found if h.llvm == major]
    if not match:
        raise UsageError(
            f"{llvm} is LLVM {version}: no series is made for it; there are "
            f"series for {made_for(found)}"
        )
    if len(match) > 1:
        raise UsageError(
            f"{llvm} is LLVM {version} and several series say 'llvm: {major}' "
            f"({', '.join(shown(h.path) for h in match)}); pass --series FILE"
        )
    why = f"the checkout is LLVM {version}"
    return Choice(match[0].path, match[0], version, why), None


def announce(choice: Choice, *, to_stderr: bool = False) -> None:
    """The one line that says which series a command works with."""
    print(choice.line(), file=sys.stderr if to_stderr else sys.stdout, flush=True)
