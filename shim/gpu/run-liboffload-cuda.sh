#!/bin/bash
# The shim in front of LLVM 22's liboffload on a CUDA GPU (not part of CI).
#
#   run-liboffload-cuda.sh CARRY
#
# CARRY holds Debian's libllvm22, liboffload-22 and libz3-4 .deb files and the
# overlay's libkdl-offload-shim.so and kdl-ol-probe, built on x86-64 Debian.
# Needs nvcc and a CUDA GPU of compute capability 9.0 (the expected choice is
# the sm_90 cubin). Run from the repository root (pack.py imports kdl).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
C=$(cd "$1" && pwd)
mkdir -p /tmp/llvm && for d in "$C"/*.deb; do dpkg-deb -x "$d" /tmp/llvm; done
export LD_LIBRARY_PATH=/tmp/llvm/usr/lib/llvm-22/lib:/tmp/llvm/usr/lib/x86_64-linux-gnu
nvidia-smi -L; nvcc --version | tail -2
W=$(mktemp -d)
for a in 75 80 90; do
  nvcc -cubin -arch=sm_$a -DVARIANT="\"sm_$a cubin\"" "$HERE/kernel.cu" -o "$W/k$a.cubin" || exit 1
done
nvcc -ptx -arch=compute_75 -DVARIANT='"compute_75 ptx"' "$HERE/kernel.cu" -o "$W/k75.ptx" || exit 1
(cd "$W" && PYTHONPATH="$ROOT" python3 "$HERE/pack.py") || exit 1
P=$C/kdl-ol-probe; S=$C/libkdl-offload-shim.so
for f in k90.cubin multi-v1.bin; do
  echo "=== plain LLVM 22: $f"; "$P" "$W/$f" kdl_variant 2>&1; echo "rc=$?"
done
for f in multi-v1.bin multi-v2.bin; do
  echo "=== shim, KDL_INFO=1: $f"; LD_PRELOAD=$S KDL_INFO=1 "$P" "$W/$f" kdl_variant 2>&1; echo "rc=$?"
done
echo "=== shim, KDL_IMAGE_TAG=ptx"
LD_PRELOAD=$S KDL_IMAGE_TAG=ptx KDL_INFO=1 "$P" "$W/multi-v1.bin" kdl_variant 2>&1; echo "rc=$?"
echo "=== shim, KDL_IMAGE_TAG=nope"
LD_PRELOAD=$S KDL_IMAGE_TAG=nope "$P" "$W/multi-v1.bin" kdl_variant 2>&1; echo "rc=$?"
echo "=== plain, no compatible image"; "$P" "$W/old-only.bin" kdl_variant 2>&1; echo "rc=$?"
echo "=== shim, no compatible image"
LD_PRELOAD=$S KDL_INFO=1 "$P" "$W/old-only.bin" kdl_variant 2>&1; echo "rc=$?"
