"""The patch series: ``patches/series`` and the ``.patch`` files it lists.

``patches/series`` is the index of the stack, in order::

    # comment
    name: offload-ranked-selection
    version: 5
    llvm: 24
    0001-Object-Offload-Add-standard-OffloadBinary-metadata-keys.patch
        base llvm/include/llvm/Object/OffloadBinary.h 05ed393b...(40 hex digits)
        new  llvm/docs/OffloadBinaryMetadata.rst

A patch line is a file name beside the series file, or a relative path to
another series' patch that applies unchanged (``../0005-....patch``: a
backport that cherry-picks a patch of main names main's file, so the two
cannot differ). It is followed by one indented line per file its hunks touch:
``base PATH COMMIT [REPO]`` for an upstream file whose base text was read at
COMMIT of REPO (llvm/llvm-project when left out; a fork that tracks main
where no llvm/llvm-project version qualified), ``new PATH`` for a file the
patch creates. Every file in the patch's diff must be listed, and nothing
else. Comments say why each base was chosen.

``llvm: N`` says which LLVM major version the series is made for (a
checkout of LLVM N.x.y takes it: :mod:`kdl.series.choose`); a series
without it (llvm-test-suite's) is never chosen by a checkout's version.

``post:`` lines say how the patches are posted, in order (``kdl pr``;
:mod:`kdl.series.poststeps` reads them): each pull request from the
poster's fork into main, the RFC between, what is held and why; ``post:
never TEXT`` marks a series that is never posted (a backport). A series
without them is not posted either.

A series of proposals (``patches/proposals/series``) goes on top of the
stacks its ``on: NAME...`` line names; ``apply: 1-N`` says that ``kdl
apply`` puts its first N patches on top of such a stack unless told
otherwise (``--posting-stack``: none; ``--proposals``: all of them).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from email.policy import default as default_policy
from pathlib import Path

from kdl import paths
from kdl.errors import FormatError
from kdl.files import read_regular
from kdl.series import poststeps
from kdl.series.poststeps import PostStep

_COMMIT = re.compile(r"^[0-9a-f]{12,40}$")
_DIFF_GIT = re.compile(rb"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


#: The ``[PATCH n/m]`` part only: ``[Object][Offload]`` tags are the subject's.
_SUBJECT_PREFIX = re.compile(r"^\[[^\]]*\bPATCH\b[^\]]*\]\s*")


def normalize_subject(subject: str) -> str:
    """A subject without ``[PATCH n/m]`` and with whitespace collapsed."""
    return _SUBJECT_PREFIX.sub("", " ".join(subject.split()))


@dataclass(frozen=True)
class FileBase:
    """One file a patch touches: where it is and what its base text was."""

    path: str
    commit: str | None  # None: the patch creates the file
    repo: str = "llvm/llvm-project"

    @property
    def is_new(self) -> bool:
        return self.commit is None


@dataclass
class Patch:
    path: Path
    files: list[FileBase] = field(default_factory=list)
    #: The patch's line in the series file: its file name, or a path to
    #: another series' file (a backport that applies a patch of the main
    #: series unchanged, as a cherry-pick does, names that file).
    entry: str = ""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def listed_as(self) -> str:
        """The patch as the series file names it (a borrowed one by its path,
        ../0005-....patch, so that it reads as the other series')."""
        return self.entry or self.name

    @property
    def borrowed(self) -> bool:
        """Whether the file is another series' (the entry is a path)."""
        return is_borrowed(self.entry)

    def read(self) -> bytes:
        return self.path.read_bytes()

    @property
    def subject(self) -> str:
        """The commit subject, without the ``[PATCH n/m]`` prefix."""
        headers = BytesHeaderParser(policy=default_policy).parsebytes(self.read())
        return normalize_subject(str(headers.get("Subject", "")))

    @property
    def author(self) -> str:
        headers = BytesHeaderParser(policy=default_policy).parsebytes(self.read())
        return str(headers.get("From", ""))

    def body(self) -> str:
        """The commit message body (between the headers and the ``---``)."""
        text = self.read().decode("utf-8", errors="replace")
        _, _, rest = text.partition("\n\n")
        body, _, _ = rest.partition("\n---\n")
        return body.strip()

    def diff_files(self) -> list[str]:
        """Files named by the patch's ``diff --git`` lines, in order."""
        return [m.group(2).decode() for m in _DIFF_GIT.finditer(self.read())]

    def file_diff(self, path: str) -> str | None:
        """The part of the patch that changes *path*: its headers and hunks,
        up to the next file's ``diff --git`` line or the signature; None if
        the patch does not touch it."""
        return file_diff(self.read().decode("utf-8", errors="replace"), path)

    def new_file_text(self, path: str) -> str | None:
        """The text of *path* after the patch, if the patch creates it."""
        return new_file_text(self.read().decode("utf-8", errors="replace"), path)


def file_diff(patch_text: str, path: str) -> str | None:
    """The part of *patch_text* that changes *path* (see Patch.file_diff)."""
    out: list[str] = []
    inside = False
    for line in patch_text.splitlines(keepends=True):
        if line.startswith("diff --git "):
            if inside:
                break
            inside = line.rstrip("\n").endswith(f" b/{path}")
        elif inside and line.rstrip("\n") == "-- ":
            break
        if inside:
            out.append(line)
    return "".join(out) if out else None


def new_file_text(patch_text: str, path: str) -> str | None:
    """The text of *path* after the patch, if the patch creates it (or None).

    Only files whose diff starts from ``/dev/null`` can be rebuilt from the
    patch alone: their every line is an added line.
    """
    section = file_diff(patch_text, path)
    if section is None or "\n--- /dev/null\n" not in section:
        return None
    lines: list[str] = []
    in_hunk = False
    for line in section.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            lines.append(line[1:])
        elif in_hunk and not line.startswith("\\"):
            in_hunk = False
    return "\n".join(lines) + "\n"


@dataclass
class Block:
    """A patch's lines in patches/series, as written."""

    #: Comment and blank lines before the patch's line.
    lead: list[str] = field(default_factory=list)
    line: str = ""
    #: Path -> its ``base``/``new`` line.
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class Layout:
    """patches/series line by line, so that it can be written again with its
    comments: the lines before the first patch, each patch's block, the
    lines after the last file line."""

    header: list[str] = field(default_factory=list)
    blocks: dict[str, Block] = field(default_factory=dict)
    trailer: list[str] = field(default_factory=list)


@dataclass
class Series:
    name: str
    patches: list[Patch]
    path: Path
    #: The series' version (``version: N``; 1 when absent): ``kdl export``
    #: bumps it when the patches change and tags the commit that holds the
    #: old one (:mod:`kdl.series.versions` finds it).
    version: int = 1
    #: The LLVM major version the series is made for (``llvm: N``), if said.
    llvm: int | None = None
    #: The file's own lines (kdl export rewrites it from them).
    layout: Layout = field(default_factory=Layout)
    #: How the patches are posted (``post:`` lines), in order.
    posting: list[PostStep] = field(default_factory=list)
    #: A series of proposals: the stacks it goes on (``on:``) and how many of
    #: its patches kdl apply puts on them by default (``apply: 1-N``).
    on: tuple[str, ...] = ()
    apply_default: int = 0

    @property
    def never_posted(self) -> str | None:
        """Why the series is never posted (its ``post: never`` line), or None."""
        never = [s.why for s in self.posting if s.kind == "never"]
        return never[0] if never else None

    def base_of(self, path: str) -> str | None:
        """The upstream commit the first patch touching *path* was based on."""
        for patch in self.patches:
            for f in patch.files:
                if f.path == path:
                    return f.commit
        return None


#: The name of a series with the proposals on top (``kdl apply --proposals``):
#: ``STACK+proposals`` with all of them, ``STACK+proposals:1-N`` with the
#: first N (what ``kdl apply`` puts on top by default).
PROPOSALS = "+proposals"


def proposals_suffix(count: int, total: int) -> str:
    """What a branch's series name says of *count* of *total* proposals."""
    if count <= 0:
        return ""
    return PROPOSALS if count >= total else f"{PROPOSALS}:{patch_range(count)}"


def patch_range(count: int) -> str:
    """``1-N`` (``1`` for one patch): the first *count* patches of a series."""
    return "1" if count == 1 else f"1-{count}"


def split_recorded(name: str) -> tuple[str, int | None]:
    """(the stack's name, how many proposals go on it: 0 none, None all) of
    the series name a branch records; a suffix that says no count is the
    stack's name as it is (no proposals)."""
    stack, sep, rest = name.partition(PROPOSALS)
    if not sep:
        return name, 0
    if not rest:
        return stack, None
    count = _range_count(rest.removeprefix(":"))
    return (stack, count) if rest.startswith(":") and count else (name, 0)


def _range_count(text: str) -> int | None:
    """N of ``1-N`` or ``1``; None for anything else."""
    first, sep, last = text.strip().partition("-")
    if first != "1" or (sep and not last.isdigit()):
        return None
    count = int(last) if sep else 1
    return count if count >= 1 else None


def with_proposals(
    stack: Series, proposals: Series, count: int | None = None
) -> Series:
    """*stack* with the first *count* patches of *proposals* (all of them
    when None) after its own, as one series named ``STACK+proposals`` or
    ``STACK+proposals:1-N`` (what a branch made with them records)."""
    total = len(proposals.patches)
    count = total if count is None else min(count, total)
    return dataclasses.replace(
        stack,
        name=stack.name + proposals_suffix(count, total),
        patches=[*stack.patches, *proposals.patches[:count]],
    )


def series_lines(series_file: Path) -> list[str]:
    """The lines of a series file: a regular file (a FIFO is refused, not
    waited on) of UTF-8 text; anything else is one line naming it."""
    data = read_regular(series_file)
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            str(series_file), f"line {line} is not UTF-8 (byte {data[exc.start]:#04x})"
        ) from None


