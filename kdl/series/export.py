"""``kdl export``: rewrite patches/ from the commits of a kdl branch.

The reverse of ``kdl apply``. Each commit after the branch's base becomes one
patch, written by ``git format-patch`` with every setting that could vary
between machines pinned (:data:`FORMAT_PATCH`): zero commit ids, no version
signature, full blob ids, fixed diff options, regardless of the user's git
config. A commit that is one of the series' patches keeps that patch's file
name; patches/series keeps its comments and, per patch, the recorded base of
every file still touched, lists newly touched files (``base PATH <branch
base>`` for upstream files, ``new PATH`` otherwise) and drops the rest.
Applying and exporting without edits reproduces patches/ byte for byte.

Versions, as b4 keeps them: when an export changes the patches, the series
as it was is kept as the git tag ``<series>-v<N>`` of the commit that holds
it (a copy under ``versions/v<N>/`` for a series outside git), a line is
added to ``CHANGELOG.md`` beside patches/series, and ``version:`` goes up.
No range-diff is stored: ``kdl range-diff`` makes one from any two versions
(:mod:`kdl.series.versions`).

A branch that carries proposals on top of the stack (what ``kdl apply``
applies by default) is written back to both series files: the commits up
to the stack's last patch to the stack's, those after it to the proposals'
(:func:`export_stack_and_proposals`); proposals the branch does not carry
stay as they are.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kdl import proc
from kdl.errors import GitError, WorkspaceError
from kdl.series.checkout import DIFF_OPTS, Checkout
from kdl.series.choose import index_files
from kdl.series.match import Match, classify, diff_files
from kdl.series.model import Block, Layout, Series, entries, is_borrowed, load

#: Settings git reads from config that would change format-patch's bytes.
CONFIG_PINS = [
    "diff.suppressBlankEmpty=false",
    "format.mboxrd=false",
    "i18n.logOutputEncoding=UTF-8",
    "core.quotePath=true",
]

FORMAT_PATCH = [
    "format-patch",
    "--zero-commit",
    "--no-signature",
    "--no-to",
    "--no-cc",
    "--no-add-header",
    "--no-thread",
    "--no-cover-letter",
    "--no-notes",
    "--no-from",
    "--no-base",
    "--no-attach",
    "--no-signoff",
    "--encode-email-headers",
    "--suffix=.patch",
    "--filename-max-length=64",
    "--start-number=1",
    *DIFF_OPTS,
]

_SUBJECT = re.compile(
    r"^Subject: \[(?P<prefix>[^\]]*?)(?: (?P<n>\d+)/\d+)?\]", re.MULTILINE
)


def format_patches(
    co: Checkout, rev_range: str, prefix: str = "PATCH", numbered: bool = True
) -> list[tuple[str, bytes]]:
    """``git format-patch`` of *rev_range* in kdl's fixed form: (name, bytes)."""
    with tempfile.TemporaryDirectory(prefix="kdl-export-") as tmp:
        co.run(
            *[a for pin in CONFIG_PINS for a in ("-c", pin)],
            *FORMAT_PATCH,
            f"--subject-prefix={prefix}",
            "--numbered" if numbered else "--no-numbered",
            "--output-directory",
            tmp,
            rev_range,
        )
        return [(p.name, p.read_bytes()) for p in sorted(Path(tmp).glob("*.patch"))]


def export_stack_and_proposals(
    llvm: Path,
    stack_file: Path,
    proposals_file: Path,
    count: int,
    message: str | None = None,
) -> int:
    """Export a branch that carries the first *count* patches of
    *proposals_file* on top of the stack of *stack_file*: the commits up to
    the stack's last patch to the stack's series, the rest to the
    proposals' (whose later patches stay as they are)."""
    stack = load(stack_file)
    with Checkout(llvm) as co:
        branch, meta = co.kdl_branch()
        base = co.effective_base(meta)
        commits = co.commits(base, "HEAD")
        matches = classify(co.patch_infos(stack), commits, meta.applied)
        ours = [i for i, m in enumerate(matches) if m.patch is not None]
        if not ours:
            raise WorkspaceError(
                f"{branch} carries none of the patches of {stack_file}: "
                "nothing to export"
            )
        boundary = commits[ours[-1]].sha
        on_top = len(commits) - ours[-1] - 1
    status = export_series(llvm, stack_file, message, end=boundary)
    if not on_top:
        print(f"{proposals_file}: none of its patches is on {branch}; unchanged")
        return status
    return (
        export_series(llvm, proposals_file, message, start=boundary, carried=count)
        or status
    )


