#!/usr/bin/env bash
# Where nvcc marks arch-specific (sm_XXa) and family-specific (sm_XXXf)
# cubins. Compiles one kernel for each target with the machine's nvcc and
# dumps each cubin's e_flags and .nv.compat section (readelf), into OUT
# (default: $OUT, as the device machine gives it). Needs nvcc and readelf;
# no GPU is used. Results: results/gpu/cubin-arch-mark/.
set -euo pipefail
out=${1:-${OUT:?give the output directory}}
mkdir -p "$out"
cd "$out"
printf 'extern "C" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n' > k.cu
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" --version | tail -2 > nvcc-version.txt
for arch in sm_90 sm_90a sm_100 sm_100a sm_100f sm_120 sm_120a; do
  "$nvcc" -cubin -arch="$arch" k.cu -o "k-$arch.cubin"
  {
    echo "== $arch"
    readelf -h "k-$arch.cubin" | grep -i flags
    readelf -x .nv.compat "k-$arch.cubin"
  } >> compat.txt 2>&1
done
rm -f k.cu
