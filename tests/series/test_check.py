"""kdl check on real git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.llvm_tree import (
    BRANCH,
    OFFLOAD_API,
    OFFLOAD_BINARY,
    P1,
    P2,
    P3,
    Edit,
    SeriesDir,
    apply,
    commit_on_main,
    git,
    kdl,
    make_series,
    move_hunks_and_change_context,
    on_series,
    replace,
    snapshot,
)

# --- check ---------------------------------------------------------------------------


def test_check_classifies_without_touching_anything(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    move_hunks_and_change_context(llvm)
    before = snapshot(llvm)
    index = (llvm / ".git/index").read_bytes()
    status, out, err = on_series(capsys, "check", llvm, series)
    assert status == 0, out + err
    assert f"{P1}: offset: hunks moved by up to 2 lines" in out
    assert f"{P2}: 3-way: context changed in" in out
    assert f"{P3}: applies cleanly" in out
    assert (
        "check: 3 of 3 patches apply on their own; kdl apply would apply all 3; "
        "the checkout was not changed" in out
    )
    assert snapshot(llvm) == before
    assert (llvm / ".git/index").read_bytes() == index


def test_check_on_the_applied_branch_says_what_apply_says(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """On the branch apply made, check still checks every patch against the
    branch's base, and says that apply would apply none, as apply does."""
    assert apply(capsys, llvm=llvm, series=series)[0] == 0
    status, out, err = on_series(capsys, "check", llvm, series)
    assert status == 0, out + err
    assert out.splitlines()[-1] == (
        f"check: 3 of 3 patches apply on their own; 3 of them are on {BRANCH} "
        "already, so kdl apply would apply none; the checkout was not changed"
    )
    status, out, _ = apply(capsys, llvm=llvm, series=series)
    assert status == 0 and "0 applied, 3 already applied" in out


def test_check_and_apply_take_a_relative_series_path(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """git runs in the checkout: a --series path relative to where the user
    stands used to make every patch 'fail'."""
    monkeypatch.chdir(series.series.parent.parent)
    relative = series.series.relative_to(series.series.parent.parent)
    status, out, err = kdl(
        capsys, "check", "--llvm", str(llvm), "--series", str(relative)
    )
    assert status == 0, out + err
    assert "check: 3 of 3 patches apply on their own; kdl apply would apply" in out
    status, out, err = kdl(
        capsys, "apply", "--llvm", str(llvm), "--series", str(relative)
    )
    assert status == 0, out + err
    assert f"{P3}: applied" in out


def test_check_reports_failures_fuzz_and_applied(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    commit_on_main(
        llvm, OFFLOAD_BINARY, "/// A plain binary", old="/// A simple binary"
    )
    status, out, _ = on_series(capsys, "check", llvm, series)
    assert status == 1
    assert f"{P2}: fails: 3-way merge conflicts in {OFFLOAD_BINARY}" in out
    assert f"{OFFLOAD_BINARY}: made against llvm/llvm-project {series.base}" in out
    assert "check: 2 of 3 patches apply" in out
    assert f"kdl apply would stop at {P2} (fails) and apply none of them" in out
    # On the applied branch, the default base is the branch's base; HEAD has them all.
    git(llvm, "reset", "--quiet", "--hard", "HEAD~1")
    assert apply(capsys, llvm, series)[0] == 0
    status, out, _ = on_series(capsys, "check", llvm, series)
    assert status == 0 and f"(the base of {BRANCH})" in out
    status, out, _ = on_series(
        capsys,
        "check",
        llvm,
        series,
        "--base",
        "HEAD",
    )
    assert status == 0 and out.count(": already applied") == 3


def test_check_fuzz(
    capsys: pytest.CaptureFixture[str], llvm: Path, tmp_path: Path
) -> None:
    # A hunk whose outer context changed on a base where 3-way cannot help
    # (the patch's preimage blob is not in the repository).
    edits = [
        Edit(
            "Touch OffloadAPI",
            "body",
            {
                OFFLOAD_API: lambda t: replace(
                    t or "", "#pragma once\n", "#pragma once\n// kdl\n"
                )
            },
        )
    ]
    text = (llvm / OFFLOAD_API).read_text()
    if "#pragma once\n" not in text:
        pytest.skip("OffloadAPI.h has no '#pragma once'")
    made = make_series(llvm, tmp_path / "fuzz", edits)
    patch = made.dir / made.names[0]
    # Replace the blob ids so that no 3-way base exists.
    data = patch.read_text().splitlines(keepends=True)
    data = [
        ("index " + "1" * 40 + ".." + "2" * 40 + " 100644\n")
        if ln.startswith("index ")
        else ln
        for ln in data
    ]
    patch.write_text("".join(data))
    lines = text.splitlines(keepends=True)
    at = lines.index("#pragma once\n")
    lines[at + 3] = "// changed outer context\n"
    (llvm / OFFLOAD_API).write_text("".join(lines))
    git(llvm, "commit", "--quiet", "-am", "change outer context")
    status, out, _ = kdl(
        capsys, "check", "--llvm", str(llvm), "--series", str(made.series)
    )
    assert status == 1
    assert ": fuzz 1: only with 1 context line(s) ignored" in out
