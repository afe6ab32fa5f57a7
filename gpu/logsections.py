"""The ``== NAME`` sections of a GPU harness log (shared by the reports)."""

from __future__ import annotations

import re


def sections(log: str) -> tuple[str, list[tuple[str, str]]]:
    """The ``== device`` section's text, and (name, body) of every other."""
    device = ""
    out: list[tuple[str, str]] = []
    for block in re.split(r"^== ", log, flags=re.MULTILINE)[1:]:
        name, _, body = block.partition("\n")
        if name == "device":
            device = body.strip()
        else:
            out.append((name, body))
    return device, out
