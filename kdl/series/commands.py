"""The series on an llvm-project checkout: apply, check, status, revert, export.

The handlers of ``kdl apply|check|status|revert|export``. The work is done
in :mod:`kdl.series.apply` (apply, undone by :mod:`kdl.series.undo`),
:mod:`kdl.series.check` (check) and :mod:`kdl.series.export` (export), on top of
:mod:`kdl.series.checkout` (the checkout and its safety checks) and
:mod:`kdl.series.match` (which commits are the series'). Status and revert live
here.

Each command works with the series :mod:`kdl.series.choose` picks (the one
the branch carries, else the one made for the checkout's LLVM version) and
the proposals on top of it (by default the first ones the proposals' series
names, ``--proposals`` all, ``--posting-stack`` none), and says which in one
line; ``--series FILE`` picks another. Export writes each patch next to the
series file it belongs to.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kdl import proc
from kdl.errors import GitError
from kdl.series.checkout import Checkout
from kdl.series.choose import (
    ALL_PROPOSALS,
    POSTING_STACK,
    Choice,
    announce,
    choose,
    shown,
)
from kdl.series.diagnose import made_against
from kdl.series.match import (
    BranchMeta,
    Commit,
    Match,
    PatchInfo,
    classify,
)
from kdl.series.model import (
    Series,
    load,
    normalize_subject,
    patch_range,
    with_proposals,
)

_STATE_NOTE = {
    "applied": "",
    "stale": "patches/ changed since: 'kdl revert' + 'kdl apply' takes it",
    "edited": "edited on the branch: 'kdl export' writes it to patches/",
    "missing": "",
}


def chosen(
    args: argparse.Namespace, *, check_version: bool = False, json: bool = False
) -> Choice:
    """The series for ``args.llvm`` (announced in one line: on stderr where
    stdout is a JSON document)."""
    flag = None
    if getattr(args, "posting_stack", False):
        flag = POSTING_STACK
    elif getattr(args, "proposals", False):
        flag = ALL_PROPOSALS
    choice = choose(
        args.llvm,
        getattr(args, "series", None),
        check_version=check_version,
        proposals=flag,
    )
    announce(choice, to_stderr=json)
    return choice


def chosen_file(args: argparse.Namespace) -> Path:
    """The stack's series file for ``args.llvm`` (range-diff works on one
    series file, the stack's, whatever goes on top of it)."""
    return chosen(args).file


def series_of(choice: Choice) -> Series:
    """The stack of *choice* with the proposals it puts on top."""
    series = load(choice.file)
    if choice.proposals and choice.proposals_file is not None:
        series = with_proposals(series, load(choice.proposals_file), choice.proposals)
    return series


def _series(args: argparse.Namespace, **kwargs: bool) -> Series:
    return series_of(chosen(args, **kwargs))


def parts_of(choice: Choice, series: Series) -> list[tuple[str, int]]:
    """The series files *series* is made of, as shown, and how many of its
    patches each gives, in order: the stack, then the proposals on it."""
    if not choice.proposals or choice.proposals_file is None:
        return [(shown(choice.file), len(series.patches))]
    top = f"{shown(choice.proposals_file)} {patch_range(choice.proposals)}"
    stack = len(series.patches) - choice.proposals
    return [(shown(choice.file), stack), (top, choice.proposals)]


def _in_words(counts: list[tuple[str, int]]) -> str:
    """``17 of patches/release-22.x/series and 2 of patches/proposals/series 1-2``."""
    return " and ".join(f"{n} of {what}" for what, n in counts)


def cmd_apply(args: argparse.Namespace) -> int:
    from kdl.series.apply import apply_series

    return apply_series(
        args.llvm,
        _series(args, check_version=True),
        branch=args.branch,
        base=args.base,
        keep_conflicts=args.keep_conflicts,
        recover_only=args.recover,
    )


