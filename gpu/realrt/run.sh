#!/usr/bin/env bash
# gpu/realrt/run.sh 22|main [PROCESSES [RUNS]] - on the GPU machine: which entry the
# real runtimes load, and (22) what the ranking costs.
#
#   22:   LLVM 22.1.8's liboffload built from the tree three ways (base: as
#         released; loop: #186088's first-compatible loop; series: the whole
#         release/22.x backport), each over every image and container; then
#         cold and warm olCreateProgram of the cost containers, loop against
#         series, PROCESSES fresh processes each (default 20), interleaved,
#         in RUNS runs (default 2).
#   main: LLVM main's own liboffload (Debian's snapshot) over every image.
#   KDL_OMP_ONLY=1 with 22: a clang-22 program through libomptarget (base,
#         series), its descriptor as clang made it and with sm_90 first.
#   KDL_SECTIONS with 22: which of its sections run, of "choice leak growth
#         timer cost" (the default: all; KDL_COST_ONLY=1 is "cost"). growth:
#         whose memory a failed load and the fallback leave behind, the CUDA
#         driver alone (bin/cu_leak) beside the series' liboffload. timer: the
#         selection's own time inside the runtime (gpu/realrt/
#         selection_timer.py), loop against series (and the earlier version
#         prepare.sh built, if any), KDL_TIMER_COLD fresh processes
#         (default 40) and KDL_TIMER_WARM_PROCS processes of KDL_TIMER_WARM
#         warm loads (3 of 1000) per container.
#
# Carry build/gpu-real and .deb/22 or .deb/main. Writes $OUT/*.jsonl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source gpu/common.sh
MODE=${1:?usage: run.sh 22|main [PROCESSES]}
PROCS=${2:-20}
RUNS=${3:-2}
B=build/gpu-real
OUT=${OUT:?set OUT to a directory}
DEB=/tmp/kdl-rt-$MODE
# Emptied either way: libs() puts $DEB's LLVM first, and an earlier call's
# unpacking must not stand in for KDL_LLVM22_LIBDIR's.
rm -rf "$DEB" && mkdir -p "$DEB"
# KDL_LLVM22_LIBDIR: a folder that already holds .deb/22's libraries (the
# check-offload toolchain unpacked from the same .deb files, when both
# harnesses share one device call), instead of unpacking .deb/22.
if [ "$MODE" = 22 ] && [ -n "${KDL_LLVM22_LIBDIR:-}" ]; then
  SYS=$KDL_LLVM22_LIBDIR
else
  kdl_unpack .deb/"$MODE" "$DEB"
  SYS="$DEB/usr/lib/x86_64-linux-gnu"
