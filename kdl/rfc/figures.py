"""References to measured values: ``FILE#SELECTOR``, resolved from the workspace.

A reference names a value in a file under the workspace root. Selectors:

``/a/0/b``
    a JSON pointer (RFC 6901) into a JSON file;
``/a?len``
    the length of the array (or object) at the pointer;
``/a?count=FIELD:VALUE``
    how many items of the array at the pointer have ``FIELD == VALUE``;
``insertions``, ``deletions``, ``files``
    counted from the hunks of a ``.patch`` file;
``match=REGEX``
    in a text file (a tool's output as it printed it), the first match of
    REGEX (Python syntax, multi-line): its first group, or the whole match.

Templates name them in figure slots (:mod:`kdl.rfc.template`).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdl.errors import WorkspaceError

_UNIT_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_FIELD_UNIT = (("_ns", 1.0), ("_us", 1e3), ("_ms", 1e6), ("_s", 1e9))


class SourceError(WorkspaceError):
    """A reference that does not resolve."""


def _walk(doc: Any, ptr: str, where: str) -> Any:
    if ptr in ("", "/"):
        return doc
    if not ptr.startswith("/"):
        raise SourceError(f"{where}: a JSON pointer must start with '/'")
    node = doc
    for raw in ptr[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            if not token.isdigit() or int(token) >= len(node):
                raise SourceError(f"{where}: no item {token}")
            node = node[int(token)]
        elif isinstance(node, dict):
            if token not in node:
                raise SourceError(f"{where}: no key {token!r}")
            node = node[token]
        else:
            raise SourceError(f"{where}: {token!r} indexes a scalar")
    return node


def _patch_stat(text: str, what: str) -> int:
    files = 0
    ins = dels = 0
    in_hunk = False
    for line in text.splitlines():
        if line.startswith("diff --git "):
            files += 1
            in_hunk = False
        elif line == "-- ":  # the signature separator ends the diff
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            ins += 1
        elif in_hunk and line.startswith("-"):
            dels += 1
    return {"insertions": ins, "deletions": dels, "files": files}[what]


def _match(path: Path, pattern: str, ref: str) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise SourceError(f"{ref}: cannot read {path.name}") from exc
    try:
        found = re.search(pattern, text, re.MULTILINE)
    except re.error as exc:
        raise SourceError(f"{ref}: not a regular expression ({exc})") from None
    if found is None:
        raise SourceError(f"{ref}: no match in {path.name}")
    return found.group(1) if found.re.groups else found.group(0)


@dataclass
class Resolver:
    """Resolve references against files under *root* (cached).

    With *record* (a run's record, :mod:`kdl.record`: a directory in the
    layout of ``results/``), a reference to ``results/X`` reads the run's
    ``X`` where the run wrote one, and the recorded ``results/X`` otherwise.
    With *instead* (glob -> file), a reference to a file the glob matches
    reads that file (``kdl rfc --build-dir``: the build's own test counts).
    """

    root: Path
    quote_renderers: Mapping[str, Callable[[Path, str], str]] | None = None
    record: Path | None = None
    instead: Mapping[str, Path] | None = None

    def __post_init__(self) -> None:
        self._json: dict[Path, Any] = {}

    def source(self, file_part: str) -> str:
        """The file, relative to the root, that a reference to *file_part* reads."""
        for glob, path in (self.instead or {}).items():
            if fnmatch.fnmatchcase(file_part, glob):
                return Path(os.path.relpath(path, self.root)).as_posix()
        if self.record is not None and file_part.startswith("results/"):
            run = self.record / file_part.removeprefix("results/")
            if run.is_file():
                return Path(os.path.relpath(run, self.root)).as_posix()
        return file_part

    def _load_json(self, path: Path, where: str) -> Any:
        if path not in self._json:
            try:
                self._json[path] = json.loads(path.read_text())
            except OSError as exc:
                raise SourceError(f"{where}: cannot read {path.name}") from exc
            except ValueError as exc:
                raise SourceError(f"{where}: not JSON ({exc})") from exc
        return self._json[path]

    def value(self, ref: str) -> Any:
        """The value *ref* names."""
        file_part, sep, selector = ref.partition("#")
        if not sep or not file_part:
            raise SourceError(f"{ref}: expected FILE#SELECTOR")
        path = self.root / self.source(file_part)
        if selector.startswith("match="):
            return _match(path, selector.removeprefix("match="), ref)
        if file_part.endswith(".patch"):
            if selector not in ("insertions", "deletions", "files"):
                raise SourceError(f"{ref}: unknown patch selector {selector!r}")
            try:
                return _patch_stat(path.read_text(errors="replace"), selector)
            except OSError as exc:
                raise SourceError(f"{ref}: cannot read {file_part}") from exc
        ptr, _, query = selector.partition("?")
        node = _walk(self._load_json(path, ref), ptr, ref)
        if not query:
            return node
        if query == "len":
            if not isinstance(node, list | dict):
                raise SourceError(f"{ref}: ?len of a scalar")
            return len(node)
        if query.startswith("count="):
            field, _, text = query[len("count=") :].partition(":")
            if not isinstance(node, list):
                raise SourceError(f"{ref}: ?count of a non-array")
            want: Any = text
            if text in ("true", "false", "null") or text.lstrip("-").isdigit():
                want = json.loads(text)
            return sum(
                1
                for item in node
                if isinstance(item, dict)
                and item.get(field) == want
                and type(item.get(field)) is type(want)
            )
        raise SourceError(f"{ref}: unknown query {query!r}")

    def scale_ns(self, ref: str) -> float | None:
        """Nanoseconds per unit of the value *ref* names, if it is a time.

        From the field's suffix (``median_ns``), or from a ``unit`` key next to
        the value (``{"value": 870, "unit": "ns"}``).
        """
        scale = field_scale_ns(ref)
        if scale is not None:
            return scale
        file_part, _, selector = ref.partition("#")
        ptr = selector.partition("?")[0]
        if file_part.endswith(".json") and ptr.count("/") >= 1:
            parent = _walk(
                self._load_json(self.root / self.source(file_part), ref),
                ptr.rpartition("/")[0],
                ref,
            )
            if isinstance(parent, dict):
                unit = parent.get("unit")
                if isinstance(unit, str) and unit in _UNIT_NS:
                    return _UNIT_NS[unit]
        return None

    def quote(self, ref: str) -> str:
        """Render the quoted block *ref* names again."""
        file_part, _, selector = ref.partition("#")
        kind = "" if selector.startswith("/") else selector.partition(":")[0]
        renderers = self.quote_renderers or {}
        if kind not in renderers:
            raise SourceError(f"{ref}: unknown quote kind {kind!r}")
        return renderers[kind](self.root / self.source(file_part), selector)


def field_scale_ns(ref: str) -> float | None:
    """Nanoseconds per unit of the field *ref* points at (by its suffix)."""
    last = ref.rpartition("/")[2].partition("?")[0]
    for suffix, scale in _FIELD_UNIT:
        if last.endswith(suffix):
            return scale
    return None
