"""Real git repositories shaped like llvm-project, and series made against them.

The trees hold real LLVM 22 files (Debian's headers under /usr/lib/llvm-22
placed where llvm-project keeps them); the series are made in the test with
commits and ``git format-patch`` (kdl's fixed form, the same that ``kdl
export`` writes). The fixtures built from them (``isolated_git``, ``llvm``,
``series``) are in tests/conftest.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

LLVM_INCLUDE = Path("/usr/lib/llvm-22/include")

#: llvm-project path -> the real file it is copied from.
REAL_FILES = {
    "llvm/include/llvm/Object/OffloadBinary.h": LLVM_INCLUDE
    / "llvm/Object/OffloadBinary.h",
    "llvm/include/llvm/Object/Binary.h": LLVM_INCLUDE / "llvm/Object/Binary.h",
    "offload/include/OffloadAPI.h": LLVM_INCLUDE / "offload/OffloadAPI.h",
}

OFFLOAD_BINARY = "llvm/include/llvm/Object/OffloadBinary.h"
OFFLOAD_API = "offload/include/OffloadAPI.h"

#: The git user of the isolated test environment: the author of applied commits.
USER = "Kdl Tester <tester@example.org>"
#: The stable dates every commit gets (``git am`` keeps the patch's author date).
DATE = "2026-01-02T03:04:05+00:00"


def git(repo: Path, *args: str, check: bool = True, **kwargs: object) -> str:
    """Run git in *repo* and return stdout (tests only; kdl uses GitPython)."""
    result = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        **kwargs,  # type: ignore[call-overload]
    )
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return str(result.stdout)


def needs_llvm_files() -> None:
    missing = [str(p) for p in REAL_FILES.values() if not p.is_file()]
    if missing:
        pytest.skip(f"Debian's LLVM 22 headers are not installed ({missing[0]})")


def make_llvm_checkout(root: Path) -> Path:
    """An llvm-project-shaped repository with one commit of real LLVM files."""
    needs_llvm_files()
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "--quiet")
    for rel, src in REAL_FILES.items():
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(src.read_bytes())
    (root / ".gitignore").write_text("/build*\n")
    (root / "llvm/CMakeLists.txt").write_text("# placeholder for llvm/CMakeLists.txt\n")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "Import LLVM 22 files")
    return root


def replace(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"anchor not unique: {old!r}"
    return text.replace(old, new)


#: A change to one file: old text (None when new) -> new text (None deletes).
Change = Callable[[str | None], str | None]


@dataclass
class Edit:
    subject: str
    body: str
    changes: dict[str, Change]
    author: str = USER


def default_edits() -> list[Edit]:
    """Three patches shaped like the kdl series (header, new files, runtime)."""
    keys = (
        "/// Standard metadata keys an image may carry in its string map.\n"
        'constexpr const char *MetadataMinSM = "min_sm";\n'
        'constexpr const char *MetadataVariantPriority = "variant_priority";\n\n'
    )
    check = (
        "/// Whether an image's metadata allows it on a device.\n"
        "bool isMetadataSatisfied(const OffloadBinary &Binary, StringRef Arch);\n\n"
    )
    return [
        Edit(
            "[Object][Offload] Add standard OffloadBinary metadata keys",
            "Name the keys that describe an image's requirements.\n\n"
            "Tested by the unit tests.",
            {
                OFFLOAD_BINARY: lambda t: replace(
                    t or "",
                    "/// The producer of the associated offloading image.\n",
                    keys + "/// The producer of the associated offloading image.\n",
                ),
                "llvm/docs/OffloadBinaryMetadata.rst": lambda t: (
                    "Offload binary metadata\n=======================\n\n"
                    "min_sm, variant_priority.\n"
                ),
            },
        ),
        Edit(
            "[Object][Offload] Check image metadata against a device",
            "A compatibility check over the standard keys.",
            {
                OFFLOAD_BINARY: lambda t: replace(
                    t or "",
                    "/// A simple binary serialization of an offloading file.",
                    check + "/// A simple binary serialization of an offloading file.",
                ),
                "llvm/include/llvm/Object/OffloadMetadata.h": lambda t: (
                    "#ifndef LLVM_OBJECT_OFFLOADMETADATA_H\n"
                    "#define LLVM_OBJECT_OFFLOADMETADATA_H\n#endif\n"
                ),
            },
        ),
        Edit(
            "[Offload] Load the best-ranked image",
            "Pick the highest-ranked compatible image instead of the first one.",
            {
                OFFLOAD_API: lambda t: (
                    (t or "") + "// Images are ranked by variant_priority.\n"
                )
            },
        ),
    ]


@dataclass
class SeriesDir:
    """A series written to disk and the checkout it was made against."""

    series: Path
    base: str
    names: list[str] = field(default_factory=list)

    @property
    def dir(self) -> Path:
        return self.series.parent


def make_series(
    repo: Path,
    out_dir: Path,
    edits: list[Edit] | None = None,
    name: str = "test-series",
    context: int = 3,
) -> SeriesDir:
    """Commit *edits* on a scratch branch, export them as a series, drop the branch.

    With *context* other than 3 the patches are plain ``git format-patch
    -U<context>`` output instead of kdl's fixed form.
    """
    from kdl.series.checkout import Checkout
    from kdl.series.export import format_patches

    edits = default_edits() if edits is None else edits
    base = git(repo, "rev-parse", "HEAD").strip()
    start = git(repo, "symbolic-ref", "--short", "HEAD").strip()
    git(repo, "checkout", "--quiet", "-b", "scratch-series")
    for edit in edits:
        for rel, change in edit.changes.items():
            path = repo / rel
            new = change(path.read_text() if path.exists() else None)
            if new is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(new)
        git(repo, "add", "-A")
        git(
            repo,
            "commit",
            "--quiet",
            f"--author={edit.author}",
            "-m",
            edit.subject,
            "-m",
            edit.body,
        )
    with Checkout(repo, require_llvm=False) as co:
        patches = format_patches(co, f"{base}..HEAD", numbered=len(edits) > 1)
    if context != 3:
        tmp = out_dir.parent / f".{out_dir.name}-plain"
        git(
            repo,
            "format-patch",
            "--quiet",
            "--zero-commit",
            f"-U{context}",
            "-o",
            str(tmp),
            f"{base}..HEAD",
        )
        patches = [(p.name, p.read_bytes()) for p in sorted(tmp.iterdir())]
    git(repo, "checkout", "--quiet", start)
    git(repo, "branch", "--quiet", "-D", "scratch-series")
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = ["# A series made by the tests.", f"name: {name}"]
    tracked = set(git(repo, "ls-tree", "-r", "--name-only", base).split())
    for patch_name, data in patches:
        (out_dir / patch_name).write_bytes(data)
        lines.append(patch_name)
        for line in data.decode().splitlines():
            if line.startswith("diff --git a/"):
                path = line.split(" b/", 1)[1]
                lines.append(
                    f"    base {path} {base}" if path in tracked else f"    new  {path}"
                )
    (out_dir / "series").write_text("\n".join(lines) + "\n")
    return SeriesDir(out_dir / "series", base, [n for n, _ in patches])


def snapshot(repo: Path) -> dict[str, object]:
    """Everything a failed apply must leave exactly as it was."""
    files = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        if rel.parts[0] == ".git" or not path.is_file():
            continue
        files[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {
        "status": git(
            repo, "status", "--porcelain=v2", "--branch", "--untracked-files=all"
        ),
        "log": git(repo, "log", "--all", "--oneline"),
        "refs": git(repo, "for-each-ref"),
        "stash": git(repo, "stash", "list"),
        "index": git(repo, "ls-files", "--stage"),
        "config": (repo / ".git/config").read_text(),
        "in_progress": sorted(
            p.name
            for p in (repo / ".git").iterdir()
            if p.name in ("rebase-apply", "rebase-merge", "MERGE_HEAD")
        ),
        "files": files,
    }


# --- the real series on a synthetic base ---------------------------------------

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@ ?(.*)$")


def _file_diffs(patch: bytes) -> list[tuple[str, bool, list[str]]]:
    """(path, is_new, diff lines from the first @@) per file of a patch."""
    body = patch.decode("utf-8").split("\n-- \n", 1)[0]
    out: list[tuple[str, bool, list[str]]] = []
    for chunk in re.split(r"(?m)^(?=diff --git )", body)[1:]:
        lines = chunk.split("\n")
        path = lines[0].split(" b/", 1)[1]
        if any(line.startswith("GIT binary patch") for line in lines):
            raise ValueError(f"{path}: binary patches are not supported")
        first = next(
            (i for i, ln in enumerate(lines) if ln.startswith("@@")), len(lines)
        )
        is_new = any(line.startswith("new file mode") for line in lines[:first])
        out.append((path, is_new, lines[first:]))
    return out


def _hunks(lines: list[str]) -> Iterator[tuple[int, int, str, list[str], bool]]:
    """(old start, old length, function text, body, no newline at end) per hunk."""
    for i, line in enumerate(lines):
        m = _HUNK.match(line)
        if not m:
            continue
        body: list[str] = []
        no_eol = False
        for hl in lines[i + 1 :]:
            if hl.startswith(("@@", "diff --git")) or not hl:
                break
            if hl.startswith("\\"):
                no_eol = no_eol or body[-1][0] in " -"
                continue
            body.append(hl)
        yield int(m.group(1)), int(m.group(2) or 1), m.group(3), body, no_eol


def _is_funcname(text: str) -> bool:
    """git's default hunk-header rule: a line starting with a letter, _ or $."""
    return bool(text) and (text[0].isalpha() or text[0] in "_$")


