"""``kdl check``: how each patch of the series would apply, changing nothing.

The patches are applied, one after the other, to a temporary index read
from the base (``GIT_INDEX_FILE``): the user's index, HEAD, branches and
work tree are never touched (git may add objects to the object store, as
any ``git apply --3way`` does). Each patch is classified the way ``kdl
apply`` (``git am -3``) would meet it:

``clean``, ``offset`` (hunks found a few lines away), ``3-way`` (the context
changed but a 3-way merge with the patch's recorded base blobs is clean),
``already applied`` (the reverse applies), ``fuzz N`` (only ``git apply
-C<3-N>`` places it: ``git am`` would stop there) or ``fails``.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kdl.series.checkout import Checkout
from kdl.series.diagnose import NO_BLOBS, explain
from kdl.series.match import PatchInfo, failed_paths
from kdl.series.model import Series

#: States ``kdl apply`` gets through without help.
APPLIES = ("clean", "offset", "3-way", "already applied")

_OFFSET = re.compile(r"\(offset (-?\d+) lines?\)")


@dataclass
class CheckResult:
    name: str
    state: str
    detail: str = ""
    files: list[str] = field(default_factory=list)
    in_the_way: list[str] = field(default_factory=list)

    @property
    def applies(self) -> bool:
        return self.state in APPLIES and not self.in_the_way


def default_base(co: Checkout) -> tuple[str, str]:
    """The base to check against: a kdl branch's recorded base, else HEAD."""
    branch = co.current_branch()
    meta = co.meta(branch) if branch else None
    if meta is not None:
        return meta.base, f"the base of {branch}"
    return co.head(), co.describe_head()


def check_series(
    llvm: Path, series: Series, base: str | None = None
) -> tuple[str, list[CheckResult]]:
    """Classify every patch; return (what was checked against, results)."""
    with Checkout(llvm) as co:
        if base is None:
            base_sha, label = default_base(co)
        else:
            base_sha, label = co.rev(base), base
        label = f"{co.short(base_sha)} ({label})"
        infos = co.patch_infos(series)
        results = []
        with tempfile.TemporaryDirectory(prefix="kdl-check-") as tmp:
            index = Path(tmp) / "index"
            saved = Path(tmp) / "index.before"
            env = {"GIT_INDEX_FILE": str(index)}
            co.run("read-tree", base_sha, env=env)
            for info in infos:
                shutil.copyfile(index, saved)
                result = _check_one(co, info, env, index, saved)
                result.in_the_way = co.untracked_in_the_way(list(info.creates))
                results.append(result)
    return label, results


def _check_one(
    co: Checkout, info: PatchInfo, env: dict[str, str], index: Path, saved: Path
) -> CheckResult:
    patch = str(info.patch.path)

    def attempt(*args: str) -> tuple[bool, str]:
        status, _, err = co.attempt("apply", "--cached", *args, patch, env=env)
        if status != 0:
            shutil.copyfile(saved, index)
        return status == 0, err

    ok, err = attempt("-v")
    if ok:
        offsets = [abs(int(n)) for n in _OFFSET.findall(err)]
        if offsets:
            return CheckResult(
                info.name, "offset", f"hunks moved by up to {max(offsets)} lines"
            )
        return CheckResult(info.name, "clean")
    files = failed_paths(err) or info.patch.diff_files()
    if attempt("--check", "-R")[0]:
        return CheckResult(
            info.name, "already applied", "the base has it (kdl apply makes no commit)"
        )
    ok, err3 = attempt("--3way")
    if ok:
        return CheckResult(
            info.name,
            "3-way",
            f"context changed in {', '.join(files)}; merges cleanly",
            files,
        )
    for context in (2, 1):
        if attempt(f"-C{context}")[0]:
            return CheckResult(
                info.name,
                f"fuzz {3 - context}",
                f"only with {3 - context} context line(s) ignored in "
                f"{', '.join(files)}: git am -3 stops here",
                files,
            )
    conflicts = failed_paths(err3)
    if NO_BLOBS.search(err3):
        detail = explain(co, info.patch, files, err3).text
    elif conflicts:
        detail = f"3-way merge conflicts in {', '.join(conflicts)}"
    else:
        detail = f"does not apply to {', '.join(files)}"
    return CheckResult(info.name, "fails", detail, conflicts or files)


def what_apply_does(results: list[CheckResult]) -> str:
    """What ``kdl apply`` would do with these results: it is all or nothing,
    so the first patch that does not apply stops it with nothing applied."""
    first = next((r for r in results if not r.applies), None)
    if first is None:
        return f"kdl apply would apply all {len(results)}"
    why = "would overwrite untracked files" if first.in_the_way else first.state
    return (
        f"kdl apply would stop at {first.name} ({why}) and apply none of them "
        "(it is all or nothing)"
    )
