"""results/gpu/runtime-select-v7, -v8, -v8-proposals-v2: the committed
#gpu.runtime_select runs (series v7's runtimes, then v8's; then v8's with the
proposal's version 2, whose keys are each object's #nvvm.target's).

Each program's and runtime's recorded choice (runtime-select.json and
summary.json) must be what its log says: the marker every launch printed, the
exit status of every process, the load error. GPU-free: the run itself is
gpu/mlir/runtime_select.sh's on the device machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kdl import paths

RUNS = {
    v: paths.ROOT / "results" / "gpu" / f"runtime-select-{v}"
    for v in ("v7", "v8", "v8-proposals-v2")
}
ENTRIES = {80: "sm_80-cubin", 90: "sm_90-cubin", 91: "sm_90a-cubin", 8: "sm_80-ptx"}
#: Each run's programs: v7 and v8 also ran the entries with keys set by hand
#: (vadd-v1-chip), which version 2 of the proposal writes itself.
PROGRAMS = {
    "v7": ("vadd", "vadd-v1", "vadd-v1-chip"),
    "v8": ("vadd", "vadd-v1", "vadd-v1-chip"),
    "v8-proposals-v2": ("vadd", "vadd-v1"),
}
RUNTIMES = ("base", "loop", "series")
HEADER = re.compile(r"== program (\S+) runtime (\w+) process (\d+)$")
Log = dict[tuple[str, str], list[dict[str, Any]]]
RUN = re.compile(
    r"run (\d+) marker (-?\d+) entry (\S+) checked (\d+) mismatches (\d+)$"
)


def parse_log(path: Path) -> Log:
    """Every process of the log: its launches, exit status and other lines."""
    found: Log = {}
    current: dict[str, Any] | None = None
    for line in path.read_text().splitlines():
        if m := HEADER.match(line):
            current = {"runs": [], "exit": None, "errors": []}
            found.setdefault((m[1], m[2]), []).append(current)
        elif line.startswith("=="):
            current = None
        elif current is None:
            continue
        elif m := re.match(r"exit (\d+)$", line):
            current["exit"] = int(m[1])
        elif m := RUN.match(line):
            current["runs"].append((int(m[2]), m[3], int(m[4]), int(m[5])))
        else:
            current["errors"].append(line)
    return found


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def log(run: str) -> Log:
    return parse_log(RUNS[run] / "runtime-select.log")


def test_every_program_ran_on_every_runtime(log: Log, run: str) -> None:
    where = RUNS[run]
    assert set(log) == {(p, r) for p in PROGRAMS[run] for r in RUNTIMES}
    for key, procs in log.items():
        assert len(procs) == 3, key
        assert all(p["exit"] is not None for p in procs), key
    assert "NVIDIA H200" in (where / "runtime-select.log").read_text().splitlines()[0]


def test_markers_name_their_entries(log: Log) -> None:
    for key, procs in log.items():
        for proc in procs:
            for marker, entry, checked, _ in proc["runs"]:
                assert entry == ENTRIES.get(marker, "none"), key
                assert checked == 1048579, key


@pytest.mark.parametrize("name", ["runtime-select.json", "summary.json"])
def test_recorded_choice_matches_log(log: Log, run: str, name: str) -> None:
    doc = json.loads((RUNS[run] / name).read_text())
    doc = doc.get("programs", doc)
    for (prog, runtime), procs in log.items():
        rec = doc[prog][runtime]
        entries = {run[1] for proc in procs for run in proc["runs"]}
        assert len(entries) == 1, (prog, runtime)
        assert rec["entry"] == entries.pop(), (prog, runtime)
        ok = all(proc["exit"] == 0 for proc in procs)
        assert rec["ok"] == ok, (prog, runtime)
        # A process exits 0 exactly when every launch ran an entry and
        # every sum was exact (gpu/mlir/vadd_main.c).
        for proc in procs:
            good = all(run[1] != "none" and run[3] == 0 for run in proc["runs"])
            assert (proc["exit"] == 0) == good, (prog, runtime)
        if name == "summary.json":
            assert rec["exits"] == [proc["exit"] for proc in procs]
            assert rec["launches"] == sum(len(proc["runs"]) for proc in procs)
            assert rec["mismatches"] == sum(
                r[3] for proc in procs for r in proc["runs"]
            )
            loads = [
                e
                for proc in procs
                for e in proc["errors"]
                if e.startswith("mgpuModuleLoad")
            ]
            assert (rec["load_error"] is None) == (not loads), (prog, runtime)
            if loads:
                assert all(rec["load_error"] in e for e in loads)


def test_what_the_notes_state(log: Log, run: str) -> None:
    """The choices NOTES.md reports, read from the log."""
    where = RUNS[run]
    doc = json.loads((where / "summary.json").read_text())["programs"]
    assert {r: doc["vadd"][r]["entry"] for r in RUNTIMES} == dict.fromkeys(
        RUNTIMES, "none"
    )
    assert doc["vadd-v1"]["loop"]["entry"] == "sm_90-cubin"
    if run == "v8-proposals-v2":
        # The proposal's own keys are the chips: the series loads sm_90a.
        assert doc["vadd-v1"]["series"]["entry"] == "sm_90a-cubin"
    else:
        assert doc["vadd-v1"]["series"]["entry"] == "sm_80-ptx"
        assert doc["vadd-v1-chip"]["series"]["entry"] == "sm_90a-cubin"
    notes = (where / "NOTES.md").read_text()
    for prog in PROGRAMS[run]:
        for runtime in RUNTIMES:
            if doc[prog][runtime]["load_error"]:
                assert (
                    doc[prog][runtime]["load_error"].split(" (ol_errc_t")[0].strip("'")
                    in notes
                ), (prog, runtime)


def test_v8_unloads_the_ptx_program() -> None:
    """With series v7, destroying a program whose loaded entry is PTX failed
    at exit ("Invalid ELF class": 22.1.8's unloadBinary read it as ELF);
    v8's 0004 reads profiling globals only from ELF images."""
    v7, v8 = (
        json.loads((RUNS[v] / "summary.json").read_text())["programs"]
        for v in ("v7", "v8")
    )
    assert any("Invalid ELF class" in e for e in v7["vadd-v1"]["series"]["exit_errors"])
    assert v8["vadd-v1"]["series"]["entry"] == "sm_80-ptx"
    assert all(v8[p][r]["exit_errors"] == [] for p in PROGRAMS["v8"] for r in RUNTIMES)


def test_proposal_v2_keys_are_the_objects_targets() -> None:
    """Version 1 of the proposal read each entry's keys from its ELF header,
    which main reads wrong for ptxas 13's cubins; version 2 writes each
    object's #nvvm.target triple and chip."""

    def keys(run: str) -> list[tuple[str, str]]:
        text = (RUNS[run] / "container-v3.offloading.txt").read_text()
        return list(
            zip(
                re.findall(r"^triple +(\S+)$", text, re.M),
                re.findall(r"^arch +(\S+)$", text, re.M),
                strict=True,
            )
        )

    chips = ["sm_80", "sm_90", "sm_90a", "sm_80"]
    assert keys("v8-proposals-v2") == [("nvptx64-nvidia-cuda", c) for c in chips]
    assert keys("v8") != keys("v8-proposals-v2")