def load(series_file: Path | None = None) -> Series:
    """Parse ``patches/series`` and check it against the patch files."""
    # Absolute: git runs in the checkout, not where the user stands.
    series_file = (series_file or paths.SERIES).absolute()
    where = str(series_file)
    lines = series_lines(series_file)
    name = ""
    version = 1
    major: int | None = None
    posting: list[PostStep] = []
    on: tuple[str, ...] = ()
    apply_default = 0
    patches: list[Patch] = []
    layout = Layout()
    pending: list[str] = []  # comment lines not yet placed in the layout
    for lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip() or line.startswith(HEADER_FIELDS):
            (pending if layout.blocks else layout.header).append(raw)
        if not line.strip():
            continue
        if line.startswith("name:"):
            name = line.partition(":")[2].strip()
            continue
        if line.startswith("version:"):
            value = line.partition(":")[2].strip()
            if not value.isdigit() or int(value) < 1:
                raise FormatError(
                    where, f"line {lineno}: version must be a positive integer"
                )
            version = int(value)
            continue
        if line.startswith("llvm:"):
            major = _llvm_major(line, where, lineno)
            continue
        if line.startswith("post:"):
            posting.append(poststeps.parse(line, where, lineno))
            continue
        if line.startswith("on:"):
            on = _on_names(line, where, lineno)
            continue
        if line.startswith("apply:"):
            apply_default = _apply_count(line, where, lineno)
            continue
        entry = _patch_entry(raw)
        if entry is not None:
            patch_path = series_file.parent / entry
            if not patch_path.is_file():
                raise FormatError(where, f"line {lineno}: no such patch {entry}")
            if entry.startswith("/") or not entry.endswith(".patch"):
                raise FormatError(
                    where, f"line {lineno}: {entry}: a patch is a relative .patch path"
                )
            if any(p.name == patch_path.name for p in patches):
                raise FormatError(
                    where, f"line {lineno}: a second patch named {patch_path.name}"
                )
            patches.append(Patch(patch_path, entry=entry))
            layout.blocks[entry] = Block(lead=pending, line=raw)
            pending = []
            continue
        words = line.split()
        if not patches:
            raise FormatError(where, f"line {lineno}: file line before any patch")
        layout.blocks[patches[-1].entry].files[words[1]] = raw
        if words[0] == "base" and len(words) in (3, 4) and _COMMIT.match(words[2]):
            patches[-1].files.append(FileBase(words[1], words[2], *words[3:]))
        elif words[0] == "new" and len(words) == 2:
            patches[-1].files.append(FileBase(words[1], None))
        else:
            raise FormatError(
                where,
                f"line {lineno}: expected 'base PATH COMMIT [REPO]' or 'new PATH'",
            )
    if not name:
        raise FormatError(where, "missing 'name:' line")
    for patch in patches:
        listed = [f.path for f in patch.files]
        touched = patch.diff_files()
        if sorted(set(listed)) != sorted(set(touched)):
            raise FormatError(
                where,
                f"{patch.name}: files listed ({', '.join(listed) or 'none'}) "
                f"differ from files in the diff ({', '.join(touched) or 'none'})",
            )
    poststeps.check(posting, len(patches), where)
    for step in posting:
        if step.file and not (series_file.parent / step.file).is_file():
            raise FormatError(where, f"post: comment {step.on}: no file {step.file}")
    if apply_default > len(patches):
        raise FormatError(
            where,
            f"apply: {patch_range(apply_default)} names more patches than the "
            f"series has ({len(patches)})",
        )
    if apply_default and not on:
        raise FormatError(where, "apply: without on: (the stacks it goes on)")
    layout.trailer = pending
    return Series(
        name, patches, series_file, version, major, layout, posting, on, apply_default
    )


