#!/usr/bin/env bash
# gpu/test_suite_bench.sh - llvm-test-suite's OffloadDispatch benchmark
# (patches/test-suite/) on an NVIDIA GPU.
#
#   bash gpu/test_suite_bench.sh prepare   # here -> build/gpu-ts
#   bash gpu/test_suite_bench.sh run       # on the GPU machine, carrying .deb and build/gpu-ts
#
# prepare takes what the overlay build made of the test-suite series (kdl
# build: the benchmark against LLVM 22's liboffload through
# overlay/test-suite/OffloadMainAPI.h, and its sm_80, sm_90 and sm_90a images
# of kernel.c built by clang-22 plus their OffloadBinary) and Debian's
# libbenchmark. run starts the benchmark as the suite's lit runner would but
# with google-benchmark's JSON output, on LLVM 22's liboffload; it writes
# $OUT/offload-dispatch.{log,json}. (The committed
# results/gpu/offload-dispatch-h100.json also has a run with the shim
# preloaded, retired since.)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=gpu/common.sh
. "$ROOT/gpu/common.sh"
TS=$ROOT/build/gpu-ts
REPS=${KDL_TS_REPETITIONS:-5}

prepare() {
  local llvm=${KDL_LLVM_PREFIX:-/usr/lib/llvm-22}
  local built=$ROOT/build/overlay
  rm -rf "$TS" && mkdir -p "$TS/images" "$TS/lib"
  cp "$built/bin/OffloadDispatch" "$TS/"
  cp "$built"/test-suite/MicroBenchmarks/Offload/{kernel.*.img,kernel.offload,images.txt} \
    "$TS/images/"
  cp -L /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian "$TS/lib/"
  kdl_record_versions "$TS" "$llvm/bin/clang"
}

run() {
  OUT=${OUT:-$ROOT/build/gpu-ts-out}
  mkdir -p "$OUT"
  kdl_unpack_debs
  export LD_LIBRARY_PATH=$TS/lib:$LD_LIBRARY_PATH
  local args=(--benchmark_repetitions="$REPS" --benchmark_format=json)
  {
    echo "== device"
    kdl_device
    echo "== LLVM 22"
    "$TS/OffloadDispatch" "${args[@]}" --benchmark_out="$OUT/llvm22.json" \
      "$TS/images" >/dev/null || echo "exit $?"
  } 2>&1 | tee "$OUT/offload-dispatch.log"
  python3 - "$OUT" "$TS" "$(kdl_device)" >"$OUT/offload-dispatch.json" <<'PY'
import json, sys
from pathlib import Path
out, ts = Path(sys.argv[1]), Path(sys.argv[2])
doc = {
    "device": sys.argv[3],
    "harness": (ts / "VERSION").read_text().strip(),
    "clang": (ts / "CLANG_VERSION").read_text().strip(),
    "ptxas": (ts / "PTXAS_VERSION").read_text().strip(),
}
for stack in ("llvm22",):
    f = out / f"{stack}.json"
    doc[stack] = json.loads(f.read_text()) if f.is_file() else None
print(json.dumps(doc, indent=1))
PY
}

case ${1:-} in
prepare) prepare ;;
run) run ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac
