"""The workspace itself: a copied or moved one never runs, or builds, the
original's code; its sources carry one license header and cite nothing
outside the repository."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kdl import bootstrap, cli, paths
from kdl.build import overlay
from tests.sources import c_family_sources, tracked


def test_venv_stamp_names_the_workspace() -> None:
    """A .venv made for another path is made again (scripts/*.py)."""
    assert str(paths.ROOT) in bootstrap._stamp_value()


def test_the_venv_of_a_copy_refuses_to_run_the_original(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "copy"
    script = copy / ".venv" / "bin" / "kdl"
    script.parent.mkdir(parents=True)
    script.write_text("")
    monkeypatch.setattr(sys, "argv", [str(script), "status"])
    assert cli.main(["--version"]) == 0  # argparse's own exit, before the check
    capsys.readouterr()
    assert cli.main(["inspect", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {script} runs the kdl of {paths.ROOT}: {copy} ")
    assert err.count("\n") == 1
    # This workspace's own script runs.
    monkeypatch.setattr(sys, "argv", [str(paths.ROOT / ".venv" / "bin" / "kdl")])
    assert cli.main(["inspect", "/nonexistent"]) == 1


def test_overlay_cache_of_another_workspace_is_configured_again(
    tmp_path: Path,
) -> None:
    if shutil.which("cmake") is None:
        pytest.skip("no cmake")
    build = tmp_path / "build"
    build.mkdir()
    (build / "CMakeCache.txt").write_text(
        "CMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere/kdl/overlay\n"
    )
    (build / "stale").write_text("from the other workspace")
    assert overlay.configured_for(build) == Path("/elsewhere/kdl/overlay")
    rank = tmp_path / "src-rank"
    overlay.extract_rank(rank)
    overlay._configure(build, rank, paths.default_llvm_prefix())
    assert not (build / "stale").exists()
    assert overlay.configured_for(build) == paths.OVERLAY_SRC.resolve()


def test_a_copied_workspace_does_not_accept_the_originals_venv(
    tmp_path: Path,
) -> None:
    """The copy's set-up computes another stamp than the one the copied
    .venv carries, so scripts/*.py make the copy's .venv again (--clear)."""
    copy = tmp_path / "ws"
    shutil.copytree(paths.ROOT / "kdl", copy / "kdl")
    shutil.copy(paths.ROOT / "pyproject.toml", copy / "pyproject.toml")
    stamp = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "from kdl import bootstrap; print(bootstrap._stamp_value(), end='')",
            str(copy),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert stamp.endswith(f" {copy}\n")
    assert stamp != bootstrap._stamp_value()


LICENSE = (
    "Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.",
    "See https://llvm.org/LICENSE.txt for license information.",
    "SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception",
)


def test_every_c_family_source_opens_with_the_banner_and_license() -> None:
    """LLVM's file banner (one 80-column line) and the kdl licence lines."""
    sources = c_family_sources()
    assert len(sources) > 20
    missing = []
    for f in sources:
        head = (paths.ROOT / f).read_text().splitlines()[:8]
        banner = head[0].startswith(("//===-", "/*===-")) and len(head[0]) == 80
        if not banner or not all(
            any(line.endswith(text) for line in head) for text in LICENSE
        ):
            missing.append(f)
    assert missing == []


def test_nothing_refers_to_a_path_outside_the_repository() -> None:
    # Written in pieces so that this file does not match itself.
    shared, work = "shared" + "/research", "/" + "work/"
    outside = re.compile(rf"\.\./shared\b|(?<![\w.]){work}|\b{shared}\b")
    found = [
        f"{f}:{n}"
        for f in tracked()
        if not f.startswith(("results/", "tests/data/")) and (paths.ROOT / f).is_file()
        for n, line in enumerate(
            (paths.ROOT / f).read_text(errors="replace").splitlines(), 1
        )
        if outside.search(line)
    ]
    assert found == []


#: The floors of the package: a module imports only from its own floor or
#: the ones below it.
FLOORS = {
    "__version__": 0,
    "paths": 0,
    "proc": 0,
    "errors": 0,
    "files": 0,
    "http": 0,
    "provenance": 0,
    "record": 0,
    "series": 1,
    "build": 2,
    "trees": 2,
    "rfc": 2,
    "offload": 3,
    "results": 4,
    "cli": 5,
    "workflow": 5,
    "bootstrap": 5,
    "fuzz": 5,
    "__main__": 6,
}


def test_imports_only_run_downward() -> None:
    import ast

    package = paths.ROOT / "kdl"
    upward = []
    for module in sorted(package.rglob("*.py")):
        parts = module.relative_to(package).with_suffix("").parts
        if parts == ("__init__",):
            continue
        floor = FLOORS[parts[0]]
        for node in ast.walk(ast.parse(module.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
                if node.module == "kdl":
                    names = [f"kdl.{a.name}" for a in node.names]
            for name in names:
                if name.startswith("kdl.") and FLOORS[name.split(".")[1]] > floor:
                    upward.append(f"{module.relative_to(paths.ROOT)}: {name}")
    assert upward == []


def test_a_python_without_kdls_packages_is_one_line() -> None:
    """kdl run by a Python that lacks GitPython (not .venv's) says so in one
    line, with no traceback."""
    code = (
        "import sys; sys.modules['git'] = None; from kdl import cli; "
        "sys.exit(cli.main(['status', '--llvm', '/nonexistent']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: {sys.executable}: no Python package 'git'")