fi
kdl_device >"$OUT/device-$MODE.txt"
cat "$B/VERSION" "$B/lib/COMMITS" >"$OUT/harness-$MODE.txt" 2>/dev/null || true
[ "$MODE" = 22 ] && cp "$B/lib/SERIES" "$OUT/series-22.txt"
[ "$MODE" = 22 ] && [ -f "$B/lib/PREVIOUS" ] && cp "$B/lib/PREVIOUS" "$OUT/previous-22.txt"
IMAGES=("$B"/img/*.cubin "$B"/img/*.ptx "$B"/img/v1-*.bin "$B"/img/v3-*.bin)

# choice PROBE LIBS OUTFILE: every image in a process of its own, so that a
# crash (a driver reading a malformed image) is recorded, not fatal.
choice() {
  : >"$3"
  for img in "${IMAGES[@]}"; do
    LD_LIBRARY_PATH=$2 "$B/bin/$1" choice "$img" >>"$3" 2>/dev/null && continue
    status=$?
    grep -q "\"file\": \"$img\"" "$3" ||
      echo "{\"file\": \"$img\", \"exit\": $status}" >>"$3"
  done
  cat "$3"
}

if [ "$MODE" = main ]; then
  choice ol_choice-main "$DEB/usr/lib/llvm-24/lib:$SYS" "$OUT/choice-main.jsonl"
  exit 0
fi

libs() { echo "$ROOT/$B/lib/$1:$DEB/usr/lib/llvm-22/lib:$SYS"; }
# omp: the clang-built programs through libomptarget, base and series.
if [ "$MODE" = 22 ] && [ -n "${KDL_OMP_ONLY:-}" ]; then
  for v in base series; do
    for prog in mark mark-90-first; do
      echo "== $prog $v"
      LD_LIBRARY_PATH="$ROOT/$B/omp/$v:$(libs $v)" LIBOMPTARGET_INFO=4 \
        "$B/mark/$prog" 2>&1 || true
    done
  done | tee "$OUT/omp-22.txt"
  exit 0
fi
# KDL_COST_ONLY=1: the cost section alone; KDL_COST_FILES: which images.
SECTIONS=${KDL_SECTIONS:-choice leak growth timer cost}
[ -n "${KDL_COST_ONLY:-}" ] && SECTIONS=cost
has() { [[ " $SECTIONS " == *" $1 "* ]]; }
# The runtimes of the choice section: with an earlier version of the
# backport (prepare.sh's KDL_REAL22_PREVIOUS), that one too.
VARIANTS="base loop series"
[ -d "$B/lib/previous" ] && VARIANTS="base loop previous series"
TIMERS="loop-timer series-timer"
[ -d "$B/lib/previous-timer" ] && TIMERS="loop-timer previous-timer series-timer"
if has choice; then
for v in $VARIANTS; do
  echo "== $v"
  choice ol_choice-22 "$(libs $v)" "$OUT/choice-22-$v.jsonl"
done
# The Init debug line of the series names the entry and why (a Release build
# prints it only with debug output compiled in: recorded whatever it says).
LIBOMPTARGET_DEBUG=1 LD_LIBRARY_PATH=$(libs series) "$B/bin/ol_choice-22" \
  choice "$B/img/v1-80-90-90a.bin" "$B/img/v1-90-relabel90a.bin" \
  "$B/img/v1-80-ptx.bin" "$B/img/v1-ptx-bad90.bin" "$B/img/v1-badjit80-bad90.bin" \
  >"$OUT/debug-series.txt" 2>&1 || true
fi
# What a failed load leaves behind: LOADS loads in one process of the PTX the
# driver refuses, alone and ranked first in a container, each runtime; then
# what loads and unloads leave behind, 22.1.8 as released and the series.
leak() {
  (LD_LIBRARY_PATH=$(libs "$1") "$B/bin/ol_choice-22" leak "$B/img/$2" "${KDL_LEAK_LOADS:-1000}" ||
    echo "{\"file\": \"$B/img/$2\", \"exit\": $?}") |
    sed "s/^{/{\"variant\": \"$1\", /" | tee -a "$OUT/leak-22.jsonl"
}
if has leak; then
  : >"$OUT/leak-22.jsonl"
  for v in base loop series; do
    for f in bad-version-90.ptx v1-ptx-bad90.bin v1-ptx.bin; do leak $v $f; done
  done
  for v in base series; do
    for f in sm_90.cubin v1-90-90a.bin compute_80.ptx v1-ptx.bin; do leak $v $f; done
  done
fi

# Whose is the growth the leak rows show (the series' fallback from the
# refused bad-version-90.ptx to compute_80.ptx: ~30 KiB a load more than a
# PTX load alone)? The same loads through the CUDA driver alone (cu_leak: no
# LLVM; fail: the refused PTX; load: the good PTX loaded and unloaded;
# fallback: both in turn, as the series does them; the sm_90 cubin as a load
# without the JIT; keep: loads never unloaded) and through the series'
# liboffload (ol_choice growth, which counts olDestroyProgram's failures).
# Each process reads its memory after 1, STEPS+1 and 2*STEPS+1 steps,
# malloc_trim(0) first: a leak per step grows both intervals alike. Then the
# driver's two PTX loads again with its JIT cache off (CUDA_CACHE_DISABLE=1).
growth() { # NAME COMMAND...
  local name=$1
  shift
  (timeout 120 "$@" || echo "{\"exit\": $?}") |
    sed "s/^{/{\"run\": \"$name\", /" | tee -a "$OUT/growth-22.jsonl"
}
if has growth; then
  : >"$OUT/growth-22.jsonl"
  G=${KDL_GROWTH_STEPS:-1000}
  I=$B/img
  growth driver "$B/bin/cu_leak" fail "$I/bad-version-90.ptx" "$G"
  growth driver "$B/bin/cu_leak" load "$I/compute_80.ptx" "$G"
  growth driver "$B/bin/cu_leak" fallback "$I/bad-version-90.ptx" "$I/compute_80.ptx" "$G"
  growth driver "$B/bin/cu_leak" load "$I/sm_90.cubin" "$G"
  growth driver "$B/bin/cu_leak" keep "$I/compute_80.ptx" "$G"
  growth driver "$B/bin/cu_leak" keep "$I/sm_90.cubin" "$G"
  for f in v1-ptx-bad90.bin v1-ptx.bin compute_80.ptx bad-version-90.ptx sm_90.cubin; do
    growth series env LD_LIBRARY_PATH="$(libs series)" "$B/bin/ol_choice-22" growth "$I/$f" "$G"
  done
  G=${KDL_GROWTH_NOCACHE_STEPS:-250} # each load JIT-compiles then
  growth driver-nocache env CUDA_CACHE_DISABLE=1 "$B/bin/cu_leak" load "$I/compute_80.ptx" "$G"
  growth driver-nocache env CUDA_CACHE_DISABLE=1 "$B/bin/cu_leak" fallback \
    "$I/bad-version-90.ptx" "$I/compute_80.ptx" "$G"
fi

# The selection's own time: the timer builds write one line per loadBinary
# of a container ("ENTRIES TOTAL_NS PARSE_NS") at exit; one JSON line per
# process holds what the probe printed and those lines.
timed() { # VARIANT FILE MODE PROCESS WARM
  local rec=/tmp/kdl-timer-rec line
  rm -f "$rec"
  line=$( (KDL_SELECTION_TIMER=$rec LD_LIBRARY_PATH=$(libs "$1") \
    "$B/bin/ol_choice-22" cost "$B/img/$2" "$5" || true) | tr '\n' ' ')
  echo "{\"variant\": \"$1\", \"file\": \"$2\", \"mode\": \"$3\", \"process\": $4," \
    "\"result\": [${line// \{/, \{}], \"timer\": [$(awk \
      '{printf "%s[%s, %s, %s]", (NR > 1 ? ", " : ""), $1, $2, $3}' "$rec" 2>/dev/null)]}" \
    >>"$OUT/timer-22.jsonl"
}
if has timer; then
  read -r -a TFILES <<<"${KDL_TIMER_FILES:-cost-1.bin cost-4.bin cost-64.bin cost-64-first.bin cost-64-last.bin}"
  : >"$OUT/timer-22.jsonl"
  # The builds take turns going first, process by process (the order
  # rotates).
  read -r -a ORDER <<<"$TIMERS"
  for i in $(seq 1 "${KDL_TIMER_COLD:-40}"); do
    for f in "${TFILES[@]}"; do
      for v in "${ORDER[@]}"; do timed $v "$f" cold "$i" 0; done
    done
    ORDER=("${ORDER[@]:1}" "${ORDER[0]}")
  done
  # The warm processes take turns too: a build that always ran last would
  # carry any drift of the machine over the run.
  read -r -a ORDER <<<"$TIMERS"
  for i in $(seq 1 "${KDL_TIMER_WARM_PROCS:-3}"); do
    for f in "${TFILES[@]}"; do
      for v in "${ORDER[@]}"; do timed $v "$f" warm "$i" "${KDL_TIMER_WARM:-1000}"; done
    done
    ORDER=("${ORDER[@]:1}" "${ORDER[0]}")
  done
  wc -l "$OUT/timer-22.jsonl"
fi
has cost || exit 0

# The raw cubin is the same code path in both builds: the A/A control. The
# two builds take turns going first, process by process.
read -r -a COST <<<"${KDL_COST_FILES:-sm_90a.cubin cost-1.bin cost-4.bin cost-64.bin}"
: >"$OUT/cost-22.jsonl"
for run in $(seq 1 "$RUNS"); do
  for i in $(seq 1 "$PROCS"); do
    order="loop series"
    [ $((i % 2)) -eq 0 ] && order="series loop"
    for f in "${COST[@]/#/$B/img/}"; do
      for v in $order; do
        line=$( (LD_LIBRARY_PATH=$(libs $v) "$B/bin/ol_choice-22" cost "$f" 30 ||
          true) | tr '\n' ' ')
        echo "{\"run\": $run, \"process\": $i, \"variant\": \"$v\", \"result\": [${line// \{/, \{}]}" \
          >>"$OUT/cost-22.jsonl"
      done
    done
  done
done
wc -l "$OUT/cost-22.jsonl"