#: The header's ``key: value`` lines.
HEADER_FIELDS = ("name:", "version:", "llvm:", "post:", "on:", "apply:")


def _on_names(line: str, where: str, lineno: int) -> tuple[str, ...]:
    names = tuple(line.partition(":")[2].split())
    if not names:
        raise FormatError(
            where, f"line {lineno}: on: names the series it goes on (on: NAME...)"
        )
    return names


def _apply_count(line: str, where: str, lineno: int) -> int:
    count = _range_count(line.partition(":")[2])
    if count is None:
        raise FormatError(
            where,
            f"line {lineno}: apply: names the first patches kdl apply applies "
            "(apply: 1-N)",
        )
    return count


def _patch_entry(raw: str) -> str | None:
    """The patch a series file's line names; None for a comment, a blank,
    a header or a file line."""
    line = raw.split("#", 1)[0].rstrip()
    if not line or line[0].isspace() or line.startswith(HEADER_FIELDS):
        return None
    return line.strip()


def entries(series_text: str) -> list[str]:
    """The patch lines of a series file's text, in order (an earlier
    version's, read from git, which :func:`load` cannot check: its patch
    files are not on disk)."""
    return [e for e in map(_patch_entry, series_text.splitlines()) if e is not None]


def is_borrowed(entry: str) -> bool:
    """Whether a series line names another series' file (a path, not a
    name beside the series file)."""
    return "/" in entry


