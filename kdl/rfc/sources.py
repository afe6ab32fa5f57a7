"""What the posts are made of: the series, the docs table, the results.

Everything here is read from the workspace; nothing is typed in. Each input
may be missing (no bench run yet, no GPU results, patches not exported): the
field is then None and the post says "not measured yet" or "not exported yet".
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdl import paths
from kdl.errors import WorkspaceError
from kdl.rfc import rst
from kdl.rfc.figures import _patch_stat

log = logging.getLogger("kdl")

#: The docs page the metadata patch adds and the header of its key table.
DOCS_PAGE = "offload/docs/ImageSelection.rst"
TABLE_HEADER = ["Key", "Grammar", "Meaning", "Default"]
#: The header of the runtime's table of environment variables.
CONTROLS_HEADER = ["Variable", "Effect"]
#: The lit test the RFC uses as its example.
EXAMPLE_TEST = "llvm-tests/selection/first-compatible-wins.test"

LIT_SUMMARY = "results/lit/summary.json"
LIT_REPORT = "results/lit/llvm-tests.json"
BENCH = "results/selection-bench.json"
GPU_DIR = "results/gpu"
GTEST_CANDIDATES = ("results/unittests.json", "results/gtest.json")


@dataclass
class PatchInfo:
    """One patch of the series, as the posts show it."""

    rel: str  # path relative to the workspace root
    subject: str
    body: str
    files: list[str]
    new_files: list[str]
    insertions: int
    deletions: int

    @property
    def area(self) -> str:
        """``[Object][Offload]`` style tag of the subject, or ''."""
        m = re.match(r"^((?:\[[^\]]+\])+)", self.subject)
        return m.group(1) if m else ""


@dataclass
class VocabTable:
    rows: list[list[str]]
    patch_rel: str  # the patch that adds the docs page

    @property
    def ref(self) -> str:
        return f"{self.patch_rel}#table:{DOCS_PAGE}"


@dataclass
class ControlsTable:
    """The runtime's environment variables, as the runtime patch documents them."""

    rows: list[list[str]]
    patch_rel: str
    page: str

    @property
    def ref(self) -> str:
        return f"{self.patch_rel}#mdtable:{self.page}"


@dataclass
class Example:
    """The lit test that shows first-compatible-wins, and what it printed."""

    test_rel: str
    run_lines: list[str]
    outputs: dict[str, str]  # key in summary.json's "example" -> text
    code: str | None  # lit's result code for the test


