#!/usr/bin/env bash
# rerun.sh: the tests that failed in the full run, again for base and series:
# with the CUDA "%clang++" and llvm-symbolizer fixes, -j 8, with and without
# CHECK_OPENMP_ENV. Packs the logs and xunit files into $OUT/rerun.tgz.
C=$(cd "$(dirname "$0")" && pwd)
RE=$(cat "$C/failing.re")
FIXCXX=1 FIXSYM=1 J=8 TAG=-rerun bash "$C/run-check.sh" "$RE" "base series" 150
FIXCXX=1 FIXSYM=1 J=8 TAG=-rerun-noenv NOENV=1 bash "$C/run-check.sh" "$RE" "base series" 150
cd "$OUT" && tar czf rerun.tgz *.log *.xml && rm -f *.log *.xml
