"""The llvm-tests lit suite with LLVM main's tools, from the main tree.

Main's binaries (Debian's snapshot of main, in the sid root of ``kdl tree
main``) need the root's glibc, so each LLVM tool the suite uses is a small
script in ``build/main-tools/bin`` that runs it inside the root (chroot).
lit itself, the workspace's Python and its kdl-select stay on this machine:
the workspace is bind-mounted into the root at its own path, so every path
a RUN line names is the same file on both sides. The bind mount lives in a
mount namespace of the lit run (``unshare --mount``): it ends with the run,
killed or not, and the machine never sees it.

It runs the whole suite, ``mlir/`` included (which LLVM 22's run leaves
out); the summary goes to ``results/lit/main/summary.json``.
"""

from __future__ import annotations

import logging
import shlex
from pathlib import Path

from kdl import paths
from kdl.build import mlirmain
from kdl.build.lit import LitResult, ToolDirs, run_lit
from kdl.errors import WorkspaceError
from kdl.series.model import load
from kdl.trees.common import Tree

log = logging.getLogger("kdl")

#: The LLVM tools the suite runs (lit.cfg.py's substitutions). ``not`` is
#: left to lit's builtin: main's would run the next command in the root too,
#: and the workspace's kdl-select does not run there.
TOOLS = (
    "FileCheck",
    "count",
    "llvm-offload-binary",
    "llvm-offload-wrapper",
    "llvm-mc",
    "ld.lld",
    "llc",
    "llvm-as",
    "llvm-objdump",
    "llvm-readelf",
    "llvm-objcopy",
    "clang",
)

#: Where the wrappers, lit's %t files and the results of this run go.
TOOLS_DIR = paths.BUILD / "main-tools" / "bin"
EXEC_ROOT = paths.BUILD / "llvm-tests-main"
RESULTS = paths.RESULTS / "lit" / "main"

#: Inside the root: the tool's own PATH, and temporary files in the root's
#: /tmp (lit points TMPDIR at a directory the root does not have).
_SCRIPT = """\
#!/bin/sh
# {what}, run in the sid root {root} ({version}).
# Written by kdl (kdl/build/litmain.py); the workspace must be bind-mounted
# there at its own path, as `kdl test --main` does.
exec chroot {root} /usr/bin/env PATH={prefix}/bin:/usr/bin:/bin \\
  TMPDIR=/tmp TMP=/tmp TEMP=/tmp \\
  /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec "$@"' "$PWD" \\
  {path} "$@"
"""


def write_wrappers(
    tree: Tree, bin_dir: Path = TOOLS_DIR, *, mlir: bool = False
) -> Path:
    """One script per tool in *bin_dir*: main's LLVM tools, or with *mlir*
    the MLIR tools kdl.build.mlirmain builds in the root; rewritten only
    where it changed."""
    prefix = str(tree.record.get("prefix") or f"/usr/lib/llvm-{tree.record['major']}")
    bin_dir.mkdir(parents=True, exist_ok=True)
    tools = {tool: (f"{prefix}/bin/{tool}", f"LLVM main's {tool}") for tool in TOOLS}
    if mlir:
        tools = {
            tool: (
                f"{mlirmain.INSIDE}/bin/{tool}",
                f"{tool}: the main series' #gpu.runtime_select on main's MLIR",
            )
            for tool in mlirmain.TOOLS
        }
    for tool, (path, what) in tools.items():
        if not (tree.path / path.lstrip("/")).exists():
            raise WorkspaceError(f"{tree.path}: {path} is missing")
        text = _SCRIPT.format(
            what=what,
            root=shlex.quote(str(tree.path)),
            prefix=prefix,
            path=path,
            version=tree.record.get("version"),
        )
        script = bin_dir / tool
        if not script.is_file() or script.read_text() != text:
            script.write_text(text)
            script.chmod(0o755)
    return bin_dir


def namespace_prefix(root: Path, workspace: Path = paths.ROOT) -> list[str]:
    """The command lit runs under: the workspace bind-mounted into *root* at
    its own path, in a mount namespace of its own."""
    inside = root / str(workspace).lstrip("/")
    inside.mkdir(parents=True, exist_ok=True)
    mount = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        mount,
        "sh",
        str(workspace),
        str(inside),
    ]


def run_lit_main(kdl_tools_dir: Path, tree: Tree | None = None) -> LitResult:
    """The suite with main's LLVM tools and the workspace's *kdl_tools_dir*
    (the main tree is made first if it is not there)."""
    if tree is None:
        from kdl import trees

        tree = trees.ensure("main")
    series_src = mlirmain.build(tree, load(paths.PROPOSALS_SERIES))
    write_wrappers(tree, mlir=True)
    dirs = ToolDirs(write_wrappers(tree), kdl_tools_dir)
    return run_lit(
        dirs=dirs,
        results_dir=RESULTS,
        exec_root=EXEC_ROOT,
        extra_params={
            "mlir_tools_dir": str(dirs.llvm_tools_dir),
            "mlir_series_src": str(series_src),
        },
        # The whole suite: mlir/, which LLVM 22's run leaves out, too.
        not_run={},
        prefix=namespace_prefix(tree.path),
    )