@dataclass
class Sources:
    root: Path
    series_name: str | None = None
    patches: list[PatchInfo] = field(default_factory=list)
    series_problem: str | None = None
    vocab: VocabTable | None = None
    controls: ControlsTable | None = None
    api: list[str] = field(default_factory=list)  # declarations of the new header
    api_patch: str | None = None
    reasons: list[str] = field(default_factory=list)  # ImageCompatibility names
    tiers: list[str] = field(default_factory=list)  # ImageTier names
    lit: dict[str, Any] | None = None  # results/lit/summary.json
    example: Example | None = None
    bench: dict[str, Any] | None = None
    gpu: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    gtest: tuple[str, dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def touching(self, prefix: str) -> list[tuple[int, PatchInfo]]:
        """(1-based position, patch) of each patch with a file under *prefix*."""
        return [
            (i, p)
            for i, p in enumerate(self.patches, 1)
            if any(f.startswith(prefix) for f in p.files)
        ]


def _read_json(path: Path, notes: list[str]) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        notes.append(f"{path.name}: unreadable ({exc}); treated as missing")
        log.warning("%s: unreadable (%s); treated as missing", path, exc)
        return None


def _series(src: Sources, series_file: Path) -> None:
    from kdl import series as series_mod

    if not series_file.is_file():
        src.series_problem = "the patch series is not exported yet"
        return
    try:
        series = series_mod.load(series_file)
    except WorkspaceError as exc:
        src.series_problem = f"the patch series does not load ({exc})"
        log.warning("%s", exc)
        return
    src.series_name = series.name
    for patch in series.patches:
        text = patch.read().decode("utf-8", errors="replace")
        src.patches.append(
            PatchInfo(
                rel=src.rel(patch.path),
                subject=patch.subject,
                body=patch.body(),
                files=[f.path for f in patch.files],
                new_files=[f.path for f in patch.files if f.is_new],
                insertions=_patch_stat(text, "insertions"),
                deletions=_patch_stat(text, "deletions"),
            )
        )


def controls_rows(patch_path: Path, page: str) -> list[list[str]] | None:
    """The Variable/Effect table of an offload docs page a patch adds."""
    text = rst.new_file_text(patch_path.read_text(errors="replace"), page)
    if text is None:
        return None
    if page.endswith(".md"):
        return rst.find_md_table(text, CONTROLS_HEADER)
    return rst.find_table(text, CONTROLS_HEADER)


def vocab_rows(patch_path: Path) -> list[list[str]] | None:
    """The key table of the docs page a patch adds (cells as RST text)."""
    text = rst.new_file_text(patch_path.read_text(errors="replace"), DOCS_PAGE)
    if text is None:
        return None
    return rst.find_table(text, TABLE_HEADER)


_DECL = re.compile(r"^\+(LLVM_ABI\s.*|(?:enum class|struct|class)\s+\w+.*)$")


def header_api(patch_text: str) -> list[str]:
    """Declarations a patch adds to ``llvm/include/llvm/Frontend/Offloading/*.h``.

    Exported functions (``LLVM_ABI ...;``, joined over continuation lines)
    and the names of new enums/structs, as one-line strings.
    """
    decls: list[str] = []
    in_header = False
    pending: list[str] | None = None
    for line in patch_text.splitlines():
        if line.startswith("diff --git "):
            in_header = bool(
                re.search(r" b/llvm/include/llvm/Frontend/Offloading/\S+\.h$", line)
            )
            pending = None
            continue
        if not in_header or not line.startswith("+") or line.startswith("+++"):
            continue
        body = line[1:].strip()
        if pending is not None:
            pending.append(body)
            if body.endswith(";") or body.endswith("{"):
                decls.append(" ".join(pending).rstrip("{ ").strip())
                pending = None
            continue
        m = _DECL.match(line)
        if not m:
            continue
        text = m.group(1).strip()
        if text.startswith("LLVM_ABI") and not text.endswith(";"):
            pending = [text]
            continue
        decls.append(text.rstrip("{ ").strip())
    return [re.sub(r"\s+", " ", d).replace("( ", "(") for d in decls]


def enum_names(patch_text: str, enum: str) -> list[str]:
    """The ``///< kebab-name`` of each value of ``enum class ENUM`` a patch adds."""
    names: list[str] = []
    inside = False
    for line in patch_text.splitlines():
        if not line.startswith("+"):
            inside = False
            continue
        body = line[1:].strip()
        if re.match(rf"enum class {re.escape(enum)}\b", body):
            inside = True
            continue
        if inside and body.startswith("}"):
            break
        m = (
            re.search(r"///<\s*([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\b", body)
            if inside
            else None
        )
        if m:
            names.append(m.group(1))
    return names


def run_lines(test_text: str) -> list[str]:
    """The RUN lines of a lit test, continuation lines joined as lit does."""
    lines: list[str] = []
    carry = ""
    for raw in test_text.splitlines():
        m = re.search(r"RUN:\s?(.*)$", raw)
        if not m:
            continue
        part = m.group(1).strip()
        if part.endswith("\\"):
            carry += part[:-1].rstrip() + " "
            continue
        lines.append(carry + part)
        carry = ""
    return lines


def run_blocks(test_text: str, word: str = "") -> list[str]:
    """RUN commands as written (continuation lines kept), that contain *word*."""
    blocks: list[list[str]] = []
    open_block = False
    for raw in test_text.splitlines():
        m = re.search(r"RUN:\s?(.*)$", raw)
        if not m:
            open_block = False
            continue
        part = m.group(1).rstrip()
        if open_block:
            blocks[-1].append("  " + part.lstrip())
        else:
            blocks.append([part])
        open_block = part.endswith("\\")
    texts = ["\n".join(b) for b in blocks]
    return [t for t in texts if word in t]


def _example(src: Sources) -> None:
    test = src.root / EXAMPLE_TEST
    if not test.is_file():
        return
    outputs: dict[str, str] = {}
    code = None
    if src.lit and isinstance(src.lit.get("example"), dict):
        for key, value in src.lit["example"].items():
            if key != "test" and isinstance(value, str):
                outputs[key] = value
    report = _read_json(src.root / LIT_REPORT, src.notes)
    if isinstance(report, dict):
        for item in report.get("tests", []):
            name = str(item.get("name", ""))
            if name.endswith(EXAMPLE_TEST.partition("/")[2]):
                code = str(item.get("code"))
    src.example = Example(EXAMPLE_TEST, run_lines(test.read_text()), outputs, code)


def load(root: Path | None = None) -> Sources:
    """Read every input the posts use from the workspace at *root*."""
    root = (root or paths.ROOT).resolve()
    src = Sources(root)
    _series(src, root / "patches" / "series")
    for patch in src.patches:
        path = root / patch.rel
        if DOCS_PAGE in patch.new_files and src.vocab is None:
            rows = vocab_rows(path)
            if rows:
                src.vocab = VocabTable(rows, patch.rel)
            else:
                src.notes.append(
                    f"{patch.rel}: no table with header {', '.join(TABLE_HEADER)} "
                    f"in {DOCS_PAGE}"
                )
        for page in patch.new_files:
            if src.controls is None and re.match(r"offload/docs/.*\.(md|rst)$", page):
                rows = controls_rows(path, page)
                if rows:
                    src.controls = ControlsTable(rows, patch.rel, page)
        text = path.read_text(errors="replace")
        if not src.reasons:
            src.reasons = []
            src.tiers = enum_names(text, "ImageFit")
        decls = header_api(text)
        if decls and not src.api:
            src.api, src.api_patch = decls, patch.rel
    lit = _read_json(root / LIT_SUMMARY, src.notes)
    src.lit = lit if isinstance(lit, dict) and "counts" in lit else None
    _example(src)
    bench = _read_json(root / BENCH, src.notes)
    src.bench = bench if isinstance(bench, dict) and "cases" in bench else None
    gpu_dir = root / GPU_DIR
    if gpu_dir.is_dir():
        for path in sorted(gpu_dir.glob("*.json")):
            data = _read_json(path, src.notes)
            if isinstance(data, dict):
                src.gpu.append((src.rel(path), data))
    candidates = [*GTEST_CANDIDATES]
    for folder in ("results/gtest", "results/unittests"):
        candidates += sorted(
            p.relative_to(root).as_posix() for p in (root / folder).glob("*.json")
        )
    for cand in candidates:
        data = _read_json(root / cand, src.notes)
        if isinstance(data, dict) and isinstance(data.get("tests"), int):
            src.gtest = (cand, data)
            break
    return src
