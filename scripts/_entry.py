"""Shared start-up for the scripts/*.py wrappers (standard library only).

Sets the workspace up on first use (Debian packages, .venv) and then runs the
named ``kdl`` subcommand inside the virtual environment.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kdl import bootstrap

#: Commands that need only git and Python, not the LLVM packages.
_NO_LLVM = {"apply", "check", "status", "revert", "export", "rfc"}


def run(command: str) -> None:
    argv = [command, *sys.argv[1:]]
    bootstrap.enter(argv, packages=command not in _NO_LLVM)
    from kdl.cli import main

    sys.exit(main(argv))
