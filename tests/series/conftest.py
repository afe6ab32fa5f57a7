"""Every test of the series commands runs git in an isolated environment."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_git(isolated_git: Path) -> Path:
    return isolated_git
