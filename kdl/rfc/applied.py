"""Which version of the series an llvm-project checkout carries.

``kdl apply`` records on the branch it makes the series' name and base
(``git config branch.<name>.kdlSeries``, ``kdlBase``) and, for every patch
it applied, the patch file's ``git patch-id`` beside the commit's
(``kdlApplied``). The version is read from that: the series of that name
under ``patches/``, at its version on disk when every one of its patches is
on the branch (by patch-id, or as kdl apply recorded it), else at the newest
earlier version whose patches all are (from this repository's history, as
``kdl range-diff`` finds them: :func:`kdl.series.versions.find_version`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from kdl.errors import WorkspaceError
from kdl.series.checkout import Checkout
from kdl.series.match import BranchMeta, Commit, classify
from kdl.series.model import PROPOSALS, Series, load

log = logging.getLogger("kdl")

#: How many earlier versions are looked for before giving up.
EARLIER = 12


@dataclass(frozen=True)
class Applied:
    """The series a checkout's branch carries at one commit."""

    checkout: Path
    branch: str
    head: str
    base: str
    series: str  # its name, as kdl apply recorded it
    version: int | None  # None: no version of the series here matches
    #: The series' patches found on the branch, of how many (at *version*,
    #: or the version on disk where none matches).
    found: int
    total: int
    #: The version on disk under patches/ (None: no series of that name).
    on_disk: int | None

    @property
    def label(self) -> str:
        """``series v11``, or what is known where no version matches."""
        if self.version is not None:
            return f"series v{self.version}"
        if self.on_disk is None:
            return f"the series {self.series} (not under this workspace's patches/)"
        return (
            f"{self.series} at no known version ({self.found} of "
            f"{self.total} patches of v{self.on_disk})"
        )


def _ids(commits: list[Commit], meta: BranchMeta) -> set[str]:
    """The patch-ids the branch's commits stand for: their own, and those of
    the patch files kdl apply recorded making them from."""
    own = {c.patch_id for c in commits if c.patch_id}
    return own | {file_id for file_id, made in meta.applied if made in own}


def _earlier(
    co: Checkout, series: Series, ids: set[str]
) -> tuple[int | None, int, int]:
    """The newest earlier version of *series* all of whose patches are among
    *ids*: (version, found, total); (None, 0, 0) where none is."""
    from kdl.series.versions import find_version

    stop = max(series.version - EARLIER, 0)
    for number in range(series.version - 1, stop, -1):
        try:
            version = find_version(series, number)
        except WorkspaceError as exc:
            log.debug("rfc: %s", exc)
            continue
        wanted = [co.patch_id_of(data) for _, data in version.patches]
        if wanted and all(w in ids for w in wanted):
            return number, len(wanted), len(wanted)
    return None, 0, 0


def find_series(name: str, patches: Path | None = None) -> Series | None:
    """The series named *name* among the indices under *patches*."""
    from kdl.series.choose import headers

    stack = name.partition(PROPOSALS)[0]  # "NAME+proposals:1-2" too
    for header in headers(patches):
        if header.name == stack:
            return load(header.path)
    return None


def applied(
    llvm: Path,
    head: str | None = None,
    branch: str | None = None,
    patches: Path | None = None,
) -> Applied:
    """The series the branch *branch* (the current one) of the checkout at
    *llvm* carries at *head* (its tip); *patches*: the workspace's patches/.

    A checkout that is not git's, or a branch kdl apply did not make, is an
    error naming it."""
    found = Checkout.find(llvm)
    if found is None:
        raise WorkspaceError(f"{llvm}: not a git checkout")
    with found as co:
        branch = branch or co.current_branch()
        meta = co.meta(branch) if branch else None
        if branch is None or meta is None:
            raise WorkspaceError(
                f"{co.root}: {branch or 'a detached HEAD'} is not a branch "
                "'kdl apply' made (no git config branch.<name>.kdlBase), so "
                "which series version it carries is unknown"
            )
        head = co.rev(head or branch)
        base = co.effective_base(meta)
        commits = co.commits(base, head)
        series = find_series(meta.series, patches)
        version: int | None = None
        total = count = 0
        if series is not None:
            infos = co.patch_infos(series)
            matches = classify(infos, commits, meta.applied)
            count = sum(m.state == "applied" for m in matches)
            total = len(infos)
            if total and count == total:
                version = series.version
            elif commits:
                earlier, n, of = _earlier(co, series, _ids(commits, meta))
                if earlier is not None:
                    version, count, total = earlier, n, of
        return Applied(
            checkout=co.root,
            branch=branch,
            head=head,
            base=base,
            series=meta.series,
            version=version,
            found=count,
            total=total,
            on_disk=series.version if series is not None else None,
        )
