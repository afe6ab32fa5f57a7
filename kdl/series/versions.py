"""Earlier versions of a series, and the range-diff between two, on demand.

As b4 keeps a sent series: every version is a commit of this repository's
history (``kdl export`` tags it ``<series>-v<N>``, but tags travel only with
``git push --tags``, so a clone finds each version by the ``version:`` line
of the series file in its history), and no range-diff is stored:
``kdl range-diff --llvm TREE OLD [NEW]`` applies both versions in scratch
worktrees of TREE on one base and runs ``git range-diff`` (``b4 diff``
does the same). A series directory outside git keeps each old version as a
copy under ``versions/v<N>/`` (``kdl export`` writes it), which is read
instead.
"""

from __future__ import annotations

import posixpath
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kdl.errors import FormatError, WorkspaceError
from kdl.series.checkout import Checkout
from kdl.series.gitstate import last_line
from kdl.series.match import diff_files
from kdl.series.model import Series, entries, load

_VERSION = re.compile(r"version:\s*(\d+)\s*$")


@dataclass(frozen=True)
class Version:
    """One version of a series: its number, where it was read, its patches
    in order as (file name, bytes)."""

    number: int
    where: str
    patches: list[tuple[str, bytes]]


def _number(text: str) -> int:
    """The ``version:`` of a series file's text, read as :func:`load` reads
    it (a comment after it left out); 1 where there is none."""
    for raw in text.splitlines():
        m = _VERSION.match(raw.split("#", 1)[0])
        if m:
            return int(m.group(1))
    return 1


def _from_history(co: Checkout, rel: str, name: str, number: int) -> Version | None:
    """Version *number* of the series file *rel* (a path in *co*): the tag
    ``kdl export`` made, else the newest commit whose series file says that
    version (a patch edited after the series file last changed is that
    commit's, so every commit that touched the patches is looked at); None
    where there is none."""
    folder = posixpath.dirname(rel)
    status, out, _ = co.attempt(
        "rev-parse", "--verify", "--quiet", f"{name}-v{number}^{{commit}}"
    )
    candidates = [out.strip()] if status == 0 else []
    # The parent folder too: a borrowed patch lives beside another series.
    scope = sorted({folder or ".", posixpath.dirname(folder) or "."})
    candidates += co.run("log", "--format=%H", "--", *scope).split()
    for commit in candidates:
        status, text, _ = co.attempt("show", f"{commit}:{rel}")
        if status != 0 or _number(text) != number:
            continue
        patches = []
        for entry in entries(text):
            path = posixpath.normpath(posixpath.join(folder, entry))
            data: bytes = co.run(  # type: ignore[assignment]
                "show",
                f"{commit}:{path}",
                stdout_as_string=False,
                strip_newline_in_stdout=False,
            )
            patches.append((posixpath.basename(path), data))
        return Version(number, f"commit {co.short(commit)}", patches)
    return None


def _from_copy(series_file: Path, number: int) -> Version | None:
    """Version *number* as ``kdl export`` copied it outside git, or None."""
    copy = series_file.parent / "versions" / f"v{number}" / series_file.name
    if not copy.is_file():
        return None
    patches = []
    for entry in entries(copy.read_text()):
        path = copy.parent / Path(entry).name
        if not path.is_file():
            raise WorkspaceError(f"{copy}: names {entry}, which is not beside it")
        patches.append((path.name, path.read_bytes()))
    return Version(number, str(copy.parent), patches)


def find_version(series: Series, number: int) -> Version:
    """Version *number* of *series*: the files on disk when they are that
    version, else from git's history or an export's copy."""
    series_file = series.path
    if series.version == number:
        return Version(
            number, str(series_file), [(p.name, p.read()) for p in series.patches]
        )
    found = None
    repo = Checkout.find(series_file.parent)
    if repo is not None:
        with repo:
            rel = series_file.resolve().relative_to(repo.root.resolve()).as_posix()
            found = _from_history(repo, rel, series.name, number)
    found = found or _from_copy(series_file, number)
    if found is None:
        raise WorkspaceError(
            f"{series_file}: no version {number} in this repository's history "
            "or under versions/ "
            f"(the series is at version {series.version})"
        )
    return found


def apply_in_scratch(co: Checkout, base: str, patches: list[Path]) -> str:
    """The tip of *patches* applied on *base* in a scratch worktree of *co*;
    a WorkspaceError naming the patch and git's reason when one does not
    apply. The worktree writes only the files the patches touch (all of
    llvm-project's take minutes), with neither a sparse checkout (which
    would set extensions.worktreeConfig in the user's repository) nor any
    other change to the checkout."""
    from kdl.series.apply import AM_ARGS

    touched = sorted({f for p in patches for f in diff_files(p.read_bytes())})
    listing = co.run("ls-tree", "-r", "-z", "--name-only", base, "--", *touched)
    at_base = [f for f in listing.split("\0") if f]
    # The scratch commits' committer (git am keeps each patch's author):
    # they are never exported, and a checkout without an identity works.
    committer = ["-c", "user.name=kdl range-diff", "-c", "user.email=kdl@invalid"]
    with tempfile.TemporaryDirectory(prefix="kdl-version-") as scratch:
        tree = Path(scratch) / "tree"
        co.run(
            "worktree", "add", "--quiet", "--no-checkout", "--detach", str(tree), base
        )
        try:
            co.run("-C", str(tree), "read-tree", base)
            if at_base:
                co.run("-C", str(tree), "checkout", base, "--", *at_base)
            for patch in patches:
                status, out, err = co.attempt(
                    *committer, "-C", str(tree), *AM_ARGS, str(patch)
                )
                if status != 0:
                    co.attempt("-C", str(tree), "am", "--abort")
                    raise WorkspaceError(
                        f"{patch.name} does not apply to {co.short(base)}: "
                        f"{last_line(err or out)}"
                    )
            return co.run("-C", str(tree), "rev-parse", "HEAD").strip()
        finally:
            co.attempt("worktree", "remove", "--force", str(tree))
            co.attempt("worktree", "prune")


def range_diff(co: Checkout, base: str, old: Version, new: Version) -> str:
    """``git range-diff`` of *old* and *new*, each applied on *base*."""
    tips = []
    with tempfile.TemporaryDirectory(prefix="kdl-range-diff-") as tmp:
        for version in (old, new):
            folder = Path(tmp) / f"v{version.number}"
            folder.mkdir()
            files = []
            for i, (name, data) in enumerate(version.patches):
                # Numbered here: a borrowed file's name need not sort in place.
                files.append(folder / f"{i:04d}-{name}")
                files[-1].write_bytes(data)
            try:
                tips.append(apply_in_scratch(co, base, files))
            except WorkspaceError as exc:
                raise WorkspaceError(
                    f"v{version.number} ({version.where}): {exc}"
                ) from exc
    return co.run(
        "-c",
        "color.ui=false",
        "range-diff",
        "--no-color",
        f"{base}..{tips[0]}",
        f"{base}..{tips[1]}",
    )


def _version_arg(text: str, where: str) -> int:
    value = text.removeprefix("v")
    if not value.isdigit() or int(value) < 1:
        raise FormatError(where, f"{text}: a version is a positive number, N or vN")
    return int(value)


def cmd_range_diff(llvm: Path, series_file: Path, old: str, new: str | None) -> int:
    """``kdl range-diff``: print the range-diff from version *old* to *new*
    (the series as it is on disk when left out)."""
    series = load(series_file)
    numbers = [
        _version_arg(old, "range-diff"),
        _version_arg(new, "range-diff") if new else series.version,
    ]
    versions = [find_version(series, n) for n in numbers]
    with Checkout(llvm) as co:
        # A kdl branch's base; HEAD in any other checkout.
        branch = co.current_branch()
        meta = co.meta(branch) if branch else None
        base = co.rev(co.effective_base(meta) if meta else "HEAD")
        print(f"# {series.name} v{numbers[0]} -> v{numbers[1]}, on {co.short(base)}")
        print(range_diff(co, base, *versions))
    return 0
