# -*- Python -*-

# Configuration file for the 'lit' test runner: the kdl selection tests.
#
# An out-of-tree suite, so there is no generated lit.site.cfg.py: every
# site-specific value is a --param with a default, read here before
# lit.llvm.initialize() (which is what a generated site config would do).
#
#   lit -sv llvm-tests \
#       --param llvm_tools_dir=/usr/lib/llvm-22/bin \
#       --param kdl_tools_dir=build/overlay/bin
#
# Params:
#   llvm_tools_dir   LLVM tools (llvm-offload-binary, FileCheck, not, clang)
#                    [/usr/lib/llvm-22/bin]
#   kdl_tools_dir    the series' tools (kdl-select) [<repo>/build/overlay/bin]
#   kdl_python       Python with the kdl package [<repo>/.venv/bin/python]
#   test_exec_root   where %t files go [<repo>/build/llvm-tests]
#
# Modelled on llvm/test/lit.cfg.py and llvm/utils/lit/lit/llvm/config.py
# (llvm-project 4f6c409c4d628e4d191578c9f1137526bb6121d9).

import os
import re
import shlex
import subprocess
import sys
import tempfile

import lit.formats
import lit.llvm
import lit.util
from lit.llvm.subst import FindTool, ToolSubst

repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def param(name, default):
    value = lit_config.params.get(name)
    return value if value else default


def default_python():
    venv = os.path.join(repo_root, ".venv", "bin", "python")
    return venv if os.path.exists(venv) else sys.executable


# --- Site configuration (what a lit.site.cfg.py would carry) ----------------
config.llvm_tools_dir = os.path.abspath(param("llvm_tools_dir", "/usr/lib/llvm-22/bin"))
config.kdl_tools_dir = os.path.abspath(
    param("kdl_tools_dir", os.path.join(repo_root, "build", "overlay", "bin"))
)
config.kdl_python = param("kdl_python", default_python())
config.kdl_root = repo_root
config.host_triple = "x86_64-unknown-linux-gnu"
config.target_triple = config.host_triple

if not os.path.isdir(config.llvm_tools_dir):
    lit_config.fatal(
        f"llvm_tools_dir {config.llvm_tools_dir} is not a directory "
        "(--param llvm_tools_dir=DIR)"
    )

lit.llvm.initialize(lit_config, config)
from lit.llvm import llvm_config  # noqa: E402  (set by initialize)

# name: The name of this test suite.
config.name = "kdl"

# testFormat: lit's internal shell (lit 23 deprecates the external one), so
# RUN lines are the portable subset: pipes, redirections, &&, python one-liners.
config.test_format = lit.formats.ShTest(execute_external=False)

# suffixes: A list of file extensions to treat as test files.
config.suffixes = [".test"]

# excludes: Inputs/ holds helper scripts and data of the tests beside it.
config.excludes = ["Inputs", "README.md"]

# test_source_root / test_exec_root: keep %t files out of the source tree.
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.abspath(
    param("test_exec_root", os.path.join(repo_root, "build", "llvm-tests"))
)

# Tools come first from the tool directories, never from a stray PATH entry.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.kdl_tools_dir, append_path=True)
llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
# `python -m kdl` must import this checkout's package, installed or not.
llvm_config.with_environment("PYTHONPATH", repo_root, append_path=True)

# --- FileCheck, not, count ---------------------------------------------------
# use_default_substitutions() takes them from llvm_tools_dir, where an LLVM
# build tree or Debian's llvm-22-tools has them. An install without the test
# utilities still works: FileCheck falls back to the `filecheck` package from
# PyPI (a Python port with the same directives) in the venv that runs lit;
# `not` to the builtin of lit's internal shell; `count` to a Python one-liner.
# FindTool reads these overrides from the params, like `lit -D FileCheck=...`.
if not lit.util.which("FileCheck", config.llvm_tools_dir):
    fallback = lit.util.which(
        "filecheck",
        os.pathsep.join([os.path.dirname(sys.executable), config.environment["PATH"]]),
    )
    if not fallback:
        lit_config.fatal(
            f"no FileCheck in {config.llvm_tools_dir} and no `filecheck` "
            "(pip install filecheck)"
        )
    lit_config.params.setdefault("FileCheck", fallback)
    lit_config.note(f"using filecheck (Python port): {fallback}")
    config.available_features.add("filecheck-python")
else:
    config.available_features.add("filecheck-llvm")
if not lit.util.which("not", config.llvm_tools_dir):
    lit_config.params.setdefault("not", "not")
if not lit.util.which("count", config.llvm_tools_dir):
    lit_config.params.setdefault(
        "count",
        f"{shlex.quote(sys.executable)} -c "
        "'import sys; sys.exit(len(sys.stdin.readlines()) != int(sys.argv[1]))'",
    )

llvm_config.use_default_substitutions()

# --- The tools under test ----------------------------------------------------
# Substitutions apply in order: the %kdl-* forms go in before the plain
# kdl-select tool, whose pattern would otherwise match inside "%kdl-select".
# `kdl select` runs the driver of an overlay build (building it if needed):
# the one kdl_tools_dir belongs to, if it is an overlay build, else the
# default one under <repo>/build/overlay.
python_cmd = shlex.quote(config.kdl_python)
kdl_cmd = f"{python_cmd} -m kdl"
kdl_select_cmd = f"{kdl_cmd} select"
kdl_build_dir = os.path.dirname(config.kdl_tools_dir)
try:
    with open(os.path.join(kdl_build_dir, "CMakeCache.txt")) as cache:
        if "CMAKE_PROJECT_NAME:STATIC=kdl-overlay\n" in cache.read():
            kdl_select_cmd += f" --build-dir {shlex.quote(kdl_build_dir)}"
except OSError:
    pass
config.substitutions.append(("%kdl-python", python_cmd))
# %cubin OUT sm_XY[a]: the ELF header of a cubin (Inputs/cubin.py says why).
config.substitutions.append(
    (
        "%cubin",
        f"{python_cmd} "
        + shlex.quote(os.path.join(config.test_source_root, "Inputs", "cubin.py")),
    )
)
config.substitutions.append(("%kdl-inspect", kdl_cmd + " inspect"))
# #gpu.runtime_select (patches/proposals): %mlir-translate and %mlir-opt are
# kdl's MLIR tools built against main's MLIR (kdl/build/mlirmain.py), run
# through Inputs/runtime-select.py (it says why); %series-src holds the
# proposals' files, whose mlir/test files run as they are. Only main's run
# (kdl test --main) names them, with the params mlir_tools_dir and
# mlir_series_src, and only then are the tests of mlir/ supported (mlir-main).
mlir_tools_dir = lit_config.params.get("mlir_tools_dir")
if mlir_tools_dir:
    runtime_select = f"{python_cmd} " + shlex.quote(
        os.path.join(config.test_source_root, "Inputs", "runtime-select.py")
    )
    for name in ("mlir-translate", "mlir-opt"):
        tool = lit.util.which("kdl-" + name, mlir_tools_dir)
        if not tool:
            lit_config.fatal(f"no kdl-{name} in {mlir_tools_dir} (mlir_tools_dir)")
        config.substitutions.append(
            ("%" + name, f"{runtime_select} {shlex.quote(tool)}")
        )
    series_src = lit_config.params.get("mlir_series_src")
    if not series_src:
        lit_config.fatal("mlir_tools_dir needs mlir_series_src")
    config.substitutions.append(("%series-src", shlex.quote(series_src)))
    config.available_features.add("mlir-main")
config.substitutions.append(("%kdl-select", kdl_select_cmd))

required = [
    ToolSubst("llvm-offload-binary", unresolved="fatal"),
    # AMDGPU code objects: llvm-mc assembles, ld.lld links (the plugins load
    # only linked objects); llc and llvm-as write real PTX and bitcode.
    ToolSubst("llvm-mc", unresolved="fatal"),
    ToolSubst("ld.lld", unresolved="fatal"),
    ToolSubst("llc", unresolved="fatal"),
    ToolSubst("llvm-as", unresolved="fatal"),
]
kdl_tools = [
    ToolSubst("kdl-select", unresolved="fatal"),
]
optional = [
    ToolSubst("%clang", FindTool("clang"), unresolved="ignore"),
    ToolSubst("llvm-objdump", unresolved="ignore"),
    ToolSubst("llvm-readelf", unresolved="ignore"),
    ToolSubst("llvm-objcopy", unresolved="ignore"),
    ToolSubst("llvm-offload-wrapper", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(required, [config.llvm_tools_dir])
llvm_config.add_tool_substitutions(kdl_tools, [config.kdl_tools_dir])
llvm_config.add_tool_substitutions(optional, [config.llvm_tools_dir])

# --- Features ----------------------------------------------------------------
features = config.available_features
clang = lit.util.which("clang", config.llvm_tools_dir)
if clang:
    features.add("clang")
# Device code objects need the target compiled into this LLVM; the tools'
# --version lists the registered targets.
llvm_mc = lit.util.which("llvm-mc", config.llvm_tools_dir)
if llvm_mc:
    targets = subprocess.run(
        [llvm_mc, "--version"], capture_output=True, text=True, check=False
    ).stdout
    for target, feature in (
        ("amdgcn", "amdgpu"),
        ("nvptx64", "nvptx"),
        ("x86-64", "x86"),
    ):
        if re.search(rf"^\s+{re.escape(target)}\s", targets, re.MULTILINE):
            features.add(feature + "-registered-target")


def probe_offload_binary_version():
    """The OffloadBinary format version llvm-offload-binary writes.

    LLVM 22 writes version 1 (one image per binary, and its readers take
    nothing newer); main writes version 3 (several entries per binary,
    optionally compressed), and its readers take 1 to 3. The tests that
    depend on it say so with the feature offload-binary-v<N>. The probe
    writes under test_exec_root, which the tools see wherever they run.
    """
    tool = lit.util.which("llvm-offload-binary", config.llvm_tools_dir)
    if not tool:
        return None
    os.makedirs(config.test_exec_root, exist_ok=True)
    with tempfile.TemporaryDirectory(
        prefix="kdl-lit-", dir=config.test_exec_root
    ) as tmp:
        image = os.path.join(tmp, "image")
        out = os.path.join(tmp, "probe.bin")
        with open(image, "w") as f:
            f.write("probe\n")
        run = subprocess.run(
            [tool, "-o", out, f"--image=file={image},triple=x86_64,arch=generic"],
            capture_output=True,
            check=False,
        )
        try:
            with open(out, "rb") as f:
                header = f.read(8)
        except OSError:
            header = b""
        if run.returncode != 0 or header[:4] != b"\x10\xff\x10\xad":
            lit_config.fatal(
                f"{tool} did not write an OffloadBinary: "
                f"{run.stderr.decode(errors='replace').strip()}"
            )
        return int.from_bytes(header[4:8], "little")


offload_binary_version = probe_offload_binary_version()
if offload_binary_version is not None:
    features.add(f"offload-binary-v{offload_binary_version}")


lit_config.note(f"llvm_tools_dir: {config.llvm_tools_dir}")
lit_config.note(f"kdl_tools_dir: {config.kdl_tools_dir}")
lit_config.note(f"features: {' '.join(sorted(features))}")
