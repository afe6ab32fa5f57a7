"""Read a table out of reStructuredText that a patch adds.

The vocabulary RFC quotes the key table of ``llvm/docs/OffloadBinaryMetadata.rst``
exactly as the docs patch writes it (the series model rebuilds the file's
new text from the patch, ``Patch.new_file_text``); this module parses the
three table forms LLVM's docs use:
``.. list-table::``, grid tables and simple tables (``.. csv-table::`` too).
"""

from __future__ import annotations

import csv
import re

Row = list[str]

_GRID_BORDER = re.compile(r"^\s*\+(?:[-=]+\+)+\s*$")
_SIMPLE_BORDER = re.compile(r"^\s*=+(?:\s+=+)+\s*$")


def _norm(cell: str) -> str:
    return " ".join(cell.split())


def _list_tables(lines: list[str]) -> list[list[Row]]:
    tables: list[list[Row]] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip().startswith(".. list-table::"):
            i += 1
            continue
        base = len(lines[i]) - len(lines[i].lstrip())
        i += 1
        rows: list[Row] = []
        cell: list[str] | None = None
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            indent = len(line) - len(line.lstrip())
            if stripped and indent <= base:
                break
            if stripped.startswith("* - "):
                rows.append([])
                cell = [stripped[4:]]
                rows[-1].append("")
            elif stripped.startswith("- ") and rows:
                cell = [stripped[2:]]
                rows[-1].append("")
            elif stripped.startswith(":") and not rows:
                cell = None
            elif stripped and cell is not None:
                cell.append(stripped)
            if cell is not None and rows:
                rows[-1][-1] = _norm(" ".join(cell))
            i += 1
        tables.append(rows)
    return tables


def _grid_tables(lines: list[str]) -> list[list[Row]]:
    tables: list[list[Row]] = []
    i = 0
    while i < len(lines):
        if not _GRID_BORDER.match(lines[i]):
            i += 1
            continue
        border = lines[i].strip()
        cols = [m.start() for m in re.finditer(r"\+", border)]
        rows: list[Row] = []
        current: list[list[str]] = [[] for _ in cols[:-1]]
        i += 1
        while i < len(lines):
            line = lines[i].strip()
            if _GRID_BORDER.match(line):
                if any(current_cell for current_cell in current):
                    rows.append([_norm(" ".join(c)) for c in current])
                current = [[] for _ in cols[:-1]]
                i += 1
                continue
            if not line.startswith("|"):
                break
            for n in range(len(cols) - 1):
                piece = line[cols[n] + 1 : cols[n + 1]].strip()
                if piece:
                    current[n].append(piece)
            i += 1
        tables.append(rows)
    return tables


def _simple_tables(lines: list[str]) -> list[list[Row]]:
    tables: list[list[Row]] = []
    i = 0
    while i < len(lines):
        if not _SIMPLE_BORDER.match(lines[i]):
            i += 1
            continue
        border = lines[i]
        spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
        rows: list[Row] = []
        borders_seen = 1
        i += 1
        while i < len(lines) and borders_seen < 3:
            line = lines[i]
            if _SIMPLE_BORDER.match(line):
                borders_seen += 1
                i += 1
                continue
            if not line.strip():
                i += 1
                continue
            starts = [start for start, _ in spans] + [len(line)]
            cells = [
                line[starts[n] : starts[n + 1] if n + 1 < len(spans) else None].strip()
                for n in range(len(spans))
            ]
            if line[: spans[0][1]].strip() == "" and rows:
                # continuation line: the first column is empty
                for n, piece in enumerate(cells):
                    if piece:
                        rows[-1][n] = _norm(rows[-1][n] + " " + piece)
            else:
                rows.append([_norm(c) for c in cells])
            i += 1
        tables.append(rows)
    return tables


def _csv_tables(lines: list[str]) -> list[list[Row]]:
    tables: list[list[Row]] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip().startswith(".. csv-table::"):
            i += 1
            continue
        base = len(lines[i]) - len(lines[i].lstrip())
        i += 1
        header: Row | None = None
        body: list[str] = []
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if stripped and len(line) - len(line.lstrip()) <= base:
                break
            if stripped.startswith(":header:"):
                spec = stripped[len(":header:") :]
                header = next(csv.reader([spec], skipinitialspace=True))
            elif stripped and not stripped.startswith(":"):
                body.append(stripped)
            i += 1
        rows = [[_norm(c) for c in r] for r in csv.reader(body, skipinitialspace=True)]
        tables.append(([[_norm(c) for c in header]] if header else []) + rows)
    return tables


def find_table(text: str, header: list[str]) -> list[Row] | None:
    """The first table in *text* whose first row is *header* (case-insensitive).

    Returns the rows after the header, each padded or cut to the header's width.
    """
    lines = text.splitlines()
    want = [h.lower() for h in header]
    for parser in (_list_tables, _grid_tables, _simple_tables, _csv_tables):
        for rows in parser(lines):
            if rows and [c.lower() for c in rows[0]] == want:
                width = len(header)
                return [(r + [""] * width)[:width] for r in rows[1:]]
    return None


def find_md_table(text: str, header: list[str]) -> list[list[str]] | None:
    """The first Markdown (pipe) table in *text* whose header is *header*."""
    lines = text.splitlines()
    want = [h.lower() for h in header]
    for i, line in enumerate(lines[:-1]):
        cells = _md_cells(line)
        if [c.lower() for c in cells] != want:
            continue
        if not re.match(r"^\s*\|?\s*:?-{3,}", lines[i + 1]):
            continue
        rows = []
        for row in lines[i + 2 :]:
            if not row.strip().startswith("|"):
                break
            rows.append((_md_cells(row) + [""] * len(header))[: len(header)])
        return rows
    return None


def _md_cells(line: str) -> list[str]:
    body = line.strip()
    if not body.startswith("|"):
        return []
    body = body.strip("|")
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


_ROLE = re.compile(r":[\w:-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_LINK = re.compile(r"`([^`<]+?)(?:\s*<[^>]*>)?`_{1,2}")


def to_markdown(cell: str) -> str:
    """Convert the inline markup of an RST table cell to Markdown."""
    out = _ROLE.sub(lambda m: f"`{m.group(1).strip()}`", cell)
    out = re.sub(r"``(.+?)``", lambda m: "`" + m.group(1) + "`", out)
    out = _LINK.sub(lambda m: m.group(1).strip(), out)
    out = out.replace("\\ ", "")
    return out.replace("|", "\\|")
