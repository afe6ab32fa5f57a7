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

The toolchains are :mod:`kdl.build.toolchain`'s, with LLVM's googletest
from the 22.1.8 tree (the tests print LLVM types, which the system's
libgtest-dev cannot). ``libLLVMTestingSupport``
(``ASSERT_THAT_EXPECTED``) is not packaged: its one source,
``llvm/lib/Testing/Support/Error.cpp``, is compiled from the 22.1.8 tree,
for both LLVMs (a stand-in named as such in the results).
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kdl import paths, proc, record
from kdl.build.standalone import series_headers
from kdl.build.toolchain import GOOGLETEST, Toolchain, link_components, main_toolchain
from kdl.errors import WorkspaceError
from kdl.series.model import Series
from kdl.trees.common import Tree

log = logging.getLogger("kdl")

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
    #: Tests of an API the series adds (:data:`NEW_API`): built and run only
    #: with the series.
    new_api: tuple[str, ...] = ()


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
) -> dict[str, dict[str, str]]:
    """The test against *tc*'s libraries as packaged (a test of a bug the
    series fixes), and with the series: its changed sources (*patched*)
    linked ahead of the libraries, its changed headers (*headers*) ahead of
    the installed ones. A test of a bug runs with the series only where the
    series' sources can be built (the 22.1.8 tree)."""
    where = tc.work / test.name
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    source = where / f"{test.name}.cpp"
    source.write_text(test.text)
    # Without the series, the cases of the API it adds cannot be built.
    without = where / f"{test.name}-without-series.cpp"
    without.write_text(series_cases(test.text, "", test.new_api))
    support_copy = Path(shutil.copy2(support, where / "TestingSupportError.cpp"))
    variants: dict[str, tuple[list[Path], list[Path]]] = {}
    if test.fail_without:
        variants[tc.name] = ([], [])
    if patched or (headers and not test.fail_without):
        includes = [headers] if headers else []
        extra = []
        for unit in patched:
            copy = where / f"patched-{unit.name}"
            shutil.copy2(unit, copy)
            tc.compile(copy, copy.with_suffix(".o"), includes)
            extra.append(copy.with_suffix(".o"))
        variants[f"{tc.name}+series"] = (extra, includes)
    runs = {}
    for variant, (extra, include_dirs) in variants.items():
        stem = variant.replace("+", "-")
        objects = []
        test_source = source if variant.endswith("+series") else without
        for src in (test_source, support_copy):
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


def require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise WorkspaceError(f"{path}: missing ({what})")
    return path


#: The tests that show a bug the series fixes: they fail on an LLVM without
#: the fix (main's libLLVMObject at 7e3c57157096; 22.1.8's), exactly these
#: cases and no other of the file.
FAIL_WITHOUT: dict[str, dict[str, tuple[str, ...]]] = {
    "main": {
        "ELFObjectFileTest": (
            "ELFObjectFileTest.CPUNameForAMDGPU",
            "ELFObjectFileTest.CPUNameForCUDA",
            "ELFObjectFileTest.CPUNameForCUDAFromNVCompat",
        ),
        "OffloadingTest": (
            "OffloadingTest.checkStringNotTerminated",
            "OffloadingTest.checkStringOffsetOutOfBounds",
        ),
    },
    "22.1.8": {
        "ELFObjectFileTest": (
            "ELFObjectFileTest.CPUNameForAMDGPU",
            "ELFObjectFileTest.CPUNameForCUDA",
            "ELFObjectFileTest.CPUNameForCUDAFromNVCompat",
        ),
        "OffloadingTest": (
            "OffloadingTest.checkImageOutOfBounds",
            "OffloadingTest.checkStringMapOutOfBounds",
            "OffloadingTest.checkStringNotTerminated",
            "OffloadingTest.checkStringOffsetOutOfBounds",
        ),
    },
}

#: The cases that test an API the series adds to a library whose source main
#: does not package (0005's readOffloadBinaries, in OffloadingTest): against
#: main only the unpatched library can be linked, which lacks it, so these
#: run on 22.1.8 alone (on main: results/main-texts/reader.md, by hand).
NEW_API: dict[str, tuple[str, ...]] = {
    "OffloadingTest": ("OffloadingTest.readOffloadBinariesInPlace",),
}

