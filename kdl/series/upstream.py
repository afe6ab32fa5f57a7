"""``kdl upstream-check``: compile the series' C++ against upstream main's headers.

No llvm-project checkout can be had where this runs, so the series is checked
against the upstream files it was made against, read one at a time at the
commits ``patches/series`` records and kept in a cache outside the
repository (``.work/upstream`` by default; ``--cache``):

* ``files/PATH``: the text of each upstream file at its recorded commit;
* ``manifest*.tsv``: one line per cached file, ``PATH REPO COMMIT EVIDENCE``.

The check copies the cached files into a scratch tree, applies the series
to it with ``git apply`` (so the patches must apply to exactly those
texts), and compiles every C++ source file the series adds or changes with
``clang++ -fsyntax-only``. Include directories are those upstream's CMake
gives the file's target, in the scratch tree, searched before Debian's LLVM
22 headers: an upstream header that is not in the cache falls back to LLVM
22's, and the result file says which headers came from where.

What it proves: the changed code parses and type-checks against those
upstream texts. What it does not: that the file links, that the generated
headers (tablegen output) match main, or that headers not in the cache are
main's (they are LLVM 22's). ``results/upstream-check.json`` records, per
file, pass or fail, the diagnostics, and the upstream headers it was checked
against with their commits.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdl import paths, proc
from kdl.errors import UsageError, WorkspaceError
from kdl.series.model import Series, load

log = logging.getLogger("kdl")


#: Include directories of the upstream targets that build each part of the
#: tree, relative to llvm-project's root (from their CMakeLists.txt).
INCLUDE_DIRS: dict[str, list[str]] = {
    "llvm/": ["llvm/include"],
    "offload/plugins-nextgen/": [
        "offload/plugins-nextgen/common/include",
        "offload/plugins-nextgen/common/src",
        "offload/include",
        "offload/liboffload/include",
        "offload/liboffload/include/generated",
        "llvm/include",
    ],
    "offload/libompaccsupport/": [
        "offload/include",
        "offload/libompaccsupport/include",
        "offload/plugins-nextgen/common/include",
        "offload/liboffload/include",
        "offload/liboffload/include/generated",
        "llvm/include",
    ],
    "offload/liboffload/": [
        "offload/liboffload/include",
        "offload/liboffload/include/generated",
        "offload/include",
        "offload/plugins-nextgen/common/include",
        "llvm/include",
    ],
    "mlir/": ["mlir/include", "llvm/include"],
}

#: TableGen outputs a checked file includes, generated in the tree from the
#: patched or cached upstream .td files over MLIR 22's installed ones, as
#: mlir's CMakeLists.txt generates them: (the .td file a patch changes or the
#: cache holds, the top-level .td, the mlir-tblgen options, the output).
TABLEGEN: list[tuple[str, str, list[str], str]] = [
    (
        "mlir/include/mlir/Dialect/GPU/IR/CompilationAttrs.td",
        "mlir/include/mlir/Dialect/GPU/IR/GPUOps.td",
        ["-gen-attrdef-decls", "-attrdefs-dialect=gpu"],
        "mlir/include/mlir/Dialect/GPU/IR/GPUOpsAttributes.h.inc",
    ),
    (
        "mlir/include/mlir/Dialect/GPU/IR/GPUOps.td",
        "mlir/include/mlir/Dialect/GPU/IR/GPUOps.td",
        ["-gen-op-decls"],
        "mlir/include/mlir/Dialect/GPU/IR/GPUOps.h.inc",
    ),
]

#: liboffload's generated headers: (the offload-tblgen action, the cached .td
#: files its root includes, the output in the tree). The roots hold only the
#: files the backend reads (ol_errc_t is in Common.td, ol_device_info_t in
#: Device.td), so no other .td file of main is needed.
OFFLOAD_TABLEGEN: list[tuple[str, list[str], str]] = [
    (
        "-gen-errcodes",
        ["APIDefs.td", "Common.td"],
        "offload/liboffload/include/generated/OffloadErrcodes.inc",
    ),
    (
        "-gen-info",
        ["APIDefs.td", "Common.td", "Device.td"],
        "offload/liboffload/include/generated/OffloadInfo.inc",
    ),
]
OFFLOAD_TD = "offload/liboffload/API"
OFFLOAD_TBLGEN_SOURCES = "offload/tools/offload-tblgen"

#: System include directories a file needs besides LLVM's (gtest and gmock for
#: unit tests, as Debian installs them).
SYSTEM_DIRS: dict[str, list[str]] = {
    "llvm/unittests/": ["/usr/src/googletest/googlemock/include"],
}

_INCLUDED = re.compile(r"^\. (\S+)$", re.MULTILINE)
_MISSING = re.compile(r"fatal error: '([^']+)' file not found")
_SOURCE = re.compile(r"\.(cpp|cc|cxx)$")


@dataclass
class CachedFile:
    path: str
    repo: str
    commit: str
    evidence: str


@dataclass
class FileResult:
    path: str
    base: str
    passed: bool
    diagnostics: list[str] = field(default_factory=list)
    upstream_headers: list[dict[str, str]] = field(default_factory=list)
    llvm22_headers: int = 0
    #: The header that stopped the check when neither the cache nor LLVM 22
    #: has it (for the offload runtime: headers a build generates).
    blocked_by: str | None = None


def read_manifest(cache: Path) -> dict[str, CachedFile]:
    """The cached files, from every ``manifest*.tsv`` in *cache*."""
    files: dict[str, CachedFile] = {}
    for manifest in sorted(cache.glob("manifest*.tsv")):
        with manifest.open(newline="") as f:
            for lineno, row in enumerate(csv.reader(f, delimiter="\t"), 1):
                if not row or row[0].startswith("#"):
                    continue
                if len(row) < 3:
                    raise WorkspaceError(
                        f"{manifest}:{lineno}: expected PATH REPO COMMIT EVIDENCE"
                    )
                evidence = row[3] if len(row) > 3 else ""
                files[row[0]] = CachedFile(row[0], row[1], row[2], evidence)
    return files


def include_dirs(path: str, tree: Path) -> list[Path]:
    for prefix, dirs in INCLUDE_DIRS.items():
        if path.startswith(prefix):
            return [tree / d for d in dirs]
    return [tree / "llvm" / "include"]


def _run(argv: list[str], what: str, **kwargs: Any) -> None:
    """Run *argv*; a failure is one line, ``WHAT: <stderr's last line>``."""
    result = proc.run(argv, check=False, **kwargs)
    if result.returncode != 0:
        tail = result.stderr.decode(errors="replace").strip().splitlines()
        raise WorkspaceError(f"{what}: {tail[-1] if tail else 'no output'}")


