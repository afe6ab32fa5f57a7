"""The overlay's model of the plugins' acceptance restates the series'
plugin text where it can be compared: the CUDA plugin's rule for
arch-specific cubins (0003: only on their SM, as tryGetCPUName names them)
and its PTX acceptance for a device (0008: isImageCompatible) stand in
overlay/plugin-model/PluginAcceptance.cpp as the series adds them, in both
the main series and the release/22.x backport, but for the names the test
lists. (The rest of the model, the checks that ask the device, is checked
through kdl-select by the lit suite and the property test.)"""

from __future__ import annotations

import re

import pytest

from kdl import paths
from kdl.series.model import load

MODEL = paths.OVERLAY_SRC / "plugin-model" / "PluginAcceptance.cpp"

#: Per rule: the patches' places in the series (main, release-22.x; the
#: backport names main's file for both), the first line of the block
#: of added lines the model restates, and the names the model uses instead
#: of the plugin's (the model has no plugin object or device id).
RULES = {
    "arch-specific cubins": (
        (3, 3),
        "// Arch-specific code (sm_90a) runs only on the compute capability it was",
        {},
    ),
    "PTX for a device": (
        (8, 14),
        "StringRef Target = object::getPTXTarget(Image);",
        {
            "getImageTriple()": "ImageTriple",
            "getComputeCapability(DeviceId)": "getComputeCapability(Dev.Arch)",
            "CCOrErr": "CC",
            # The model says why it refuses the PTX.
            "return Device.rank(ImageTriple, Target, object::IMG_PTX).runs();": (
                "if (Device.rank(ImageTriple, Target, object::IMG_PTX).runs())"
            ),
        },
    ),
}


def _tokens(text: str) -> str:
    """*text* with its white space folded (clang-format wraps the model's
    copy at another indentation than the plugin's member)."""
    return re.sub(r"\s+", " ", text).strip()


def _added_block(patch: str, first: str) -> str:
    """The run of lines *patch* adds from the line *first* to the end of its
    block (a line indented less than it)."""
    lines = patch.splitlines()
    start = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("+") and line[1:].strip() == first
    )
    indent = len(lines[start][1:]) - len(lines[start][1:].lstrip())
    end = next(
        (
            i
            for i in range(start, len(lines))
            if not lines[i].startswith("+")
            or (
                lines[i][1:].strip()
                and len(lines[i][1:]) - len(lines[i][1:].lstrip()) < indent
            )
        ),
        len(lines),
    )
    return "\n".join(line[1:] for line in lines[start:end])


def _statements(block: str) -> list[str]:
    """The code of *block* (its comments and the plugin's error returns, which
    the model words as reasons, left out), one statement or condition each."""
    code = [
        line
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("//")
    ]
    return [
        _tokens(line)
        for line in code
        if "takeError()" not in line and _tokens(line) != "return false;"
    ]


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("series", [0, 1], ids=["main", "release-22.x"])
def test_the_model_restates_the_series_plugin_text(rule: str, series: int) -> None:
    places, first, renamed = RULES[rule]
    series_file = (paths.SERIES, paths.BACKPORT_SERIES)[series]
    patch = load(series_file).patches[places[series] - 1].path
    block = _added_block(patch.read_text(), first)
    for name, model_name in renamed.items():
        block = block.replace(name, model_name)
    model = _tokens(MODEL.read_text())
    missing = [s for s in _statements(block) if s not in model]
    assert block and not missing, (patch.name, missing)
