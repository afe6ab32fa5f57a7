"""``kdl rfc --build-dir``: the posts drafted from a user's own build.

A real checkout with a real series applied by ``kdl apply``, a build
directory whose ``build.ninja`` is kdl's (:func:`write_top_ninja`), real
ninja and real lit running small suites (tests/data/rfc/build/) whose tests
of the series pass only where it is applied.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kdl import cli
from kdl import rfc as rfc_pkg
from kdl.build.standalone import StandaloneBuild, write_top_ninja
from kdl.rfc import check
from kdl.rfc.applied import applied
from kdl.series.apply import apply_series
from kdl.series.commands import revert_series
from kdl.series.model import load
from tests.llvm_tree import git, make_llvm_checkout, make_series
from tests.rfc_support import DATA, isolate, workspace

pytestmark = [
    pytest.mark.usefixtures("isolated_git"),
    pytest.mark.skipif(not shutil.which("ninja"), reason="needs ninja"),
]

SUITES = DATA / "build"
LIT = Path(__file__).parents[1] / "data/fake-llvm-project/llvm/utils/llvm-lit.py"
COUNTS = "rfc/out/build/check-offload.json"
THREADS = "OMP_TEAMS_THREAD_LIMIT=16 KMP_TEAMS_THREAD_LIMIT=16"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


@dataclass
class User:
    root: Path  # the workspace
    llvm: Path  # the checkout, the series applied
    build: Path  # the build directory
    series: Path  # the series file

    def ninja(self, *targets: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["ninja", "-C", str(self.build), *targets],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, **(env or {})},
        )
        return done.stdout + done.stderr

    def draft(self) -> dict[str, Path]:
        out = self.root / "rfc" / "out"
        posts = rfc_pkg.draft(out, root=self.root, build_dir=self.build)
        return {p.stem: p for p in posts}


def _set_version(series_file: Path, version: int) -> None:
    text = series_file.read_text()
    text = re.sub(r"(?m)^version: \d+\n", "", text)
    series_file.write_text(
        text.replace("name: test-series\n", f"name: test-series\nversion: {version}\n")
    )


def _offload_build(offload: Path, checkout: Path) -> None:
    """An offload build directory whose check-offload and check-offload-unit
    run real lit on tests/data/rfc/build/, against *checkout*, with what
    offload's CMake cache holds that kdl reads (its source, the test
    environment of kdl's standalone build)."""
    offload.mkdir(parents=True)
    lit = f"{sys.executable} {LIT} -sv"
    (offload / "build.ninja").write_text(
        "rule lit\n"
        f"  command = CHECKOUT={checkout} KDL_TEST_EXEC={offload} {lit} $suite\n"
        "  pool = console\n"
        f"build check-offload: lit\n  suite = {SUITES / 'offload'}\n"
        f"build check-offload-unit: lit\n  suite = {SUITES / 'unit'}\n"
    )
    (offload / "CMakeCache.txt").write_text(
        f"CMAKE_HOME_DIRECTORY:INTERNAL={checkout / 'offload'}\n"
        f"CHECK_OPENMP_ENV:STRING={THREADS}\n"
    )


@pytest.fixture
def user(tmp_path: Path) -> User:
    root = workspace(tmp_path)
    llvm = make_llvm_checkout(tmp_path / "llvm-project")
    made = make_series(llvm, root / "patches" / "test")
    _set_version(made.series, 11)
    apply_series(llvm, load(made.series))
    build = StandaloneBuild(llvm, tmp_path / "build", Path("/usr"))
    _offload_build(build.offload, llvm)
    write_top_ninja(build)
    return User(root, llvm, build.build_dir, made.series)


def _text(posts: dict[str, Path]) -> str:
    return posts["ranked-selection"].read_text()


# --- what the build directory keeps -----------------------------------------------


def test_plain_ninja_check_offload_keeps_what_lit_found(user: User) -> None:
    out = user.ninja("check-offload")
    assert "Passed" in out, out
    results = user.build / "results"
    xml = (results / "check-offload.xml").read_text()
    assert 'name="ranked.test"' in xml and "user-offload" in xml
    record = json.loads((results / "check-offload.run.json").read_text())
    head = git(user.llvm, "rev-parse", "HEAD").strip()
    assert record["head"] == head
    assert record["branch"] == git(user.llvm, "branch", "--show-current").strip()
    assert record["returncode"] == 0
    assert record["xunit"] == "check-offload.xml"
    assert (results / "by-head" / head / "check-offload.xml").read_text() == xml


