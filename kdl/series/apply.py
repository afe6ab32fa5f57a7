"""``kdl apply``: put the series on a branch of an llvm-project checkout.

All or nothing. Every patch becomes one commit (``git am -3``: subject,
body and date kept), authored by the checkout's git user (``git var
GIT_AUTHOR_IDENT``): LLVM takes commits under the contributor's own public
address, so a GitHub noreply address gets a warning. A patch that does not
apply, an error, or Ctrl-C undoes the whole run (:mod:`kdl.series.undo`):
the branch back where it was (or deleted, if this run created it) and the
original HEAD checked out again. git runs out of reach of the terminal's
Ctrl-C: the running git step always ends whole, then the run is undone;
further Ctrl-Cs do not stop the undo halfway. Every change is written to a
journal first (:mod:`kdl.series.journal`), so a run killed outright is undone
by the next one, which touches nothing if anything of the user's changed
since.

A branch is kdl's when ``git config branch.<name>.kdlBase`` is set and every
commit after that base is one of the series' patches (by ``git patch-id
--stable``, or by subject for a patch edited since). Running apply again on
such a branch applies only what is missing and changes nothing otherwise.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kdl import proc
from kdl.errors import GitError, WorkspaceError
from kdl.series.checkout import Checkout
from kdl.series.diagnose import explain, made_against
from kdl.series.gitstate import Interrupted, last_line
from kdl.series.match import Match, PatchInfo, classify, diff_files, failed_paths
from kdl.series.model import FileBase, Series, patch_range, split_recorded
from kdl.series.undo import Start, Undo, apply_lock, deferred_sigint

#: ``git am`` with every setting that could change the commits pinned.
AM_ARGS = [
    "am",
    "--3way",
    "--keep-non-patch",  # strip [PATCH n/m] only, keep [Object][Offload] tags
    "--no-message-id",
    "--no-scissors",
    "--no-keep-cr",
    "--no-signoff",
    "--patch-format=mbox",
]


@dataclass(frozen=True)
class _Plan:
    """What an apply run starts from and has to do."""

    branch: str
    start: Start
    base: str
    base_ref: str | None
    infos: list[PatchInfo]
    matches: list[Match]  # the branch's commits, when it exists
    #: The series the existing branch records (kdl apply --proposals on the
    #: stack's branch changes it).
    recorded: str | None = None

    @property
    def done(self) -> dict[str, Match]:
        return {m.patch.name: m for m in self.matches if m.patch is not None}

    @property
    def pending(self) -> list[PatchInfo]:
        return [i for i in self.infos if i.name not in self.done]

    @property
    def base_label(self) -> str:
        return self.base[:12] + (f" ({self.base_ref})" if self.base_ref else "")


def apply_series(
    llvm: Path,
    series: Series,
    *,
    branch: str | None = None,
    base: str | None = None,
    keep_conflicts: bool = False,
    recover_only: bool = False,
    replace_stale: bool = False,
) -> int:
    """Apply *series* to the checkout at *llvm*; print one line per patch.

    With *replace_stale* (a tree kdl owns), a branch that holds an older
    text of a patch than patches/ (kdl applied it, the file changed since,
    its name and the series' version alike) is refused with a GitError
    instead of being kept as "already applied", so that the caller reverts
    and applies again rather than builds the older text.

    One apply runs per checkout at a time (a lock in its git directory). A
    run killed outright leaves a journal, and the next run (or
    ``--recover`` alone) first puts the checkout back where that run
    started."""
    with Checkout(llvm, shield=True) as co, apply_lock(co):
        recover_interrupted(co)
        if recover_only:
            return 0
        # The proposals go on the stack's branch.
        stack = split_recorded(series.name)[0]
        plan = _plan(co, series, branch or f"kdl/{stack}", base)
        stale = next((m.patch for m in plan.matches if m.state == "stale"), None)
        if replace_stale and stale:
            raise GitError(
                f"{plan.branch} has an older text of {stale.name} than patches/; "
                "'kdl revert' and apply again"
            )
        print(
            f"applying {len(plan.infos)} patches of '{series.name}' to "
            f"{plan.branch}, base {plan.base_label}"
        )
        if proc.DRY_RUN:
            _print_plan(co, plan)
            return 0
        applied, in_base = _execute(co, plan, series, keep_conflicts)
        already = len(plan.infos) - len(plan.pending)
        start = plan.start
        moved = "" if start.branch == plan.branch else f"; switched from {start.label}"
        in_base_note = f", {in_base} already in the base" if in_base else ""
        print(
            f"{plan.branch}: {applied} applied, {already} already applied"
            f"{in_base_note}{moved}"
        )
        differ = [m for m in plan.matches if m.state in ("stale", "edited")]
        if differ:
            print(
                f"note: {len(differ)} commit(s) differ from patches/: 'kdl export' "
                "takes the branch's version, 'kdl revert' + 'kdl apply' takes patches/"
            )
    return 0


def recover_interrupted(co: Checkout) -> None:
    """Undo what a killed apply left behind, from its journal."""
    undo = Undo.left_behind(co)
    if undo is None:
        return
    if proc.DRY_RUN:
        print(f"would undo an interrupted kdl apply on {undo.branch}")
        return
    with deferred_sigint() as interrupted:
        message = undo.undo()
    print(f"recovered from an interrupted kdl apply: {message}", flush=True)
    if interrupted():
        raise Interrupted("interrupted after the recovery")


def _plan(co: Checkout, series: Series, branch: str, base: str | None) -> _Plan:
    """Check that apply may run, and work out what it has to do."""
    co.check_branch_name(branch)
    co.refuse_in_progress()
    co.refuse_lost_detached_head()
    co.refuse_dirty("applying the series")
    co.refuse_unknown_identity()
    infos = co.patch_infos(series)
    exists = co.branch_exists(branch)
    start = Start(co.current_branch(), co.head(), co.rev(branch) if exists else None)
    recorded = None
    if exists:
        base_sha, base_ref, matches, recorded = _existing_branch(
            co, branch, base, infos, series.name
        )
    else:
        base_sha = co.rev(base or "HEAD")
        ref = co.attempt("rev-parse", "--abbrev-ref", base or "HEAD")[1].strip()
        base_ref = ref if ref and ref != "HEAD" else None
        marker = "llvm/include/llvm/Object/OffloadBinary.h"
        if co.attempt("cat-file", "-e", f"{base_sha}:{marker}")[0] != 0:
            raise WorkspaceError(
                f"{base or 'HEAD'} ({co.short(base_sha)}) has no {marker}: "
                "not an llvm-project revision the series can apply to"
            )
        matches = []
    plan = _Plan(branch, start, base_sha, base_ref, infos, matches, recorded)
    _refuse_out_of_order(infos, plan.done, plan.pending)
    in_the_way = co.untracked_in_the_way([f for i in plan.pending for f in i.creates])
    if in_the_way:
        raise GitError(
            f"{co.root}: the series creates {', '.join(in_the_way)}, which "
            "already exist(s) untracked in the work tree; move them away first"
        )
    return plan


#: The From: header of a mail, with its folded continuation lines.
_FROM = re.compile(r"^From: .*(?:\n[ \t].*)*$", re.MULTILINE)
_IDENT = re.compile(r"^(?P<who>.*<[^<>]*>) \d+ [+-]\d{4}$")
#: Addresses LLVM's email check (llvm/.github) asks contributors to replace.
NOREPLY = re.compile(r"@users\.noreply\.github\.com>$|noreply", re.IGNORECASE)


def author_ident(co: Checkout) -> str:
    """``Name <email>`` of the checkout's git user, the author of applied commits."""
    out = co.run("var", "GIT_AUTHOR_IDENT").strip()
    m = _IDENT.match(out)
    if not m:
        raise GitError(f"{co.root}: git var GIT_AUTHOR_IDENT gave {out!r}")
    return m["who"]


def as_authored_by(patch_text: str, who: str) -> str:
    """*patch_text* with the From: header of its mail replaced by *who*."""
    head, sep, rest = patch_text.partition("\n\n")
    if not _FROM.search(head):
        return patch_text
    return _FROM.sub(lambda _: f"From: {who}", head, count=1) + sep + rest


def _execute(
    co: Checkout, plan: _Plan, series: Series, keep_conflicts: bool
) -> tuple[int, int]:
    """Run the apply; return (patches applied, patches already in the base)."""
    applied = in_base = 0
    conflict: tuple[PatchInfo, list[str], str] | None = None
    who = author_ident(co)
    if NOREPLY.search(who):
        print(
            f"warning: commits are authored by {who}; LLVM asks for a public "
            "address (set user.email in the checkout)",
            flush=True,
        )
    with (
        deferred_sigint() as interrupted,
        tempfile.TemporaryDirectory(prefix="kdl-am-") as scratch,
    ):
        mails = Path(scratch)
        run = Undo.begin(co, plan.start, plan.branch)
        step = run.journal.record
        try:
            if run.created:
                step("create", at=plan.base)
                co.run(
                    "checkout", "--quiet", "--no-track", "-b", plan.branch, plan.base
                )
                co.write_meta(plan.branch, plan.base, plan.base_ref, series.name)
            elif plan.start.branch != plan.branch:
                step("switch", to=plan.branch)
                co.run("checkout", "--quiet", plan.branch)
            for info in plan.infos:
                if info.name in plan.done:
                    _print_done(plan.done[info.name])
                    continue
                if interrupted():
                    break
                before = co.head()
                text = info.patch.path.read_text(errors="replace")
                mail = mails / info.patch.path.name
                mail.write_text(as_authored_by(text, who))
                files = list(diff_files(text.encode(errors="replace")))
                step(
                    "am",
                    patch=info.name,
                    subject=info.subject,
                    patch_id=info.patch_id,
                    files=files,
                    **{"from": before},
                )
                status, out, err = co.attempt(*AM_ARGS, str(mail))
                if interrupted():
                    break
                if status != 0:
                    found = _conflict_files(co, f"{out}\n{err}")
                    if not found:  # a hook, a broken patch: not a conflict
                        raise GitError(
                            f"git am of {info.name} failed: {last_line(err or out)}"
                        )
                    print(f"  {info.name}: conflict", flush=True)
                    conflict = (info, found, err)
                    break
                if co.head() == before:  # "No changes -- Patch already applied."
                    step("commit", patch=info.name, head=before)
                    print(f"  {info.name}: already in the base, no commit made")
                    in_base += 1
                    continue
                step("commit", patch=info.name, head=co.head())
                made = co.commits("HEAD^", "HEAD")[0].patch_id or ""
                co.add_applied(plan.branch, info.patch_id, made)
                applied += 1
                how = " (3-way merge)" if "3-way merge" in out + err else ""
                print(f"  {info.name}: applied{how}", flush=True)
        except Interrupted:
            raise Interrupted(f"interrupted: {_undo(run)}") from None
        except WorkspaceError as exc:
            raise GitError(f"{exc}\n  {_undo(run)}") from exc
        if interrupted():
            raise Interrupted(f"interrupted: {_undo(run)}")
        if conflict and not keep_conflicts:
            info, found, err = conflict
            am = run.journal.running_am()
            undone = _undo(run, written=found + (am["files"] if am else []))
            raise GitError(
                _conflict_message(
                    co,
                    series=series,
                    info=info,
                    files=found,
                    base_label=plan.base_label,
                    stderr=err,
                    undone=undone,
                )
            )
    if conflict:
        # The user takes over the merge: nothing for a later run to undo.
        run.forget()
        info, found, _ = conflict
        left = len(plan.pending) - applied - in_base - 1
        raise GitError(_kept_message(co, run, info, found, left))
    if not run.created and plan.recorded != series.name:
        # The stack's branch now carries the proposals too, or no longer.
        co.run("config", "--local", f"branch.{plan.branch}.kdlSeries", series.name)
    run.forget()
    return applied, in_base


def _undo(run: Undo, written: list[str] | None = None) -> str:
    """Undo *run*; what to tell the user, also when the undo stopped."""
    try:
        return run.undo(written or ())
    except Interrupted:
        raise
    except WorkspaceError as exc:
        return f"not undone: {exc}"


def _print_plan(co: Checkout, plan: _Plan) -> None:
    """``--dry-run``: the git commands apply would run."""
    if plan.start.target_tip is None:
        print(f"would run: git checkout --no-track -b {plan.branch} {plan.base}")
    elif plan.start.branch != plan.branch:
        print(f"would run: git checkout {plan.branch}")
    for info in plan.infos:
        if info.name in plan.done:
            _print_done(plan.done[info.name])
        else:
            print(f"would run: {proc.quote(['git', *AM_ARGS, info.patch.path])}")
    print(f"(in {co.root}; nothing was changed)")


def _existing_branch(
    co: Checkout, branch: str, base: str | None, infos: list[PatchInfo], wanted: str
) -> tuple[str, str | None, list[Match], str]:
    meta = co.meta(branch)
    if meta is None:
        raise GitError(
            f"{co.root}: branch {branch} exists and was not made by kdl apply; "
            "pick another name with --branch"
        )
    if base is not None and co.rev(base) not in (meta.base, co.effective_base(meta)):
        raise GitError(
            f"{co.root}: {branch} is based on {co.short(meta.base)}, not {base}; "
            "use another --branch, or 'kdl revert' and 'git branch -D' it first"
        )
    base_sha = co.effective_base(meta)
    matches = classify(infos, co.commits(base_sha, branch), meta.applied)
    foreign = [m.commit for m in matches if not m.ours]
    if foreign:
        _refuse_fewer_proposals(branch, meta.series, wanted)
        listed = "; ".join(f"{c.sha[:12]} {c.subject}" for c in foreign[:3])
        raise GitError(
            f"{co.root}: {branch} has commits that are not the series' ({listed}); "
            "pick another name with --branch"
        )
    return base_sha, meta.base_ref, matches, meta.series


def _refuse_fewer_proposals(branch: str, recorded: str, wanted: str) -> None:
    """Refuse, in one line, to apply fewer proposals than the branch
    carries (apply adds commits; it never drops the proposals on top)."""
    _, on_top = split_recorded(recorded)
    _, want = split_recorded(wanted)
    if on_top == 0 or want is None or (on_top is not None and on_top <= want):
        return
    carried = (
        "all the proposals" if on_top is None else f"proposals {patch_range(on_top)}"
    )
    raise GitError(
        f"{branch} carries {carried} on top of the stack ({recorded}), more "
        "than this apply takes; 'kdl revert' first, then apply again "
        "(--posting-stack: the stack alone)"
    )


def _refuse_out_of_order(
    infos: list[PatchInfo], done: dict[str, Match], pending: list[PatchInfo]
) -> None:
    if not pending or not done:
        return
    last_done = max(i for i, info in enumerate(infos) if info.name in done)
    first_pending = infos.index(pending[0])
    if first_pending < last_done:
        raise GitError(
            f"the branch has {infos[last_done].name} but not {pending[0].name}; "
            "'kdl revert' and apply again"
        )


def _print_done(match: Match) -> None:
    assert match.patch is not None
    how = {
        "applied": "already applied",
        "stale": "already applied (an older version: patches/ changed since)",
        "edited": "already applied (edited on the branch, not exported)",
    }[match.state]
    print(f"  {match.patch.name}: {how}")


def _conflict_files(co: Checkout, output: str) -> list[str]:
    """Files git left unmerged or named as not applying."""
    status, out, _ = co.attempt("diff", "--name-only", "--diff-filter=U")
    unmerged = out.split() if status == 0 else []
    return list(dict.fromkeys(unmerged + failed_paths(output)))


def _conflict_message(
    co: Checkout,
    *,
    series: Series,
    info: PatchInfo,
    files: list[str],
    base_label: str,
    stderr: str,
    undone: str,
) -> str:
    cause = explain(co, info.patch, files, stderr)
    lines = [f"{info.name} does not apply to {base_label}: {cause.text}"]
    recorded = {f.path: f for f in info.patch.files}
    for path in files:
        base = recorded.get(path) or FileBase(path, series.base_of(path))
        lines.append(f"  {path}: the patch was made against {made_against(base)}")
    lines += [f"  git: {e}" for e in stderr.splitlines() if e.startswith("error:")][:3]
    lines.append(f"  {undone}")
    if cause.merge_helps:
        retry = proc.quote(["kdl", "apply", "--llvm", str(co.root), "--keep-conflicts"])
        lines.append(f"  to finish a 3-way merge by hand, left in place: {retry}")
    return "\n".join(lines)


def _kept_message(
    co: Checkout, run: Undo, info: PatchInfo, files: list[str], remaining: int
) -> str:
    unmerged = co.attempt("diff", "--name-only", "--diff-filter=U")[1].split()
    how = (
        f"conflict markers are in {', '.join(unmerged)}; fix them, 'git add' them"
        if unmerged
        else "git could not merge it (are the base blobs in this repository? "
        "'git am --show-current-patch=diff' shows the patch); apply it by hand, "
        "'git add' the files"
    )
    give_up = " && ".join(run.recovery())
    return (
        f"{info.name} does not apply cleanly ({', '.join(files)}); it is left "
        f"in place on {run.branch}\n"
        f"  {how}, then 'git am --continue'; 'kdl apply' again applies the "
        f"{remaining} patch(es) after it\n"
        f"  to give up instead: {give_up}"
    )
