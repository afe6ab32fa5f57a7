#!/usr/bin/env bash
# run-check.sh [FILTER] [VARIANTS] [MAXTIME]: on the GPU machine, run upstream's
# check-offload nvptx64 suites (nvptx64-nvidia-cuda, nvptx64-nvidia-cuda-LTO)
# for each variant (base, series) with the clang-22 toolchain from Debian .debs.
# Carry .carry-nv (tc.tar.xz: pruned toolchain; bld.tar.xz: built runtimes +
# test sources at the workspace paths of the machine that packed them, in
# .carry-nv/root; cfg/: lit.site.cfg from mkcfg.sh).
set -uo pipefail
R=$(cd "$(dirname "$0")/.." && pwd)
C=$R/.carry-nv
FILTER=${1:-nvptx64}
VARIANTS=${2:-base series}
MAXTIME=${3:-240}
OUT=${OUT:?}
N=/tmp/nv
ROOT=$(cat "$C/root")
untar() { python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"; }
if [ ! -e $N/tc.done ]; then
  mkdir -p $N/tc && untar "$C/tc.tar.xz" $N/tc && touch $N/tc.done || exit 3
fi
if [ ! -e $N/bld.done ]; then
  mkdir -p "$ROOT" && untar "$C/bld.tar.xz" "$ROOT" && touch $N/bld.done || exit 3
fi
for p in /usr/lib/llvm-22 /usr/bin/clang-22 /usr/bin/clang++-22; do
  [ -e $p ] && [ ! -L $p ] && { echo "$p exists on the device, not replaced"; ls -la $p; }
done
# llvm-22 tools clang and the tests call (clang: llvm-offload-binary), from
# this machine's llvm-22 1:22.1.8-1~deb12u1 (same build as the .debs).
cp -a "$C"/bin/* $N/tc/usr/lib/llvm-22/bin/
[ -e /usr/lib/llvm-22 ] || ln -s $N/tc/usr/lib/llvm-22 /usr/lib/llvm-22
[ -e /usr/bin/clang-22 ] || ln -s /usr/lib/llvm-22/bin/clang /usr/bin/clang-22
[ -e /usr/bin/clang++-22 ] || ln -s /usr/lib/llvm-22/bin/clang /usr/bin/clang++-22
# The set-up's fixes, on unless FIXCXX=, FIXSYM= or FIXOMP= (empty) turns
# one off (FAILURES.md beside the results says what each one fixes).
# FIXCXX: the CUDA tests spell the C++ compiler "%clang++", i.e. the C
# compiler's path + "++" (/usr/bin/clang-22++), which exists only where the
# compiler is called "clang" (an in-tree build's bin/clang).
FIXCXX=${FIXCXX-1} FIXSYM=${FIXSYM-1} FIXOMP=${FIXOMP-1}
[ -n "$FIXCXX" ] && { [ -e /usr/bin/clang-22++ ] || ln -s /usr/lib/llvm-22/bin/clang /usr/bin/clang-22++; }
# FIXOMP: a libomp built without OPENMP_ENABLE_LIBOMPTARGET (kdl's
# standalone omp build before it stopped passing OFF) never asks
# libomptarget whether a deferred target task's device work is done
# (__tgt_target_nowait_query): it runs the task's routine again, which
# launches the kernel again, over and over. pack.sh carries one built with
# it (omp/libomp.so) when the build's own lacks the query; it replaces each
# variant's here, the build's own kept in /tmp/nv/omp-orig/VARIANT.
for v in $VARIANTS; do
  lib=$ROOT/build/real-22/$v/omp/runtime/src/libomp.so
  if [ -n "$FIXOMP" ] && [ -e "$C/omp/libomp.so" ] && [ ! -e /tmp/nv/omp-orig/$v/libomp.so ]; then
    mkdir -p /tmp/nv/omp-orig/$v && cp -a "$lib" /tmp/nv/omp-orig/$v/ && cp "$C/omp/libomp.so" "$lib"
  fi
done
if [ ! -e /usr/local/cuda ]; then ln -s "$(ls -d /usr/local/cuda-* | sort -V | tail -1)" /usr/local/cuda; fi
rm -rf /tmp/nvt && mkdir -p /tmp/nvt && cp -a "$C/cfg/." /tmp/nvt/
export LD_LIBRARY_PATH=$N/tc/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# No CHECK_OPENMP_ENV: kdl's build sets OMP_TEAMS_THREAD_LIMIT=16 for hosts
# of 2 cores, but the plugins read OMP_TEAMS_THREAD_LIMIT too and cap every
# GPU team at 16 threads (19 tests fail with it). KDL_CHECK_OPENMP_ENV=1
# sets it as kdl's build does.
unset CHECK_OPENMP_ENV
[ -n "${KDL_CHECK_OPENMP_ENV:-}" ] && export CHECK_OPENMP_ENV="OMP_TEAMS_THREAD_LIMIT=16 KMP_TEAMS_THREAD_LIMIT=16"
J=${J:-16}; TAG=${TAG:-}
# FIXSYM=1: llvm-symbolizer on PATH (after the system's tools) for the
# sanitizer tests' symbolized stack traces.
[ -n "$FIXSYM" ] && export PATH="$PATH:/usr/lib/llvm-22/bin"
{
  echo "== device"; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
  echo "== nvptx-arch"; /usr/lib/llvm-22/bin/nvptx-arch
  echo "== cuda"; ls -la /usr/local/cuda; /usr/local/cuda/bin/ptxas --version | tail -1
  echo "== os"; . /etc/os-release; echo "$PRETTY_NAME"; ld --version | head -1; gcc --version 2>/dev/null | head -1
  echo "== clang"; /usr/bin/clang-22 --version | head -1
  echo "== llvm-offload-device-info (base)"; "$ROOT"/build/real-22/base/offload/llvm-offload-device-info 2>&1 | head -20
  echo "== harness: FIXCXX=$FIXCXX FIXSYM=$FIXSYM FIXOMP=$FIXOMP CHECK_OPENMP_ENV=${CHECK_OPENMP_ENV:-}"
  for v in $VARIANTS; do
    lib=$ROOT/build/real-22/$v/omp/runtime/src/libomp.so
    orig=/tmp/nv/omp-orig/$v/libomp.so
    echo "libomp ($v) has __tgt_target_nowait_query: $(grep -c __tgt_target_nowait_query "$lib")" \
      "(the build's own: $([ -e $orig ] && { grep -c __tgt_target_nowait_query $orig || true; } || echo "the same file"))"
  done
} >"$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
for v in $VARIANTS; do
  echo "== lit $v (filter $FILTER)"
  start=$(date +%s)
  /usr/lib/llvm-22/bin/lit -v -j "$J" --max-time "$MAXTIME" --filter "$FILTER" \
    --xunit-xml-output="$OUT/check-offload-nvptx-$v$TAG.xml" \
    /tmp/nvt/$v/nvptx64-nvidia-cuda /tmp/nvt/$v/nvptx64-nvidia-cuda-LTO >"$OUT/lit-$v$TAG.log" 2>&1
  echo "rc=$? seconds=$(( $(date +%s) - start ))" | tee -a "$OUT/lit-$v$TAG.log"
  sed -n '/^Testing Time/,$p' "$OUT/lit-$v$TAG.log"
done