def build_tree(cache: Path, the_series: Series, tree: Path) -> None:
    """Cached upstream files in *tree*, with the series applied."""
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(cache / "files", tree)
    for patch in the_series.patches:
        missing = [
            f.path
            for f in patch.files
            if not f.is_new and not (tree / f.path).is_file()
        ]
        if missing:
            raise WorkspaceError(
                f"{patch.name}: no cached upstream text of {', '.join(missing)} "
                f"in {cache / 'files'}"
            )
        _run(
            ["git", "apply", "--whitespace=nowarn", str(patch.path)],
            f"{patch.name} does not apply to the cached upstream files",
            cwd=tree,
            env={"GIT_CEILING_DIRECTORIES": str(tree.parent)},
        )


def generate_tablegen(the_series: Series, tree: Path, llvm_prefix: Path) -> list[str]:
    """Run mlir-tblgen for each patched .td file in TABLEGEN; the outputs."""
    changed = {f.path for p in the_series.patches for f in p.files}
    tblgen = llvm_prefix / "bin" / "mlir-tblgen"
    outputs: list[str] = []
    for td, top, options, output in TABLEGEN:
        if td not in changed and not (tree / td).is_file():
            continue
        if not tblgen.is_file():
            raise WorkspaceError(f"{tblgen}: not found (apt-get install mlir-22-tools)")
        top_td = (
            tree / top
            if (tree / top).is_file()
            else llvm_prefix / "include" / top.removeprefix("mlir/include/")
        )
        _run(
            [
                str(tblgen),
                *options,
                f"-I{tree / 'mlir' / 'include'}",
                f"-I{llvm_prefix / 'include'}",
                str(top_td),
                "-o",
                str(tree / output),
            ],
            f"{td}: mlir-tblgen failed",
        )
        outputs.append(output)
    return outputs


