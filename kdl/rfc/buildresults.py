"""``kdl rfc --build-dir B``: the test counts of the user's own build.

A build directory ``kdl build --llvm`` made keeps what lit found in each run
of ``ninja -C B check-offload`` and ``check-offload-unit`` in
``B/results/SUITE.xml`` (lit's xunit: each lit test, and each gtest case of
the unit tests) with ``SUITE.run.json`` beside it (the checkout's HEAD and
branch, when), and per HEAD under ``B/results/by-head/``
(:mod:`kdl.build.checkrun`). ``kdl test --check-offload --llvm X
--build-dir B`` leaves the same for a build with the series and one of its
base, in ``B/series/results/`` and ``B/base/results/``.

:func:`read` reads them into a document in the shape of the workspace's
``results/real-trees/check-offload-22.json``, which the posts' templates
read instead (:data:`REPLACES`): each suite's counts, the base's where a run
of the base is there (the same build directory after ``kdl revert``, or the
comparison's), and the series version of the checkout at the commit the run
tested (:mod:`kdl.rfc.applied`).
"""

from __future__ import annotations

import datetime
import json
import logging
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdl.build.checkoffload import standalone_offload, test_env, xunit_cases
from kdl.build.checkrun import BY_HEAD, RESULTS
from kdl.errors import UsageError, WorkspaceError
from kdl.provenance import cmake_cache
from kdl.rfc.applied import Applied, applied

log = logging.getLogger("kdl")

SUITES = ("check-offload", "check-offload-unit")
#: The results the document stands in for in the posts' templates.
REPLACES = "results/real-trees/check-offload-*.json"


@dataclass
class SuiteRun:
    """One run of a suite: lit's states of its tests, and what ran it."""

    xml: Path
    states: dict[str, str]  # pass, fail or unsupported, by test
    excluded: int  # not selected (LIT_FILTER)
    head: str | None = None
    branch: str | None = None
    checkout: str | None = None
    ran: str = ""
    env: dict[str, str] = field(default_factory=dict)
    #: As kdl's own run (``kdl test``) recorded it.
    test_env: dict[str, Any] | None = None

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "unsupported": 0}
        for state in self.states.values():
            out[state] += 1
        return out


def _record(results: Path, suite: str) -> dict[str, Any]:
    """What ran the suite: kdl-check.py's ``SUITE.run.json``, or the
    ``SUITE.json`` kdl's own run writes ({} where neither is)."""
    for name in (f"{suite}.run.json", f"{suite}.json"):
        path = results / name
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            what = f"not a record of a test run ({exc})"
            raise WorkspaceError(f"{path}: {what}") from None
        if not isinstance(doc, dict):
            raise WorkspaceError(f"{path}: not a record of a test run (not an object)")
        if isinstance(doc.get("checkout"), dict):  # kdl test's record
            where = doc["checkout"]
            doc = {**doc, "checkout": where.get("path"), "head": where.get("head")}
        return doc
    return {}


def read_run(results: Path, suite: str) -> SuiteRun | None:
    """The run of *suite* kept in *results*; None where lit wrote none."""
    xml = results / f"{suite}.xml"
    if not xml.exists():
        return None
    states: dict[str, str] = {}
    excluded = 0
    try:
        for _, case, state in xunit_cases(xml):
            if state == "excluded":
                excluded += 1
            else:
                states[f"{case.get('classname', '')}::{case.get('name', '')}"] = state
    except (OSError, ET.ParseError) as exc:
        raise WorkspaceError(f"{xml}: not lit's xunit output ({exc})") from None
    record = _record(results, suite)
    stamp = record.get("finished")
    if not isinstance(stamp, str):
        mtime = xml.stat().st_mtime
        stamp = datetime.datetime.fromtimestamp(mtime).astimezone().isoformat()
    env = record.get("env")
    return SuiteRun(
        xml,
        states,
        excluded,
        head=record.get("head"),
        branch=record.get("branch"),
        checkout=record.get("checkout"),
        ran=stamp,
        env=env if isinstance(env, dict) else {},
        test_env=record["test_env"]
        if isinstance(record.get("test_env"), dict)
        else None,
    )


def _layout(build_dir: Path) -> tuple[Path, Path]:
    """(where the series' results are, the offload build that ran them)."""
    if not build_dir.exists():
        raise UsageError(f"{build_dir}: no such directory (a build directory)")
    if not build_dir.is_dir():
        raise UsageError(f"{build_dir}: not a directory (a build directory)")
    for results, offload in (
        (build_dir / RESULTS, build_dir / "offload"),
        (build_dir / "series" / RESULTS, build_dir / "series" / "offload"),
    ):
        if (results / "check-offload.xml").exists():
            # A full LLVM build's own cache names the checkout's llvm/.
            return results, standalone_offload(offload.parent) or offload.parent
    xml = build_dir / RESULTS / "check-offload.xml"
    record = build_dir / RESULTS / "check-offload.run.json"
    if record.is_file():
        status = _record(build_dir / RESULTS, "check-offload").get("returncode")
        raise WorkspaceError(
            f"{xml}: no such file: check-offload ran ({record.name}: exit "
            f"{status}) and lit wrote no results"
        )
    if not (build_dir / "build.ninja").is_file():
        raise UsageError(
            f"{build_dir}: not a build directory (no build.ninja); the one "
            "'python3 scripts/build.py --llvm TREE --build-dir DIR' made"
        )
    if (
        standalone_offload(build_dir) is None
        and (build_dir / "CMakeCache.txt").exists()
    ):
        raise WorkspaceError(
            f"{xml}: no such file: a full LLVM build keeps no results of its "
            f"own; run mkdir -p {xml.parent} && LIT_OPTS='--xunit-xml-output "
            f"{xml}' ninja -C {build_dir} check-offload"
        )
    if not (build_dir / "kdl-check.py").is_file():
        raise WorkspaceError(
            f"{xml}: no such file: this build directory's checks do not keep "
            "lit's results (it was set up before they did); run 'python3 "
            f"scripts/build.py --llvm TREE --build-dir {build_dir}' again, then "
            f"'ninja -C {build_dir} check-offload'"
        )
    raise WorkspaceError(
        f"{xml}: no such file: run 'ninja -C {build_dir} check-offload' first"
    )


def _checkout(run: SuiteRun, offload: Path) -> Path:
    if run.checkout:
        return Path(run.checkout)
    home = cmake_cache(offload).get("CMAKE_HOME_DIRECTORY")
    if not home:
        raise WorkspaceError(
            f"{run.xml}: cannot tell the checkout it tested (no record beside it, "
            f"no {offload / 'CMakeCache.txt'})"
        )
    return Path(home).parent


def _test_env(run: SuiteRun, offload: Path) -> dict[str, Any]:
    """CHECK_OPENMP_ENV as the run's tests saw it: as kdl's own run recorded
    it, from the environment the run was given, else the build's cache."""
    if run.test_env is not None:
        return run.test_env
    given = {k: v for k, v in run.env.items() if k == "CHECK_OPENMP_ENV"}
    # Only the run's environment: not the one kdl rfc runs in.
    return test_env(offload, given) if given else _cached(offload)


def _cached(offload: Path) -> dict[str, Any]:
    value = cmake_cache(offload).get("CHECK_OPENMP_ENV")
    where = f"{offload}/CMakeCache.txt" if value else None
    return {"CHECK_OPENMP_ENV": value or None, "from": where}


def _entry(run: SuiteRun, offload: Path) -> dict[str, Any]:
    return {
        "counts": run.counts(),
        "test_env": _test_env(run, offload),
        "xunit": str(run.xml),
        "ran": run.ran,
        "head": run.head,
    }


@dataclass
class BuildResults:
    doc: dict[str, Any]
    applied: Applied
    notes: list[str]

    @property
    def version(self) -> int | None:
        return self.applied.version


def read(build_dir: Path, patches: Path | None = None) -> BuildResults:
    """The counts of the build directory *build_dir* (see the module)."""
    build_dir = build_dir.expanduser().resolve()
    results, offload = _layout(build_dir)
    runs = {s: read_run(results, s) for s in SUITES}
    main = runs["check-offload"]
    assert main is not None  # _layout found it
    for run in (r for r in runs.values() if r is not None):
        if run.excluded or "LIT_FILTER" in run.env:
            raise WorkspaceError(
                f"{run.xml}: a filtered run ({run.excluded} tests not selected); "
                "the counts of a post are of the whole suite"
            )
    at = applied(_checkout(main, offload), main.head, main.branch, patches)
    if at.found == 0 and at.version is None:
        raise WorkspaceError(
            f"{main.xml}: check-offload ran on {at.head[:12]} of {at.checkout}, "
            f"which carries no patch of {at.series}: its base (kept as the "
            "base's run; apply the series and run check-offload again)"
        )
    notes = []
    if main.head is None:
        notes.append(f"{main.xml}: no commit recorded; {at.branch}'s tip taken")
    doc: dict[str, Any] = {
        "build": {
            "dir": str(build_dir),
            "checkout": str(at.checkout),
            "branch": at.branch,
            "head": at.head,
            "series": at.series,
            "series_version": at.version,
            "series_label": at.label,
            "patches": f"{at.found} of {at.total}",
            "ran": main.ran[:10],
        },
        "series": at.series,
        "suites": {},
    }
    for suite, found in runs.items():
        if found is None:
            notes.append(f"{results / suite}.xml: no run of {suite}; left out")
            continue
        run = found
        if run.head not in (None, main.head):
            notes.append(f"{run.xml}: not of check-offload's commit; left out")
            continue
        entry = {"series": _entry(run, offload)}
        base_dir = (
            results / BY_HEAD / at.base
            if results.parent == build_dir
            else build_dir / "base" / RESULTS
        )
        base = read_run(base_dir, suite)
        if base is not None and base.head in (None, at.base):
            from kdl.build.baseline import diff_states

            entry["base"] = _entry(base, offload)
            entry.update(diff_states(base.states, run.states))
        doc["suites"][suite] = entry
    return BuildResults(doc, at, notes)
