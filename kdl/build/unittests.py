"""The series' LLVM-side unit tests, built against a real LLVM and run.

Upstream's unit tests build inside an LLVM build tree; here the series'
test files are compiled against an *installed* LLVM instead, with its own
``clang++`` and ``llvm-config``, and linked against its static libraries:

- LLVM main: the sid root of the ``main`` tree (main's binaries need its
  glibc), every command run through ``chroot``;
- LLVM 22.1.8: Debian's installed packages on this machine.

A translation unit the series changes is compiled from its patched text and
linked *ahead of* the static library that holds it, so the linker takes no
archive member whose symbols are already defined. Main's sources are not
packaged, so on main only the unpatched library can be tested: a test of a
bug the series fixes must fail there, exactly in the cases the series names.
The 22.1.8 tree has its sources: the backport's patched text is built and
every case must pass, and the unpatched library must fail the same cases.

The toolchains are :mod:`kdl.build.toolchain`'s; googletest comes from the
system (sid's or bookworm's libgtest-dev). ``libLLVMTestingSupport``
(``ASSERT_THAT_EXPECTED``) is not packaged: its one source,
``llvm/lib/Testing/Support/Error.cpp``, is compiled from the 22.1.8 tree,
for both LLVMs (a stand-in named as such in the results).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdl import paths, proc
from kdl.build.standalone import series_headers
from kdl.build.toolchain import Toolchain, main_toolchain
from kdl.errors import WorkspaceError
from kdl.series.model import Series
from kdl.trees.common import Tree

log = logging.getLogger("kdl")

RESULTS = paths.REAL_TREE_RESULTS
TESTING_SUPPORT = "llvm/lib/Testing/Support/Error.cpp"


@dataclass(frozen=True)
class SeriesTest:
    """A unit test file of the series and what it needs."""

    name: str
    #: The test's text (from the series' patch).
    text: str
    components: tuple[str, ...]
    #: Tests that show the bug the series fixes: they fail without it.
    fail_without: tuple[str, ...] = ()
    #: Sources under test that no library holds (the plugins' utilities),
    #: and the include directory they need, as llvm-project paths.
    sources: tuple[str, ...] = ()
    include: str | None = None


@dataclass
class UnitRun:
    passed: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)
    runs: dict[str, dict[str, str]] = field(default_factory=dict)


def build_and_run(
    tc: Toolchain,
    test: SeriesTest,
    support: Path,
    patched: list[Path],
    headers: Path | None = None,
    *,
    sources: Path | None = None,
) -> dict[str, dict[str, str]]:
    """The test against *tc*'s libraries as packaged (a test of a bug the
    series fixes), and with the series: its changed sources (*patched*)
    linked ahead of the libraries, its changed headers (*headers*) ahead of
    the installed ones, the sources under test (``test.sources``) from the
    llvm-project-shaped tree *sources*. A test of a new API builds only with
    the series; a test of a bug only where the series' sources can be built."""
    where = tc.work / test.name
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    source = where / f"{test.name}.cpp"
    source.write_text(test.text)
    support_copy = Path(shutil.copy2(support, where / "TestingSupportError.cpp"))
    variants: dict[str, tuple[list[Path], list[Path]]] = {}
    if test.fail_without:
        variants[tc.name] = ([], [])
    if patched or test.sources or (headers and not test.fail_without):
        includes = [headers] if headers else []
        units = list(patched)
        if test.sources:
            if sources is None:
                raise WorkspaceError(f"{test.name}: no tree holds its sources")
            units += [
                require(sources / s, "a source of the series") for s in test.sources
            ]
            includes.append(sources / (test.include or ""))
        extra = []
        for unit in units:
            copy = where / f"patched-{unit.name}"
            shutil.copy2(unit, copy)
            tc.compile(copy, copy.with_suffix(".o"), includes)
            extra.append(copy.with_suffix(".o"))
        variants[f"{tc.name}+series"] = (extra, includes)
    runs = {}
    for variant, (extra, include_dirs) in variants.items():
        stem = variant.replace("+", "-")
        objects = []
        for src in (source, support_copy):
            obj = where / f"{src.stem}-{stem}.o"
            tc.compile(src, obj, include_dirs)
            objects.append(obj)
        binary = where / stem
        # The series' objects first: they replace the archive's members.
        tc.link([*extra, *objects], binary, list(test.components))
        runs[variant] = tc.gtest(binary)
    return runs


