"""The series follows the checkout: chosen by its LLVM version, then carried by
the branch apply made; errors that name the real cause."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kdl import paths
from kdl.series import choose
from kdl.series.model import load
from tests.llvm_tree import (
    BRANCH,
    OFFLOAD_API,
    Edit,
    SeriesDir,
    git,
    kdl,
    make_series,
    replace,
    snapshot,
)

VERSION_CMAKE = """\
if(NOT DEFINED LLVM_VERSION_MAJOR)
  set(LLVM_VERSION_MAJOR {major})
endif()
if(NOT DEFINED LLVM_VERSION_MINOR)
  set(LLVM_VERSION_MINOR {minor})
endif()
if(NOT DEFINED LLVM_VERSION_PATCH)
  set(LLVM_VERSION_PATCH {patch})
endif()
"""


def set_version(llvm: Path, version: str, *, commit: bool = True) -> None:
    major, minor, patch = version.split(".")
    where = llvm / "cmake/Modules/LLVMVersion.cmake"
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(VERSION_CMAKE.format(major=major, minor=minor, patch=patch))
    if commit:
        git(llvm, "add", "-A")
        git(llvm, "commit", "--quiet", "-m", f"Bump the version to {version}")


def say_llvm(series_file: Path, major: int) -> None:
    """Give a series index the ``llvm: N`` header line."""
    text = series_file.read_text()
    series_file.write_text(replace(text, "\nname:", f"\nllvm: {major}\nname:"))


@pytest.fixture
def patches(series: SeriesDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A patches/ holding *series* made for LLVM 22 and a copy for LLVM 24."""
    say_llvm(series.series, 22)
    other = series.dir / "main"
    other.mkdir()
    for name in series.names:
        shutil.copy2(series.dir / name, other / name)
    text = series.series.read_text().replace("name: test-series", "name: for-main")
    (other / "series").write_text(text.replace("llvm: 22", "llvm: 24"))
    monkeypatch.setattr(paths, "PATCHES", series.dir)
    return series.dir


def test_tree_version_from_either_file(tmp_path: Path) -> None:
    assert choose.tree_version(tmp_path) is None
    (tmp_path / "llvm").mkdir()
    (tmp_path / "llvm/CMakeLists.txt").write_text(
        "set(LLVM_VERSION_MAJOR 17)\nset(LLVM_VERSION_MINOR 0)\n"
        "set(LLVM_VERSION_PATCH 6)\n"
    )
    assert choose.tree_version(tmp_path) == "17.0.6"
    set_version(tmp_path, "22.1.8", commit=False)
    assert choose.tree_version(tmp_path) == "22.1.8"


def test_the_real_series_say_their_llvm_version() -> None:
    trees = json.loads((paths.ROOT / "trees.json").read_text())
    found = {h.path: h.llvm for h in choose.headers()}
    assert found[paths.SERIES] == trees["main"]["major"]
    assert found[paths.PATCHES / "release-22.x" / "series"] == int(
        trees["22"]["upstream_version"].split(".")[0]
    )
    assert load(paths.SERIES).llvm == trees["main"]["major"]
    # The llvm-test-suite series is never chosen by a checkout's version.
    assert found[paths.TEST_SUITE_SERIES] is None


def test_the_loop_without_series_flags(
    capsys: pytest.CaptureFixture[str], llvm: Path, patches: Path
) -> None:
    set_version(llvm, "22.1.8")
    status, out, err = kdl(capsys, "check", "--llvm", str(llvm))
    assert status == 0, out + err
    first = out.splitlines()[0]
    assert first == (
        f"series: {patches / 'series'} (test-series, made for LLVM 22): "
        "the checkout is LLVM 22.1.8"
    )
    assert "kdl apply would apply all 3" in out
    status, out, err = kdl(capsys, "apply", "--llvm", str(llvm))
    assert status == 0, out + err
    assert f"{BRANCH}: 3 applied" in out
    # Later commands read the series from the branch.
    for command in ("status", "check", "export", "revert"):
        status, out, err = kdl(capsys, command, "--llvm", str(llvm))
        assert status == 0, f"{command}: {out}{err}"
        assert out.splitlines()[0].endswith(f": {BRANCH} carries it"), out
        if command == "status":
            assert "status: 3 applied" in out
        if command == "export":
            assert out.count(": unchanged") == 3
    status, out, err = kdl(capsys, "status", "--llvm", str(llvm), "--json")
    assert json.loads(out)["series"] == "test-series"
    assert f"{BRANCH} carries it" in err
    assert [p["state"] for p in json.loads(out)["patches"]] == ["missing"] * 3