def _llvm_major(line: str, where: str, lineno: int) -> int:
    value = line.partition(":")[2].strip()
    if not value.isdigit() or int(value) < 1:
        raise FormatError(
            where, f"line {lineno}: llvm must be an LLVM major version (llvm: 22)"
        )
    return int(value)


@dataclass(frozen=True)
class Header:
    """The ``name:``, ``llvm:``, ``on:`` and ``apply:`` lines of a series
    file, read without its patches (what choosing among the series needs)."""

    path: Path
    name: str
    llvm: int | None
    on: tuple[str, ...] = ()
    apply_default: int = 0


def read_header(series_file: Path) -> Header:
    """The header of *series_file*: the lines before its first patch."""
    where = str(series_file)
    lines = series_lines(series_file)
    name, major = "", None
    on: tuple[str, ...] = ()
    apply_default = 0
    for lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if line.startswith("name:"):
            name = line.partition(":")[2].strip()
        elif line.startswith("llvm:"):
            major = _llvm_major(line, where, lineno)
        elif line.startswith("on:"):
            on = _on_names(line, where, lineno)
        elif line.startswith("apply:"):
            apply_default = _apply_count(line, where, lineno)
        elif not line.startswith(HEADER_FIELDS):
            break
    if not name:
        raise FormatError(where, "missing 'name:' line")
    if apply_default and not on:
        raise FormatError(where, "apply: without on: (the stacks it goes on)")
    return Header(series_file, name, major, on, apply_default)