def build_offload_tblgen(
    tree: Path, llvm_prefix: Path, compiler: str, out: Path
) -> Path | None:
    """offload-tblgen from the cached backends (MiscGen.cpp) and the
    workspace's driver, linked against LLVM 22 (its static TableGen library
    and libLLVM); None when the cache lacks the backends."""
    backends = tree / OFFLOAD_TBLGEN_SOURCES / "MiscGen.cpp"
    if not backends.is_file():
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(
        [
            compiler,
            "-std=c++17",
            "-O0",
            "-fno-rtti",
            f"-I{backends.parent}",
            f"-isystem{llvm_prefix / 'include'}",
            str(paths.OVERLAY_SRC / "offload-tblgen" / "OffloadTblgenDriver.cpp"),
            str(backends),
            # TableGen is not part of libLLVM.so: Debian installs it static.
            str(llvm_prefix / "lib" / "libLLVMTableGen.a"),
            f"-L{llvm_prefix / 'lib'}",
            "-lLLVM",
            f"-Wl,-rpath,{llvm_prefix / 'lib'}",
            "-o",
            str(out),
        ],
        f"{backends}: offload-tblgen does not build",
    )
    return out


def generate_offload_tablegen(tree: Path, tblgen: Path) -> list[str]:
    """liboffload's generated headers whose .td inputs are all cached."""
    td_dir = tree / OFFLOAD_TD
    outputs: list[str] = []
    for action, tds, output in OFFLOAD_TABLEGEN:
        if not all((td_dir / td).is_file() for td in tds):
            continue
        root = tree.parent / f"offload-root{action}.td"
        root.write_text("".join(f'include "{td}"\n' for td in tds))
        (tree / output).parent.mkdir(parents=True, exist_ok=True)
        _run(
            [str(tblgen), action, f"-I{td_dir}", str(root), "-o", str(tree / output)],
            f"{root}: offload-tblgen {action} failed",
        )
        outputs.append(output)
    return outputs


def check_file(
    path: str,
    base: str,
    *,
    tree: Path,
    cached: dict[str, CachedFile],
    compiler: str,
    llvm_include: Path,
) -> FileResult:
    argv = [compiler, "-fsyntax-only", "-std=c++17", "-H", "-w"]
    argv += [f"-I{d}" for d in include_dirs(path, tree)]
    for prefix, dirs in SYSTEM_DIRS.items():
        if path.startswith(prefix):
            argv += [f"-isystem{d}" for d in dirs]
    argv += [f"-isystem{llvm_include}", str(tree / path)]
    result = proc.run(argv, check=False)
    stderr = result.stderr.decode(errors="replace")
    included = [Path(m) for m in _INCLUDED.findall(stderr)]
    diagnostics = [
        line.replace(f"{tree}/", "")
        for line in stderr.splitlines()
        if not line.startswith(".") and "error" in line
    ]
    upstream: list[dict[str, str]] = []
    llvm22 = 0
    for header in dict.fromkeys(included):
        try:
            rel = str(header.resolve().relative_to(tree.resolve()))
        except ValueError:
            llvm22 += str(header).startswith(str(llvm_include))
            continue
        entry = cached.get(rel)
        upstream.append(
            {
                "path": rel,
                "commit": entry.commit if entry else "new (the series)",
                "repo": entry.repo if entry else "",
            }
        )
    missing = _MISSING.search(stderr)
    return FileResult(
        path=path,
        base=base,
        passed=result.returncode == 0,
        blocked_by=missing.group(1) if missing and result.returncode else None,
        diagnostics=diagnostics[:20],
        upstream_headers=upstream,
        llvm22_headers=llvm22,
    )


