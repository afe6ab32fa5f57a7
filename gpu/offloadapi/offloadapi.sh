#!/usr/bin/env bash
# gpu/offloadapi/offloadapi.sh - upstream's OffloadAPI unit tests on a GPU.
#
#   bash gpu/offloadapi/offloadapi.sh prepare [NAME=BUILD...]   # here
#   bash gpu/offloadapi/offloadapi.sh run                        # on the GPU
#
# The 22.1.8 tree's offload/unittests/OffloadAPI tests (check-offload-unit's
# *.unittests) of each standalone offload BUILD (kdl build's build
# directory), by default those the real-tree stage built for the release as
# released and with the backport applied (base=build/real-22/base
# series=build/real-22/series). Here they load no device code: the tree builds it
# only where CMake finds a CUDA toolkit, and this machine has none, so every
# test that needs a device is left out. On the GPU machine they run against
# the H200.
#
# prepare: each device_code source compiled to PTX by clang-22 as the tree's
# add_offload_test_device_code compiles it (--target=nvptx64-nvidia-cuda,
# -nogpulib, its own flags), for sm_90, with -S instead of -flto: the GPU
# machine has ptxas but no clang. Each build's tests and liboffload, the
# folder it was built to read device code from (DEVICE_CODE_PATH) and the
# commit of its sources (HEAD).
# Output: build/gpu-offloadapi (carry it with .deb/22).
#
# run: ptxas makes each <name>.nvptx64.bin from the PTX in the folder each
# build reads; each *.unittests of each build runs with that build's
# liboffload and LLVM 22 from .deb/22. Writes
# $OUT/offloadapi.log (a line per build and test binary, then each failing
# test) and $OUT/offloadapi.tar.xz (gtest's XML of every run).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
# shellcheck source=gpu/common.sh
source gpu/common.sh
B=build/gpu-offloadapi
ARCH=${KDL_OFFLOADAPI_ARCH:-sm_90}
TREE=${KDL_REAL22_TREE:-.work/trees/22}

prepare() {
  local tests=$TREE/offload/unittests
  rm -rf "$B" && mkdir -p "$B/ptx"
  # Each add_offload_test_device_code(FILE NAME FLAGS...) of the tree's
  # OffloadAPI/device_code/CMakeLists.txt (read from it, so a tree that
  # adds device code is compiled whole).
  local line call='^add_offload_test_device_code\(([^ ]+) ([^ )]+) ?([^)]*)\)$'
  while read -r line; do
    [[ $line =~ $call ]] || continue
    # shellcheck disable=SC2086
    clang++-22 -I"$tests" --target=nvptx64-nvidia-cuda -march="$ARCH" -nogpulib \
      -ffreestanding -O2 ${BASH_REMATCH[3]} -S \
      "$tests/OffloadAPI/device_code/${BASH_REMATCH[1]}" -o "$B/ptx/${BASH_REMATCH[2]}.s"
  done <"$tests/OffloadAPI/device_code/CMakeLists.txt"
  local spec b dir src
  [ $# -gt 0 ] || set -- base=build/real-22/base series=build/real-22/series
  for spec in "$@"; do
    b=${spec%%=*} dir=${spec#*=}
    mkdir -p "$B/$b"
    cp "$dir"/offload/unittests/OffloadAPI/*.unittests "$dir/offload/libLLVMOffload.so.22.1" "$B/$b/"
    grep -m1 '/OffloadAPI/device_code$' <(strings "$B/$b/program.unittests") \
      >"$B/$b/DEVICE_CODE_PATH"
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$dir/offload/CMakeCache.txt")
    git -C "$src" log -1 --format='%h %s' >"$B/$b/HEAD"
    echo "$b" >>"$B/BUILDS"
    echo "  $b: $(ls "$B/$b" | grep -c unittests) test binaries, sources at $(cat "$B/$b/HEAD")"
  done
  git describe --always --dirty >"$B/VERSION"
  echo "prepared $B: $(ls "$B/ptx" | wc -l) device code files"
}

run() {
  OUT=${OUT:?set OUT to a directory}
  local deb=/tmp/kdl-oa-deb xml=/tmp/kdl-oa-xml log=$OUT/offloadapi.log
  rm -rf "$xml" && mkdir -p "$xml"
  kdl_unpack .deb/22 "$deb"
  local libs=$deb/usr/lib/llvm-22/lib:$deb/usr/lib/x86_64-linux-gnu
  {
    echo "device: $(kdl_device)"
    echo "ptxas: $(ptxas --version | tail -1)"
    echo "harness: $(cat "$B/VERSION")"
    local b dir s t
    while read -r b; do
      echo "build $b: $(cat "$B/$b/HEAD")"
      dir=$(cat "$B/$b/DEVICE_CODE_PATH")
      mkdir -p "$dir"
      for s in "$B"/ptx/*.s; do
        ptxas -arch="$ARCH" "$s" -o "$dir/$(basename "$s" .s).nvptx64.bin" </dev/null
      done
      for t in "$B/$b"/*.unittests; do
        LD_LIBRARY_PATH="$ROOT/$B/$b:$libs" timeout 300 "$t" \
          --gtest_output="xml:$xml/$b-$(basename "$t" .unittests).xml" \
          >"$xml/$b-$(basename "$t" .unittests).log" 2>&1 </dev/null && s=0 || s=$?
        echo "== build $b binary $(basename "$t") exit $s:" \
          "$(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]|^\[  SKIPPED \] [0-9]' \
            "$xml/$b-$(basename "$t" .unittests).log" | tr '\n' ' ')"
        grep -E '^\[  FAILED  \] [A-Za-z]' "$xml/$b-$(basename "$t" .unittests).log" || true
      done
    done <"$B/BUILDS"
  } >"$log" 2>&1
  tar -C "$xml" -cJf "$OUT/offloadapi.tar.xz" .
  cat "$log"
}

case ${1:-} in
prepare | run) "$@" ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac
