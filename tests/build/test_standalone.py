"""The standalone build's own directory: its build.ninja hands the checks to
the builds under it (real ninja)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kdl.build.standalone import StandaloneBuild, write_top_ninja

pytestmark = pytest.mark.skipif(not shutil.which("ninja"), reason="needs ninja")


def test_the_build_directory_runs_the_checks_of_its_builds(tmp_path: Path) -> None:
    build = StandaloneBuild(tmp_path / "llvm-project", tmp_path / "b", Path("/usr"))
    build.offload.mkdir(parents=True)
    marks = tmp_path / "marks"
    (build.offload / "build.ninja").write_text(
        "rule mark\n  command = echo $out >> " + str(marks) + "\n"
        "build check-offload: mark\nbuild check-offload-unit: mark\n"
    )
    write_top_ninja(build, {"check-series-llvm": f"echo series >> {marks}"})
    for _ in range(2):  # never up to date: each run runs the checks again
        done = subprocess.run(
            ["ninja", "-C", str(build.build_dir), "check"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(marks.read_text().split()) == sorted(
        ["check-offload", "check-offload-unit", "series"] * 2
    )
    # Each one alone, and offload's own directory works as well.
    subprocess.run(["ninja", "-C", str(build.offload), "check-offload"], check=True)
    assert marks.read_text().split().count("check-offload") == 3
