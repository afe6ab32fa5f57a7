#!/usr/bin/env bash
# gpu/runtime_select.sh - #gpu.runtime_select end to end on an NVIDIA GPU.
#
#   bash gpu/runtime_select.sh prepare   # here -> build/gpu-rs
#   bash gpu/runtime_select.sh run       # on the GPU machine, carrying .deb and build/gpu-rs
#
# prepare needs the overlay build (kdl build: kdl-mlir-opt, kdl-mlir-translate,
# the shim), ptxas of CUDA 13 (gpu-module-to-binary calls it), llc-22 and
# clang-22. run needs an NVIDIA GPU of compute capability 9.0, its driver,
# dpkg-deb and python3; it writes $OUT/runtime-select.{log,json}.
#
# What is built: gpu/mlir/mark.mlir's kernel, compiled by gpu-module-to-binary
# for four objects, each storing its own marker in the device global
# kdl_marker: sm_80 cubin (80), sm_90 cubin (90), sm_90a cubin (91), sm_80
# PTX (8). The marker is substituted per target in the kernel's source: one
# kernel, four objects that say which of them ran. Then, by kdl-mlir-translate
# and llc-22, host objects for
#   rs        #gpu.runtime_select over the four objects, in that order
#   so-N      #gpu.select_object<N> for N = 0, 1, 2 (the cubins; the PTX one
#             goes through mgpuModuleLoadJIT, which carries no size)
# each linked with gpu/mlir/run_main.c and gpu/mlir/mgpu_offload.c (MLIR's
# mgpu* calls over liboffload) against LLVM 22's libLLVMOffload.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=gpu/common.sh
. "$ROOT/gpu/common.sh"
RS=$ROOT/build/gpu-rs
SRC=$ROOT/gpu/mlir
RUNS=${KDL_RS_RUNS:-20}   # launches per process
PROCS=${KDL_RS_PROCS:-5}  # processes per variant and stack (one load each)

prepare() {
  local llvm=${KDL_LLVM_PREFIX:-/usr/lib/llvm-22}
  local bin=$ROOT/build/overlay/bin
  rm -rf "$RS" && mkdir -p "$RS/obj"
  local i=0
  for spec in "sm_80 80 bin" "sm_90 90 bin" "sm_90a 91 bin" "sm_80 8 isa"; do
    set -- $spec
    sed -e "s/TARGET/#nvvm.target<chip = \"$1\">/" -e "s/MARKER/$2/" \
      "$SRC/mark.mlir" >"$RS/obj/$i.in.mlir"
    "$bin/kdl-mlir-opt" --gpu-module-to-binary="format=$3" \
      "$RS/obj/$i.in.mlir" -o "$RS/obj/$i.mlir"
    i=$((i + 1))
  done
  local objs=("$RS"/obj/0.mlir "$RS"/obj/1.mlir "$RS"/obj/2.mlir "$RS"/obj/3.mlir)
  python3 "$SRC/host_module.py" "#kdl_gpu.runtime_select" "$RS/rs.mlir" "${objs[@]}"
  for n in 0 1 2; do
    python3 "$SRC/host_module.py" "#gpu.select_object<$n>" "$RS/so-$n.mlir" "${objs[@]}"
  done
  for v in rs so-0 so-1 so-2; do
    "$bin/kdl-mlir-translate" -mlir-to-llvmir "$RS/$v.mlir" -o "$RS/$v.ll"
    "$llvm/bin/llc" -O2 -filetype=obj -relocation-model=pic "$RS/$v.ll" -o "$RS/$v.o"
    "$llvm/bin/clang" -O2 -I"$llvm/include" "$SRC/run_main.c" \
      "$SRC/mgpu_offload.c" "$RS/$v.o" -L"$llvm/lib" -lLLVMOffload -o "$RS/$v"
  done
  # What the objects are, as the runtime will see them.
  "$llvm/bin/llc" -filetype=obj -data-sections "$RS/rs.ll" -o "$RS/rs-data.o"
  "$llvm/bin/llvm-objcopy" --dump-section=.rodata.kernels_binary="$RS/rs.bin" \
    "$RS/rs-data.o"
  "$llvm/bin/llvm-objdump" --offloading "$RS/rs.bin" >"$RS/rs.offloading.txt"
  "$bin/kdl-select" --device=triple=nvptx64-nvidia-cuda,arch=sm_90 \
    "$RS/rs.bin" >"$RS/rs.kdl-select.txt"
  "$bin/kdl-select" --device=triple=nvptx64-nvidia-cuda,arch=sm_90 --json \
    "$RS/rs.bin" >"$RS/rs.kdl-select.json"
  cp "$ROOT/build/overlay/lib/libkdl-offload-shim.so" "$RS/"
  kdl_record_versions "$RS" "$llvm/bin/clang"
}

run() {
  OUT=${OUT:-$ROOT/build/gpu-rs-out}
  mkdir -p "$OUT"
  kdl_unpack_debs
  cd "$RS"
  {
    echo "== device"
    kdl_device
    for v in rs so-0 so-1 so-2; do
      for p in $(seq "$PROCS"); do
        echo "== $v, LLVM 22, process $p"
        "./$v" "$RUNS" 2>&1 || echo "exit $?"
        echo "== $v, LLVM 22 + shim, process $p"
        LD_PRELOAD=$RS/libkdl-offload-shim.so "./$v" "$RUNS" 2>&1 || echo "exit $?"
      done
    done
  } 2>&1 | tee "$OUT/runtime-select.log"
  python3 "$ROOT/gpu/runtime_select_report.py" "$OUT/runtime-select.log" "$RS" \
    >"$OUT/runtime-select.json"
}

case ${1:-} in
prepare) prepare ;;
run) run ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac
