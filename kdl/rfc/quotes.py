"""Blocks a post quotes from the workspace, rendered again by the checker.

A template line ``{{quote FILE#KIND:ARG}}`` becomes the block the renderer of
KIND gives for FILE (``table``, ``text``, ``lines``, ``run``, a JSON
pointer); ``kdl rfc --check`` renders it again and requires the
post to hold exactly that text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kdl.rfc import rst
from kdl.series.model import new_file_text

#: The docs page the series adds and the header of its key table.
DOCS_PAGE = "offload/docs/ImageSelection.rst"
TABLE_HEADER = ["Key", "Grammar", "Meaning", "Default"]


def _cell(text: str) -> str:
    """A table cell: pipes escaped (also inside code spans, as GFM needs)."""
    return re.sub(r"(?<!\\)\|", r"\\|", text)


def table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def code(text: str, lang: str = "text") -> list[str]:
    fence = "````" if "```" in text else "```"
    return [f"{fence}{lang}", *text.rstrip("\n").splitlines(), fence]


def vocab_rows(patch_path: Path) -> list[list[str]] | None:
    """The key table of the docs page a patch adds (cells as RST text)."""
    text = new_file_text(patch_path.read_text(errors="replace"), DOCS_PAGE)
    if text is None:
        return None
    return rst.find_table(text, TABLE_HEADER)


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


def quote_table(path: Path, selector: str) -> str:
    """``PATCH#table:DOCS_PAGE``: the key table of the docs patch, as Markdown."""
    rows = vocab_rows(path) if selector == f"table:{DOCS_PAGE}" else None
    if not rows:
        raise ValueError(f"{path.name}: no key table in {DOCS_PAGE}")
    md = table(TABLE_HEADER, ([rst.to_markdown(c) for c in row] for row in rows))
    return "\n".join(md) + "\n"


def quote_json_text(path: Path, selector: str) -> str:
    """``FILE#/pointer``: a text value of a JSON file, in a code fence."""
    node: Any = json.loads(path.read_text())
    for token in selector.lstrip("/").split("/"):
        node = node[int(token)] if isinstance(node, list) else node[token]
    return "\n".join(code(str(node))) + "\n"


def quote_run(path: Path, selector: str) -> str:
    """``TEST#run[:WORD]``: the RUN commands of a lit test with WORD."""
    word = selector.partition(":")[2]
    blocks = run_blocks(path.read_text(), word)
    if not blocks:
        raise ValueError(f"{path.name}: no RUN line with {word!r}")
    return "\n".join(code("\n".join(blocks), "sh")) + "\n"


def quote_text(path: Path, selector: str) -> str:
    """``FILE#text``: a text file as it is (a tool's output), in a code fence."""
    return "\n".join(code(path.read_text())) + "\n"


def quote_lines(path: Path, selector: str) -> str:
    """``FILE#lines:A-B``: lines A to B (1-based, inclusive) of a text file
    (part of a tool's output), in a code fence."""
    first, _, last = selector.partition(":")[2].partition("-")
    if not (first.isdigit() and last.isdigit()) or not 0 < int(first) <= int(last):
        raise ValueError(f"{path.name}: expected lines:A-B, got {selector!r}")
    lines = path.read_text().splitlines()
    if int(last) > len(lines):
        raise ValueError(f"{path.name}: has {len(lines)} lines, not {last}")
    return "\n".join(code("\n".join(lines[int(first) - 1 : int(last)]))) + "\n"


QUOTE_RENDERERS: dict[str, Callable[[Path, str], str]] = {
    "table": quote_table,
    "text": quote_text,
    "lines": quote_lines,
    "": quote_json_text,
    "run": quote_run,
}
