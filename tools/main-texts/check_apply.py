"""Apply main's plugin-interface steps to the stored main texts (by hand).

The stored texts of llvm/llvm-project that patches/series names for
offload's PluginInterface.h and PluginInterface.cpp are kept outside git
(results/main-texts/stored-texts.md says how they were read, and
stored-texts.json where and with which SHA-256). On a repository holding
them, each step (0004, the stand-in of #186088, 0007, 0009) must apply with
no offset and no fuzz and give the post-image its index line names.

    .venv/bin/python tools/main-texts/check_apply.py
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kdl import paths
from tests.series.test_main_texts import (
    KEPT,
    MAIN_TEXTS,
    MANIFEST,
    _git,
    _patch,
    _steps,
)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        for text in MANIFEST["texts"]:
            kept = KEPT / text["commit"] / text["path"]
            if not kept.is_file():
                print(
                    f"error: {kept}: not kept here (stored-texts.md says how "
                    "to read it)",
                    file=sys.stderr,
                )
                return 2
            data = kept.read_bytes()
            if hashlib.sha256(data).hexdigest() != text["sha256"]:
                print(
                    f"error: {kept}: not the text stored-texts.json names "
                    "(SHA-256 differs)",
                    file=sys.stderr,
                )
                return 1
            (repo / text["path"]).parent.mkdir(parents=True, exist_ok=True)
            (repo / text["path"]).write_bytes(data)
        _git(repo, "init", "-q")
        failed = 0
        for name, path, before, after in _steps():
            source = (
                MAIN_TEXTS / name
                if name.endswith(".diff")
                else _patch(paths.SERIES, name).path
            )
            problem = ""
            if _git(repo, "hash-object", path).stdout.strip() != before:
                problem = f"the text is not blob {before}"
            else:
                done = _git(repo, "apply", "-v", f"--include={path}", str(source))
                if done.returncode or "Applied patch" not in done.stderr:
                    problem = done.stderr.strip().splitlines()[-1]
                elif "offset" in done.stderr or "fuzz" in done.stderr:
                    problem = "applies only with an offset or fuzz"
                elif _git(repo, "hash-object", path).stdout.strip() != after:
                    problem = f"the result is not blob {after}"
            failed += bool(problem)
            print(f"{name} {path}: {problem or 'applies, ' + after[:8]}")
        print(f"check_apply: {len(_steps()) - failed} of {len(_steps())} steps apply")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