def export_series(
    llvm: Path,
    series_file: Path,
    message: str | None = None,
    *,
    start: str | None = None,
    end: str = "HEAD",
    carried: int | None = None,
) -> int:
    """Rewrite *series_file* from the commits of the kdl branch between its
    base (or *start*) and *end*. With *carried*, the branch carries only the
    first *carried* patches of the series: the others stay as they are."""
    series = load(series_file)
    total = len(series.patches)
    if carried is not None and carried < total:
        series = _first(series, carried)
    # The files as they are before the export, read once: compared with what
    # format-patch writes, kept as the old version, checked before writing.
    before = {p.path: p.read() for p in series.patches}
    before[series.path] = series.path.read_bytes()
    with Checkout(llvm) as co:
        co.refuse_in_progress()
        co.require_configured_identity()
        branch, meta = co.kdl_branch()
        base = start or co.effective_base(meta)
        commits = co.commits(base, end)
        if not commits:
            raise WorkspaceError(
                f"{branch} has no commits after its base {co.short(base)}: "
                "nothing to export"
            )
        merges = [c.sha[:12] for c in commits if c.is_merge]
        if merges:
            raise WorkspaceError(
                f"{branch} has merge commits ({', '.join(merges)}); "
                "a patch series cannot hold them"
            )
        if co.tracked_changes():
            print(f"note: uncommitted changes in {co.root} are not exported")
        matches = classify(co.patch_infos(series), commits, meta.applied)
        prefix, numbered = _subject_style(series, len(commits))
        generated = format_patches(co, f"{base}..{end}", prefix, numbered)
        if len(series.patches) < total and numbered:
            # Numbered out of the whole series, as the patches left are.
            extra = total - len(series.patches)
            generated = [(n, _renumber(d, len(commits) + extra)) for n, d in generated]
        if len(generated) != len(commits):
            raise GitError(
                f"format-patch wrote {len(generated)} patches "
                f"for {len(commits)} commits"
            )
        names, contents = _names(matches, generated, before)
        at_base = _tracked_at(co, base, contents)
        was = [m.patch.patch.entry if m.patch is not None else None for m in matches]
        new_text = _render(series, names, contents, base, at_base, was=was)
        _refuse_lent(series, before, names, contents)
        bump = _changes(series, before, matches, contents)
        version = None
        if bump and series.patches:
            version = _new_version(series, bump, message)
            new_text = _set_version(new_text, version.number)
    if version is not None:
        _keep_version(series, before, version, llvm)
    return _write(series, before, names, contents, new_text)


def _first(series: Series, count: int) -> Series:
    """*series* as its first *count* patches: the lines of the others move to
    the layout's trailer, so that an export writes them back as they are."""
    kept = series.patches[:count]
    blocks = series.layout.blocks
    rest: list[str] = []
    for patch in series.patches[count:]:
        block = blocks[patch.entry]
        rest += [*block.lead, block.line, *block.files.values()]
    layout = Layout(
        series.layout.header,
        {p.entry: blocks[p.entry] for p in kept},
        rest + series.layout.trailer,
    )
    return dataclasses.replace(series, patches=kept, layout=layout)


def _renumber(data: bytes, total: int) -> bytes:
    """*data* (a patch file) with the total of its ``[PATCH n/m]`` set to *total*."""
    head, sep, rest = data.partition(b"\n\n")
    head = _COUNT_TOTAL.sub(rb"\g<1>%d]" % total, head, count=1)
    return head + sep + rest


_COUNT_TOTAL = re.compile(rb"^(Subject: \[[^\]]*?\d+/)\d+\]", re.MULTILINE)


