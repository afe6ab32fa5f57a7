"""Which commits of a branch are the series' patches.

A patch file and a commit are the same change when ``git patch-id
--stable`` says so, or when ``kdl apply`` recorded that it made that commit
from that file (git may lay a diff out differently once it is applied: at
another base, or where the patch file was written with other settings).
A commit that carries a patch's subject but neither id is that patch,
edited (on the branch, or in patches/ since apply).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kdl.series.model import Patch

_DIFF = re.compile(rb"^diff --git a/\S+ b/(\S+)\n(new file mode )?", re.MULTILINE)
_FAILED = re.compile(
    r"(?:patch failed: (\S+):\d+|^error: (\S+): (?:does not exist in index|"
    r"already exists in (?:index|working directory)|patch does not apply)|"
    r"Merge conflict in (\S+)|Applied patch to '(\S+)' with conflicts|"
    r"sha1 information is lacking or useless \((\S+)\)|"
    r"invalid object \d+ [0-9a-f]+ for '(\S+)')",
    re.MULTILINE,
)


def diff_files(patch: bytes) -> dict[str, bool]:
    """The files a patch's diff touches, in order: path -> the patch creates it."""
    return {m.group(1).decode(): m.group(2) is not None for m in _DIFF.finditer(patch)}


def failed_paths(output: str) -> list[str]:
    """The files git apply / git am name as not applying or in conflict."""
    found = [next(g for g in m.groups() if g) for m in _FAILED.finditer(output)]
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class PatchInfo:
    """A patch of the series with what git says about it."""

    patch: Patch
    patch_id: str
    subject: str
    creates: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.patch.listed_as


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    patch_id: str | None  # None for a merge or an empty commit
    is_merge: bool = False


@dataclass(frozen=True)
class Match:
    """One commit after the base, and which patch of the series it is.

    ``state`` is ``applied`` (the patch file's patch-id, or the commit kdl
    apply made from that very file), ``stale`` (kdl applied it, and the patch
    file changed since), ``edited`` (it carries a patch's subject but was
    changed on the branch and not exported) or ``foreign`` (not the series').
    """

    commit: Commit
    state: str
    patch: PatchInfo | None

    @property
    def ours(self) -> bool:
        return self.state != "foreign"


@dataclass(frozen=True)
class BranchMeta:
    """What ``kdl apply`` recorded about a branch it made."""

    branch: str
    base: str
    base_ref: str | None
    series: str
    #: (patch-id of the file, patch-id of the commit apply made from it):
    #: git may lay a diff out differently from the patch file once it is
    #: applied (another base, another diff heuristic), so the pair is kept.
    applied: tuple[tuple[str, str], ...]


def classify(
    infos: list[PatchInfo],
    commits: list[Commit],
    applied: tuple[tuple[str, str], ...] = (),
) -> list[Match]:
    """Match each commit to at most one patch, by patch-id, then by subject."""
    by_id = {i.patch_id: i for i in infos}
    by_subject = {i.subject: i for i in infos}
    made = {commit_id for _, commit_id in applied}
    taken: set[str] = set()
    matches: list[Match] = []
    for c in commits:
        pid = c.patch_id or ""
        info = by_id.get(pid) or next(
            (i for i in infos if (i.patch_id, pid) in applied), None
        )
        if pid and info is not None and info.name not in taken and not c.is_merge:
            state = "applied"
        else:
            info = by_subject.get(c.subject)
            if info is None or info.name in taken or c.is_merge:
                matches.append(Match(c, "foreign", None))
                continue
            state = "stale" if pid in made else "edited"
        taken.add(info.name)
        matches.append(Match(c, state, info))
    return matches
