#!/usr/bin/env bash
# pack.sh: build ROOT/.carry-nv (ignored via .git/info/exclude: /.carry-nv/)
# for the device runs of run-check.sh: upstream's check-offload nvptx64 suites
# with the 22.1.8 tree's standalone builds, base and series, that the
# real-tree stage (kdl all) left in ROOT/build/real-22. ROOT is this
# workspace; the device unpacks the builds at the same path (their lit
# configurations and RUNPATHs name it).
#   KDL_WORKSPACE: the workspace whose build/real-22 travels (default: this
#     script's); KDL_PACK_DEST: where .carry-nv is written (default
#     WORKSPACE/.carry-nv, ignored through its .git/info/exclude);
#   KDL_PACK_TC: an existing tc.tar.xz (step 1's output) to reuse;
#   KDL_PACK_LIBOMP: a libomp.so built from the same tree with
#     OPENMP_ENABLE_LIBOMPTARGET, carried as omp/libomp.so for run-check.sh's
#     FIXOMP when the build's own lacks __tgt_target_nowait_query.
set -euo pipefail
H=$(cd "$(dirname "$0")" && pwd)
M=${KDL_WORKSPACE:-$(cd "$H/../.." && pwd)}; C=${KDL_PACK_DEST:-$M/.carry-nv}; W=${KDL_PACK_TMP:-/tmp/exp}
mkdir -p $C/bin $C/cfg $W/debs
[ -n "${KDL_PACK_DEST:-}" ] || grep -qx '/.carry-nv/' $M/.git/info/exclude || echo '/.carry-nv/' >>$M/.git/info/exclude
# 1. toolchain: Debian bookworm 1:22.1.8-1~deb12u1 packages, pruned to what the
#    tests run (243 MB -> 50 MB xz).
if [ -n "${KDL_PACK_TC:-}" ]; then
  cp "$KDL_PACK_TC" $C/tc.tar.xz
else
  (cd $W/debs && apt-get download clang-22 libclang-cpp22 libclang-common-22-dev llvm-22-tools clang-tools-22 libomp-22-dev)
  rm -rf $W/tcx && mkdir -p $W/tcx && cd $W/tcx
  for f in $W/debs/*.deb $M/.deb/22/*.deb; do dpkg-deb -x "$f" full; done   # .deb/22: libllvm22, libz3-4
  L=usr/lib/llvm-22; mkdir -p tc/$L/bin tc/$L/lib tc/usr/lib/x86_64-linux-gnu
  for b in clang clang++ clang-22 clang-linker-wrapper clang-nvlink-wrapper nvptx-arch offload-arch FileCheck not lit count split-file; do cp -a full/$L/bin/$b tc/$L/bin/; done
  cp -a full/$L/lib/libclang-cpp.so* full/$L/lib/clang tc/$L/lib/   # clang/22/include has omp.h (libomp-22-dev)
  cp -a full/$L/utils tc/$L/                                         # lit's python package
  (cd tc/$L/lib && ln -sf ../../x86_64-linux-gnu/libLLVM.so.22.1 libLLVM.so.22.1 && ln -sf libLLVM.so.22.1 libLLVM.so && ln -sf libLLVM.so.22.1 libLLVM-22.so)
  cp -a full/usr/lib/x86_64-linux-gnu/{libLLVM.so.22.1,libclang-cpp.so.22.1,libz3.so.4} tc/usr/lib/x86_64-linux-gnu/
  (cd tc && tar -cf - . | xz -9e -T2 >$C/tc.tar.xz)
fi
# llvm-22 tools (not in the .debs above; same Debian build, installed here):
# clang runs llvm-offload-binary; tests run opt; sanitizer tests want llvm-symbolizer.
(cd /usr/lib/llvm-22/bin && cp -L llvm-offload-binary opt llvm-link llvm-profdata llvm-nm llvm-objdump llvm-ar llvm-symbolizer $C/bin/)
# 2. built runtimes (no object files) + test sources at their ROOT paths.
S=$W/bld; rm -rf $S; cd $M
for v in base series; do B=build/real-22/$v
  mkdir -p $S/$B/offload $S/$B/omp/runtime/src $S/$B/devrtl-nvptx64-nvidia-cuda/lib
  cp -a $B/offload/libomptarget.so* $B/offload/libLLVMOffload.so* $B/offload/libomp.so $B/offload/llvm-offload-device-info $B/offload/offload-tblgen $S/$B/offload/
  cp -a $B/omp/runtime/src/*.so* $B/omp/runtime/src/*.h $S/$B/omp/runtime/src/
  cp -a $B/devrtl-nvptx64-nvidia-cuda/lib/nvptx64-nvidia-cuda $S/$B/devrtl-nvptx64-nvidia-cuda/lib/
done
for t in build/real-22/base-src .work/trees/22; do
  mkdir -p $S/$t/offload && cp -a $t/offload/test $t/offload/liboffload $S/$t/offload/
done
(cd $S && tar -cf - . | xz -9 -T2 >$C/bld.tar.xz)
# The build's libomp without the target-nowait query: carry the fixed one.
for v in base series; do
  if ! grep -q __tgt_target_nowait_query build/real-22/$v/omp/runtime/src/libomp.so; then
    if [ -n "${KDL_PACK_LIBOMP:-}" ]; then
      grep -q __tgt_target_nowait_query "$KDL_PACK_LIBOMP"
      mkdir -p $C/omp && cp "$KDL_PACK_LIBOMP" $C/omp/libomp.so
    else
      echo "pack.sh: build/real-22/$v's libomp was built without OPENMP_ENABLE_LIBOMPTARGET: the nowait tests will fail (KDL_PACK_LIBOMP)" >&2
    fi
  fi
done
# 3. lit.site.cfg for nvptx64-nvidia-cuda{,-LTO}, obj root /tmp/nvt/<variant>/<target>.
rm -rf $W/nvt
KDL_WORKSPACE=$M $H/mkcfg.sh base $M/build/real-22/base-src /tmp/nvt sm_90 $W/nvt
KDL_WORKSPACE=$M $H/mkcfg.sh series $M/.work/trees/22 /tmp/nvt sm_90 $W/nvt
echo "$M" >$C/root
cp -a $W/nvt/. $C/cfg/
cp $H/run-check.sh $H/rerun.sh $H/nowait.sh $H/failing.re $H/mkcfg.sh $C/
