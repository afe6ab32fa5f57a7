"""A configure that stopped midway is redone, never left to wedge ninja."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kdl import proc
from kdl.build.configure import STAMP, configure, is_configured


def _project(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(p NONE)\n"
        'add_custom_target(hello ALL COMMAND "${CMAKE_COMMAND}" -E echo hi)\n'
    )
    build = tmp_path / "build"
    return src, build, ["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja"]


def test_configures_once(tmp_path: Path) -> None:
    _, build, argv = _project(tmp_path)
    assert configure(argv, build) is True
    assert is_configured(build, argv)
    assert configure(argv, build) is False
    proc.run(["ninja", "-C", str(build)])


def test_a_cache_without_a_finished_configure_is_redone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, build, argv = _project(tmp_path)
    configure(argv, build)
    # What a configure killed midway leaves: a cache, no build.ninja, no stamp.
    (build / "build.ninja").unlink()
    (build / STAMP).unlink()
    assert (build / "CMakeCache.txt").is_file() and not is_configured(build)
    with caplog.at_level(logging.INFO, logger="kdl"):
        assert configure(argv, build) is True
    assert "the cmake that configured it did not finish" in caplog.text
    proc.run(["ninja", "-C", str(build)])
    assert is_configured(build, argv)


def test_another_command_line_configures_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, build, argv = _project(tmp_path)
    configure(argv, build)
    with caplog.at_level(logging.INFO, logger="kdl"):
        assert configure([*argv, "-DX=1"], build) is True
    # The message names what changed, and nothing unfinished.
    assert "its cmake command line changed: -DX=1" in caplog.text
    assert "did not finish" not in caplog.text
    assert "-DX=1" in (build / STAMP).read_text()
