#!/usr/bin/env bash
# rerun.sh: the tests of failing.re (every test that failed in a full run of
# the harness before its fixes) again for base and series, -j 8, with the
# fixes run-check.sh applies by default; KDL_RERUN_ENV=1 adds a pass with
# kdl's build's CHECK_OPENMP_ENV. Packs the logs and xunit files into
# $OUT/rerun.tgz.
C=$(cd "$(dirname "$0")" && pwd)
RE=$(cat "$C/failing.re")
J=8 TAG=-rerun bash "$C/run-check.sh" "$RE" "base series" 150
[ -n "${KDL_RERUN_ENV:-}" ] &&
  KDL_CHECK_OPENMP_ENV=1 J=8 TAG=-rerun-env bash "$C/run-check.sh" "$RE" "base series" 150
cd "$OUT" && tar czf rerun.tgz *.log *.xml && rm -f *.log *.xml
