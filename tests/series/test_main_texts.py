"""Main's plugin-interface hunks on the stored main texts they are made
against, and the loop one text in main's series and in the backport.

patches/series names, per file, the text each patch was made against; for
offload's PluginInterface.h and PluginInterface.cpp that is llvm/llvm-project
as stored at 00da59a4. results/main-texts/stored-texts.json records those
texts' blob ids; the texts themselves are kept outside git, under
.work/main-texts (results/main-texts/stored-texts.md says how they were
read). These checks run everywhere; tools/main-texts/check_apply.py, run by
hand where the texts are kept, applies each step to them.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from kdl import paths
from kdl.series.model import Patch, load

MAIN_TEXTS = paths.RESULTS / "main-texts"
MANIFEST: dict[str, Any] = json.loads((MAIN_TEXTS / "stored-texts.json").read_text())
STAND_IN = MAIN_TEXTS / "stand-in-186088.diff"
KEPT = paths.ROOT / MANIFEST["kept_in"]
CPP = "offload/plugins-nextgen/common/src/PluginInterface.cpp"
HEADER = "offload/plugins-nextgen/common/include/PluginInterface.h"
LOOP = "Load the OffloadBinary entry that suits the device best"
FUNCTION = "Expected<DeviceImageTy *> GenericDeviceTy::loadOffloadBinaryEntry("
GLUE = "auto LoadImage = [&](StringRef TgtImage) -> Expected<DeviceImageTy *> {"


def _patch(series_file: Path, number: str) -> Patch:
    return next(p for p in load(series_file).patches if p.name.startswith(number))


def _loop(series_file: Path) -> str:
    (patch,) = [p for p in load(series_file).patches if p.subject.endswith(LOOP)]
    return patch.path.read_text()


def _file_diff(patch: str, path: str) -> str:
    """The part of *patch* that changes *path*."""
    parts = re.split(r"(?m)^(?=diff --git )", patch)
    (diff,) = [p for p in parts if p.startswith(f"diff --git a/{path} b/{path}\n")]
    return diff


def _index(diff: str) -> tuple[str, str]:
    match = re.search(r"(?m)^index ([0-9a-f]{40})\.\.([0-9a-f]{40})", diff)
    assert match, diff[:200]
    return match[1], match[2]


def _added_blocks(diff: str) -> list[str]:
    """Each run of added lines, as text."""
    blocks: list[str] = []
    run: list[str] = []
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            run.append(line[1:])
        elif run:
            blocks.append("\n".join(run))
            run = []
    if run:
        blocks.append("\n".join(run))
    return blocks


def _function(diff: str) -> str:
    """The added lines of GenericDeviceTy::loadOffloadBinaryEntry."""
    lines = diff.splitlines()
    start = lines.index("+" + FUNCTION)
    end = lines.index("+}", start)
    return "\n".join(line[1:] for line in lines[start : end + 1])


def test_the_loop_is_one_text_in_main_and_the_backport() -> None:
    """loadOffloadBinaryEntry, its declaration and the device's target are
    the same lines in main's 0009 and release-22.x 0017."""
    main, backport = _loop(paths.SERIES), _loop(paths.BACKPORT_SERIES)
    function = _function(_file_diff(main, CPP))
    assert function.count("\n") > 80
    assert function == _function(_file_diff(backport, CPP))
    assert _added_blocks(_file_diff(main, HEADER)) == _added_blocks(
        _file_diff(backport, HEADER)
    )


def _added_lines(diff: str) -> list[str]:
    return [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]


#: What main's glue in loadBinary may change against the backport's: the
#: three-argument loadBinaryImpl with the caller's context, the IR kept by
#: setIRImage, and the comment that says so.
GLUE_CHANGES = re.compile(
    r"loadBinaryImpl|LoadedImages\.size\(\)|setIRImage|ImageOrErr|^\s*//"
)


def test_only_the_glue_in_load_binary_differs() -> None:
    """The lines 0009 adds to PluginInterface.cpp are the backport's in the
    same order, but for the glue in loadBinary, last, where main's passes the
    caller's context to loadBinaryImpl and keeps an IR image's IR."""
    added: dict[Path, tuple[list[str], list[str]]] = {}
    for series_file in (paths.SERIES, paths.BACKPORT_SERIES):
        diff = _file_diff(_loop(series_file), CPP)
        lines = _added_lines(diff)
        function = _function(diff).splitlines()
        start = lines.index(function[0])
        del lines[start : start + len(function)]
        at = next(i for i, line in enumerate(lines) if GLUE in line) - 3
        assert lines[at].startswith("  // Compile the image if it is IR")
        assert lines[-1] == "          : LoadImage(InputTgtImage);"
        added[series_file] = (lines[:at], lines[at:])
    (main_rest, main_glue), (rest, glue) = added.values()
    assert main_rest == rest and len(rest) >= 2
    changed = [
        line[2:]
        for line in difflib.ndiff(main_glue, glue)
        if line.startswith(("- ", "+ "))
    ]
    assert changed and all(GLUE_CHANGES.search(line) for line in changed), changed
    assert any("LoadedImages.size(), Context)" in line for line in main_glue)
    assert any("->setIRImage(" in line for line in main_glue)


def _steps() -> list[tuple[str, str, str, str]]:
    """(patch or diff, path, pre-image blob, post-image blob) per step."""
    steps = []
    for step in MANIFEST["steps"]:
        name, path = step["patch"], step["path"]
        text = (
            (MAIN_TEXTS / name).read_text()
            if name.endswith(".diff")
            else _patch(paths.SERIES, name).path.read_text()
        )
        steps.append((name, path, *_index(_file_diff(text, path))))
    return steps


def test_the_series_names_the_stored_texts() -> None:
    texts = {t["path"]: t["commit"] for t in MANIFEST["texts"]}
    for name, path, _, _ in _steps():
        if name.endswith(".diff"):
            continue
        (base,) = [f for f in _patch(paths.SERIES, name).files if f.path == path]
        assert base.commit == texts[path], (name, path)


def test_the_index_lines_chain_from_the_stored_texts() -> None:
    """Each step's pre-image is the stored text, or the previous step's
    post-image of the same file."""
    blob = {t["path"]: t["blob"] for t in MANIFEST["texts"]}
    for name, path, before, after in _steps():
        assert before == blob[path], (name, path)
        blob[path] = after


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