def judge(test: SeriesTest, runs: dict[str, dict[str, str]], base: str) -> UnitRun:
    """Check both runs; count the series' run, or the bug shown where only
    the unpatched library can be built."""
    result = UnitRun(runs=runs)
    unpatched = runs.get(base, {})
    failing = sorted(n for n, s in unpatched.items() if s != "pass")
    if test.fail_without and failing != sorted(test.fail_without):
        result.problems.append(
            f"{test.name} on {base} as packaged: {', '.join(failing) or 'none'} "
            f"failed; the series says {', '.join(test.fail_without) or 'none'}"
        )
    with_series = runs.get(f"{base}+series")
    if with_series is None:  # main: the bug shown, one check per test
        ok = not result.problems and bool(unpatched)
        result.passed, result.failed = (len(unpatched), 0) if ok else (0, 1)
        return result
    for name, state in sorted(with_series.items()):
        if state == "pass":
            result.passed += 1
        else:
            result.failed += 1
            result.problems.append(
                f"{test.name}: {name} did not pass with the series ({state})"
            )
    if not with_series:
        result.problems.append(f"{test.name}: no test ran")
    return result


def write_results(name: str, doc: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / name
    out.write_text(json.dumps(doc, indent=2) + "\n")
    return out


def require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise WorkspaceError(f"{path}: missing ({what})")
    return path


#: Unit-test directories of the series and the LLVM components they link.
COMPONENTS = {
    "llvm/unittests/Object/": ("object",),
    "offload/unittests/PluginUtils/": ("object", "targetparser"),
}

#: The plugins' utilities: a test under offload/unittests/PluginUtils/ is
#: built with the series' sources under src/Utils/ and their include/.
PLUGIN_COMMON = "offload/plugins-nextgen/common/"
PLUGIN_UTILS_TEST = "offload/unittests/PluginUtils/"

#: The tests that show a bug the series fixes: they fail on an LLVM without
#: the fix (main's libLLVMObject at 7e3c57157096, and 22.1.8's).
FAIL_WITHOUT = {
    "ELFObjectFileNVPTXTest": (
        "ELFObjectFileNVPTXTest.CPUNameABIV1",
        "ELFObjectFileNVPTXTest.CPUNameABIV2",
        "ELFObjectFileNVPTXTest.CPUNameUnknownSM",
    ),
}


def series_texts(
    series: Series, names: list[str], seeds: dict[str, Path] | None = None
) -> dict[str, str]:
    """The texts of *names* after every patch of *series*, in order: each
    patch's hunks on them applied with ``git apply``, starting from *seeds*
    (a file's base text) or from nothing (a file the series creates). An
    error names the patch whose hunk does not apply."""
    seeds = seeds or {}
    with tempfile.TemporaryDirectory(prefix="kdl-texts-") as tmp:
        for name, text in seeds.items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(text, Path(tmp) / name)
        for patch in series.patches:
            touched = [n for n in names if n in patch.diff_files()]
            if not touched:
                continue
            applied = proc.run(
                ["git", "apply", *[f"--include={n}" for n in touched], str(patch.path)],
                cwd=Path(tmp),
                env={"GIT_CEILING_DIRECTORIES": tmp},
                check=False,
            )
            if applied.returncode != 0:
                why = applied.stderr.decode().strip().splitlines() or ["git apply"]
                on = "main's " if seeds else ""
                raise WorkspaceError(
                    f"{patch.path.name}: does not apply to {on}"
                    f"{', '.join(touched)} ({why[-1]})"
                )
        return {
            n: (Path(tmp) / n).read_text() for n in names if (Path(tmp) / n).is_file()
        }


def new_files(series: Series, prefix: str, suffix: str) -> list[str]:
    """The files the series creates under *prefix* whose names end in *suffix*."""
    return sorted(
        {
            f.path
            for p in series.patches
            for f in p.files
            if f.is_new and f.path.startswith(prefix) and f.path.endswith(suffix)
        }
    )


def utility_files(series: Series) -> list[str]:
    """The plugins' utilities the series creates (headers and sources)."""
    return new_files(series, PLUGIN_COMMON + "include/Utils/", ".h") + new_files(
        series, PLUGIN_COMMON + "src/Utils/", ".cpp"
    )


def series_tests(main_series: Series, backport: Series) -> list[SeriesTest]:
    """The unit-test files the series adds, as the whole series leaves them;
    the backport must carry each one byte for byte (a test fails if they
    drift)."""
    tests = []
    for path in new_files(main_series, "", ".cpp"):
        component = next((c for d, c in COMPONENTS.items() if path.startswith(d)), None)
        if component is None:
            continue
        text = series_texts(main_series, [path]).get(path)
        theirs = (
            series_texts(backport, [path]).get(path)
            if path in {f for p in backport.patches for f in p.diff_files()}
            else None
        )
        if text is None or theirs != text:
            raise WorkspaceError(
                f"{path}: the release/22.x backport does not carry the "
                "main series' text of this test"
            )
        name = Path(path).stem
        sources: tuple[str, ...] = ()
        include = None
        if path.startswith(PLUGIN_UTILS_TEST):
            sources = tuple(f for f in utility_files(main_series) if f.endswith(".cpp"))
            include = PLUGIN_COMMON + "include"
        tests.append(
            SeriesTest(
                name, text, component, FAIL_WITHOUT.get(name, ()), sources, include
            )
        )
    return tests


def changed_units(series: Series, tree: Path) -> list[Path]:
    """The LLVM library sources the series changes, in *tree* (applied)."""
    return [
        require(tree / f.path, "the backport must be applied to the tree")
        for p in series.patches
        for f in p.files
        if not f.is_new and f.path.startswith("llvm/lib/") and f.path.endswith(".cpp")
    ]


#: Where LLVM's headers are, in a source tree and under an installed prefix.
HEADERS = "llvm/include/"


def changed_headers(series: Series, include: str = HEADERS) -> list[str]:
    """The headers under *include* (LLVM's by default) the series changes
    (paths in llvm-project)."""
    return sorted(
        {
            f.path
            for p in series.patches
            for f in p.files
            if not f.is_new and f.path.startswith(include)
        }
    )


def headers_for_main(series: Series, prefix: Path, where: Path) -> Path | None:
    """Main's headers as the series changes them, under *where*: the hunks of
    each patch applied, in order, to the header main's packages install
    (under *prefix*). None if the series changes none; an error naming the
    patch if a hunk does not apply to main's text."""
    names = changed_headers(series)
    if not names:
        return None
    seeds = {
        n: require(prefix / "include" / n[len(HEADERS) :], "main's header")
        for n in names
    }
    texts = series_texts(series, names, seeds)
    shutil.rmtree(where, ignore_errors=True)
    for name, text in texts.items():
        copy = where / name[len(HEADERS) :]
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text)
    return where


