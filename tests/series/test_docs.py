"""The series' docs page: valid reStructuredText, short, citing its PRs."""

from __future__ import annotations

import io

import docutils.core
import docutils.utils

from kdl.series.model import load

PAGE = "offload/docs/EntryRank.rst"


def _page() -> str:
    (text,) = [t for p in load().patches if (t := p.new_file_text(PAGE)) is not None]
    return text


def test_the_page_parses_without_a_warning() -> None:
    """docutils with warnings as errors (Sphinx roles would fail here too:
    the page uses none, so it renders the same in LLVM's Sphinx build)."""
    warnings = io.StringIO()
    docutils.core.publish_doctree(
        _page(),
        settings_overrides={
            "halt_level": docutils.utils.Reporter.WARNING_LEVEL,
            "report_level": docutils.utils.Reporter.INFO_LEVEL,
            "warning_stream": warnings,
        },
    )
    assert warnings.getvalue() == ""


def test_the_page_cites_the_prs_it_builds_on_and_is_short() -> None:
    text = _page()
    for pr in ("169425", "185404", "186088"):
        assert f"`#{pr}`_" in text
        assert f"https://github.com/llvm/llvm-project/pull/{pr}" in text
    assert len(text.splitlines()) <= 100
    # Nothing main removed or never had.
    for gone in ("olIsValidBinary", "getArchAttrAMDGCN", "OFFLOAD_IMAGE_TAG"):
        assert gone not in text


def test_the_index_lists_the_page() -> None:
    (patch,) = [p for p in load().patches if PAGE in p.diff_files()]
    assert "+   EntryRank\n" in (patch.file_diff("offload/docs/index.rst") or "")
