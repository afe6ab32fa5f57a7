"""proc.run_logged: a step's output goes to its log; a failure shows its end."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from kdl import proc
from kdl.errors import CommandError


def _lines(n: int, status: int) -> list[str]:
    code = f"import sys; [print(f'line {{i}}') for i in range({n})]; sys.exit({status})"
    return [sys.executable, "-c", code]


def test_output_goes_to_the_log_only(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log_file = tmp_path / "logs" / "step.log"
    assert proc.run_logged(_lines(100, 0), log_file, label="step") == 0
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    text = log_file.read_text().splitlines()
    assert text[0].startswith("$ ") and text[1:] == [f"line {i}" for i in range(100)]


def test_a_failure_prints_the_last_30_lines_and_names_the_log(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log_file = tmp_path / "step.log"
    with pytest.raises(CommandError) as failed:
        proc.run_logged(_lines(100, 3), log_file, label="step")
    assert f"see {log_file}" in str(failed.value) and "status 3" in str(failed.value)
    err = capfd.readouterr().err.splitlines()
    assert err[0] == f"  the end of {log_file}:"
    assert err[1:] == [f"  | line {i}" for i in range(70, 100)]
    assert proc.run_logged(_lines(1, 3), log_file, label="step", check=False) == 3


def test_verbose_shows_everything(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger("kdl")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        proc.run_logged(_lines(3, 0), tmp_path / "step.log", label="step")
    finally:
        logger.setLevel(level)
    assert capfd.readouterr().out == "line 0\nline 1\nline 2\n"