@dataclass
class _Version:
    number: int  # the version being written
    changelog: str


_COUNT = re.compile(rb"^(Subject: \[[^\]]*?)\d+/\d+\]", re.MULTILINE)
#: A header's continuation line (RFC 5322 folding).
_FOLD = re.compile(rb"\n[ \t]+")


def _same_patch(old: bytes, new: bytes) -> bool:
    """Whether two patch files differ in nothing but their [PATCH n/m]
    (compared with the headers unfolded: the number's length moves where
    git folds a long subject)."""

    def key(data: bytes) -> bytes:
        head, sep, rest = data.partition(b"\n\n")
        head = _FOLD.sub(b" ", head)
        return _COUNT.sub(rb"\1", head, count=1) + sep + rest

    return key(old) == key(new)


def _changes(
    series: Series,
    before: dict[Path, bytes],
    matches: list[Match],
    contents: list[bytes],
) -> str:
    """What an export changes in the patches, in words (old numbers); ""
    when nothing. Only moving a patch (its [PATCH n/m]) is no change."""

    kept = {m.patch.patch.path for m in matches if m.patch is not None}
    changed = [
        m.patch.patch.path.name
        for m, c in zip(matches, contents, strict=True)
        if m.patch is not None and not _same_patch(before[m.patch.patch.path], c)
    ]
    added = [m.commit.subject for m in matches if m.patch is None]
    removed = [p.name for p in series.patches if p.path not in kept]
    moved = [
        p.name
        for i, p in enumerate(series.patches)
        if p.path in kept and _position(matches, p.path) != i
    ]
    parts = []
    for what, items in (("changed", changed), ("removed", removed)):
        if items:
            parts.append(f"{what} {', '.join(n[:4] for n in items)}")
    if added:
        parts.append(f"added {'; '.join(repr(s) for s in added)}")
    if moved and not parts:
        parts.append(f"renumbered {', '.join(n[:4] for n in moved)}")
    return "; ".join(parts)


def _position(matches: list[Match], path: Path) -> int:
    return next(
        i for i, m in enumerate(matches) if m.patch and m.patch.patch.path == path
    )


def _new_version(series: Series, summary: str, message: str | None) -> _Version:
    number = series.version + 1
    today = datetime.date.today().isoformat()
    return _Version(number, f"- v{number} ({today}): {message or summary}")


def _set_version(text: str, number: int) -> str:
    line = f"version: {number}"
    if re.search(r"^version:.*$", text, re.MULTILINE):
        return re.sub(r"^version:.*$", line, text, count=1, flags=re.MULTILINE)
    return re.sub(r"^(name:.*)$", rf"\1\n{line}", text, count=1, flags=re.MULTILINE)


def _keep_version(
    series: Series, before: dict[Path, bytes], version: _Version, llvm: Path
) -> None:
    """The old version as a git tag of the commit that holds it (as b4 keeps
    a sent version) and the changelog. Outside a git repository, the old
    files are copied to versions/v<N-1>/."""
    out_dir = series.path.parent
    old = version.number - 1
    tag = f"{series.name}-v{old}"
    changelog = out_dir / "CHANGELOG.md"
    checkout = Checkout.find(out_dir)
    kept = f"the git tag {tag}" if checkout else str(out_dir / "versions" / f"v{old}")
    if checkout is not None:
        with checkout:
            _tag_version(checkout, tag, before)
    elif (out_dir / "versions" / f"v{old}").exists():
        raise WorkspaceError(f"{kept} exists already: the series version is stale")
    if proc.DRY_RUN:
        print(f"would keep v{old} as {kept}")
        print(f"would add to {changelog}: {version.changelog}")
        return
    if checkout is None:
        copy = out_dir / "versions" / f"v{old}"
        copy.mkdir(parents=True)
        for path in (*(p.path for p in series.patches), series.path):
            (copy / path.name).write_bytes(before[path])
    head = f"# Changes to the {series.name} series\n\n"
    text = changelog.read_text() if changelog.is_file() else head
    body = text.removeprefix(head)
    changelog.write_text(head + version.changelog + "\n" + body)
    print(f"  v{version.number}: v{old} kept as {kept}")
    print(f"  range-diff: kdl range-diff --llvm {llvm} --series {series.path} v{old}")


