"""The real series (patches/) applied and exported on bases synthesized from its
hunks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kdl import paths
from kdl.series.model import load
from tests.llvm_tree import (
    BRANCH,
    OFFLOAD_API,
    OFFLOAD_BINARY,
    P3,
    USER,
    SeriesDir,
    apply,
    files_of,
    git,
    kdl,
    snapshot,
    synthesize_bases,
)

# --- the real series, on bases synthesized from its hunks --------------------------


def _synthetic_checkout(root: Path, patches: list[bytes]) -> Path:
    bases = synthesize_bases(patches)
    bases.setdefault(OFFLOAD_BINARY, "// placeholder\n")
    bases.setdefault("offload/CMakeLists.txt", "# placeholder\n")
    for rel, text in bases.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "--quiet")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "synthetic base")
    return root


def _without_index_lines(data: bytes) -> list[bytes]:
    return [ln for ln in data.splitlines() if not ln.startswith(b"index ")]


def test_synthesized_bases_reproduce_a_series(
    capsys: pytest.CaptureFixture[str], series: SeriesDir, tmp_path: Path
) -> None:
    patches = [(series.dir / n).read_bytes() for n in series.names]
    repo = _synthetic_checkout(tmp_path / "synthetic", patches)
    status, out, _ = kdl(
        capsys, "check", "--llvm", str(repo), "--series", str(series.series)
    )
    assert status == 0 and out.count(": applies cleanly") == 3
    before = files_of(series.dir)
    assert apply(capsys, llvm=repo, series=series)[0] == 0
    assert (
        kdl(capsys, "export", "--llvm", str(repo), "--series", str(series.series))[0]
        == 0
    )
    after = files_of(series.dir)
    for name in series.names:
        assert _without_index_lines(after[name]) == _without_index_lines(before[name])


@pytest.mark.skipif(not paths.SERIES.is_file(), reason="patches/series does not exist")
def test_the_real_series_round_trips(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """patches/ through apply, status, export and revert on synthesized
    bases: the series and, on top of it, the proposals apply takes by
    default (the OffloadBinary keys)."""
    # Without the backport: it names three of these files, and the export on
    # synthesized bases rewrites their index lines (kdl export refuses that).
    shutil.copytree(
        paths.PATCHES,
        tmp_path / "patches",
        ignore=shutil.ignore_patterns("release-22.x"),
    )
    series_file = tmp_path / "patches" / "series"
    proposals_file = tmp_path / "patches" / "proposals" / "series"
    original = load(series_file)
    proposals = load(proposals_file)
    keys = proposals.patches[: proposals.apply_default]
    assert keys and original.name in proposals.on
    both = [*original.patches, *keys]
    repo = _synthetic_checkout(tmp_path / "llvm-project", [p.read() for p in both])
    args = ["--llvm", str(repo), "--series", str(series_file)]
    status, out, err = kdl(capsys, "check", *args)
    assert status == 0, out + err
    assert out.count(": applies cleanly") == len(both)
    status, out, err = kdl(capsys, "apply", *args)
    assert status == 0, err
    assert "proposals/series 1-2 (" in out.splitlines()[0]
    branch = f"kdl/{original.name}"
    log = git(
        repo,
        "log",
        "--reverse",
        "--format=%s%x1f%an <%ae>%x1e",
        f"{branch}~{len(both)}..{branch}",
    )
    assert [e.strip("\n").split("\x1f") for e in log.split("\x1e")[:-1]] == [
        [p.subject, USER] for p in both
    ]  # [Object][Offload] tags survive git am; the user authors the commits
    doc = json.loads(kdl(capsys, "status", *args, "--json")[1])
    assert [p["state"] for p in doc["patches"]] == ["applied"] * len(both)
    assert [f["patches"] for f in doc["series_files"]] == [len(original.patches), 2]
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    # Export: the same messages, authors and file lists (hunk layout and blob
    # ids may differ: the bases are synthetic), each patch to its own series,
    # the proposal the branch does not carry as it was; and the same tree
    # again.
    held = proposals.patches[-1].read()
    status, out, err = kdl(capsys, "export", *args)
    assert status == 0, out + err
    for before, file in ((original.patches, series_file), (keys, proposals_file)):
        exported = load(file)
        for new, old in zip(exported.patches, before, strict=False):
            assert (new.subject, new.author, new.body()) == (
                old.subject,
                USER,
                old.body(),
            )
            assert new.files == old.files
    assert [p.name for p in load(series_file).patches] == [
        p.name for p in original.patches
    ]
    after = load(proposals_file)
    assert [p.name for p in after.patches] == [p.name for p in proposals.patches]
    assert after.patches[-1].read() == held
    assert (after.on, after.apply_default) == (proposals.on, proposals.apply_default)
    assert kdl(capsys, "revert", *args)[0] == 0
    assert kdl(capsys, "apply", *args)[0] == 0
    assert git(repo, "rev-parse", "HEAD^{tree}") == tree


def test_dry_run_changes_nothing(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    args = ["--llvm", str(llvm), "--series", str(series.series)]
    before = snapshot(llvm)
    status, out, _ = kdl(capsys, "--dry-run", "apply", *args)
    assert status == 0
    assert f"would run: git checkout --no-track -b {BRANCH} {series.base}" in out
    assert out.count("would run: git am --3way --keep-non-patch") == 3
    assert snapshot(llvm) == before
    assert apply(capsys, llvm, series)[0] == 0
    patches = files_of(series.dir)
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + "// more\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")
    before = snapshot(llvm)
    status, out, _ = kdl(capsys, "--dry-run", "export", *args)
    assert status == 0 and f"  {P3}: updated" in out and "would write" in out
    assert files_of(series.dir) == patches
    status, out, _ = kdl(capsys, "--dry-run", "revert", *args, "--force")
    assert status == 0 and f"would run: git reset --keep {series.base}" in out
    assert snapshot(llvm) == before
