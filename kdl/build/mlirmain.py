"""``#gpu.runtime_select`` (patches/proposals), built against LLVM main's MLIR.

Main's MLIR is Debian's snapshot (``libmlir-24-dev``, ``mlir-24-tools``) in
the sid root of the main tree. Its sources are not packaged, so its GPU
dialect cannot gain an attribute; the attribute belongs to a stand-in
dialect, ``kdl_gpu`` (``overlay/mlir/RuntimeSelectCompat.h``, which only this
build compiles), and the lit suite respells it
(``llvm-tests/Inputs/runtime-select.py``). What is built from the patch:

1. its hunks on main's packaged headers, applied to them (a hunk that does
   not apply is a one-line error); main's ``mlir-tblgen`` must generate the
   attribute's class from the patched ``CompilationAttrs.td``;
2. ``RuntimeSelectAttr.cpp`` as the patch has it, compiled against main's
   headers with the patched ones ahead, and linked with main's libMLIR and
   libLLVM into ``kdl-mlir-translate`` and ``kdl-mlir-opt``
   (``overlay/mlir/tools``), which live in the root (``/opt/kdl-mlir``);
3. the patch's MLIR tests, extracted into ``build/mlir-main/src``, which the
   suite runs with main's tools (``kdl test --main``).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kdl import paths
from kdl.build.toolchain import Toolchain
from kdl.build.unittests import changed_headers, new_files, series_texts
from kdl.errors import CommandError, WorkspaceError
from kdl.series.model import Series
from kdl.trees.common import Tree

log = logging.getLogger("kdl")

SOURCE = "mlir/lib/Target/LLVMIR/Dialect/GPU/RuntimeSelectAttr.cpp"
ATTRS_TD = "mlir/include/mlir/Dialect/GPU/IR/CompilationAttrs.td"
MLIR_INCLUDE = "mlir/include/"
#: Inside the root: the build and the tools.
INSIDE = Path("/opt/kdl-mlir")
#: In the workspace: the patch's files, for the lit suite.
SRC = paths.BUILD / "mlir-main" / "src"
OVERLAY_MLIR = paths.ROOT / "overlay" / "mlir"
TOOLS = ("kdl-mlir-translate", "kdl-mlir-opt")


def _patch_files(series: Series) -> tuple[list[str], list[str]]:
    """The MLIR headers the series changes, and the MLIR files it creates."""
    return changed_headers(series, MLIR_INCLUDE), new_files(series, "mlir/", "")


@contextmanager
def _failing(what: str) -> Iterator[None]:
    """A command of *what* that fails is a one-line error."""
    try:
        yield
    except CommandError as exc:
        last = (exc.stderr.strip().splitlines() or [str(exc)])[-1]
        raise WorkspaceError(f"{what} against main's MLIR failed: {last}") from exc


def build(tree: Tree, series: Series) -> Path:
    """Build the tools in the root; return the workspace copy of the
    patch's files (``%series-src`` of the lit suite)."""
    prefix = str(tree.record.get("prefix") or f"/usr/lib/llvm-{tree.record['major']}")
    root_prefix = tree.path / prefix.lstrip("/")
    changed, new = _patch_files(series)
    if SOURCE not in new:
        raise WorkspaceError(f"{series.path}: no patch creates {SOURCE}")
    seeds = {
        h: root_prefix / "include" / h[len(MLIR_INCLUDE) :]
        for h in changed
        if (root_prefix / "include" / h[len(MLIR_INCLUDE) :]).is_file()
    }
    if missing := sorted(set(changed) - set(seeds)):
        raise WorkspaceError(
            f"{tree.path}: main's {', '.join(missing)} is not installed"
        )
    texts = series_texts(series, changed + new, seeds)

    shutil.rmtree(SRC, ignore_errors=True)
    for name in new:
        (SRC / name).parent.mkdir(parents=True, exist_ok=True)
        (SRC / name).write_text(texts[name])

    inside = tree.path / str(INSIDE).lstrip("/")
    stamp = hashlib.sha256()
    for name in sorted(texts):
        stamp.update(name.encode() + b"\0" + texts[name].encode() + b"\0")
    for local in sorted(OVERLAY_MLIR.rglob("*")):
        if local.is_file():
            stamp.update(local.read_bytes())
    stamp.update(prefix.encode())
    # The recipe itself: a changed build rebuilds.
    stamp.update(Path(__file__).read_bytes())
    done = inside / "stamp"
    if done.is_file() and done.read_text() == stamp.hexdigest():
        log.debug("mlir main: %s is up to date", inside)
        return SRC
    shutil.rmtree(inside, ignore_errors=True)
    (inside / "bin").mkdir(parents=True)
    for name in changed:
        (inside / "include" / name[len(MLIR_INCLUDE) :]).parent.mkdir(
            parents=True, exist_ok=True
        )
        (inside / "include" / name[len(MLIR_INCLUDE) :]).write_text(texts[name])
    (inside / "RuntimeSelectAttr.cpp").write_text(texts[SOURCE])
    shutil.copytree(OVERLAY_MLIR, inside / "overlay")

    tc = Toolchain("main", Path(prefix), tree.path, inside)
    if ATTRS_TD in changed:
        with _failing("mlir-tblgen"):
            generated = tc.run(
                [
                    f"{prefix}/bin/mlir-tblgen",
                    "-gen-attrdef-decls",
                    "-attrdefs-dialect=gpu",
                    f"-I{INSIDE}/include",
                    f"-I{prefix}/include",
                    f"{INSIDE}/include/{ATTRS_TD[len(MLIR_INCLUDE) :]}",
                ]
            ).stdout.decode()
        if "class RuntimeSelectAttr " not in generated:
            raise WorkspaceError(
                f"{ATTRS_TD}: main's mlir-tblgen generates no RuntimeSelectAttr"
            )
    compat = inside / "overlay" / "RuntimeSelectCompat"
    units = {
        "RuntimeSelectAttr": inside / "RuntimeSelectAttr.cpp",
        "RuntimeSelectCompat": compat.with_suffix(".cpp"),
        **{t: inside / "overlay" / "tools" / f"{t}.cpp" for t in TOOLS},
    }
    for unit, source in units.items():
        # The attribute's source as the patch has it, with the stand-in
        # dialect force-included.
        extra = ["-include", tc.path(compat.with_suffix(".h"))]
        with _failing(f"compiling {unit}"):
            tc.compile(
                source,
                inside / f"{unit}.o",
                [inside / "include"],
                extra if unit == "RuntimeSelectAttr" else (),
            )
    for tool in TOOLS:
        with _failing(f"linking {tool}"):
            tc.run(
                [
                    f"{prefix}/bin/clang++",
                    "-fuse-ld=lld",
                    f"{INSIDE}/{tool}.o",
                    f"{INSIDE}/RuntimeSelectAttr.o",
                    f"{INSIDE}/RuntimeSelectCompat.o",
                    f"-L{prefix}/lib",
                    f"-Wl,-rpath,{prefix}/lib",
                    "-lMLIR",
                    "-lLLVM",
                    "-o",
                    f"{INSIDE}/bin/{tool}",
                ]
            )
    done.write_text(stamp.hexdigest())
    log.info("mlir main: built %s in the main tree", ", ".join(TOOLS))
    return SRC
