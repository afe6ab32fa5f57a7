#!/usr/bin/env bash
# gpu/offloadapi/offloadapi.sh - upstream's OffloadAPI unit tests on a GPU.
#
#   bash gpu/offloadapi/offloadapi.sh prepare   # here, after kdl all
#   bash gpu/offloadapi/offloadapi.sh run       # on the GPU machine
#
# The 22.1.8 tree's offload/unittests/OffloadAPI tests (check-offload-unit's
# *.unittests), as the real-tree stage built them for the release as
# released (build/real-22/base) and with the backport applied
# (build/real-22/series). Here they load no device code: the tree builds it
# only where CMake finds a CUDA toolkit, and this machine has none, so every
# test that needs a device is left out. On the GPU machine they run against
# the H200.
#
# prepare: each device_code source compiled to PTX by clang-22 as the tree's
# add_offload_test_device_code compiles it (--target=nvptx64-nvidia-cuda,
# -nogpulib, its own flags), for sm_90, with -S instead of -flto: the GPU
# machine has ptxas but no clang. The tests of both builds, and the folder
# each was built to read device code from (DEVICE_CODE_PATH).
# Output: build/gpu-offloadapi (carry it with build/gpu-real and .deb/22).
#
# run: ptxas makes each <name>.nvptx64.bin from the PTX in the folder each
# build reads; each *.unittests of each build runs with that build's
# liboffload (build/gpu-real/lib/<build>) and LLVM 22 from .deb/22. Writes
# $OUT/offloadapi.log (a line per build and test binary, then each failing
# test) and $OUT/offloadapi.tar.xz (gtest's XML of every run).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
B=build/gpu-offloadapi
BUILDS=(base series)
ARCH=${KDL_OFFLOADAPI_ARCH:-sm_90}
TREE=${KDL_REAL22_TREE:-.work/trees/22}

prepare() {
  local src=$TREE/offload/unittests
  rm -rf "$B" && mkdir -p "$B/ptx"
  # name, then the flags of add_offload_test_device_code in the tree's
  # OffloadAPI/device_code/CMakeLists.txt (read from it, so a tree that
  # adds device code is compiled whole).
  local line name file flags
  while read -r line; do
    file=$(sed -E 's/^add_offload_test_device_code\(([^ ]+) ([^ )]+) ?([^)]*)\)$/\1/' <<<"$line")
    name=$(sed -E 's/^add_offload_test_device_code\(([^ ]+) ([^ )]+) ?([^)]*)\)$/\2/' <<<"$line")
    flags=$(sed -E 's/^add_offload_test_device_code\(([^ ]+) ([^ )]+) ?([^)]*)\)$/\3/' <<<"$line")
    # shellcheck disable=SC2086
    clang++-22 -I"$src" --target=nvptx64-nvidia-cuda -march="$ARCH" -nogpulib \
      -ffreestanding -O2 $flags -S "$src/OffloadAPI/device_code/$file" \
      -o "$B/ptx/$name.s"
  done < <(grep '^add_offload_test_device_code(' "$src/OffloadAPI/device_code/CMakeLists.txt")
  local b t
  for b in "${BUILDS[@]}"; do
    mkdir -p "$B/$b"
    for t in build/real-22/"$b"/offload/unittests/OffloadAPI/*.unittests; do
      cp "$t" "$B/$b/"
    done
    grep -m1 '/OffloadAPI/device_code$' <(strings "$B/$b/program.unittests") \
      >"$B/$b/DEVICE_CODE_PATH"
  done
  git -C "$TREE" log -1 --format='%h %s' kdl/offload-ranked-selection-22 >"$B/SERIES"
  git describe --always --dirty >"$B/VERSION"
  echo "prepared $B: $(ls "$B/ptx" | wc -l) device code files," \
    "$(ls "$B/base" | grep -c unittests) test binaries per build"
}

run() {
  OUT=${OUT:?set OUT to a directory}
  local deb=/tmp/kdl-oa-deb rt xml=/tmp/kdl-oa-xml log=$OUT/offloadapi.log
  rt=$(cd build/gpu-real/lib && pwd)
  rm -rf "$deb" "$xml" && mkdir -p "$deb" "$xml"
  for f in .deb/22/*.deb; do dpkg-deb -x "$f" "$deb"; done
  local libs=$deb/usr/lib/llvm-22/lib:$deb/usr/lib/x86_64-linux-gnu
  {
    echo "device: $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader)"
    echo "ptxas: $(ptxas --version | tail -1)"
    echo "harness: $(cat "$B/VERSION"); series head: $(cat "$B/SERIES")"
    local b dir s t
    for b in "${BUILDS[@]}"; do
      dir=$(cat "$B/$b/DEVICE_CODE_PATH")
      mkdir -p "$dir"
      for s in "$B"/ptx/*.s; do
        ptxas -arch="$ARCH" "$s" -o "$dir/$(basename "$s" .s).nvptx64.bin"
      done
      for t in "$B/$b"/*.unittests; do
        LD_LIBRARY_PATH="$rt/$b:$libs" timeout 300 "$t" \
          --gtest_output="xml:$xml/$b-$(basename "$t" .unittests).xml" \
          >"$xml/$b-$(basename "$t" .unittests).log" 2>&1 && s=0 || s=$?
        echo "== build $b binary $(basename "$t") exit $s:" \
          "$(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]|^\[  SKIPPED \] [0-9]' \
            "$xml/$b-$(basename "$t" .unittests).log" | tr '\n' ' ')"
        grep -E '^\[  FAILED  \] [A-Za-z]' "$xml/$b-$(basename "$t" .unittests).log" || true
      done
    done
  } >"$log" 2>&1
  tar -C "$xml" -cJf "$OUT/offloadapi.tar.xz" .
  cat "$log"
}

case ${1:-} in
prepare | run) "$1" ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac
