"""The GPU runs the posts' figures come from: which series version each
measured, on which card, and when.

A figure read from ``results/gpu/RUN/...`` belongs to the run RUN (a file
directly under ``results/gpu/`` is a run of its own). What the run recorded
says the rest, first found first:

* the series version: the series entry of ``report.json``'s ``runtimes``
  (``22.1.8 + series v11 (...)``), ``summary.json``'s ``runtimes``,
  ``series-22.txt``, the title of ``NOTES.md`` or ``README.md``; a run whose
  record names a build of the series without a version is one of no recorded
  version, and a run that names none (nvcc's output) ran no build of it;
* the card: ``device`` of ``report.json`` or ``summary.json``,
  ``device-22.txt``, the first GPU ``NOTES.md`` or ``README.md`` names;
* when: the first date of ``NOTES.md`` or ``README.md`` ("ran"), else the
  date of the commit that added the run ("recorded").

``kdl rfc --build-dir`` marks each figure of a run of another series version
than the checkout's (:func:`mark`) and lists every run a post reads with its
card and date (:func:`details`); ``kdl rfc --check`` checks the marks again.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GPU = "results/gpu/"
_VERSION = re.compile(r"\bseries v(\d+)\b", re.IGNORECASE)
_CARD = re.compile(r"\b(?:(?:NVIDIA|AMD) )?(?:[A-H]\d{2,3}|MI\d{2,3}[A-Z]?|GH200)\b")
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


@dataclass(frozen=True)
class Run:
    where: str  # results/gpu/RUN/ (or the file), relative to the root
    series: bool  # it ran a build of the series
    version: int | None  # the series version it ran (None: not recorded)
    card: str | None
    date: str | None
    dated: str  # "ran" (its notes say), "recorded" (the commit that added it)

    def mark(self, version: int | None) -> str:
        """What a figure of this run says after it where *version* (the
        checkout's) is not the one it ran: empty where it is, or where the
        run ran no build of the series."""
        if not self.series or (self.version is not None and self.version == version):
            return ""
        if self.version is None:
            return " (run of no recorded version)"
        return f" (v{self.version}'s run)"

    def line(self, version: int | None) -> str:
        """One line of the list of runs (:func:`details`)."""
        if not self.series:
            what = "no build of the series"
        elif self.version is None:
            what = "a build of the series of no recorded version"
        elif self.version == version:
            what = f"series v{self.version}, as the checkout"
        else:
            shown = f"v{version}" if version is not None else "of no known version"
            what = f"series v{self.version}, not the checkout's {shown}"
        if self.mark(version):
            what += f"; its figures marked{self.mark(version)}"
        card = f"card: {self.card}" if self.card else "card not recorded"
        when = f"{self.dated} {self.date}" if self.date else "date not recorded"
        return f"- `{self.where}`: {what}; {card}; {when}"


def where_of(source: str) -> str | None:
    """The run (``results/gpu/RUN/``) a source file relative to the root
    belongs to; None for a file outside ``results/gpu/``."""
    if not source.startswith(GPU):
        return None
    rest = source[len(GPU) :]
    return GPU + rest.split("/", 1)[0] + ("/" if "/" in rest else "")


def _json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _series_of(folder: Path) -> tuple[bool, int | None]:
    """(whether the run ran a build of the series, its version)."""
    runtimes = _json(folder / "report.json").get("runtimes")
    if isinstance(runtimes, dict):
        said = [v for k, v in runtimes.items() if k.endswith("series")]
        if said:
            m = _VERSION.search(str(said[0]))
            return True, int(m.group(1)) if m else None
    texts = [
        str(_json(folder / "summary.json").get("runtimes", "")),
        _text(folder / "series-22.txt").partition("\n")[0],
        *(_text(folder / n).partition("\n")[0] for n in ("NOTES.md", "README.md")),
    ]
    for text in texts:
        m = _VERSION.search(text)
        if m:
            return True, int(m.group(1))
    return False, None


def _card_of(folder: Path, notes: str) -> str | None:
    for name in ("report.json", "summary.json"):
        device = _json(folder / name).get("device")
        if isinstance(device, str) and device:
            return device.split(",", 1)[0].strip()
    first = _text(folder / "device-22.txt").partition("\n")[0]
    if first.strip():
        return first.split(",", 1)[0].strip()
    m = _CARD.search(notes)
    return m.group(0) if m else None


def _added(root: Path, where: str) -> str | None:
    """The date of the commit that added *where*, if git knows it."""
    try:
        done = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "log",
                "--diff-filter=A",
                "--format=%cs",
                "--",
                where,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    dates = done.stdout.split()
    return dates[-1] if done.returncode == 0 and dates else None


def run_of(root: Path, where: str) -> Run:
    """What the run *where* (:func:`where_of`) under *root* recorded."""
    path = root / where
    folder = path if path.is_dir() else path.parent
    notes = "\n".join(_text(folder / n) for n in ("NOTES.md", "README.md"))
    if path.is_dir():
        series, version = _series_of(folder)
    else:  # a file of its own directly under results/gpu/
        notes = _text(path)
        m = _VERSION.search(notes)
        series, version = m is not None, int(m.group(1)) if m else None
    date = _DATE.search(notes)
    when = date.group(0) if date else _added(root, where)
    dated = "ran" if date else "recorded"
    return Run(where, series, version, _card_of(folder, notes), when, dated)


def mark(root: Path, source: str, version: int | None) -> str:
    """The mark of a figure read from *source* (relative to *root*) in a
    draft of a checkout of series *version*."""
    where = where_of(source)
    return run_of(root, where).mark(version) if where else ""


def details(root: Path, sources: list[str], version: int | None) -> list[str]:
    """The lines a post ends with: each GPU run its figures read, what
    series version it ran, on which card and when."""
    runs = sorted({w for w in map(where_of, sources) if w})
    if not runs:
        return []
    return [
        '[details="The GPU runs"]',
        *(run_of(root, w).line(version) for w in runs),
        "[/details]",
    ]


def sources_of(expr: str) -> list[str]:
    """The files a figure's traced expression reads."""
    for operator in (" / ", " - "):
        if operator in expr:
            return [p.strip().partition("#")[0] for p in expr.split(operator, 1)]
    return [expr.partition("#")[0]]


def mark_of(root: Path, expr: str, version: int | None) -> str:
    """The mark of a figure whose traced expression is *expr*: the first of
    its sources' (a figure computed from two runs names the first marked)."""
    marks = [mark(root, s, version) for s in sources_of(expr)]
    return next((m for m in marks if m), "")


@dataclass(frozen=True)
class Context:
    """A draft from a build directory: the checkout's series *version*, the
    file of the build's test counts and the results it stands in for."""

    root: Path
    version: int | None
    counts: Path
    replaces: str
    build: dict[str, Any]

    def mark(self, expr: str) -> str:
        return mark_of(self.root, expr, self.version)

    def details(self, post: Any) -> str:
        """The list of GPU runs that ends *post* (a rendered post), if any."""
        sources = [s for f in post.figures for s in sources_of(f.expr)]
        lines = details(self.root, sources, self.version)
        return "\n" + "\n".join(lines) + "\n" if lines else ""

    @property
    def sidecar(self) -> dict[str, Any]:
        """What ``kdl rfc --check`` needs to check the marks again."""
        return {"build": self.build, "series_version": self.version}
