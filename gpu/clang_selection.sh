#!/usr/bin/env bash
# gpu/clang_selection.sh - which image a clang-built program runs on a GPU,
# under LLVM 22's libomptarget and liboffload, without and with the shim
# (shim/, the series' policy for LLVM 22).
#
#   bash gpu/clang_selection.sh prepare   # here: build what travels -> build/gpu-sel
#   bash gpu/clang_selection.sh run       # on the GPU machine, carrying .deb and build/gpu-sel
#
# prepare needs clang-22, the overlay build (kdl build), nvcc/ptxas of CUDA 13
# and .deb/ holding libllvm22, liboffload-22, libomp5 and libz3-4
# (apt-get download). run needs an NVIDIA GPU of compute capability 9.0, its
# driver, dpkg-deb and python3; it writes $OUT/clang-selection.json.
#
# What runs:
#  mark             clang++-22 -x cuda -foffload-via-llvm --offload-arch=sm_90
#                   --offload-arch=sm_90a: the descriptor clang-linker-wrapper
#                   makes, in the order it makes it. The kernel stores 2 when
#                   it runs as sm_90a code (__CUDA_ARCH_FEAT_SM90_ALL), 1 as
#                   sm_90 code; the program prints which.
#  mark-90-first    the same host object and the same two cubins (taken out
#                   of mark), each packed in an OffloadBinary and registered
#                   by llvm-offload-wrapper with sm_90 first: a packaged
#                   order, not clang's.
#  kdl-ol-probe     liboffload's olIsValidBinary / olCreateProgram on that
#                   OffloadBinary (both orders), then the kernel's marker.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=gpu/common.sh
. "$ROOT/gpu/common.sh"
SEL=$ROOT/build/gpu-sel

prepare() {
  local llvm=${KDL_LLVM_PREFIX:-/usr/lib/llvm-22}
  local B=$llvm/bin
  rm -rf "$SEL" && mkdir -p "$SEL"
  kdl_build_mark "$SEL" -L"$llvm/lib" -lomptarget -lomp
  local t=nvptx64-nvidia-cuda
  "$B/llvm-offload-binary" -o "$SEL/sm_90-first.bin" \
    "--image=file=$SEL/sm_90.cubin,triple=$t,arch=sm_90,kind=openmp" \
    "--image=file=$SEL/sm_90a.cubin,triple=$t,arch=sm_90a,kind=openmp"
  "$B/llvm-offload-binary" -o "$SEL/sm_90a-first.bin" \
    "--image=file=$SEL/sm_90a.cubin,triple=$t,arch=sm_90a,kind=openmp" \
    "--image=file=$SEL/sm_90.cubin,triple=$t,arch=sm_90,kind=openmp"
  # What the series' ranking chooses for these images on an sm_90 device.
  for f in sm_90-first sm_90a-first; do
    "$ROOT/build/overlay/bin/kdl-select" --json \
      --device=triple=$t,arch=sm_90 "$SEL/$f.bin" >"$SEL/$f.kdl-select.json"
  done
  cp "$ROOT/build/overlay/lib/libkdl-offload-shim.so" "$ROOT/build/overlay/bin/kdl-ol-probe" "$SEL/"
  kdl_record_versions "$SEL" "$B/clang++"
}

run() {
  OUT=${OUT:-$ROOT/build/gpu-sel-out}
  mkdir -p "$OUT"
  kdl_unpack_debs
  local shim=$SEL/libkdl-offload-shim.so
  cd "$SEL"
  {
    echo "== device"
    kdl_device
    echo "== mark (clang's descriptor), LLVM 22"
    ./mark || true
    echo "== mark (clang's descriptor), LLVM 22 + shim"
    KDL_INFO=1 LD_PRELOAD=$shim ./mark 2>&1 || true
    echo "== mark-90-first, LLVM 22"
    ./mark-90-first || true
    echo "== mark-90-first, LLVM 22 + shim"
    KDL_INFO=1 LD_PRELOAD=$shim ./mark-90-first 2>&1 || true
    for f in sm_90-first sm_90a-first; do
      echo "== kdl-ol-probe $f.bin, LLVM 22"
      ./kdl-ol-probe "$f.bin" kdl_image 2>&1 || true
      echo "== kdl-ol-probe $f.bin, LLVM 22 + shim"
      KDL_INFO=1 LD_PRELOAD=$shim ./kdl-ol-probe "$f.bin" kdl_image 2>&1 || true
    done
  } 2>&1 | tee "$OUT/clang-selection.log"
  python3 "$ROOT/gpu/clang_selection_report.py" "$OUT/clang-selection.log" \
    "$SEL" >"$OUT/clang-selection.json"
}

# cost: what registerLib costs with the shim's choice and without it, for
# the two-image mark-90-first, in KDL_REGISTER_PROCS fresh processes per
# variant (interleaved): the shim times its choice and libomptarget's own
# __tgt_register_lib of what it hands on (KDL_SHIM_TIMING); KDL_SHIM_BYPASS
# hands the descriptor on unranked. Writes $OUT/register-cost.json.
cost() {
  OUT=${OUT:-$ROOT/build/gpu-sel-out}
  mkdir -p "$OUT"
  kdl_unpack_debs
  local shim=$SEL/libkdl-offload-shim.so procs=${KDL_REGISTER_PROCS:-40}
  cd "$SEL"
  for p in $(seq "$procs"); do
    for v in ranked bypass; do
      local extra=()
      [ "$v" = bypass ] && extra=(KDL_SHIM_BYPASS=1)
      echo "== $v $p"
      env "${extra[@]}" KDL_SHIM_TIMING=1 LD_PRELOAD="$shim" ./mark-90-first 2>&1 || true
    done
  done >"$OUT/register-cost.log"
  python3 - "$OUT/register-cost.log" "$SEL" "$(kdl_device)" >"$OUT/register-cost.json" <<'PY'
import json, re, sys
from pathlib import Path
log, sel = Path(sys.argv[1]).read_text(), Path(sys.argv[2])
runs = {"ranked": [], "bypass": []}
for block in re.split(r"^== ", log, flags=re.M)[1:]:
    head, _, body = block.partition("\n")
    variant = head.split()[0]
    t = re.search(r"^kdl: timing __tgt_register_lib (.*)$", body, re.M)
    ran = re.search(r"^ran image: (\S+)", body, re.M)
    sample = {k: int(v) for k, v in (kv.split("=") for kv in t[1].split())} if t else {}
    sample["ran"] = ran[1] if ran else None
    runs[variant].append(sample)
print(json.dumps({
    "device": sys.argv[3],
    "harness": (sel / "VERSION").read_text().strip(),
    "program": "mark-90-first: two cubins (sm_90 registered first, sm_90a), "
               "each in an OffloadBinary, by llvm-offload-wrapper",
    "runs": runs,
}, indent=1))
PY
}

case ${1:-} in
prepare) prepare ;;
run) run ;;
cost) cost ;;
*) echo "usage: $0 prepare|run|cost" >&2; exit 2 ;;
esac
