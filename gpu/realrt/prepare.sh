#!/usr/bin/env bash
# gpu/realrt/prepare.sh - here, without a GPU: what the real-runtime run needs.
#
# Needs what `kdl all` made: both trees, the 22.1.8 tree with the release/22.x
# backport applied, and its standalone builds (build/real-22/{base,series});
# KDL_REAL22_TREE and KDL_REAL22_SERIES name another checkout and its build.
# Builds the first-compatible-loop runtime (the backport up to 0002) beside
# them, compiles gpu/kernels/marker.cu into cubins with nvcc, packs
# containers with LLVM 22's llvm-offload-binary (format 1) and main's (format
# 3, in the sid root), compiles the probe for both APIs, and fetches the .deb
# files each run unpacks: .deb/22 (libllvm22) and .deb/main (main's
# libllvm24, liboffload-24, sid's libxml2-16 and libz3-4).
# With them, the loop and the series with gpu/realrt/selection_timer.py
# (measurement only), lib/loop-timer and lib/series-timer (and
# lib/previous-timer with KDL_REAL22_PREVIOUS), for run.sh's timer section.
# Output: build/gpu-real/ (carried with .deb/22 or .deb/main).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source gpu/common.sh
OUT=build/gpu-real
# The 22.1.8 checkout with the backport applied on its kdl branch, and the
# builds of its base and series (kdl all's by default; another applied
# series, such as patches/next's, in a checkout and build of its own).
TREE=${KDL_REAL22_TREE:-.work/trees/22}
BASE_BUILD=${KDL_REAL22_BASE:-build/real-22/base}
SERIES_BUILD=${KDL_REAL22_SERIES:-build/real-22/series}
SERIES_FILE=${KDL_REAL22_SERIES_FILE:-patches/release-22.x/series}
BASE_BUILD=$(cd "$BASE_BUILD" && pwd) SERIES_BUILD=$(cd "$SERIES_BUILD" && pwd)
MAIN=.work/trees/main
SNAPSHOT=$(python3 -c 'import json; print(json.load(open("trees.json"))["main"]["version"])')
rm -rf "$OUT"
mkdir -p "$OUT"/lib/{base,loop,series} "$OUT"/img "$OUT"/bin

# 1. The three 22.1.8 runtimes: no loop (the tree as released), #186088's
#    first-compatible loop (the backport's 0002), the whole backport.
git -C "$TREE" rev-parse --verify -q kdl/offload-ranked-selection-22 >/dev/null
BRANCH=kdl/offload-ranked-selection-22
LOOP=$(git -C "$TREE" log -1 --format=%H \
  --grep='^\[Offload\] Load the first compatible entry' "$BRANCH")
[ -n "$LOOP" ] || { echo "prepare.sh: no #186088 loop commit on $BRANCH" >&2; exit 1; }
# (The loop's runtime is its timer build, 1b: the timer records nothing
# unless KDL_SELECTION_TIMER is set.)
cp "$BASE_BUILD/offload/libLLVMOffload.so.22.1" "$OUT/lib/base/"
cp "$SERIES_BUILD/offload/libLLVMOffload.so.22.1" "$OUT/lib/series/"
git -C "$TREE" log --format='%h %s' "$BRANCH" --not \
  "$(git -C "$TREE" rev-list --max-parents=0 "$BRANCH")" >"$OUT/lib/COMMITS"
echo "loop: $LOOP" >>"$OUT/lib/COMMITS"

# 1b. The selection timer (gpu/realrt/selection_timer.py: measurement only,
#     never part of the series) on the loop, on the series head and, where
#     KDL_REAL22_PREVIOUS names a commit of the tree with an earlier version
#     of the backport applied (its head), on that version too ("previous"),
#     each in a copy of the tree's sources under build/real-22/ and a build of
#     its own. Each copy is a clone sharing the tree's objects, on the kdl
#     branch with the metadata kdl apply recorded, so that kdl build compiles
#     the LLVM sources and headers the patches up to that commit change into
#     it, as into build/real-22/series.
TIMER=gpu/realrt/selection_timer.py
HEAD_REV=$(git -C "$TREE" rev-parse "$BRANCH")
PREV_REV=${KDL_REAL22_PREVIOUS:+$(git -C "$TREE" rev-parse "$KDL_REAL22_PREVIOUS")}
series_copy() { # NAME REV: build/real-22/NAME-timer-src at REV, as the kdl branch
  local src=build/real-22/$1-timer-src
  # (An earlier prepare.sh made the loop's copy a worktree of the tree.)
  if [ -f "$src/.git" ]; then
    git -C "$TREE" worktree remove --force "$ROOT/$src"
    git -C "$TREE" worktree prune
  fi
  [ -d "$src/.git" ] || git clone -q --shared --no-checkout "$TREE" "$src"
  git -C "$src" fetch -q "$ROOT/$TREE" "+refs/heads/$BRANCH:refs/remotes/tree/$BRANCH"
  git -C "$src" sparse-checkout set --cone offload openmp libc third-party cmake runtimes \
    llvm/cmake llvm/utils llvm/include llvm/lib llvm/unittests llvm/tools/llvm-offload-binary
  git -C "$src" checkout -q -f -B "$BRANCH" "$2"
  git -C "$src" config --local --remove-section "branch.$BRANCH" 2>/dev/null || true
  git -C "$TREE" config --local --get-regexp "^branch\.$BRANCH\.kdl" |
    while read -r key value; do git -C "$src" config --local --add "$key" "$value"; done
}
# The loop too is such a copy, at the loop's commit: its build compiles the
# LLVM sources the patches before it change (0001's getNVPTXCPUName, which
# 0003's check of each cubin calls; 0002's reader), as the series' builds
# do, so that asking the plugin about an entry costs the same in every build.
series_copy loop "$LOOP"
series_copy series "$HEAD_REV"
TIMED="loop series"
if [ -n "$PREV_REV" ]; then
  series_copy previous "$PREV_REV"
  TIMED="loop previous series"
fi
for v in $TIMED; do
  src=build/real-22/$v-timer-src
  git -C "$src" checkout -q -- offload/plugins-nextgen/common/src/PluginInterface.cpp
  python3 "$TIMER" "$src/offload/plugins-nextgen/common/src/PluginInterface.cpp"
  .venv/bin/kdl build --llvm "$src" --build-dir "build/real-22/$v-timer"
  mkdir -p "$OUT/lib/$v-timer"
  cp "build/real-22/$v-timer/offload/libLLVMOffload.so.22.1" "$OUT/lib/$v-timer/"
  # The timer's own symbol: the build has it (the plain builds do not).
  grep -q KDL_SELECTION_TIMER "$OUT/lib/$v-timer/libLLVMOffload.so.22.1"
done
# The loop's and the earlier version's choices are their timer builds'.
cp "$OUT/lib/loop-timer/libLLVMOffload.so.22.1" "$OUT/lib/loop/"
if [ -n "$PREV_REV" ]; then
  mkdir -p "$OUT/lib/previous"
  cp "$OUT/lib/previous-timer/libLLVMOffload.so.22.1" "$OUT/lib/previous/"
  echo "previous: $PREV_REV" >>"$OUT/lib/COMMITS"
  # How the report names it (KDL_REAL22_PREVIOUS_NAME: "series v9 ...").
  echo "${KDL_REAL22_PREVIOUS_NAME:-the earlier series ($PREV_REV)}" >"$OUT/lib/PREVIOUS"
  git -C "$TREE" log --format='%h %s' "$PREV_REV" --not \
    "$(git -C "$TREE" rev-list --max-parents=0 "$PREV_REV")" |
    sed 's/^/previous /' >>"$OUT/lib/COMMITS"
fi
echo "timers: $TIMER $(git hash-object "$TIMER") on loop $LOOP, series $HEAD_REV${PREV_REV:+ and previous $PREV_REV}" \
  >>"$OUT/lib/COMMITS"
echo "series v$(sed -n 's/^version: *//p' "$SERIES_FILE" | head -1) ($SERIES_FILE)" >"$OUT/lib/SERIES"

# 2. Images: one marker cubin per target, PTX, and an sm_90a cubin the
#    CUDA plugin accepts (its ELF header says sm_90) but the driver is
#    expected to refuse: the sm_80 cubin relabelled sm_90a in e_flags. (A
#    cubin cut before its program headers loads: the driver does not need
#    them; one whose code section lies past its end crashes the driver in
#    LLVM 22's olIsValidBinary/olCreateProgram, so neither can show a
#    failed load.)
for a in sm_80 sm_86 sm_90 sm_90a; do
  nvcc -cubin -arch=$a -DKDL_MARKER="\"$a\"" -o "$OUT/img/$a.cubin" gpu/kernels/marker.cu
done
# A second sm_90 build, told apart by its marker, for variant_priority.
nvcc -cubin -arch=sm_90 -DKDL_MARKER='"sm_90-prio5"' -o "$OUT/img/sm_90-prio5.cubin" \
  gpu/kernels/marker.cu
