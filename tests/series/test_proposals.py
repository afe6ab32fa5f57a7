"""The proposals on top of the stack: ``kdl apply`` puts the first ones the
proposals' series names (``apply: 1-N``) on the stack's branch by default,
``--proposals`` all of them, ``--posting-stack`` none; the branch then
carries what it took, and status, check, export and revert take that."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kdl import paths
from kdl.series.export import _renumber
from kdl.series.model import load
from tests.llvm_tree import BRANCH, SeriesDir, files_of, git, kdl, snapshot


def _split(series: SeriesDir, header: str = "on: test-series\napply: 1\n") -> Path:
    """The generated series as a stack of its first patch (in place) and
    proposals of the other two (returned), each numbered as its own series
    is (the proposals' files renamed 0001 and 0002), whose *header* says
    what they go on and what apply takes by default."""
    lines = series.series.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.strip() == series.names[1])
    series.series.write_text("".join(lines[:cut]))
    first = series.dir / series.names[0]
    first.write_bytes(_renumber(first.read_bytes(), 1))
    proposals = series.dir / "proposals"
    proposals.mkdir()
    text = "".join(lines[cut:])
    for n, name in enumerate(series.names[1:], 1):
        renamed = f"{n:04d}-{name.split('-', 1)[1]}"
        data = (series.dir / name).read_bytes()
        data = data.replace(b"[PATCH %d/3]" % (n + 1), b"[PATCH %d/3]" % n)
        (proposals / renamed).write_bytes(_renumber(data, 2))
        (series.dir / name).unlink()
        text = text.replace(name, renamed)
        series.names[n] = renamed
    (proposals / "series").write_text(
        "name: test-proposals\nversion: 2\n" + header + text
    )
    return proposals / "series"


@pytest.fixture
def given(llvm: Path, series: SeriesDir, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(paths, "PATCHES", series.dir)
    monkeypatch.setattr(paths, "PROPOSALS_SERIES", _split(series))
    return ["--llvm", str(llvm), "--series", str(series.series)]


def test_apply_takes_the_default_proposals_and_the_branch_keeps_them(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, given: list[str]
) -> None:
    status, out, err = kdl(capsys, "apply", *given)
    assert status == 0, out + err
    first = out.splitlines()[0]
    assert first.startswith("series: ") and " + " in first
    assert first.endswith("proposals/series 1 (test-series): given with --series")
    assert "applying 2 patches of 'test-series+proposals:1'" in out
    assert f"{BRANCH}: 2 applied" in out
    assert git(llvm, "config", f"branch.{BRANCH}.kdlSeries").strip() == (
        "test-series+proposals:1"
    )
    # Later commands take both from the branch, without flags, and name both.
    for command in ("status", "check", "revert"):
        status, out, err = kdl(capsys, command, "--llvm", str(llvm), "--dry-run")
        assert status == 0, out + err
        assert out.splitlines()[0].endswith(f"{BRANCH} carries it"), out
        assert "proposals/series 1 (" in out.splitlines()[0]
    status, out, _ = kdl(capsys, "status", "--llvm", str(llvm))
    assert "status: 2 applied (1 of " in out and " and 1 of " in out
    headings = [
        ln for ln in out.splitlines() if ln.startswith("  ") and ln.endswith(":")
    ]
    assert len(headings) == 2 and headings[1].endswith("proposals/series 1:")
    doc = json.loads(kdl(capsys, "status", "--llvm", str(llvm), "--json")[1])
    assert [p["state"] for p in doc["patches"]] == ["applied", "applied"]
    assert [f["patches"] for f in doc["series_files"]] == [1, 1]
    assert doc["patches"][1]["series"].endswith("proposals/series 1")
    # check and apply agree on what is applied.
    status, out, _ = kdl(capsys, "check", "--llvm", str(llvm))
    assert (
        "2 of them are on kdl/test-series already, so kdl apply would apply none" in out
    )
    status, out, _ = kdl(capsys, "apply", "--llvm", str(llvm))
    assert status == 0 and f"{BRANCH}: 0 applied, 2 already applied" in out


def test_proposals_adds_the_rest_and_posting_stack_refuses_to_drop(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, given: list[str]
) -> None:
    assert kdl(capsys, "apply", *given)[0] == 0
    before = snapshot(llvm)
    status, out, err = kdl(capsys, "apply", "--posting-stack", "--llvm", str(llvm))
    assert status != 0
    assert len(err.strip().splitlines()) == 1, err
    assert "carries proposals 1 on top of the stack" in err
    assert "'kdl revert' first" in err and "--posting-stack" in err
    assert snapshot(llvm) == before
    status, out, _ = kdl(capsys, "apply", "--proposals", "--llvm", str(llvm))
    assert status == 0, out
    assert out.splitlines()[0].endswith(
        f"proposals/series 1-2 (test-series): {BRANCH} carries it"
    )
    assert f"{BRANCH}: 1 applied, 2 already applied" in out
    assert git(llvm, "config", f"branch.{BRANCH}.kdlSeries").strip() == (
        "test-series+proposals"
    )
    status, out, _ = kdl(capsys, "status", "--llvm", str(llvm))
    assert "status: 3 applied (1 of " in out and " and 2 of " in out
    # revert removes both, in one step, and says so.
    status, out, _ = kdl(capsys, "revert", "--llvm", str(llvm))
    assert status == 0, out
    assert "  dropped 1 of " in out and " and 2 of " in out
    assert git(llvm, "rev-parse", "HEAD") == git(llvm, "rev-parse", series.base)
    # After the revert, the stack alone.
    status, out, _ = kdl(capsys, "apply", "--posting-stack", "--llvm", str(llvm))
    assert status == 0, out
    assert " + " not in out.splitlines()[0]
    assert f"{BRANCH}: 1 applied" in out
    assert git(llvm, "config", f"branch.{BRANCH}.kdlSeries").strip() == "test-series"
    status, out, _ = kdl(capsys, "status", "--llvm", str(llvm))
    assert "status: 1 applied" in out and " of " not in out.splitlines()[-1]


def test_export_writes_each_patch_to_its_own_series(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, given: list[str]
) -> None:
    proposals = paths.PROPOSALS_SERIES
    assert kdl(capsys, "apply", *given)[0] == 0
    files = {**files_of(series.dir), **files_of(proposals.parent)}
    status, out, err = kdl(capsys, "--dry-run", "export", "--llvm", str(llvm))
    assert status == 0, out + err
    assert out.count(": unchanged") == 2
    assert kdl(capsys, "export", "--llvm", str(llvm))[0] == 0
    assert {**files_of(series.dir), **files_of(proposals.parent)} == files
    # An edit of the proposal on the branch goes to the proposals' series;
    # the one the branch does not carry stays as it is, numbered out of both.
    third = proposals.parent / series.names[2]
    kept = third.read_bytes()
    target = llvm / "llvm/include/llvm/Object/OffloadMetadata.h"
    target.write_text(target.read_text() + "// edited\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    status, out, err = kdl(capsys, "export", "--llvm", str(llvm), "-m", "edited")
    assert status == 0, out + err
    assert f"  {series.names[0]}: unchanged" in out
    assert f"  {series.names[1]}: updated" in out
    assert third.read_bytes() == kept
    edited = load(proposals)
    assert [p.name for p in edited.patches] == series.names[1:]
    assert edited.version == 3 and edited.apply_default == 1
    assert b"[PATCH 1/2]" in (proposals.parent / series.names[1]).read_bytes()
    assert "edited" in (proposals.parent / "CHANGELOG.md").read_text()
    assert load(series.series).version == 1


@pytest.mark.parametrize(
    ("header", "says"),
    [
        ("on: test-series\napply: 2-3\n", "apply: names the first patches"),
        ("on: test-series\napply: 1-5\n", "names more patches than the series has"),
        ("apply: 1\n", "apply: without on:"),
        ("on:\n", "on: names the series it goes on"),
    ],
)
def test_a_bad_proposals_header_is_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    monkeypatch: pytest.MonkeyPatch,
    header: str,
    says: str,
) -> None:
    monkeypatch.setattr(paths, "PATCHES", series.dir)
    proposals = _split(series, header)
    before = snapshot(llvm)
    status, _, err = kdl(
        capsys, "apply", "--llvm", str(llvm), "--series", str(series.series)
    )
    assert status != 0
    assert len(err.strip().splitlines()) == 1, err
    assert str(proposals) in err and says in err
    assert "Traceback" not in err
    assert snapshot(llvm) == before


def test_proposals_without_a_series_for_them_are_one_line(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    status, _, err = kdl(
        capsys,
        "apply",
        "--proposals",
        "--llvm",
        str(llvm),
        "--series",
        str(series.series),
    )
    assert status == 2
    assert err.strip() == (
        "error: --proposals: no series of proposals goes on 'test-series' "
        f"(none under {series.dir} names it in an 'on:' line)"
    )
    # Without the flag: the stack alone, as before there were proposals.
    status, out, _ = kdl(
        capsys, "apply", "--llvm", str(llvm), "--series", str(series.series)
    )
    assert status == 0 and f"{BRANCH}: 3 applied" in out


def test_the_real_proposals_go_on_both_stacks_and_apply_takes_the_keys() -> None:
    proposals = load(paths.PROPOSALS_SERIES)
    assert set(proposals.on) == {
        load(paths.SERIES).name,
        load(paths.BACKPORT_SERIES).name,
    }
    assert proposals.apply_default == 2
    keys, loop = proposals.patches[:2]
    assert "getVariantPriority" in keys.subject and "getVariantTag" in keys.subject
    assert "variant_priority" in loop.subject
    assert all("mlir" not in f.path for p in (keys, loop) for f in p.files)
    assert any(f.path.startswith("mlir/") for f in proposals.patches[2].files)


def test_a_proposal_that_does_not_apply_leaves_the_checkout_as_it_was(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir, given: list[str]
) -> None:
    """All or nothing: the stack applies, the default proposal conflicts,
    and the run is undone whole, naming the proposal's patch."""
    proposal = paths.PROPOSALS_SERIES.parent / series.names[1]
    text = proposal.read_text()
    proposal.write_text(
        text.replace(
            " /// A simple binary serialization of an offloading file.",
            " /// Not the line upstream has here.",
        )
    )
    before = snapshot(llvm)
    status, _, err = kdl(capsys, "apply", *given)
    assert status != 0
    assert f"{series.names[1]} does not apply" in err
    assert "Traceback" not in err
    assert snapshot(llvm) == before