def _tag_version(co: Checkout, tag: str, before: dict[Path, bytes]) -> None:
    """Tag the commit that holds *before* (the series as it is) as *tag*;
    an existing tag must hold the same files."""
    rel = {p: p.resolve().relative_to(co.root.resolve()).as_posix() for p in before}
    status, _, _ = co.attempt("rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}")
    rev = tag if status == 0 else "HEAD"
    for path, data in before.items():
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        held = co.attempt("rev-parse", "--verify", "--quiet", f"{rev}:{rel[path]}")
        if held[0] != 0 or held[1].strip() != blob:
            if rev == tag:
                raise WorkspaceError(
                    f"the tag {tag} holds another {rel[path]} than the series "
                    "being replaced; remove or rename the tag"
                )
            raise WorkspaceError(
                f"uncommitted changes to {rel[path]} would be overwritten; commit "
                f"or stash them first (the version committed is kept as {tag})"
            )
    if rev == "HEAD" and not proc.DRY_RUN:
        co.run("tag", tag, "HEAD")


def _subject_style(series: Series, count: int) -> tuple[str, bool]:
    """The subject prefix and numbering the existing patches use."""
    if not series.patches:
        return "PATCH", count > 1
    m = _SUBJECT.search(series.patches[0].read().decode("utf-8", errors="replace"))
    if m is None:
        return "PATCH", count > 1
    numbered = m.group("n") is not None or (len(series.patches) == 1 and count > 1)
    return m.group("prefix"), numbered


def _names(
    matches: list[Match],
    generated: list[tuple[str, bytes]],
    before: dict[Path, bytes],
) -> tuple[list[str], list[bytes]]:
    """The series' entries and their contents after the export.

    A matched patch keeps its file name while its number is its place in the
    series (a subject edited since keeps its file); otherwise git's name, so
    that a commit inserted or dropped renumbers the patches after it. A
    borrowed patch (another series' file) stays borrowed, with that file's
    bytes, while the commit is still that patch; once it differs, the
    backport gets a file of its own."""
    names: list[str] = []
    contents: list[bytes] = []
    for match, (gen, data) in zip(matches, generated, strict=True):
        patch = match.patch.patch if match.patch is not None else None
        held = before[patch.path] if patch is not None else b""
        if patch is not None and patch.borrowed and _same_patch(held, data):
            names.append(patch.entry)
            contents.append(held)
            continue
        name = patch.entry if patch is not None and not patch.borrowed else gen
        number = name.split("-", 1)[0]
        names.append(gen if name in names or number != gen.split("-", 1)[0] else name)
        contents.append(data)
    return names, contents


def _tracked_at(co: Checkout, base: str, contents: list[bytes]) -> set[str]:
    paths = sorted({path for c in contents for path in diff_files(c)})
    out = co.run("ls-tree", "-r", "--name-only", "-z", base, "--", *paths)
    return {p for p in out.split("\0") if p}


def _render(
    series: Series,
    names: list[str],
    contents: list[bytes],
    base: str,
    at_base: set[str],
    *,
    was: list[str | None] | None = None,
) -> str:
    """The series file for the patches *names*; *was* names the patch file
    each one was before the export (or None), whose comment and file lines
    it keeps under its new name."""
    header, blocks, trailer = (
        series.layout.header,
        series.layout.blocks,
        series.layout.trailer,
    )
    listed = [raw for block in blocks.values() for raw in block.files.values()]
    indent = listed[0][: len(listed[0]) - len(listed[0].lstrip())] if listed else "    "
    lines = list(header)
    for i, (name, text) in enumerate(zip(names, contents, strict=True)):
        before = (was[i] if was else None) or name
        block = blocks.get(before, Block(line=name))
        block = Block(lead=block.lead, line=name, files=block.files)
        lines += [*block.lead, block.line]
        diff = diff_files(text)  # path -> created by this patch
        # Files still touched keep their line (and recorded base) and order.
        lines += [raw for path, raw in block.files.items() if path in diff]
        for path, created in diff.items():
            if path in block.files:
                continue
            if path in at_base and not created:
                lines.append(f"{indent}base {path} {base}")
            else:
                lines.append(f"{indent}new  {path}")
    lines += trailer
    return "\n".join(lines) + "\n"