#: Test files whose text differs between main and the backport, and why:
#: the API they test differs.
OWN_TEXT: dict[str, str] = {
    "llvm/unittests/Object/OffloadingTest.cpp": "main's OffloadBinary reads "
    "every entry of a binary (format 2 and later); 22.1.8's reads one",
}

_CASE = re.compile(r"^TEST(?:_F|_P)?\((\w+), (\w+)\)", re.MULTILINE)


def _cases(text: str) -> dict[str, str]:
    """The test cases of *text* by their ``TEST(...)`` line: each runs from
    that line to the first line that is a lone ``}``."""
    cases: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines(keepends=True):
        if current is None and _CASE.match(line):
            current = cases.setdefault(line, [])
        if current is not None:
            current.append(line)
            if line.rstrip("\n") == "}":
                current = None
    return {k: "".join(v) for k, v in cases.items()}


def series_cases(text: str, base: str, leave_out: tuple[str, ...] = ()) -> str:
    """*text* without the test cases *base* has unchanged and without those
    *leave_out* names ("Suite.Case"). With 22.1.8's text of the file as
    *base*: only the cases the series adds or changes (main's text of a test
    file is not packaged and the series' patches are made on 22.1.8's, whose
    other cases test 22.1.8's library; some fail against main's for main's
    own reasons)."""
    theirs = _cases(base)
    out = text
    for head, case in _cases(text).items():
        m = _CASE.match(head)
        named = f"{m.group(1)}.{m.group(2)}" if m else ""
        if theirs.get(head) == case or named in leave_out:
            out = out.replace(case, "", 1)
    return out


#: Where the series' LLVM unit tests are.
UNITTESTS = "llvm/unittests/"


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


def base_texts(tree: Tree, names: list[str], where: Path) -> dict[str, Path]:
    """*names* as the 22.1.8 tree's base commit has them, under *where*
    (a file the series creates has none)."""
    seeds = {}
    for name in names:
        shown = proc.run(
            ["git", "show", f"{tree.record['commit']}:{name}"],
            cwd=tree.path,
            check=False,
        )
        if shown.returncode != 0:
            continue  # the series creates it
        seeds[name] = where / name
        seeds[name].parent.mkdir(parents=True, exist_ok=True)
        seeds[name].write_bytes(shown.stdout)
    return seeds


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


def changed_tests(series: Series) -> list[str]:
    """The LLVM unit-test files the series changes (not those it creates: a
    test of a new library is built with its source, :mod:`kdl.build.rank`)."""
    return sorted(
        {
            f.path
            for p in series.patches
            for f in p.files
            if not f.is_new and f.path.startswith(UNITTESTS) and f.path.endswith(".cpp")
        }
    )


def series_tests(
    main_series: Series, backport: Series, tree22: Tree
) -> dict[str, list[SeriesTest]]:
    """The unit-test files the series changes, as each series leaves them on
    22.1.8's text (the base their patches were made against), for main and
    for 22.1.8. The backport must leave the main series' bytes (a test fails
    if they drift) unless :data:`OWN_TEXT` says why not."""
    names = changed_tests(main_series)
    with tempfile.TemporaryDirectory(prefix="kdl-tests-") as tmp:
        seeds = base_texts(tree22, names, Path(tmp))
        base = {n: s.read_text() for n, s in seeds.items()}
        texts = {
            "main": series_texts(main_series, names, seeds),
            "22.1.8": series_texts(backport, names, seeds),
        }
    tests: dict[str, list[SeriesTest]] = {"main": [], "22.1.8": []}
    for path in names:
        ours, theirs = texts["main"].get(path), texts["22.1.8"].get(path)
        if ours is None or theirs is None or (ours != theirs and path not in OWN_TEXT):
            raise WorkspaceError(
                f"{path}: the release/22.x backport does not carry the "
                "main series' text of this test"
            )
        cmake_lists = tree22.path / Path(path).parent / "CMakeLists.txt"
        components = tuple(link_components(cmake_lists))
        name = Path(path).stem
        mains = series_cases(ours, base.get(path, ""))
        for key, text in (("main", mains), ("22.1.8", theirs)):
            fail_without = FAIL_WITHOUT[key].get(name, ())
            tests[key].append(
                SeriesTest(name, text, components, fail_without, NEW_API.get(name, ()))
            )
    return tests


