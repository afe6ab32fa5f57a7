"""The overlay's model of the plugins' acceptance restates the series'
plugin text where it can be compared: the CUDA plugin's isCubinCompatible
(0003: an arch-specific cubin only on its SM) and getPTXTarget (0007: which
text is PTX, for which target) stand in
overlay/plugin-model/PluginAcceptance.cpp as the series adds them, in both
the main series and the release/22.x backport. (The rest of the model,
the checks that ask the device, is checked through kdl-select by the lit
suite and the property test.)"""

from __future__ import annotations

import re

import pytest

from kdl import paths

MODEL = paths.OVERLAY_SRC / "plugin-model" / "PluginAcceptance.cpp"
PATCHES = {
    "isCubinCompatible": ("0003", "release-22.x/0003"),
    "getPTXTarget": ("0007", "release-22.x/0013"),
}


def _tokens(text: str) -> str:
    """*text* with its white space folded (clang-format wraps the model's
    copy at another indentation than the plugin's member)."""
    return re.sub(r"\s+", " ", text).strip()


def _added_function(patch: str, name: str) -> str:
    """The static member *name* that *patch* adds, as the patched file has it
    (its added lines and the context among them), from its ``static`` line
    to the line that closes it at the same indentation."""
    diff = patch.split("\ndiff --git ", 1)[1]
    lines = [
        line[1:]
        for line in diff.splitlines()
        if line[:1] in ("+", " ") and not line.startswith("+++")
    ]
    start = next(
        i
        for i, line in enumerate(lines)
        if line.lstrip().startswith("static ") and f" {name}(" in line
    )
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(
        i for i in range(start + 1, len(lines)) if lines[i] == " " * indent + "}"
    )
    return "\n".join(lines[start : end + 1])


@pytest.mark.parametrize("name", sorted(PATCHES))
@pytest.mark.parametrize("series", [0, 1], ids=["main", "release-22.x"])
def test_the_model_restates_the_series_plugin_text(name: str, series: int) -> None:
    stem = PATCHES[name][series]
    (patch,) = (paths.PATCHES / stem.rpartition("/")[0]).glob(
        f"{stem.rpartition('/')[2]}-*.patch"
    )
    text = _added_function(patch.read_text(), name)
    assert _tokens(text) in _tokens(MODEL.read_text()), (patch.name, text)
