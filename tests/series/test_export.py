"""kdl export on real git repositories: round trips, edits, versions."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.llvm_tree import (
    OFFLOAD_API,
    P1,
    P2,
    P3,
    P4,
    SeriesDir,
    apply,
    files_of,
    git,
    on_series,
    status_json,
)

# --- export ---------------------------------------------------------------------------


def _commit_series(series: SeriesDir, message: str) -> str:
    """Make the series directory a git repository holding it; the commit."""
    git(series.dir, "init", "--quiet")
    git(series.dir, "add", "-A")
    git(series.dir, "commit", "--quiet", "-m", message)
    return git(series.dir, "rev-parse", "HEAD").strip()


def _amend_offload_api(llvm: Path, line: str) -> None:
    """Edit the last patch of the applied series: *line* appended to the
    offload API header it changes, amended into its commit."""
    (llvm / OFFLOAD_API).write_text((llvm / OFFLOAD_API).read_text() + line + "\n")
    git(llvm, "commit", "--quiet", "--amend", "-a", "--no-edit")


def test_export_round_trip_is_byte_identical(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    text = series.series.read_text().replace(
        "name: test-series", "# kept comment\nname: test-series"
    )
    series.series.write_text(text.replace("0002-", "# about 0002\n0002-", 1))
    before = files_of(series.dir)
    assert apply(capsys, llvm, series)[0] == 0
    status, out, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert out.count(": unchanged") == 3
    assert "0 file(s) changed" in out
    assert files_of(series.dir) == before


def test_export_round_trip_ignores_user_config(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
) -> None:
    before = files_of(series.dir)
    settings = {
        "format": "signature=sig numbered=false suffix=.txt headers=X-Foo:bar "
        "thread=shallow signOff=true coverLetter=auto from=true",
        "diff": "noprefix=true algorithm=histogram context=5 renames=copies "
        "mnemonicPrefix=true interHunkContext=10 suppressBlankEmpty=true",
        "am": "messageid=true keepcr=true threeWay=false",
        "core": "abbrev=7",
    }
    with (Path(os.environ["HOME"]) / ".gitconfig").open("a") as f:
        for section, pairs in settings.items():
            f.write(f"[{section}]\n")
            f.writelines(f"\t{pair.replace('=', ' = ', 1)}\n" for pair in pairs.split())
    assert apply(capsys, llvm, series)[0] == 0
    assert "Message-Id" not in git(llvm, "log", "-1", "--format=%B")
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert files_of(series.dir) == before


def test_export_writes_edits_and_new_commits(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    before = files_of(series.dir)
    assert apply(capsys, llvm, series)[0] == 0
    # Edit patch 3 on the branch and add a fourth commit touching a new and an old file.
    _amend_offload_api(llvm, "// refined")
    (llvm / "offload/NEWS.txt").write_text("ranked selection\n")
    (llvm / "llvm/include/llvm/Object/Binary.h").write_text(
        (llvm / "llvm/include/llvm/Object/Binary.h").read_text() + "// binary\n"
    )
    git(llvm, "add", "-A")
    git(llvm, "commit", "--quiet", "-m", "[Offload] Document ranked selection")
    status, out, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert f"{P3}: updated" in out
    assert f"{P4}: new" in out
    after = files_of(series.dir)
    assert {n for n in after if after[n] != before.get(n)} == {
        P1,
        P2,
        P3,
        P4,
        "series",
        "CHANGELOG.md",
    }
    for name in (P1, P2):  # only the numbering moved: [PATCH n/3] -> [PATCH n/4]
        assert after[name].replace(b"/4] ", b"/3] ", 1) == before[name]
    for name in series.names:  # numbering moved from n/3 to n/4
        assert b"Subject: [PATCH " in after[name] and b"/4]" in after[name]
    text = after["series"].decode()
    assert text.endswith(
        f"{P4}\n"
        f"    base llvm/include/llvm/Object/Binary.h {series.base}\n"
        "    new  offload/NEWS.txt\n"
    )
    assert b"+// refined" in after[P3]
    # The refreshed series is what the branch holds: status agrees, revert is allowed.
    doc = status_json(capsys, llvm, series)
    assert [p["state"] for p in doc["patches"]] == ["applied"] * 4
    # Dropping a commit on the branch removes its patch file.
    git(llvm, "reset", "--quiet", "--hard", "HEAD~1")
    status, out, _ = on_series(capsys, "export", llvm, series)
    assert f"{P4}: removed" in out
    assert not (series.dir / P4).exists()


def test_export_keeps_each_version_and_range_diff_makes_one_from_two(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    before = files_of(series.dir)
    assert apply(capsys, llvm, series)[0] == 0
    # Nothing changed: no new version.
    assert on_series(capsys, "export", llvm, series)[0] == 0
    assert not (series.dir / "versions").exists()
    _amend_offload_api(llvm, "// refined")
    status, _, err = on_series(
        capsys, "export", llvm, series, "-m", "Rank by fit, not by key"
    )
    assert status == 0, err
    v1 = series.dir / "versions" / "v1"
    assert files_of(v1) == before  # the old patches and series, byte for byte
    assert "version: 2\n" in (series.dir / "series").read_text()
    assert not list((series.dir / "versions").glob("*.range-diff"))  # none stored
    # kdl range-diff: v1 (the copy) and v2 (on disk), each applied in a
    # scratch worktree on the branch's base.
    status, out, err = on_series(capsys, "range-diff", llvm, series, "v1")
    assert status == 0, err
    _, head, *diff = out.splitlines()  # after the line naming the series
    assert head.startswith("# test-series v1 -> v2, on ")
    assert [line.split(":", 1)[0].strip() for line in diff if ":  " in line][:3] == [
        "1",
        "2",
        "3",
    ]
    assert " = 1:" in diff[0] and " = 2:" in diff[1] and " ! 3:" in diff[2]
    assert any("+// refined" in line for line in diff)
    assert git(llvm, "worktree", "list").count("\n") == 1  # scratch tree removed
    log = (series.dir / "CHANGELOG.md").read_text()
    assert re.search(
        r"^- v2 \(\d{4}-\d{2}-\d{2}\): Rank by fit, not by key$", log, re.M
    )
    # A second change: v2 is kept, v3 written; the default line says what changed.
    _amend_offload_api(llvm, "// again")
    assert on_series(capsys, "export", llvm, series)[0] == 0
    assert (series.dir / "versions" / "v2" / "series").read_text().count("version: 2")
    assert "version: 3\n" in (series.dir / "series").read_text()
    lines = (series.dir / "CHANGELOG.md").read_text().splitlines()
    assert lines[2].startswith("- v3 (") and lines[2].endswith(": changed 0003")
    assert lines[3].startswith("- v2 (")


def test_export_keeps_the_old_version_as_a_tag_in_git(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    v1 = _commit_series(series, "series v1")
    before = files_of(series.dir)
    assert apply(capsys, llvm, series)[0] == 0
    _amend_offload_api(llvm, "// refined")
    status, out, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert "v1 kept as the git tag test-series-v1" in out
    assert git(series.dir, "rev-parse", "test-series-v1^{commit}").strip() == v1
    assert not (series.dir / "versions" / "v1").exists()  # no copy
    # The range-diff from the tag's v1 to the files on disk; the checkout's
    # config, branches and worktrees are as they were.
    config = git(llvm, "config", "--local", "--list")
    refs = git(llvm, "for-each-ref")
    status, out, err = on_series(capsys, "range-diff", llvm, series, "1", "2")
    assert status == 0, err
    assert git(llvm, "config", "--local", "--list") == config
    assert git(llvm, "for-each-ref") == refs
    assert git(llvm, "worktree", "list").count("\n") == 1
    assert " ! 3:" in out and "+// refined" in out
    status, _, err = on_series(capsys, "range-diff", llvm, series, "v7")
    assert status != 0 and err.count("\n") == 1 and "no version 7" in err
    status, _, err = on_series(capsys, "range-diff", llvm, series, "seven")
    assert status != 0 and "seven: a version is a positive number" in err
    for name, data in before.items():  # the tag holds v1 byte for byte
        held = git(series.dir, "show", f"test-series-v1:{name}")
        assert held.encode() == data
    # A tag of that name holding other files is never moved.
    git(series.dir, "add", "-A")
    git(series.dir, "commit", "--quiet", "-m", "series v2")
    git(series.dir, "tag", "test-series-v2", v1)
    _amend_offload_api(llvm, "// again")
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 1
    assert "the tag test-series-v2 holds another" in err


def test_export_renumbers_after_an_inserted_commit(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    # A commit inserted after patch 1: patches 2 and 3 become 3 and 4.
    tip = git(llvm, "rev-parse", "HEAD").strip()
    git(llvm, "reset", "--quiet", "--hard", "HEAD~2")
    (llvm / "offload/NEWS.txt").write_text("ranked selection\n")
    git(llvm, "add", "-A")
    git(llvm, "commit", "--quiet", "-m", "[Offload] Inserted")
    git(llvm, "cherry-pick", f"{tip}~1", tip)
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    names = sorted(n for n in files_of(series.dir) if n.endswith(".patch"))
    assert [n[:5] for n in names] == ["0001-", "0002-", "0003-", "0004-"]
    assert names[1].startswith("0002-Offload-Inserted")
    assert "added '[Offload] Inserted'" in (series.dir / "CHANGELOG.md").read_text()


def test_export_refuses_to_overwrite_uncommitted_patches(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    _commit_series(series, "series")
    assert apply(capsys, llvm, series)[0] == 0
    _amend_offload_api(llvm, "// refined")
    patch = series.dir / series.names[2]
    patch.write_text(patch.read_text() + "\n")
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 1
    assert f"uncommitted changes to {series.names[2]} would be overwritten" in err


def test_export_needs_a_kdl_branch(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 1
    assert "HEAD is main at" in err and "not a branch made by kdl apply" in err


def test_export_refuses_an_identity_git_would_make_up(
    capsys: pytest.CaptureFixture[str],
    llvm: Path,
    series: SeriesDir,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert apply(capsys, llvm, series)[0] == 0
    before = {n: (series.dir / n).read_bytes() for n in series.names}
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status == 1
    assert "no git identity is configured" in err
    assert len(err.strip().splitlines()) == 1
    assert {n: (series.dir / n).read_bytes() for n in series.names} == before


def test_export_keeps_a_borrowed_patch_until_the_branch_changes_it(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """A backport names another series' file (../main/NAME) for a patch that
    applies unchanged: export keeps the entry and never writes that file; a
    commit that changes the patch gets a file of the backport's own."""
    other = series.dir.parent / "main"
    other.mkdir()
    text = series.series.read_text()
    for name in (P2, P3):
        (series.dir / name).rename(other / name)
        text = text.replace(f"\n{name}\n", f"\n../main/{name}\n")
    series.series.write_text(text)
    # The other series' own index names them: the backport's export gives up
    # borrowing P3 without touching that series.
    (other / "series").write_text(f"name: test-main\n{P2}\n{P3}\n")
    borrowed = {n: (other / n).read_bytes() for n in (P2, P3, "series")}
    assert apply(capsys, llvm, series)[0] == 0
    status, out, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert out.count("unchanged (another series' file)") == 2
    assert series.series.read_text() == text
    _amend_offload_api(llvm, "// backport only")
    status, out, err = on_series(capsys, "export", llvm, series)
    assert status == 0, err
    assert f"  {P3}: new" in out
    assert f"\n../main/{P2}\n" in series.series.read_text()
    assert f"\n{P3}\n" in series.series.read_text()
    assert b"+// backport only" in (series.dir / P3).read_bytes()
    # The other series' files are as they were.
    assert {n: (other / n).read_bytes() for n in (P2, P3, "series")} == borrowed


