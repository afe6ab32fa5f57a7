"""Markdown pieces of the posts: sourced numbers, tables, fences, quotes.

Every number goes through :func:`t` (a duration), :func:`n` (a count) or
:func:`ratio`, which append its source marker (:mod:`kdl.rfc.figures`).
Quoted blocks are rendered by the functions in :data:`QUOTE_RENDERERS`, which
the checker calls again to verify that a quote still matches its source.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kdl.rfc import rst
from kdl.rfc.figures import cite
from kdl.rfc.sources import (
    CONTROLS_HEADER,
    DOCS_PAGE,
    TABLE_HEADER,
    controls_rows,
    run_blocks,
    vocab_rows,
)

NOT_MEASURED = "not measured yet"


def date(value: Any) -> str:
    """The day of an ISO timestamp, as the posts print dates."""
    return str(value)[:10] if value else "date not recorded"


# --- number formatting ---------------------------------------------------------


def _sig(value: float, digits: int = 3) -> str:
    """*value* with about *digits* significant digits, no exponent."""
    if value == 0:
        return "0"
    magnitude = len(str(int(abs(value)))) if abs(value) >= 1 else 0
    decimals = max(0, digits - magnitude)
    if abs(value) < 1:
        decimals = digits
    return f"{value:.{decimals}f}"


def fmt_ns(ns: float) -> str:
    """A duration in ns as ``870 ns`` / ``1.42 us`` / ``3.10 ms``."""
    if ns < 1_000:
        return f"{_sig(ns)} ns"
    if ns < 1_000_000:
        return f"{_sig(ns / 1e3)} us"
    if ns < 1_000_000_000:
        return f"{_sig(ns / 1e6)} ms"
    return f"{_sig(ns / 1e9)} s"


def t(ref: str, ns: float) -> str:
    """A sourced duration."""
    return cite(fmt_ns(ns), ref)


def n(ref: str, value: int) -> str:
    """A sourced count."""
    return cite(str(value), ref)


def ratio(ref: str, value: float) -> str:
    decimals = 2 if value < 10 else 1 if value < 100 else 0
    return cite(f"{value:.{decimals}f}x", ref)


# --- Markdown helpers ----------------------------------------------------------


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


def vocab_table_md(rows: list[list[str]]) -> str:
    """The docs table as Markdown (the quoted block of the vocabulary post)."""
    md = table(TABLE_HEADER, ([rst.to_markdown(c) for c in row] for row in rows))
    return "\n".join(md) + "\n"


def quote_table(path: Path, selector: str) -> str:
    """Quote renderer for ``PATCH#table:DOCS_PAGE``."""
    rows = vocab_rows(path) if selector == f"table:{DOCS_PAGE}" else None
    if not rows:
        raise ValueError(f"{path.name}: no key table in {DOCS_PAGE}")
    return vocab_table_md(rows)


def quote_json_text(path: Path, selector: str) -> str:
    """Quote renderer for ``FILE#/pointer``: a text value in a code fence."""
    node: Any = json.loads(path.read_text())
    for token in selector.lstrip("/").split("/"):
        node = node[int(token)] if isinstance(node, list) else node[token]
    return "\n".join(code(str(node))) + "\n"


def quote_run(path: Path, selector: str) -> str:
    """Quote renderer for ``TEST#run[:WORD]``: RUN commands of a lit test."""
    word = selector.partition(":")[2]
    blocks = run_blocks(path.read_text(), word)
    if not blocks:
        raise ValueError(f"{path.name}: no RUN line with {word!r}")
    return "\n".join(code("\n".join(blocks), "sh")) + "\n"


def controls_table_md(rows: list[list[str]]) -> str:
    """The runtime's Variable/Effect table as Markdown."""
    return "\n".join(table(CONTROLS_HEADER, rows)) + "\n"


def quote_mdtable(path: Path, selector: str) -> str:
    """Quote renderer for ``PATCH#mdtable:PAGE``: a docs page's controls table."""
    page = selector.partition(":")[2]
    rows = controls_rows(path, page)
    if not rows:
        raise ValueError(f"{path.name}: no Variable/Effect table in {page}")
    return controls_table_md(rows)


QUOTE_RENDERERS = {
    "table": quote_table,
    "mdtable": quote_mdtable,
    "": quote_json_text,
    "run": quote_run,
}


def quoted(ref: str, body: str) -> list[str]:
    return [
        f"<!-- quote: {ref} -->",
        *body.rstrip("\n").splitlines(),
        "<!-- /quote -->",
    ]