for a in 80 90; do
  nvcc -ptx -arch=compute_$a -DKDL_MARKER="\"compute_$a\"" -o "$OUT/img/compute_$a.ptx" \
    gpu/kernels/marker.cu
done
# PTX the driver refuses at load (its JIT knows no .version 99.9), padded by
# a 64 KiB comment so that an image object leaked per failed load shows in
# the process's memory.
python3 - "$OUT/img" <<'PY'
import re, sys
from pathlib import Path
img = Path(sys.argv[1])
text = (img / "compute_90.ptx").read_text()
text = re.sub(r"^\.version .*$", ".version 99.9", text, count=1, flags=re.M)
(img / "bad-version-90.ptx").write_text(("// padding\n" * 6000) + text)
PY
# PTX the driver's JIT refuses for its code (an instruction ptxas does not
# know), for compute_80: with bad-version-90.ptx, a container whose every
# candidate fails, each differently.
python3 - "$OUT/img" <<'PY'
import sys
from pathlib import Path
img = Path(sys.argv[1])
text = (img / "compute_80.ptx").read_text()
assert "\tret;" in text
(img / "bad-jit-80.ptx").write_text(text.replace("\tret;", "\tkdl.bogus.u32 %r1;\n\tret;", 1))
PY
python3 - "$OUT/img" <<'PY'
import struct, sys
from pathlib import Path
img = Path(sys.argv[1])
relabel = bytearray((img / "sm_80.cubin").read_bytes())
flags, = struct.unpack_from("<I", relabel, 0x30)
want, = struct.unpack_from("<I", (img / "sm_90a.cubin").read_bytes(), 0x30)
struct.pack_into("<I", relabel, 0x30, want)
(img / "relabel-sm_90a.cubin").write_bytes(bytes(relabel))
PY

