"""check-offload plumbing against the fake llvm-project (real cmake, ninja, lit)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from kdl.build import build_llvm
from kdl.checkoffload import run_check_offload
from kdl.errors import UsageError, WorkspaceError
from tests.llvm_tree import git, isolated_git  # noqa: F401  (autouse fixture)
from tests.test_build import make_fake_llvm

pytestmark = pytest.mark.skipif(
    not (shutil.which("cmake") and shutil.which("ninja") and shutil.which("cc")),
    reason="needs cmake, ninja and a C compiler",
)


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