def _write(
    series: Series,
    before: dict[Path, bytes],
    names: list[str],
    contents: list[bytes],
    new_text: str,
) -> int:
    out_dir = series.path.parent
    # A borrowed file is the other series': never written or removed here.
    old = {p.entry for p in series.patches if not p.borrowed}
    removed = sorted(old - set(names))
    changes = {out_dir / n: c for n, c in zip(names, contents, strict=True)}
    changes[series.path] = new_text.encode()

    def current(path: Path) -> bytes | None:
        """What *path* holds now: as read at the start, or (a file the
        series did not list) from the disk."""
        if path in before:
            return before[path]
        return path.read_bytes() if path.is_file() else None

    touched = [p for p, c in changes.items() if current(p) != c]
    _refuse_uncommitted(out_dir, touched + [out_dir / n for n in removed])

    for name in names:
        path = out_dir / name
        state = (
            "unchanged (another series' file)"
            if is_borrowed(name)
            else "new"
            if name not in old
            else "updated"
            if path in touched
            else "unchanged"
        )
        print(f"  {name}: {state}")
    for name in removed:
        print(f"  {name}: removed (no longer on the branch)")
    if proc.DRY_RUN:
        for path in touched:
            print(f"would write {path}")
        for name in removed:
            print(f"would remove {out_dir / name}")
        return 0
    for path in touched:
        tmp = path.with_name(f".{path.name}.kdl-tmp")
        tmp.write_bytes(changes[path])
        os.replace(tmp, path)
    for name in removed:
        (out_dir / name).unlink()
    load(series.path)  # what we wrote must read back
    changed = len(touched) + len(removed)
    print(
        f"{series.path}: {len(names)} patches, {changed} file(s) changed"
        + (" (git diff shows them)" if changed else "")
    )
    return 0


def _refuse_lent(
    series: Series, before: dict[Path, bytes], names: list[str], contents: list[bytes]
) -> None:
    """Refuse, before anything is written, an export that would change or
    remove a patch file another series beside or below this one names (a
    backport's borrowed patch): that series would change with it."""
    out_dir = series.path.parent
    new = {out_dir / n: c for n, c in zip(names, contents, strict=True)}
    # Its own files only: a borrowed file is never written or removed here.
    files = [
        p.path
        for p in series.patches
        if not p.borrowed and new.get(p.path) != before[p.path]
    ]
    lent = _borrowers(series, files)
    if lent:
        raise WorkspaceError(
            f"{lent[0]}: this export would change a patch that series applies "
            "as it is; give it a copy of its own first (copy the file beside "
            "it and name the copy in its series)"
        )


def _borrowers(series: Series, files: list[Path]) -> list[str]:
    """``INDEX names ENTRY`` for each other series file beside or below
    *series*' folder that names one of *files*."""
    targets = {f.resolve() for f in files}
    found = set()
    for root in (series.path.parent, series.path.parent.parent):
        for index in index_files(root):
            if index.resolve() == series.path.resolve():
                continue
            for entry in entries(index.read_text()):
                if (index.parent / entry).resolve() in targets:
                    found.add(f"{index} names {entry}")
    return sorted(found)


def _refuse_uncommitted(out_dir: Path, paths: list[Path]) -> None:
    """Refuse to overwrite uncommitted edits to patches/ (if it is in git)."""
    if not paths:
        return
    checkout = Checkout.find(out_dir)
    if checkout is None:
        return
    with checkout:
        dirty = checkout.status_paths(paths)
    if dirty:
        raise WorkspaceError(
            f"uncommitted changes to {', '.join(dirty)} would be overwritten; "
            "commit or stash them first"
        )
