#!/usr/bin/env bash
# nowait.sh [RUNS [LIMIT]]: on the GPU machine, after run-check.sh has run
# the two nowait tests (offloading/target_depend_nowait.cpp,
# offloading/taskloop_offload_nowait.cpp) of the nvptx64-nvidia-cuda suite:
# their programs again, once with each variant's libomp as the build made it
# (/tmp/nv/omp-orig/VARIANT, kept by run-check.sh's FIXOMP) and RUNS times
# (default 3) with the one built with OPENMP_ENABLE_LIBOMPTARGET, LIMIT
# seconds at most a run (default 10; the build's libomp ran them for 10 to
# 146 s before they failed).
# LIBOMPTARGET_INFO=16 prints a line per kernel launch: the test launches
# two kernels. One JSON line per run in $OUT/nowait.jsonl.
set -uo pipefail
OUT=${OUT:?}
RUNS=${1:-3}
LIMIT=${2:-10}
N=/tmp/nv
export LD_LIBRARY_PATH=$N/tc/usr/lib/x86_64-linux-gnu
export OMP_TARGET_OFFLOAD=MANDATORY
: >"$OUT/nowait.jsonl"
for v in base series; do
  [ -e $N/omp-orig/$v/libomp.so ] || { echo "nowait.sh: no $N/omp-orig/$v (run-check.sh with FIXOMP)"; continue; }
  for t in target_depend_nowait.cpp taskloop_offload_nowait.cpp; do
    prog=/tmp/nvt/$v/nvptx64-nvidia-cuda/offloading/Output/$t.tmp
    [ -x "$prog" ] || { echo "nowait.sh: no $prog"; continue; }
    for omp in build fixed; do
      lib=""
      [ $omp = build ] && lib=$N/omp-orig/$v
      n=$RUNS
      [ $omp = build ] && n=1
      for i in $(seq 1 "$n"); do
        start=$(date +%s%N)
        LD_LIBRARY_PATH=${lib:+$lib:}$LD_LIBRARY_PATH LIBOMPTARGET_INFO=16 \
          timeout "$LIMIT" "$prog" >/tmp/nowait.out 2>/tmp/nowait.err
        rc=$?
        ms=$(( ($(date +%s%N) - start) / 1000000 ))
        launches=$(grep -c "Launching kernel" /tmp/nowait.err)
        out=$(grep -v "Launching kernel" /tmp/nowait.out /tmp/nowait.err | cut -d: -f2- | head -2 | tr '\n"\\' '  /' | cut -c1-300)
        lomp=$(LD_LIBRARY_PATH=${lib:+$lib:}$LD_LIBRARY_PATH ldd "$prog" | awk '/libomp.so/{print $3}')
        echo "{\"variant\": \"$v\", \"test\": \"offloading/$t\", \"libomp\": \"$omp\", \"run\": $i," \
          "\"libomp_path\": \"$lomp\", \"exit\": $rc, \"ms\": $ms, \"kernel_launches\": $launches," \
          "\"output\": \"$out\"}" | tee -a "$OUT/nowait.jsonl"
      done
    done
  done
done