def test_the_users_lit_options_stay(user: User) -> None:
    """LIT_OPTS of the user's goes to lit; the xunit file is added after it."""
    user.ninja("check-offload", env={"LIT_OPTS": "--max-failures=7"})
    record = json.loads((user.build / "results/check-offload.run.json").read_text())
    assert record["env"] == {"LIT_OPTS": "--max-failures=7"}
    assert (user.build / "results/check-offload.xml").is_file()


# --- the draft --------------------------------------------------------------------


def test_a_draft_from_check_offload_alone(user: User) -> None:
    user.ninja("check-offload")
    posts = user.draft()
    text = _text(posts)
    counts = json.loads((user.root / COUNTS).read_text())
    ran = counts["build"]["ran"]
    assert re.fullmatch(r"20\d\d-\d\d-\d\d", ran)
    assert f"My build of series v11 ({ran}): upstream's `check-offload` gives" in text
    # xunit counts the expected failure as passed: 2 + 1 + the series' test.
    assert (
        "gives 4 passed (xunit counts expected failures as passed) and 0 failed "
        "with the series (its base not run); I did not run "
        f'`check-offload-unit`. It sets `CHECK_OPENMP_ENV` to "{THREADS}".'
    ) in text
    suite = counts["suites"]["check-offload"]["series"]
    assert suite["counts"] == {"pass": 4, "fail": 0, "unsupported": 1}
    assert suite["head"] == git(user.llvm, "rev-parse", "HEAD").strip()
    # The draft passes the checker, which traces the counts to that file.
    assert check.check_files(list(posts.values()), user.root) == []
    sidecar_file = posts["ranked-selection"].with_suffix(".sources.json")
    sidecar = json.loads(sidecar_file.read_text())
    assert any(f["expr"].startswith(COUNTS) for f in sidecar["figures"])
    assert sidecar["context"]["series_version"] == 11


def test_gpu_figures_of_other_versions_are_marked(user: User) -> None:
    user.ninja("check-offload")
    text = _text(user.draft())
    # v11's run is the checkout's: its figures stand as they are.
    assert "What `olCreateProgram` loaded on an H100" in text
    assert "The cost, of series v11 against" in text
    assert "(v11's run)" not in text
    # v10's leak figures are marked; so are main's, from a run that recorded
    # no series version; nvcc's flags ran no build of the series.
    leak = r"\(\d+ \(v10's run\)\s+KiB more RSS after \d+ \(v10's run\)"
    assert re.search(leak, text)
    assert '" (run of no recorded version)' in text
    assert re.search(r"the `sm_100` flags,\s+\S+\);", text)
    details = text[text.index('[details="The GPU runs"]') :]
    assert details.rstrip().endswith("[/details]")
    lines = details.splitlines()[1:-1]
    assert [ln.split("`")[1] for ln in lines] == [
        "results/gpu/cubin-arch-mark/",
        "results/gpu/real-runtimes-v10/",
        "results/gpu/real-runtimes-v11/",
        "results/gpu/real-runtimes/",
    ]
    assert lines[2].endswith(
        "series v11, as the checkout; card: NVIDIA H100 80GB HBM3; ran 2026-12-07"
    )
    assert "series v10, not the checkout's v11" in lines[1]
    assert "card: NVIDIA H200" in lines[3]


def test_base_comparison_from_a_run_after_revert(user: User) -> None:
    """The same build directory after kdl revert: its runs are the base's."""
    revert_series(user.llvm, load(user.series))
    out = user.ninja("check-offload")
    assert "Failed Tests (1)" in out, out
    user.ninja("check-offload-unit")  # ninja stops at the first that fails
    apply_series(user.llvm, load(user.series))
    user.ninja("check-offload", "check-offload-unit")
    posts = user.draft()
    text = _text(posts)
    assert (
        "gives 4 passed (xunit counts expected failures as passed) and 0 failed, "
        "against 3 and 1 without it; `check-offload-unit` grows from 2 to 3 "
        "tests, the new ones the backport's. Both set"
    ) in text
    counts = json.loads((user.root / COUNTS).read_text())
    offload = counts["suites"]["check-offload"]
    assert offload["fixed"] == ["user-offload.user-offload::ranked.test"]
    assert offload["regressions"] == []
    assert check.check_files(list(posts.values()), user.root) == []