def changed_units(series: Series, tree: Path) -> list[Path]:
    """The LLVM library sources the series changes or adds, in *tree*
    (applied), each once."""
    names = {
        f.path
        for p in series.patches
        for f in p.files
        if f.path.startswith("llvm/lib/") and f.path.endswith(".cpp")
    }
    return [
        require(tree / n, "the backport must be applied to the tree")
        for n in sorted(names)
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


def googletest_in(tc: Toolchain, tree22: Tree) -> Path:
    """LLVM's googletest for *tc*: the 22.1.8 tree's, copied into *tc*'s root
    where it runs in one (googletest does not change with LLVM's version;
    its LLVM printers build against main's headers)."""
    source = require(tree22.path / GOOGLETEST / "CMakeLists.txt", "LLVM's googletest")
    if tc.root is None:
        return source.parent
    copy = tc.work / "third-party-unittest"
    if not (copy / "CMakeLists.txt").is_file():
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source.parent, copy.with_suffix(".partial"), dirs_exist_ok=True)
        copy.with_suffix(".partial").rename(copy)
    return copy


def run_series_unittests(
    main: Tree, tree22: Tree, main_series: Series, backport: Series
) -> dict[str, UnitRun]:
    """The series' unit tests against main (bug shown) and 22.1.8 (fixed)."""
    tests = series_tests(main_series, backport, tree22)
    support = require(tree22.path / TESTING_SUPPORT, "LLVM's TestingSupport source")
    main_tc = main_toolchain(main, "kdl-unittests")
    main_tc.work.mkdir(parents=True, exist_ok=True)
    main_tc.googletest = googletest_in(main_tc, tree22)
    tc22 = Toolchain(
        "22.1.8",
        Path("/usr/lib/llvm-22"),
        None,
        paths.BUILD / "unittests-22",
        tree22.path / GOOGLETEST,
    )
    toolchains = {"main": main_tc, "22.1.8": tc22}
    patched = {"main": [], "22.1.8": changed_units(backport, tree22.path)}
    headers = {
        "main": headers_for_main(
            main_series,
            main.path / main_tc.prefix.relative_to("/"),
            main_tc.work / "include",
        ),
        # The backport is applied (kdl apply) to the 22.1.8 tree.
        "22.1.8": series_headers(tree22.path, tc22.work / "include"),
    }
    results: dict[str, UnitRun] = {}
    for key, tc in toolchains.items():
        total = UnitRun()
        for test in tests[key]:
            runs = build_and_run(tc, test, support, patched[key], headers[key])
            one = judge(test, runs, tc.name)
            total.passed += one.passed
            total.failed += one.failed
            total.problems += one.problems
            total.runs.update({f"{test.name} {k}": v for k, v in one.runs.items()})
        if not tests[key]:
            total.problems.append("the series changes no unit test")
        results[key] = total
    not_built = [
        f.path
        for p in main_series.patches
        for f in p.files
        if not f.is_new and f.path.startswith("llvm/lib/") and f.path.endswith(".cpp")
    ]
    record.write(
        "unittests.json",
        {
            "trees": {"main": main.record, "22": tree22.record},
            "testing_support": f"{TESTING_SUPPORT} of the 22.1.8 tree (stand-in: "
            "libLLVMTestingSupport is not packaged)",
            "googletest": f"{GOOGLETEST} of the 22.1.8 tree",
            "tests": {
                path: "each series' text on 22.1.8's file (the base its patch "
                "was made against); "
                + str(OWN_TEXT.get(path, "the backport leaves the main series' bytes"))
                for path in changed_tests(main_series)
            },
            "headers_against_main": {
                h: "main's installed header with the series' hunks applied, "
                "ahead of main's headers"
                for h in changed_headers(main_series)
            },
            "not_built_against_main": {
                p: "main's sources are not packaged: the test runs against "
                "main's library as packaged (the bug shown); the fix is built "
                "and tested in the 22.1.8 tree"
                for p in not_built
            },
            "fail_without": {
                k: {t.name: list(t.fail_without) for t in tests[k]} for k in tests
            },
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
