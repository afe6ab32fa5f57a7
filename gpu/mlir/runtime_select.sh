#!/usr/bin/env bash
# gpu/mlir/runtime_select.sh - #gpu.runtime_select end to end.
#
#   bash gpu/mlir/runtime_select.sh prepare [RUNTIMES]   # here
#   bash gpu/mlir/runtime_select.sh run [RUNTIMES]       # on the GPU machine
#
# RUNTIMES: a directory of LLVM 22.1.8 liboffload builds, one per
# subdirectory (base, loop, series: libLLVMOffload.so.22.1 each), as
# gpu/realrt/prepare.sh makes them [build/gpu-real/lib].
#
# prepare: gpu/mlir/vadd.mlir, through LLVM main's MLIR with the proposal's
# #gpu.runtime_select (kdl-mlir-opt and kdl-mlir-translate in the sid root,
# which kdl/build/mlirmain.py builds; there the attribute is spelled
# #kdl_gpu.runtime_select), into a host executable whose container holds an
# sm_80, an sm_90 and an sm_90a cubin and sm_80 PTX of one kernel:
#   1. kdl-mlir-opt lowers the program and runs gpu-module-to-binary once per
#      object (the kernel's marker set to that object's number). ptxas is
#      CUDA's (KDL_CUDA, /usr/local/cuda): the sid root has none, so each
#      command bind-mounts it read-only on the root's /mnt in a mount
#      namespace of its own and names it as the pass's toolkit; the work
#      directory is bind-mounted on /srv the same way.
#   2. One program with the four objects in one gpu.binary
#      <#gpu.runtime_select> (the host code of the four lowerings must be
#      identical); kdl-mlir-translate and main's clang make the host object.
#   3. The container, dumped from the object, listed by main's llvm-objdump.
#   4. gpu/mlir/OffloadRuntimeWrappers.cpp as a shared library over
#      liboffload 22.1.8, and the program (gpu/mlir/vadd_main.c) linked with
#      it.
# Output: build/gpu-mlir (carry it with RUNTIMES and .deb/22, which
# gpu/realrt/prepare.sh fetches).
#
# run: the program against each runtime (LD_LIBRARY_PATH), KDL_RS_PROCS
# processes each (default 3) of 2 checked calls, then once with
# LIBOMPTARGET_DEBUG=1 (its debug lines go to the log); each of the two
# programs: vadd (the proposal's container) and vadd-v1 (its entries and
# keys as format 1, see 3b). Writes $OUT/runtime-select.log and
# $OUT/runtime-select.json.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
# shellcheck source=gpu/common.sh
source gpu/common.sh
B=build/gpu-mlir
RUNTIMES=${2:-build/gpu-real/lib}

# inroot CMD...: CMD in the sid root, with CUDA on /mnt and $B/work on /srv.
inroot() {
  local main cuda
  main=$(readlink -f "${KDL_MAIN_ROOT:-.work/trees/main}")
  cuda=$(readlink -f "${KDL_CUDA:-/usr/local/cuda}")
  unshare -m sh -c 'mount --bind -o ro "$1" "$0/mnt" && mount --bind "$2" "$0/srv" &&
    shift 2 && exec chroot "$0" "$@"' "$main" "$cuda" "$ROOT/$B/work" "$@"
}