def test_the_branch_keeps_a_series_given_by_flag(
    capsys: pytest.CaptureFixture[str], llvm: Path, patches: Path
) -> None:
    """A series applied with --series (here the one for 24 on a 22 tree
    whose header is removed) stays the branch's."""
    set_version(llvm, "22.1.8")
    other = patches / "main" / "series"
    other.write_text(other.read_text().replace("llvm: 24\n", ""))
    status, out, err = kdl(capsys, "apply", "--llvm", str(llvm), "--series", str(other))
    assert status == 0, out + err
    status, out, _ = kdl(capsys, "status", "--llvm", str(llvm))
    assert out.splitlines()[0] == (
        f"series: {other} (for-main): kdl/for-main carries it"
    )
    assert "status: 3 applied" in out


def test_a_version_without_a_series_is_one_line(
    capsys: pytest.CaptureFixture[str], llvm: Path, patches: Path
) -> None:
    set_version(llvm, "21.1.0")
    before = snapshot(llvm)
    for command in ("apply", "check", "status"):
        status, out, err = kdl(capsys, command, "--llvm", str(llvm))
        assert status == 2 and out == ""
        assert err == (
            f"error: {llvm} is LLVM 21.1.0: no series is made for it; there are "
            f"series for LLVM 22 ({patches / 'series'}), "
            f"LLVM 24 ({patches / 'main' / 'series'})\n"
        )
    assert snapshot(llvm) == before


def test_a_series_for_another_version_is_refused_before_anything(
    capsys: pytest.CaptureFixture[str], llvm: Path, patches: Path
) -> None:
    set_version(llvm, "24.0.0")
    before = snapshot(llvm)
    status, out, err = kdl(
        capsys, "apply", "--llvm", str(llvm), "--series", str(patches / "series")
    )
    assert status == 2 and out == ""
    assert err == (
        f"error: {llvm} is LLVM 24.0.0 and {patches / 'series'} is made for LLVM "
        f"22; {patches / 'main' / 'series'} is made for LLVM 24 (nothing was "
        "changed)\n"
    )
    assert snapshot(llvm) == before
    assert git(llvm, "branch", "--list", BRANCH) == ""


def test_no_version_file(
    capsys: pytest.CaptureFixture[str], llvm: Path, patches: Path
) -> None:
    status, _, err = kdl(capsys, "apply", "--llvm", str(llvm))
    assert status == 2
    assert "cannot tell its LLVM version" in err and "pass --series FILE" in err


def test_a_tarball_gets_the_commands_that_make_it_a_checkout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, patches: Path
) -> None:
    tree = tmp_path / "llvm-project-22.1.8.src"
    (tree / "offload").mkdir(parents=True)
    (tree / "llvm").mkdir()
    set_version(tree, "22.1.8", commit=False)
    status, out, err = kdl(capsys, "apply", "--llvm", str(tree))
    assert status == 1 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"error: {tree}: an llvm-project source tree without git")
    assert f"cd {tree} && git init -q && git add -A && git commit" in err


# --- errors that name the real cause ------------------------------------------------


def _blobless_series(llvm: Path, out: Path, repo: str | None) -> SeriesDir:
    """A one-patch series whose base blobs no repository has (as a series made
    against a reconstructed text), recorded against *repo*; the checkout's
    context is then changed so that only a 3-way merge could place it."""
    text = (llvm / OFFLOAD_API).read_text()
    made = make_series(
        llvm,
        out,
        [
            Edit(
                "[Offload] Touch OffloadAPI",
                "body",
                {
                    OFFLOAD_API: lambda t: replace(
                        t or "", "#pragma once\n", "#pragma once\n// kdl\n"
                    )
                },
            )
        ],
    )
    patch = made.dir / made.names[0]
    patch.write_text(
        "".join(
            ("index " + "1" * 40 + ".." + "2" * 40 + " 100644\n")
            if ln.startswith("index ")
            else ln
            for ln in patch.read_text().splitlines(keepends=True)
        )
    )
    if repo is not None:
        made.series.write_text(
            made.series.read_text().replace(f" {made.base}\n", f" {made.base} {repo}\n")
        )
    lines = text.splitlines(keepends=True)
    at = lines.index("#pragma once\n")
    for i in range(at - 2, at + 3):
        lines[i] = f"// changed context {i}\n"
    (llvm / OFFLOAD_API).write_text("".join(lines))
    git(llvm, "commit", "--quiet", "-am", "change the context")
    return made