def run_check(cache: Path, out: Path, llvm_prefix: Path) -> list[FileResult]:
    files = cache / "files"
    if not files.is_dir():
        raise UsageError(
            f"{cache}: no upstream cache (files/ and manifest*.tsv, read at the "
            "commits in patches/series); --cache names another"
        )
    compiler = str(proc.clang_cxx(llvm_prefix))
    the_series = load()
    cached = read_manifest(cache)
    tree = paths.BUILD / "upstream-check" / "tree"
    build_tree(cache, the_series, tree)
    generated = generate_tablegen(the_series, tree, llvm_prefix)
    tblgen = build_offload_tblgen(
        tree, llvm_prefix, compiler, paths.BUILD / "upstream-check" / "offload-tblgen"
    )
    offload_generated = generate_offload_tablegen(tree, tblgen) if tblgen else []
    results: list[FileResult] = []
    seen: set[str] = set()
    for patch in the_series.patches:
        for f in patch.files:
            # A file two patches change is checked once, as the series leaves it.
            if not _SOURCE.search(f.path) or f.path in seen:
                continue
            seen.add(f.path)
            base = f.commit or "new"
            results.append(
                check_file(
                    f.path,
                    base,
                    tree=tree,
                    cached=cached,
                    compiler=compiler,
                    llvm_include=llvm_prefix / "include",
                )
            )
    doc = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "compiler": proc.output([compiler, "--version"]).splitlines()[0],
        "llvm_headers": str(llvm_prefix / "include"),
        "what_it_proves": "each file parses and type-checks against the cached "
        "upstream texts, layered over LLVM 22's headers; nothing is linked",
        "generated": [
            {
                "path": g,
                "by": "mlir-tblgen 22 from the cached (and patched) upstream .td "
                "files over MLIR 22's",
            }
            for g in generated
        ]
        + [
            {
                "path": g,
                "by": "offload-tblgen: the cached MiscGen.cpp backends "
                f"({cached[OFFLOAD_TBLGEN_SOURCES + '/MiscGen.cpp'].commit}) "
                "behind overlay/offload-tblgen's driver, linked against LLVM 22, "
                "over the cached "
                + ", ".join(
                    f"{td} ({cached[OFFLOAD_TD + '/' + td].commit[:8]})"
                    for action, tds, out in OFFLOAD_TABLEGEN
                    if out == g
                    for td in tds
                ),
            }
            for g in offload_generated
        ],
        "cache": [
            {"path": c.path, "repo": c.repo, "commit": c.commit}
            for c in sorted(cached.values(), key=lambda c: c.path)
        ],
        "files": [r.__dict__ for r in results],
    }
    if not proc.DRY_RUN:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2) + "\n")
    return results


def cmd_upstream_check(args: argparse.Namespace) -> int:
    results = run_check(args.cache, args.out, paths.default_llvm_prefix())
    for r in results:
        if r.blocked_by:
            print(f"BLOCKED  {r.path} ({r.base}): no {r.blocked_by} to compile against")
            continue
        print(f"{'PASS' if r.passed else 'FAIL'}  {r.path} ({r.base})")
        for line in r.diagnostics[:5]:
            print(f"        {line}")
    print(
        f"upstream-check: {sum(r.passed for r in results)} passed, "
        f"{sum(not r.passed for r in results)} failed ({args.out})"
    )
    return 0 if all(r.passed for r in results) else 1