def sources_for_main(series: Series, where: Path) -> Path:
    """The plugins' utilities the series creates, as the whole series leaves
    them, in an llvm-project-shaped tree under *where*."""
    shutil.rmtree(where, ignore_errors=True)
    for name, text in series_texts(series, utility_files(series)).items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    return where


def run_series_unittests(
    main: Tree, tree22: Tree, main_series: Series, backport: Series
) -> dict[str, UnitRun]:
    """The series' unit tests against main (bug shown) and 22.1.8 (fixed)."""
    tests = series_tests(main_series, backport)
    support = require(tree22.path / TESTING_SUPPORT, "LLVM's TestingSupport source")
    toolchains = {
        "main": main_toolchain(main, "kdl-unittests"),
        "22.1.8": Toolchain(
            "22.1.8", Path("/usr/lib/llvm-22"), None, paths.BUILD / "unittests-22"
        ),
    }
    patched = {"main": [], "22.1.8": changed_units(backport, tree22.path)}
    main_tc, tc22 = toolchains["main"], toolchains["22.1.8"]
    headers = {
        "main": headers_for_main(
            main_series,
            main.path / main_tc.prefix.relative_to("/"),
            main_tc.work / "include",
        ),
        # The backport is applied (kdl apply) to the 22.1.8 tree.
        "22.1.8": series_headers(tree22.path, tc22.work / "include"),
    }
    # The plugins' utilities: main's offload sources are not packaged, so
    # the series' own texts; the 22.1.8 tree has them applied.
    sources = {
        "main": sources_for_main(main_series, main_tc.work / "src"),
        "22.1.8": tree22.path,
    }
    results: dict[str, UnitRun] = {}
    for key, tc in toolchains.items():
        total = UnitRun()
        for test in tests:
            runs = build_and_run(
                tc, test, support, patched[key], headers[key], sources=sources[key]
            )
            one = judge(test, runs, tc.name)
            total.passed += one.passed
            total.failed += one.failed
            total.problems += one.problems
            total.runs.update({f"{test.name} {k}": v for k, v in one.runs.items()})
        if not tests:
            total.problems.append("the series adds no unit test")
        results[key] = total
    not_built = [
        f.path
        for p in main_series.patches
        for f in p.files
        if not f.is_new and f.path.endswith(".cpp")
    ]
    write_results(
        "unittests.json",
        {
            "trees": {"main": main.record, "22": tree22.record},
            "testing_support": f"{TESTING_SUPPORT} of the 22.1.8 tree (stand-in: "
            "libLLVMTestingSupport is not packaged)",
            "headers_against_main": {
                h: "main's installed header with the series' hunks applied, "
                "ahead of main's headers"
                for h in changed_headers(main_series)
            },
            "sources_against_main": {
                f: "the series' text, compiled against main's headers and "
                "linked with its test against main's libraries"
                for f in utility_files(main_series)
                if f.endswith(".cpp")
            },
            "not_built_against_main": {
                p: "main's sources are not packaged; built in the 22.1.8 tree"
                for p in not_built
            },
            "fail_without": {t.name: list(t.fail_without) for t in tests},
            "results": {
                k: {
                    "passed": r.passed,
                    "failed": r.failed,
                    "problems": r.problems,
                    "runs": r.runs,
                }
                for k, r in results.items()
            },
        },
    )
    return results
