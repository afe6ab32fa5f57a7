#!/usr/bin/env bash
# gpu/run.sh CONFIG [COUNTS] - the GPU harness, run ON THE DEVICE MACHINE from
# the repository root:
#
#   CONFIG  probe | layers | gemm | all   (what to measure; see gpu/README.md)
#   COUNTS  full (default) | smoke           (smoke: a few samples, to check)
#
# Needs: .deb/ (Debian's LLVM 22 packages: libllvm22, liboffload-22,
# liboffload-22-dev, libz3-4; fetched by `apt-get download` here) and
# build/gpu/ (made by gpu/prepare.sh on a machine without a GPU), both
# carried. Unpacks the packages under /tmp (never /), builds the host programs
# with the device's nvcc against its CUDA driver and the carried liboffload,
# and writes raw JSON and a log under $OUT (default build/gpu-out).
set -euo pipefail
CONFIG=${1:?usage: bash gpu/run.sh probe|layers|gemm|all [full|smoke]}
COUNTS=${2:-full}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/build/gpu-out}
mkdir -p "$OUT"
T=/tmp/kdl-gpu
# shellcheck source=gpu/common.sh
source "$ROOT/gpu/common.sh"
rm -rf "$T" && mkdir -p "$T/bin"
kdl_unpack "$ROOT/.deb" "$T/root"
LLVMROOT=$T/root/usr/lib/llvm-22
export LD_LIBRARY_PATH=$LLVMROOT/lib:$T/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
test -f "$LLVMROOT/include/offload/OffloadAPI.h"
test -e "$LLVMROOT/lib/libLLVMOffload.so"

# libcuda: the driver's, found through the toolkit's stub at link time.
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
STUBS=()
for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs"; do
  [ -d "$d" ] && STUBS+=(-L"$d")
done
SRC=$ROOT/gpu/src
nvcc -O2 -std=c++17 -I"$SRC" "$SRC/cuda_layers.cpp" -o "$T/bin/cuda_layers" "${STUBS[@]}" -lcuda
nvcc -O2 -std=c++17 -I"$SRC" "$SRC/gemm_bench.cpp" -o "$T/bin/gemm_bench" "${STUBS[@]}" -lcuda
g++ -O2 -std=c++17 -I"$SRC" -I"$LLVMROOT/include/offload" "$SRC/offload_layers.cpp" \
  -o "$T/bin/offload_layers" -L"$LLVMROOT/lib" -lLLVMOffload
ldd "$T/bin/offload_layers" | grep -E 'LLVM|not found' || true

PYTHONUNBUFFERED=1 python3 "$ROOT/gpu/driver.py" --config "$CONFIG" --counts "$COUNTS" \
  --bin "$T/bin" --out "$OUT"