def cmd_check(args: argparse.Namespace) -> int:
    from kdl.series.check import check_series, what_apply_does

    series = _series(args, check_version=True)
    label, results = check_series(args.llvm, series, args.base)
    print(f"checking {len(results)} patches of '{series.name}' against {label}")
    for patch, r in zip(series.patches, results, strict=True):
        what = "applies cleanly" if r.state == "clean" else f"{r.state}: {r.detail}"
        print(f"  {r.name}: {what}")
        if r.in_the_way:
            listed = ", ".join(r.in_the_way)
            print(f"    would overwrite untracked {listed} (kdl apply refuses)")
        if r.state == "fails":
            recorded = {f.path: f for f in patch.files if not f.is_new}
            for path in r.files:
                if path in recorded:
                    print(f"    {path}: made against {made_against(recorded[path])}")
            print("    (the patches after it are checked without it)")
    ok = sum(r.applies for r in results)
    does = what_apply_does(results)
    if args.base is None:
        # On a kdl branch the patches are checked against its base; apply
        # skips those the branch carries already, so say so, as apply would.
        doc = series_status(args.llvm, series)
        on = sum(p["state"] == "applied" for p in doc["patches"])
        if doc["kdl_branch"] and on:
            left = len(results) - on
            does = (
                f"{on} of them are on {doc['branch']} already, so kdl apply would "
                + (f"apply the other {left}" if left else "apply none")
            )
    print(
        f"check: {ok} of {len(results)} patches apply on their own; "
        f"{does}; the checkout was not changed"
    )
    return 0 if ok == len(results) else 1


# --- status ---------------------------------------------------------------------


def series_status(
    llvm: Path, series: Series, parts: list[tuple[str, int]] | None = None
) -> dict[str, Any]:
    """Which patches are on the current branch, and where it stands; *parts*
    (:func:`parts_of`) says which series file each patch is of."""
    with Checkout(llvm) as co:
        branch = co.current_branch()
        meta = co.meta(branch) if branch else None
        infos = co.patch_infos(series)
        doc: dict[str, Any] = {
            "checkout": str(co.root),
            "branch": branch,
            "head": co.head(),
            "series": series.name,
            "kdl_branch": meta is not None,
        }
        if meta is not None:
            base = co.effective_base(meta)
            commits = co.commits(base, "HEAD")
            matches = classify(infos, commits, meta.applied)
            doc["base"] = {"commit": base, "recorded": meta.base, "ref": meta.base_ref}
            doc["ahead"] = len(commits)
            doc["behind"] = _behind(co, meta)
        else:
            matches = _recent_matches(co, infos)
            doc["base"] = None
            doc["ahead"] = doc["behind"] = None
    by_patch = {m.patch.name: m for m in matches if m.patch is not None}
    parts = parts or [(shown(series.path), len(infos))]
    of = [what for what, n in parts for _ in range(n)]
    doc["series_files"] = [{"series": what, "patches": n} for what, n in parts]
    doc["patches"] = [
        {
            "name": i.name,
            "series": of[k] if k < len(of) else of[-1],
            "subject": i.subject,
            "state": by_patch[i.name].state if i.name in by_patch else "missing",
            "commit": by_patch[i.name].commit.sha if i.name in by_patch else None,
        }
        for k, i in enumerate(infos)
    ]
    doc["other_commits"] = [
        {"commit": m.commit.sha, "subject": m.commit.subject}
        for m in matches
        if not m.ours
    ]
    return doc


def _behind(co: Checkout, meta: BranchMeta) -> int | None:
    """How many commits the base ref has gained that the branch lacks."""
    if not meta.base_ref:
        return None
    status, out, _ = co.attempt(
        "rev-list", "--count", f"{meta.branch}..{meta.base_ref}"
    )
    return int(out) if status == 0 else None


def _recent_matches(
    co: Checkout, infos: list[PatchInfo], depth: int = 100
) -> list[Match]:
    """On a branch kdl did not make: the series' commits among the last *depth*."""
    subjects = {i.subject for i in infos}
    rows = co.run("log", f"-n{depth + len(infos)}", "--format=%H%x00%P%x00%s")
    commits: list[Commit] = []
    for row in reversed(rows.splitlines()):
        sha, parents, subject = row.split("\0")
        if parents and normalize_subject(subject) in subjects:
            commits += co.commits(f"{sha}^", sha)
    return [m for m in classify(infos, commits) if m.ours]


def cmd_status(args: argparse.Namespace) -> int:
    choice = chosen(args, json=args.json)
    series = series_of(choice)
    doc = series_status(args.llvm, series, parts_of(choice, series))
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    where = doc["branch"] or f"detached HEAD {doc['head'][:12]}"
    if doc["kdl_branch"]:
        base = doc["base"]
        ref = base["ref"]
        rebased = " (rebased since apply)" if base["commit"] != base["recorded"] else ""
        behind = f", {doc['behind']} behind {ref}" if doc["behind"] is not None else ""
        ahead = f"{doc['ahead']} commit(s) ahead"
        print(f"{where}: base {base['commit'][:12]}{rebased}, {ahead}{behind}")
    else:
        print(
            f"{where}: not a branch made by kdl apply (series commits found by subject)"
        )
    several = len(doc["series_files"]) > 1
    heading = None
    for p in doc["patches"]:
        if several and p["series"] != heading:
            heading = p["series"]
            print(f"  {heading}:")
        commit = (p["commit"] or "")[:12]
        note = _STATE_NOTE[p["state"]]
        print(
            f"  {p['state']:<8} {p['name']}  {commit}" + (f"  ({note})" if note else "")
        )
    for c in doc["other_commits"]:
        print(f"  other    {c['commit'][:12]} {c['subject']}")
    counts = {s: sum(p["state"] == s for p in doc["patches"]) for s in _STATE_NOTE}
    line = "status: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    if several:
        applied = [
            (
                f["series"],
                sum(
                    p["state"] == "applied" and p["series"] == f["series"]
                    for p in doc["patches"]
                ),
            )
            for f in doc["series_files"]
        ]
        line += f" ({_in_words(applied)} applied)"
    print(line)
    return 0


# --- revert ---------------------------------------------------------------------


def revert_series(
    llvm: Path,
    series: Series,
    force: bool = False,
    parts: list[tuple[str, int]] | None = None,
) -> int:
    """Reset the current kdl branch to its base, dropping only our commits
    (those of every series file in *parts*: the stack and the proposals).

    Not while an apply runs (its lock) or left a journal to undo."""
    from kdl.series.journal import JOURNAL
    from kdl.series.undo import apply_lock

    with Checkout(llvm) as co, apply_lock(co):
        if (co.git_dir / JOURNAL).exists():
            raise GitError(
                f"{co.root}: an interrupted kdl apply left {co.git_dir / JOURNAL}; "
                "'kdl apply --recover' undoes it first"
            )
        co.refuse_in_progress()
        co.refuse_dirty("reverting")
        branch, meta = co.kdl_branch()
        base = co.effective_base(meta)
        matches = classify(
            co.patch_infos(series), co.commits(base, "HEAD"), meta.applied
        )
        if not matches:
            print(f"{branch}: nothing to revert, it is at its base {co.short(base)}")
            return 0
        keep = [m for m in matches if m.state in ("foreign", "edited")]
        if keep and not force:
            listed = "; ".join(
                f"{m.commit.sha[:12]} {m.commit.subject}" for m in keep[:3]
            )
            if any(not m.ours for m in keep):
                raise GitError(
                    f"{branch} has commits that are not the series' ({listed}): "
                    "work of yours on it goes to patches/ with 'kdl export'; "
                    "commits of another series or an earlier version of this "
                    "one go with 'kdl revert --force'"
                )
            raise GitError(
                f"{branch} has edits not exported ({listed}); 'kdl export' "
                "writes them to patches/, 'kdl revert --force' drops them"
            )
        if proc.DRY_RUN:
            print(f"would run: git reset --keep {base} (in {co.root}, on {branch})")
            return 0
        old = co.head()
        co.run("reset", "--quiet", "--keep", base)
        co.clear_applied(branch)
        if base != meta.base:
            co.write_meta(branch, base, meta.base_ref, meta.series)
        for m in matches:
            what = (
                m.patch.name if m.patch else f"{m.commit.subject} (not in the series)"
            )
            print(f"  dropped {m.commit.sha[:12]} {what}")
        if parts and len(parts) > 1:
            dropped = {m.patch.name for m in matches if m.patch is not None}
            counts, start = [], 0
            for what, n in parts:
                own = {p.listed_as for p in series.patches[start : start + n]}
                counts.append((what, len(dropped & own)))
                start += n
            print(f"  dropped {_in_words(counts)}")
        print(
            f"{branch} is back at its base {co.short(base)} (it was at "
            f"{co.short(old)}; 'git reset --keep {co.short(old)}' undoes this)"
        )
    return 0


def cmd_revert(args: argparse.Namespace) -> int:
    choice = chosen(args)
    series = series_of(choice)
    return revert_series(
        args.llvm, series, force=args.force, parts=parts_of(choice, series)
    )


def cmd_range_diff(args: argparse.Namespace) -> int:
    from kdl.series.versions import cmd_range_diff

    return cmd_range_diff(args.llvm, chosen_file(args), args.old, args.new)


def cmd_export(args: argparse.Namespace) -> int:
    from kdl.series.export import export_series, export_stack_and_proposals

    choice = chosen(args)
    message = getattr(args, "message", None)
    if choice.proposals and choice.proposals_file is not None:
        return export_stack_and_proposals(
            args.llvm, choice.file, choice.proposals_file, choice.proposals, message
        )
    return export_series(args.llvm, choice.file, message)