def test_a_reconstructed_base_is_named(
    capsys: pytest.CaptureFixture[str], llvm: Path, tmp_path: Path
) -> None:
    made = _blobless_series(llvm, tmp_path / "recon", "reconstructed")
    args = ["--llvm", str(llvm), "--series", str(made.series)]
    status, out, _ = kdl(capsys, "check", *args)
    assert status == 1
    assert "a reconstruction of main's text" in out
    assert "kdl apply would stop at" in out and "apply none of them" in out
    before = snapshot(llvm)
    status, _, err = kdl(capsys, "apply", *args)
    assert status == 1
    assert "not a commit of llvm-project, so no clone has those blobs" in err
    assert f"{OFFLOAD_API}: the patch was made against a reconstruction" in err
    assert "--keep-conflicts" not in err  # it would leave no conflict to resolve
    assert snapshot(llvm) == before


def test_a_shallow_clone_is_told_how_to_deepen(
    capsys: pytest.CaptureFixture[str], llvm: Path, tmp_path: Path
) -> None:
    made = _blobless_series(llvm, tmp_path / "plain", None)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "--quiet", "--depth=1", f"file://{llvm}", str(shallow))
    status, _, err = kdl(
        capsys, "apply", "--llvm", str(shallow), "--series", str(made.series)
    )
    assert status == 1
    assert "this is a shallow clone; 'git fetch --unshallow'" in err
    assert "--keep-conflicts" not in err


def test_a_clone_without_the_base_commit_is_told_to_fetch_it(
    capsys: pytest.CaptureFixture[str], llvm: Path, tmp_path: Path
) -> None:
    made = _blobless_series(llvm, tmp_path / "plain", None)
    one = tmp_path / "one-commit"
    one.mkdir()
    git(llvm, "archive", "--format=tar", "-o", str(tmp_path / "t.tar"), "HEAD")
    shutil.unpack_archive(tmp_path / "t.tar", one)
    git(one, "init", "--quiet")
    git(one, "add", "-A")
    git(one, "commit", "--quiet", "-m", "one commit")
    status, _, err = kdl(
        capsys, "apply", "--llvm", str(one), "--series", str(made.series)
    )
    assert status == 1
    assert f"the recorded base commit(s) {made.base[:12]} are not in this clone" in err
    assert f"'git fetch https://github.com/llvm/llvm-project {made.base}'" in err


def test_a_branch_whose_tree_changed_major_is_refused_by_apply(
    capsys: pytest.CaptureFixture[str], llvm: Path, patches: Path
) -> None:
    """The series the branch carries is made for 22; the tree now says 21."""
    set_version(llvm, "22.1.8")
    assert kdl(capsys, "apply", "--llvm", str(llvm))[0] == 0
    set_version(llvm, "21.1.0", commit=False)
    before = snapshot(llvm)
    status, out, err = kdl(capsys, "apply", "--llvm", str(llvm))
    assert status == 2 and out == ""
    assert err == (
        f"error: {llvm} is LLVM 21.1.0 and {patches / 'series'} is made for LLVM "
        "22; no series is made for LLVM 21 (nothing was changed)\n"
    )
    assert snapshot(llvm) == before
    # status still reads the branch (it changes nothing).
    assert kdl(capsys, "status", "--llvm", str(llvm))[0] == 0


def test_a_missing_checkout_is_named_before_its_version(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, patches: Path
) -> None:
    """The missing directory is the error, not a version that cannot be read
    (whose advice, --series, would only lead to it)."""
    status, out, err = kdl(capsys, "apply", "--llvm", str(tmp_path / "nope"))
    assert (status, out) == (2, "")
    assert (
        err
        == f"error: {tmp_path / 'nope'}: no such directory (an llvm-project checkout)\n"
    )
