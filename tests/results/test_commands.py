"""``kdl results import``: a RAW that is no raw file is one line, exit 1,
and nothing is written (each case stops before results/gpu/raw.json)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kdl import cli, paths
from kdl.results import gpureport


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("3\n", "not a JSON object"),
        ("[1]\n", "not a JSON object"),
        ('{"probe": [1]', "not JSON"),
        ("\xff", "not JSON"),
        ('{"layers": {"cold": 3}}', None),
    ],
    ids=["number", "list", "cut", "not-utf8", "layout"],
)
def test_a_raw_file_that_is_none_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, what: str | None
) -> None:
    raw = tmp_path / "raw.json"
    raw.write_bytes(text.encode("latin-1"))
    before = gpureport.RAW.stat().st_mtime_ns
    assert cli.main(["results", "import", str(raw)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    if what is None:
        assert err.startswith(f"error: {raw}: not a raw file of the GPU harness (")
    else:
        assert err.startswith(f"error: {raw}: not a raw JSON file ({what}")
    assert gpureport.RAW.stat().st_mtime_ns == before


def test_a_raw_file_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "raw.json"
    os.mkfifo(fifo)
    run = subprocess.run(
        [sys.executable, "-m", "kdl", "results", "import", str(fifo)],
        env=dict(os.environ, PYTHONPATH=str(paths.ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == f"error: {fifo}: not a regular file (a FIFO)\n"


def test_a_dry_run_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw.json"
    raw.write_text("{}")
    before = {p: p.stat().st_mtime_ns for p in paths.RESULTS.rglob("*") if p.is_file()}
    assert cli.main(["--dry-run", "results", "import", str(raw)]) == 0
    assert cli.main(["--dry-run", "results", "report"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        f"dry run: kdl results import would compact {raw} into {gpureport.RAW}; "
        "nothing was written",
        "dry run: kdl results report would regenerate the reports of results/gpu/; "
        "nothing was written",
    ]
    after = {p: p.stat().st_mtime_ns for p in paths.RESULTS.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize("value", ["0", "-5", "x"])
def test_a_count_below_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert cli.main(["fuzz", f"--seconds={value}"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1] == (
        f"kdl fuzz: error: argument --seconds: {value!r} is not a whole number "
        "of 1 or more"
    )