# 3. Containers. FILE:ARCH[:KEY=VALUE] entries; LLVM 22 writes one format-1
#    binary per image, main one format-3 binary of several entries.
# The image kind is the file's extension: PTX as clang writes it (.s) is
# IMG_PTX; FILE.ptx is packed as FILE.s, FILE.ptx-as-is (a name only) keeps
# .ptx, which LLVM does not know (IMG_None).
mkdir -p "$OUT/img/pack"
pack22() {
  local out=$1; shift
  local args=()
  for e in "$@"; do
    local file=${e%%:*} rest=${e#*:}
    local arch=${rest%%:*} keys="" path=$OUT/img/${e%%:*}
    [ "$rest" != "$arch" ] && keys=",${rest#*:}"
    case $file in
    *.ptx-as-is) path=$OUT/img/${file%-as-is} ;;
    *.ptx) path=$OUT/img/pack/${file%.ptx}.s && cp "$OUT/img/$file" "$path" ;;
    esac
    args+=("--image=file=$path,triple=nvptx64-nvidia-cuda,arch=$arch,kind=openmp$keys")
  done
  /usr/lib/llvm-22/bin/llvm-offload-binary -o "$OUT/img/$out" "${args[@]}"
}
packmain() {
  local out=$1; shift
  local args=() inside=/tmp/kdl-realrt
  mkdir -p "$MAIN$inside"
  for e in "$@"; do
    local file=${e%%:*} arch=${e##*:}
    cp "$OUT/img/$file" "$MAIN$inside/"
    args+=("--image=file=$inside/$file,triple=nvptx64-nvidia-cuda,arch=$arch,kind=openmp")
  done
  chroot "$MAIN" /usr/lib/llvm-24/bin/llvm-offload-binary -o "$inside/$out" "${args[@]}"
  cp "$MAIN$inside/$out" "$OUT/img/$out"
}
C80=sm_80.cubin:sm_80 C86=sm_86.cubin:sm_86 C90=sm_90.cubin:sm_90
C90A=sm_90a.cubin:sm_90a REL=relabel-sm_90a.cubin:sm_90a
PTX=compute_80.ptx:sm_80
pack22 v1-80-90-90a.bin $C80 $C90 $C90A
pack22 v1-90a-90-80.bin $C90A $C90 $C80
pack22 v1-90-90a.bin $C90 $C90A
pack22 v1-80.bin $C80
pack22 v1-90-relabel90a.bin $C90 $REL
pack22 v1-relabel90a-90.bin $REL $C90
pack22 v1-ptx-90.bin $PTX $C90
pack22 v1-80-ptx.bin $C80 $PTX
# PTX from a container, and a fallback: the bad PTX claims sm_90, so it ranks
# above the compute_80 PTX, fails to load, and the next candidate loads.
PTX90=compute_90.ptx:sm_90 BAD=bad-version-90.ptx:sm_90
pack22 v1-ptx.bin $PTX
pack22 v1-ptx90-90.bin $PTX90 $C90
# The same, its PTX entry of kind IMG_None (packed from a .ptx file).
pack22 v1-ptxnone90-90.bin compute_90.ptx-as-is:sm_90 $C90
pack22 v1-ptx-bad90.bin $PTX $BAD
# Every candidate fails (the driver refuses both PTX entries, each its way).
pack22 v1-badjit80-bad90.bin bad-jit-80.ptx:sm_80 $BAD
# variant_priority (release-22.x 0006): two sm_90 builds, the second preferred.
pack22 v1-90p1-90p5.bin sm_90.cubin:sm_90:variant_priority=1 \
  sm_90-prio5.cubin:sm_90:variant_priority=5
packmain v3-80-90-90a.bin $C80 $C90 $C90A
packmain v3-90-90a.bin $C90 $C90A
packmain v3-90-relabel90a.bin $C90 $REL
# The cost containers: the first compatible entry first, the best one last.
pack22 cost-1.bin $C90A
pack22 cost-4.bin $C90 $C80 $C86 $C90A
many=($C90)
for i in $(seq 1 31); do many+=($C80 $C86); done
many+=($C90A)
pack22 cost-64.bin "${many[@]}"
# The same 64 entries with the best one first: both builds load the same
# cubin, so what differs is what the series does with the other 63.
pack22 cost-64-first.bin $C90A "${many[@]:1:62}" $C90
# The same 64 entries, the only compatible one last (sm_80 and sm_86 cubins
# are not candidates on a 9.0 device): the loop asks the plugin about all 64
# as the series does, and both load the same cubin.
pack22 cost-64-last.bin "${many[@]:1:62}" $C80 $C90A

# 4. The probe, for LLVM 22's API and main's, and its driver-only control.
gcc -O2 -Wall -Wextra -Werror -I/usr/lib/llvm-22/include gpu/src/ol_choice.c \
  -o "$OUT/bin/ol_choice-22" "$OUT/lib/series/libLLVMOffload.so.22.1"
gcc -O2 -Wall -Wextra -Werror -DKDL_OL_MAIN -I"$MAIN/usr/lib/llvm-24/include" \
  gpu/src/ol_choice.c -o "$OUT/bin/ol_choice-main" \
  "$MAIN/usr/lib/llvm-24/lib/libLLVMOffload.so.24.0" \
  -Wl,--unresolved-symbols=ignore-in-shared-libs
# The leak's control without LLVM: the CUDA driver alone (run.sh's growth).
gcc -O2 -Wall -Wextra -Werror gpu/src/cu_leak.c -o "$OUT/bin/cu_leak" -ldl

# 5. A clang-22 program through libomptarget: gpu/kernels/mark.cu built with
#    -foffload-via-llvm for sm_90 and sm_90a (clang's own descriptor), and the
#    same host object with the two cubins registered sm_90 first by
#    llvm-offload-wrapper; both linked against the tree's libomp and
#    libomptarget, whose base and series builds travel (the series does not
#    change libomptarget: the run shows whether anything differs).
mkdir -p "$OUT"/omp/{base,series}
kdl_build_mark "$ROOT/$OUT/mark" -L"$SERIES_BUILD/offload" -lomptarget \
  -L"$SERIES_BUILD/omp/runtime/src" -lomp
for v in base series; do
  b=$BASE_BUILD
  [ $v = series ] && b=$SERIES_BUILD
  cp "$b/offload/libomptarget.so.22.1" "$OUT/omp/$v/"
  cp "$b/omp/runtime/src/libomp.so" "$OUT/omp/$v/"
done

# 6. The .deb files the runs unpack.
mkdir -p .deb/22 .deb/main
(cd .deb/22 && rm -f ./*.deb && apt-get download -qq libllvm22 libz3-4 2>/dev/null)
mkdir -p "$MAIN/tmp/kdl-debs"
chroot "$MAIN" sh -c "cd /tmp/kdl-debs && rm -f ./*.deb && apt-get download -qq \
  libllvm24=$SNAPSHOT liboffload-24=$SNAPSHOT libxml2-16 libz3-4 2>/dev/null"
rm -f .deb/main/*.deb
cp "$MAIN"/tmp/kdl-debs/*.deb .deb/main/
git describe --always --dirty >"$OUT/VERSION"
python3 -c 'import json; print(json.dumps(json.load(open("trees.json"))))' >"$OUT/TREES"
du -sh "$OUT" .deb/22 .deb/main