prepare() {
  local llvm=/usr/lib/llvm-24/bin tools=/opt/kdl-mlir/bin
  [ -x "${KDL_MAIN_ROOT:-.work/trees/main}$tools/kdl-mlir-opt" ] || {
    echo "error: ${KDL_MAIN_ROOT:-.work/trees/main}$tools/kdl-mlir-opt: not built (kdl build --main)" >&2
    exit 1
  }
  [ -f "$RUNTIMES/series/libLLVMOffload.so.22.1" ] || {
    echo "error: $RUNTIMES/series/libLLVMOffload.so.22.1: missing (gpu/realrt/prepare.sh)" >&2
    exit 1
  }
  rm -rf "$B"
  mkdir -p "$B/work" "$B/lib" "$B/include/offload"
  local i=0 pipeline
  for spec in "sm_80 80 bin" "sm_90 90 bin" "sm_90a 91 bin" "sm_80 8 isa"; do
    set -- $spec
    sed "s/KDL_MARKER/$2/" gpu/mlir/vadd.mlir >"$B/work/in-$i.mlir"
    pipeline="builtin.module(convert-scf-to-cf,nvvm-attach-target{chip=$1},"
    pipeline+="gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
    pipeline+="reconcile-unrealized-casts),gpu-to-llvm{use-bare-pointers-for-kernels=1},"
    pipeline+="convert-func-to-llvm,convert-arith-to-llvm,finalize-memref-to-llvm,"
    pipeline+="reconcile-unrealized-casts,gpu-module-to-binary{format=$3 toolkit=/mnt})"
    inroot $tools/kdl-mlir-opt "/srv/in-$i.mlir" --pass-pipeline="$pipeline" \
      -o "/srv/obj-$i.mlir"
    echo "object $i: $1 $3, marker $2"
    i=$((i + 1))
  done
  python3 - "$B/work" <<'PY'
import re, sys
from pathlib import Path
work = Path(sys.argv[1])
binary = re.compile(r"^  gpu\.binary @kernels  \[(#gpu\.object<.*>)\]$", re.M)
texts = [(work / f"obj-{i}.mlir").read_text() for i in range(4)]
found = [binary.search(t) for t in texts]
if not all(found):
    sys.exit("error: gpu-module-to-binary's output has no gpu.binary @kernels line")
hosts = {binary.sub("BINARY", t) for t in texts}
if len(hosts) != 1:
    sys.exit("error: the four lowerings' host code differs")
objects = ",\n    ".join(m.group(1) for m in found)
program = binary.sub(
    lambda _: f"  gpu.binary @kernels <#kdl_gpu.runtime_select> [\n    {objects}\n  ]",
    texts[0])
(work / "vadd.mlir").write_text(program)
PY
  inroot $tools/kdl-mlir-translate --mlir-to-llvmir /srv/vadd.mlir -o /srv/vadd.ll
  inroot $llvm/clang -c -O2 -fPIC -fdata-sections /srv/vadd.ll -o /srv/vadd.o
  inroot $llvm/llvm-objcopy --dump-section=.rodata.kernels_binary=/srv/container.bin \
    /srv/vadd.o /srv/vadd-copy.o
  inroot $llvm/llvm-objdump --offloading /srv/container.bin >"$B/container.offloading.txt"
  cp "$B/work/vadd.mlir" "$B/work/vadd.ll" "$B/work/container.bin" "$B/"
  # 3b. The same entries as a format-1 binary, which 22.1.8 reads (main's
  #     writer makes format 3): LLVM 22's llvm-offload-binary packs each
  #     entry's image with the keys the proposal wrote (each object's
  #     #nvvm.target triple and chip); #gpu.select_object embeds and loads
  #     the container as one object, as the proposal's translation does with
  #     its own.
  .venv/bin/python - "$B/work" <<'PY'
import sys
from pathlib import Path
from kdl.offload.binary import read_file
work = Path(sys.argv[1])
with open(work / "entries.txt", "w") as out:
    for im in read_file(work / "container.bin"):
        name = f"entry-{im.index}.{'s' if im.image_kind_id == 5 else 'cubin'}"
        (work / name).write_bytes(im.image)
        out.write(f"{name} {im.triple} {im.arch}\n")
PY
  local keys=v1
  local args=() file triple arch
  while read -r file triple arch; do
    args+=("--image=file=$B/work/$file,triple=$triple,arch=$arch")
  done <"$B/work/entries.txt"
  /usr/lib/llvm-22/bin/llvm-offload-binary -o "$B/container-$keys.bin" "${args[@]}"
  /usr/lib/llvm-22/bin/llvm-objdump --offloading "$B/container-$keys.bin" \
    >"$B/container-$keys.offloading.txt"
  python3 - "$B/container-$keys.bin" "$B/work/vadd.mlir" "$B/work/vadd-$keys.mlir" <<'PY'
import re, sys
from pathlib import Path
data = Path(sys.argv[1]).read_bytes()
text = Path(sys.argv[2]).read_text()
escaped = "".join(f"\\{b:02X}" for b in data)
one = f'  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, bin = "{escaped}">]'
new, n = re.subn(r"^  gpu\.binary @kernels <#kdl_gpu\.runtime_select> \[\n.*?\n  \]$",
                 lambda _: one, text, flags=re.M | re.S)
if n != 1:
    sys.exit("error: no runtime_select gpu.binary in " + sys.argv[2])
Path(sys.argv[3]).write_text(new)
PY
  inroot $tools/kdl-mlir-translate --mlir-to-llvmir "/srv/vadd-$keys.mlir" -o "/srv/vadd-$keys.ll"
  inroot $llvm/clang -c -O2 -fPIC "/srv/vadd-$keys.ll" -o "/srv/vadd-$keys.o"
  # The wrapper over liboffload 22.1.8 (the series' header: the API is the
  # release's), and the program.
  local header=${KDL_OFFLOAD_API_H:-build/real-22/series/offload/liboffload/API/OffloadAPI.h}
  cp "$header" "$B/include/offload/OffloadAPI.h"
  clang++-22 -std=c++17 -O2 -Wall -Wextra -Werror -fPIC -shared -I"$B/include" \
    gpu/mlir/OffloadRuntimeWrappers.cpp -o "$B/lib/libmlir_offload_runtime.so" \
    "$RUNTIMES/series/libLLVMOffload.so.22.1" -Wl,--allow-shlib-undefined
  for p in vadd vadd-v1; do
    clang-22 -O2 -Wall -Wextra -Werror gpu/mlir/vadd_main.c "$B/work/$p.o" -o "$B/$p" \
      -L"$B/lib" -lmlir_offload_runtime -Wl,-rpath,'$ORIGIN/lib' \
      "$RUNTIMES/series/libLLVMOffload.so.22.1" -Wl,--allow-shlib-undefined
  done
  nm -u "$B/work/vadd.o" | grep mgpu >"$B/mgpu-calls.txt"
  rm -rf "$B/work"
  kdl_record_versions "$B" clang-22
  cat "$B/container.offloading.txt"
  echo "mgpu calls: $(awk '{print $2}' "$B/mgpu-calls.txt" | tr '\n' ' ')"
  du -sh "$B"
}

run() {
  OUT=${OUT:?set OUT to a directory}
  local deb=/tmp/kdl-rs-deb procs=${KDL_RS_PROCS:-3} rt
  rt=$(cd "$RUNTIMES" && pwd)
  kdl_unpack .deb/22 "$deb"
  local sys=$deb/usr/lib/x86_64-linux-gnu llvm=$deb/usr/lib/llvm-22/lib
  local log=$OUT/runtime-select.log
  {
    echo "== device: $(kdl_device)"
    echo "== harness: $(cat "$B/VERSION") runtimes: $(head -1 "$rt/SERIES" 2>/dev/null)"
    for prog in vadd vadd-v1; do
      for v in base loop series; do
        for p in $(seq "$procs"); do
          echo "== program $prog runtime $v process $p"
          LD_LIBRARY_PATH="$rt/$v:$llvm:$sys" "$B/$prog" 2 2>&1 && s=0 || s=$?
          echo "exit $s"
        done
        LIBOMPTARGET_DEBUG=1 LD_LIBRARY_PATH="$rt/$v:$llvm:$sys" "$B/$prog" 1 \
          >"$OUT/debug.txt" 2>&1 || true
        echo "== program $prog runtime $v debug: $(grep -vc '^run \|^mgpu' "$OUT/debug.txt")" \
          "lines of LIBOMPTARGET_DEBUG=1 output"
        grep -v '^run \|^mgpu' "$OUT/debug.txt" | grep -iE 'image|entry|binary' | head -20 || true
      done
    done
    rm -f "$OUT/debug.txt"
  } 2>&1 | tee "$log"
  python3 - "$log" >"$OUT/runtime-select.json" <<'PY'
import json, re, sys
runtimes = {}
current = None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if m := re.match(r"== program (\S+) runtime (\w+) process (\d+)$", line):
        current = runtimes.setdefault(m[1], {}).setdefault(m[2], {"processes": []})
        current["processes"].append({"exit": None, "runs": [], "errors": []})
    elif current is None or line.startswith("=="):
        current = None if line.startswith("==") else current
    elif m := re.match(r"exit (\d+)$", line):
        current["processes"][-1]["exit"] = int(m[1])
    elif m := re.match(r"run \d+ marker (-?\d+) entry (\S+) checked (\d+) mismatches (\d+)$", line):
        current["processes"][-1]["runs"].append(
            {"marker": int(m[1]), "entry": m[2], "checked": int(m[3]), "mismatches": int(m[4])})
    else:
        current["processes"][-1]["errors"].append(line)
for r in (r for prog in runtimes.values() for r in prog.values()):
    entries = {run["entry"] for p in r["processes"] for run in p["runs"]}
    r["entry"] = entries.pop() if len(entries) == 1 else sorted(entries)
    r["ok"] = all(p["exit"] == 0 for p in r["processes"])
print(json.dumps(runtimes, indent=1))
PY
}

case ${1:-} in
prepare) prepare ;;
run) run ;;
*)
  echo "usage: $0 prepare|run [RUNTIMES]" >&2
  exit 2
  ;;
esac