def test_the_comparison_kdl_test_leaves(user: User, tmp_path: Path) -> None:
    """``kdl test --check-offload --llvm X --build-dir B``: B/series and
    B/base, each run by kdl's own run_check_offload."""
    from kdl.build.checkoffload import run_check_offload

    meta = git(user.llvm, "config", "--get-regexp", "kdlbase").split()
    base_src = tmp_path / "base-src"
    git(user.llvm, "worktree", "add", "--quiet", "--detach", str(base_src), meta[1])
    comparison = tmp_path / "comparison"
    for kind, source in (("series", user.llvm), ("base", base_src)):
        _offload_build(comparison / kind / "offload", source)
        for suite in ("check-offload", "check-offload-unit"):
            run_check_offload(
                comparison / kind / "offload",
                results_dir=comparison / kind / "results",
                target=suite,
            )
    user.build = comparison
    posts = user.draft()
    assert (
        "0 failed, against 3 and 1 without it; `check-offload-unit` grows from "
        "2 to 3 tests, the new ones the backport's. Both set `CHECK_OPENMP_ENV` "
        f'to "{THREADS}".'
    ) in _text(posts)
    assert check.check_files(list(posts.values()), user.root) == []


def test_the_unit_suite_alone_without_a_base(user: User) -> None:
    user.ninja("check")
    text = _text(user.draft())
    assert (
        "0 failed with the series (its base not run); "
        "`check-offload-unit` gives 3 passed and 0 failed. Both set"
    ) in text


def test_a_run_of_the_base_is_not_drafted_from(user: User) -> None:
    revert_series(user.llvm, load(user.series))
    user.ninja("check-offload")
    code, err = _cli(user)
    assert code == 1
    assert "carries no patch of test-series: its base" in err


def test_a_full_llvm_build_with_lit_told_where(user: User, tmp_path: Path) -> None:
    """A --full build's check-offload is CMake's: no kdl-check.py. The error
    says how to keep lit's results; run so, they are drafted from."""
    full = tmp_path / "full"
    _offload_build(full, user.llvm)
    (full / "CMakeCache.txt").write_text(
        f"CMAKE_HOME_DIRECTORY:INTERNAL={user.llvm / 'llvm'}\n"
    )
    code, err = _cli(user, full)
    assert code == 1
    command = re.search(r"; run (mkdir -p .*check-offload)$", err.strip())
    assert command, err
    done = subprocess.run(
        command.group(1), shell=True, capture_output=True, check=False
    )
    assert done.returncode == 0, done
    user.build = full
    posts = user.draft()
    text = _text(posts)
    assert "My build of series v11 (" in text
    # No CHECK_OPENMP_ENV in this build: the post says nothing of it.
    assert (
        "gives 4 passed (xunit counts expected failures as passed) and 0 failed "
        "with the series (its base not run); I did not run `check-offload-unit`.\n"
    ) in text
    assert check.check_files(list(posts.values()), user.root) == []


# --- which version the checkout carries -------------------------------------------


def _edit_last_patch(user: User) -> None:
    """The third patch changed on disk: its diff is not the applied one."""
    patch = user.series.parent / load(user.series).patches[-1].path.name
    patch.write_text(patch.read_text().replace("ranked by variant", "ranked by the"))


def test_an_earlier_version_is_found(user: User) -> None:
    """The series moved on to v12; the checkout still carries v11, kept by
    kdl export under versions/v11/."""
    keep = user.series.parent / "versions" / "v11"
    keep.mkdir(parents=True)
    for path in user.series.parent.iterdir():
        if path.is_file():
            shutil.copy(path, keep / path.name)
    _edit_last_patch(user)
    _set_version(user.series, 12)
    found = applied(user.llvm, patches=user.root / "patches")
    assert (found.version, found.on_disk, found.found, found.total) == (11, 12, 3, 3)
    user.ninja("check-offload")
    text = _text(user.draft())
    assert "My build of series v11 (" in text
    assert "(v11's run)" not in text