class _Base:
    """One file's base as the series sees it: known lines, placeholders."""

    def __init__(self) -> None:
        self.lines: dict[int, str] = {}  # base line number (0-based) -> text
        self.guessed: set[int] = set()  # lines placed from a hunk header
        self.count = 0  # base lines the series has reached so far
        self.cur: list[tuple[int, str | None]] = []  # (base line or -1, new text)
        self.no_eol = False

    def reach(self, n: int) -> None:
        while len(self.cur) < n:
            self.cur.append((self.count, None))
            self.count += 1

    def see(self, at: int, text: str) -> tuple[int, str | None]:
        k, new = self.cur[at]
        if k < 0:
            if new != text:
                raise ValueError("context does not match what earlier patches added")
        elif k in self.guessed or k not in self.lines:
            self.lines[k] = text
            self.guessed.discard(k)
        elif self.lines[k] != text:
            raise ValueError(f"base line {k + 1} seen as two different texts")
        return k, new

    def place_funcname(self, before: int, func: str) -> None:
        """Put the hunk header's text on the nearest free line above the hunk."""
        for k, new in reversed(self.cur[:before]):
            text = new if k < 0 else self.lines.get(k)
            if text is not None and _is_funcname(text):
                return  # git would show this line; it is already there
            if k >= 0 and k not in self.lines:
                self.lines[k] = func
                self.guessed.add(k)
                return

    def apply(self, lines: list[str]) -> None:
        new_cur: list[tuple[int, str | None]] = []
        pos = 0
        for old_start, old_len, func, body, no_eol in _hunks(lines):
            start = old_start - 1 if old_len else old_start
            self.reach(start + old_len)
            if func:
                self.place_funcname(start, func)
            new_cur += self.cur[pos:start]
            at = start
            for hl in body:
                kind, text = hl[0], hl[1:]
                if kind == "+":
                    new_cur.append((-1, text))
                    continue
                entry = self.see(at, text)
                if kind == " ":
                    new_cur.append(entry)
                at += 1
            self.no_eol = self.no_eol or no_eol
            pos = start + old_len
        self.cur = new_cur + self.cur[pos:]

    def text(self) -> str:
        size = max(self.lines) + 1 if self.lines else 0
        text = "".join(self.lines.get(k, "") + "\n" for k in range(size))
        return text[:-1] if self.no_eol else text