def test_export_refuses_to_change_a_patch_another_series_borrows(
    capsys: pytest.CaptureFixture[str], llvm: Path, series: SeriesDir
) -> None:
    """A backport below the series names its P3 (../P3): an export that would
    change P3 stops before writing anything, naming the backport."""
    backport = series.dir / "backport"
    backport.mkdir()
    (backport / "series").write_text(f"name: test-backport\n../{P3}\n")
    assert apply(capsys, llvm, series)[0] == 0
    before = files_of(series.dir)
    _amend_offload_api(llvm, "// main only")
    status, _, err = on_series(capsys, "export", llvm, series)
    assert status != 0 and err.count("\n") == 1
    assert f"backport/series names ../{P3}: this export would change" in err
    assert files_of(series.dir) == before


def test_a_patch_moved_in_a_series_is_the_same_patch() -> None:
    """[PATCH 5/8] and [PATCH 10/16] of one patch are the same patch, also
    where the longer number moves git's fold of the subject line."""
    from kdl.series.export import _same_patch

    head = b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    title = b"[Object] Add a rank of offload code for"
    five = head + b"Subject: [PATCH 5/8] " + title + b" a\n device\n\nWhy.\n"
    ten = head + b"Subject: [PATCH 10/16] " + title + b"\n a device\n\nWhy.\n"
    assert _same_patch(five, ten)
    assert not _same_patch(five, ten.replace(b"Why.", b"Why not."))
    assert not _same_patch(five, ten.replace(b"a device", b"a target"))