def test_a_branch_with_proposals_on_top(user: User) -> None:
    """kdl apply records the stack's name with the proposals it put on top."""
    branch = git(user.llvm, "branch", "--show-current").strip()
    key = f"branch.{branch}.kdlSeries"
    git(user.llvm, "config", key, "test-series+proposals:1-2")
    found = applied(user.llvm, patches=user.root / "patches")
    assert (found.series, found.version) == ("test-series+proposals:1-2", 11)


def test_no_known_version_marks_every_run_of_the_series(user: User) -> None:
    _edit_last_patch(user)
    _set_version(user.series, 12)
    user.ninja("check-offload")
    posts = user.draft()
    text = _text(posts)
    assert (
        "My build of test-series at no known version (2 of 3 patches of v12) ("
    ) in text
    assert "The cost, of series v11 (v11's run) against" in text
    assert check.check_files(list(posts.values()), user.root) == []


# --- the checker guards the marks -------------------------------------------------


def test_a_mark_taken_out_is_found(user: User) -> None:
    user.ninja("check-offload")
    posts = user.draft()
    post = posts["ranked-selection"]
    post.write_text(post.read_text().replace(" (v10's run)", "", 1))
    problems = check.check_files([post], user.root)
    assert any("""its mark "(v10's run)" is gone""" in p for p in problems), problems
    # Clean for the v10 run: its record says v11 now, so no mark is wanted.
    post.write_text(post.read_text().replace("(v10's run)", ""))
    report = user.root / "results/gpu/real-runtimes-v10/report.json"
    report.write_text(report.read_text().replace("series v10 (", "series v11 ("))
    problems = check.check_files([post], user.root)
    assert any(
        """is marked "(v10's run)"; its run now gives no mark""" in p for p in problems
    ), problems


# --- bad input --------------------------------------------------------------------


def _cli(user: User, build: Path | None = None) -> tuple[int, str]:
    """``kdl rfc --build-dir`` through the command line, in the workspace copy."""
    import kdl.paths as paths

    out = user.root / "rfc" / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(paths, "ROOT", user.root)
        mp.setattr(paths, "RFC_OUT", out)
        mp.setattr(cli, "_check_workspace", lambda *_: None)
        err = user.root / "stderr"
        with err.open("w") as stream:
            mp.setattr(sys, "stderr", stream)
            code = cli.main(["rfc", "--build-dir", str(build or user.build)])
    return code, err.read_text()


def test_bad_input_is_one_line(user: User, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    (tmp_path / "empty").mkdir()
    cases = {
        missing: (2, f"{missing}: no such directory"),
        user.series: (2, f"{user.series}: not a directory"),
        tmp_path / "empty": (2, f"{tmp_path / 'empty'}: not a build directory"),
        user.build: (1, f"{user.build}/results/check-offload.xml: no such file: run "),
    }
    for build, (status, start) in cases.items():
        code, err = _cli(user, build)
        assert (code, err.count("\n")) == (status, 1), err
        assert err.startswith(f"error: {start}"), err
        assert "Traceback" not in err


def test_a_build_set_up_before_results_were_kept(user: User) -> None:
    (user.build / "kdl-check.py").unlink()
    code, err = _cli(user)
    assert code == 1
    assert "checks do not keep lit's results" in err
    assert f"scripts/build.py --llvm TREE --build-dir {user.build}' again" in err


def test_unreadable_results_are_named(user: User) -> None:
    user.ninja("check-offload")
    xml = user.build / "results/check-offload.xml"
    xml.write_text("<testsuites><testsuite")
    code, err = _cli(user)
    assert code == 1
    assert err.startswith(f"error: {xml}: not lit's xunit output ("), err
    assert err.count("\n") == 1


def test_a_run_lit_wrote_nothing_for(user: User) -> None:
    (user.build / "offload" / "build.ninja").write_text(
        "rule fail\n  command = exit 3\nbuild check-offload: fail\n"
    )
    user.ninja("check-offload")
    code, err = _cli(user)
    assert code == 1
    assert "check-offload ran (check-offload.run.json: exit 1)" in err, err


def test_a_filtered_run_is_refused(user: User) -> None:
    user.ninja("check-offload", env={"LIT_FILTER": "api/"})
    code, err = _cli(user)
    assert code == 1
    assert "a filtered run (3 tests not selected)" in err, err