def synthesize_bases(patches: list[bytes]) -> dict[str, str]:
    """Pre-images for the files a series modifies, made from its hunks alone.

    Lines the hunks show (context and removed lines, through every patch of
    the series in order) are put at their line numbers, each hunk header's
    function text on a free line above its hunk, and every other line is
    left blank. The series then applies to these files exactly, with no
    offset: enough to run the real series through apply, status, check,
    revert and export without llvm-project's sources. Exported patches
    differ from the originals in their ``index`` lines (other blob ids)
    and, where git's diff heuristics see the blank lines differently from
    the real file's, in how a long hunk is laid out.
    """
    bases: dict[str, _Base] = {}
    created: set[str] = set()
    for patch in patches:
        for path, is_new, lines in _file_diffs(patch):
            if is_new:
                created.add(path)
            if path in created:
                continue  # the series makes it: no base needed
            try:
                bases.setdefault(path, _Base()).apply(lines)
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
    return {path: base.text() for path, base in bases.items()}


def kdl(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``kdl ARGV...`` in this process: (status, stdout, stderr)."""
    from kdl.cli import main

    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def apply_argv(llvm: Path, series: SeriesDir, *extra: str) -> list[str]:
    """`python -m kdl apply` of *series* onto *llvm*, as a child process."""
    args = ["--llvm", str(llvm), "--series", str(series.series), *extra]
    return [sys.executable, "-m", "kdl", "apply", *args]


# --- Helpers of the series command tests ----------------------------------------

BRANCH = "kdl/test-series"
# git format-patch names, cut at 64 characters
P1 = "0001-Object-Offload-Add-standard-OffloadBinary-metadata-k.patch"
P2 = "0002-Object-Offload-Check-image-metadata-against-a-device.patch"
P3 = "0003-Offload-Load-the-best-ranked-image.patch"
P4 = "0004-Offload-Document-ranked-selection.patch"


def on_series(
    capsys: pytest.CaptureFixture[str],
    command: str,
    llvm: Path,
    series: SeriesDir,
    *extra: str,
) -> tuple[int, str, str]:
    """``kdl COMMAND --llvm LLVM --series SERIES [EXTRA...]``, in process."""
    return kdl(
        capsys, command, "--llvm", str(llvm), "--series", str(series.series), *extra
    )


def status_json(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> Any:
    """``kdl status --json`` of *series* on *llvm*, parsed."""
    return json.loads(on_series(capsys, "status", llvm, series, "--json")[1])


def apply(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, *extra: str
) -> tuple[int, str, str]:
    return on_series(capsys, "apply", llvm, series, *extra)


def commit_on_main(
    llvm: Path,
    rel: str,
    change: str,
    old: str | None = None,
    message: str = "upstream change",
) -> None:
    path = llvm / rel
    text = path.read_text()
    path.write_text(replace(text, old, change) if old else change + text)
    git(llvm, "commit", "--quiet", "-am", message)


def files_of(d: Path) -> dict[str, bytes]:
    """The files directly in *d*, by name, with their bytes."""
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def move_hunks_and_change_context(llvm: Path) -> None:
    """Commit lines that move every hunk, and a context change that needs 3-way."""
    commit_on_main(llvm, OFFLOAD_BINARY, "// Local note.\n// Another one.\n")
    commit_on_main(
        llvm,
        OFFLOAD_BINARY,
        "/// and used by the linker later.",
        old="/// and used by the linker.",
    )


#: A tree shaped like llvm-project whose CMake and tools are small fakes.
FAKE_LLVM = Path(__file__).resolve().parent / "data" / "fake-llvm-project"


def make_fake_llvm(root: Path) -> Path:
    """A git checkout of the fake llvm-project, tagged like upstream."""
    shutil.copytree(FAKE_LLVM, root)
    git(root, "init", "--quiet")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "fake llvm-project")
    git(root, "tag", "llvmorg-22-init")
    (root / "README.md").write_text("one more commit after the tag\n")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "after the tag")
    return root
