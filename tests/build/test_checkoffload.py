"""check-offload plumbing against the fake llvm-project (real cmake, ninja, lit)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from kdl import paths
from kdl.build.checkoffload import run_check_offload
from kdl.build.llvm import build_llvm
from kdl.errors import UsageError, WorkspaceError
from tests.llvm_tree import git, make_fake_llvm

pytestmark = [
    pytest.mark.usefixtures("isolated_git"),
    pytest.mark.skipif(
        not (shutil.which("cmake") and shutil.which("ninja") and shutil.which("cc")),
        reason="needs cmake, ninja and a C compiler",
    ),
]


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAKE_PYTHON", sys.executable)
    llvm = make_fake_llvm(tmp_path / "llvm-project")
    build_dir = tmp_path / "build"
    build_llvm(llvm, build_dir, jobs=1)
    return build_dir


def test_filtered_run_passes_and_records_results(
    built: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    result = run_check_offload(built, lit_filter="api/", jobs=1, results_dir=results)
    out, _ = capfd.readouterr()
    assert result.ok, out
    c = result.counts
    assert (c.passed, c.failed, c.skipped, c.excluded) == (2, 0, 1, 2)
    assert result.summary() == "2 passed, 0 failed, 1 unsupported, 2 not selected"
    assert result.xml_file == results / "check-offload.xml"
    assert "fake-offload" in result.xml_file.read_text()
    doc = json.loads((results / "check-offload.json").read_text())
    assert doc["command"] == ["ninja", "-C", str(built), "check-offload"]
    assert doc["env"]["LIT_FILTER"] == "api/"
    assert (
        doc["env"]["LIT_OPTS"]
        == f"--xunit-xml-output {results / 'check-offload.xml'} -j 1"
    )
    assert (doc["passed"], doc["failed"], doc["skipped"], doc["excluded"]) == (
        2,
        0,
        1,
        2,
    )
    head = git(tmp_path / "llvm-project", "rev-parse", "HEAD").strip()
    assert doc["checkout"] == {
        "path": str(tmp_path / "llvm-project"),
        "head": head,
        "describe": f"llvmorg-22-init-1-g{head[:12]}",
    }
    assert doc["tools"]["cmake"].startswith("cmake version ")
    assert doc["tools"]["ninja"]
    assert doc["tools"]["clang"] is None  # the fake build has no clang


def test_failures_are_counted_and_named(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIT_OPTS", "--max-failures=10")
    result = run_check_offload(built, results_dir=tmp_path / "results")
    assert not result.ok
    assert result.returncode != 0
    c = result.counts
    assert (c.passed, c.failed, c.skipped, c.excluded) == (2, 2, 1, 0)
    assert c.failures == [
        "fake-offload :: broken.test",
        "fake-offload :: regress/wrong.test",
    ]
    doc = json.loads(result.json_file.read_text())
    assert doc["env"]["LIT_OPTS"].startswith("--max-failures=10 --xunit-xml-output ")
    assert "LIT_FILTER" not in doc["env"]


def test_needs_a_build_with_check_offload(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a configured build"):
        run_check_offload(tmp_path)
    (tmp_path / "build.ninja").write_text(
        "rule touch\n  command = touch $out\nbuild other: touch\n"
    )
    with pytest.raises(WorkspaceError, match="has no check-offload target"):
        run_check_offload(tmp_path)


# --- the series' own tests -----------------------------------------------------------


def _checkout_with_series_files(root: Path, series_file: Path | None = None) -> Path:
    """A tree holding every file the series touches (as after kdl apply)."""
    from kdl.series.model import load

    for patch in load(series_file).patches:
        for f in patch.files:
            (root / f.path).parent.mkdir(parents=True, exist_ok=True)
            (root / f.path).write_text("")
    return root


def test_series_test_steps_follow_the_series(tmp_path: Path) -> None:
    from kdl.build.checkoffload import series_test_steps
    from kdl.series.model import load

    llvm = _checkout_with_series_files(tmp_path / "llvm-project")
    build_dir = tmp_path / "build"
    steps = series_test_steps(load(), llvm, build_dir)
    assert [s.argv for s in steps] == [
        [
            f"{build_dir}/unittests/Object/ObjectTests",
            "--gtest_filter=ELFObjectFileTest.*:OffloadTargetRankTest.*"
            ":OffloadingTest.*",
        ],
        # The loop's test, offload/unittests/Plugins.
        ["ninja", "-C", str(build_dir), "check-offload-unit"],
    ]


def test_series_test_steps_of_unit_offload_and_mlir_tests(tmp_path: Path) -> None:
    """The proposals have gtest suites and MLIR lit tests (their offload lit
    test is check-offload's)."""
    from kdl.build.checkoffload import series_test_steps
    from kdl.series.model import load

    proposals = paths.PROPOSALS_SERIES
    llvm = _checkout_with_series_files(tmp_path / "llvm-project", proposals)
    build_dir = tmp_path / "build"
    steps = series_test_steps(load(proposals), llvm, build_dir)
    assert [s.argv for s in steps] == [
        [
            f"{build_dir}/unittests/Object/ObjectTests",
            "--gtest_filter=OffloadBinaryVariantTest.*",
        ],
        [
            f"{build_dir}/bin/llvm-lit",
            "-sv",
            f"{llvm}/mlir/test/Dialect/GPU/runtime-select.mlir",
            f"{llvm}/mlir/test/Target/LLVMIR/gpu-runtime-select-invalid.mlir",
            f"{llvm}/mlir/test/Target/LLVMIR/gpu-runtime-select.mlir",
        ],
    ]


def test_series_tests_need_the_series_applied(tmp_path: Path) -> None:
    from kdl.build.checkoffload import series_test_steps
    from kdl.series.model import load

    with pytest.raises(WorkspaceError, match="apply the series there first"):
        series_test_steps(load(), tmp_path, tmp_path / "build")


def test_series_tests_run_and_a_failure_counts(tmp_path: Path) -> None:
    from kdl.build.checkoffload import run_series_tests

    proposals = paths.PROPOSALS_SERIES
    llvm = _checkout_with_series_files(tmp_path / "llvm-project", proposals)
    build_dir = tmp_path / "build"
    (build_dir / "unittests/Object").mkdir(parents=True)
    (build_dir / "bin").mkdir()
    (build_dir / "CMakeCache.txt").write_text(
        f"CMAKE_HOME_DIRECTORY:INTERNAL={llvm}/llvm\n"
    )
    (build_dir / "build.ninja").write_text("build check-offload-unit: phony\n")
    log = tmp_path / "ran.txt"
    for rel, status in (
        ("unittests/Object/ObjectTests", 0),
        ("bin/llvm-lit", 1),
    ):
        tool = build_dir / rel
        tool.write_text(f'#!/bin/sh\necho "$0 $*" >> {log}\nexit {status}\n')
        tool.chmod(0o755)
    ok, steps = run_series_tests(
        build_dir, series_file=proposals, results_dir=tmp_path / "results"
    )
    assert not ok
    assert [s.returncode for s in steps] == [0, 1]
    ran = log.read_text().splitlines()
    assert ran[0].endswith("ObjectTests --gtest_filter=OffloadBinaryVariantTest.*")
    assert "gpu-runtime-select-invalid.mlir" in ran[1]
    doc = json.loads((tmp_path / "results/series-tests.json").read_text())
    assert [s["returncode"] for s in doc["steps"]] == [0, 1]
