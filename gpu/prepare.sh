#!/usr/bin/env bash
# gpu/prepare.sh - build everything the GPU harness carries, on a machine
# WITHOUT a GPU (this one): the GEMM images (nvcc), the OffloadBinaries packed
# from them (LLVM 22's llvm-offload-binary; one version 2 binary through
# kdl.offload.writer), the preloadable shim (shim/) when the overlay build has it, and the harness version.
# Output: build/gpu/ (ignored by git; the device call carries it).
#
#   bash gpu/prepare.sh            then, on the device:  bash gpu/run.sh CONFIG
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/build/gpu
LLVM=${KDL_LLVM_PREFIX:-/usr/lib/llvm-22}
NVCC=${NVCC:-nvcc}
PY=${PYTHON:-$ROOT/.venv/bin/python}
PACK=$LLVM/bin/llvm-offload-binary
SRC=$ROOT/gpu/kernels/gemm.cu
TRIPLE=nvptx64-nvidia-cuda

rm -rf "$OUT/img" "$OUT/ob" "$OUT/bin" "$OUT/lib"
mkdir -p "$OUT/img" "$OUT/ob" "$OUT/bin" "$OUT/lib"

# name  nvcc target flags                               marker
IMAGES=(
  "sm_80     -cubin -gencode=arch=compute_80,code=sm_80     1"
  "compute_80 -ptx  -arch=compute_80                          2"
  "sm_90     -cubin -gencode=arch=compute_90,code=sm_90     3"
  "sm_90a    -cubin -gencode=arch=compute_90a,code=sm_90a   4"
  "sm_86     -cubin -gencode=arch=compute_86,code=sm_86     5"
  "sm_89     -cubin -gencode=arch=compute_89,code=sm_89     6"
  "sm_100    -cubin -gencode=arch=compute_100,code=sm_100   7"
  "sm_120    -cubin -gencode=arch=compute_120,code=sm_120   8"
  "compute_90 -ptx  -arch=compute_90                          9"
)
for line in "${IMAGES[@]}"; do
  read -r name kind target marker <<<"$line"
  ext=cubin; [ "$kind" = -ptx ] && ext=ptx
  "$NVCC" "$kind" "$target" -O3 -DKDL_VARIANT="$marker" -o "$OUT/img/gemm.$name.$ext" "$SRC"
  # llvm-offload-binary infers the image kind from the extension: .s = PTX.
  [ "$ext" = ptx ] && cp "$OUT/img/gemm.$name.ptx" "$OUT/img/gemm.$name.s"
done
"$NVCC" --version | tail -2 | head -1 >"$OUT/img/NVCC_VERSION"

# --image argument for one image: arch is the sm_XY the image needs (PTX:
# the compute_XY it was generated for, written sm_XY as clang does).
img() {
  local name=$1 extra=${2:-}
  local file=$OUT/img/gemm.$name.cubin arch=$name
  case $name in compute_*) file=$OUT/img/gemm.$name.s; arch=sm_${name#compute_} ;; esac
  echo "--image=file=$file,triple=$TRIPLE,arch=$arch,kind=cuda,variant_tag=$name$extra"
}
pack() { # pack OUTNAME NAME...
  local out=$1; shift
  local args=()
  for n in "$@"; do args+=("$(img "$n")"); done
  "$PACK" -o "$OUT/ob/$out" "${args[@]}"
}
# Orders a packager could plausibly produce (first four: the four images of
# the RFC table), plus the two edge cases.
pack single-sm_90.bin sm_90
pack order-ascending.bin sm_80 sm_90 sm_90a compute_80
pack order-ptx-first.bin compute_80 sm_80 sm_90 sm_90a
pack order-descending.bin sm_90a sm_90 sm_80 compute_80
pack order-generic-first.bin sm_80 compute_80 sm_90 sm_90a
# The ascending order again, with the kdl key that says sm_90a is preferred.
"$PACK" -o "$OUT/ob/order-ascending-prio.bin" "$(img sm_80)" "$(img sm_90)" \
  "$(img sm_90a ,variant_priority=1)" "$(img compute_80)"
pack only-ptx-fits.bin sm_80 sm_86 compute_80
pack nothing-fits.bin sm_80 sm_86
# Selection benchmark inputs: 1, 8 and 64 real images; the device's own
# (sm_90) image sits last, so first-wins scans them all too.
pack sel-1.bin sm_90
pack sel-8.bin sm_80 sm_86 sm_89 compute_80 sm_100 sm_120 sm_90a sm_90
args=()
for tag in t0 t1 t2 t3 t4 t5 t6 t7; do
  for n in sm_80 sm_86 sm_89 compute_80 sm_100 sm_120 compute_90 sm_90a; do
    [ "$tag" = t7 ] && [ "$n" = sm_90a ] && n=sm_90
    args+=("$(img "$n" ",tile=$tag")")
  done
done
"$PACK" -o "$OUT/ob/sel-64.bin" "${args[@]}"

# The same ascending order as ONE version 2 binary (upstream main's format),
# written by the package's writer: the shim must read it; LLVM 22 cannot.
"$PY" "$ROOT/gpu/pack_v2.py" "$OUT/ob/order-ascending.bin" "$OUT/ob/order-ascending.v2.bin"

# What the series' C++ library selects for the device, per file (on the CPU):
# one kdl-select --batch for every file; an answer with status 2 (a file it
# cannot read) stops the preparation.
SELECT=$ROOT/build/overlay/bin/kdl-select
: >"$OUT/ob/expected.jsonl"
if [ -x "$SELECT" ]; then
  FILES=("$OUT"/ob/*.bin)
  for f in "${FILES[@]}"; do
    printf '{"device": "triple=%s,arch=sm_90", "file": "%s"}\n' "$TRIPLE" "$f"
  done | "$SELECT" --batch | "$PY" -c '
import json, os, sys
for path, line in zip(sys.argv[1:], sys.stdin, strict=True):
    doc = json.loads(line)
    if doc.pop("status") == 2:
        raise SystemExit(f"kdl-select: {path}: {doc['"'"'error'"'"']}")
    doc.pop("error")
    print(json.dumps({"file": os.path.basename(path), "kdl_select": doc}))
' "${FILES[@]}" >"$OUT/ob/expected.jsonl"
fi

# The shim (LD_PRELOAD in front of liboffload), if the overlay build made it.
SHIM=$(find "$ROOT/build/overlay" -name 'libkdl*shim*.so' -o -name 'libKDL*Shim*.so' 2>/dev/null | head -1 || true)
if [ -n "$SHIM" ]; then
  cp "$SHIM" "$OUT/lib/"
  basename "$SHIM" >"$OUT/lib/SHIM"
fi

# Harness version and LLVM version, recorded here (the device gets no .git).
# "-dirty" only when what the harness runs differs from the commit (other
# people's edits elsewhere in the tree do not count).
(
  cd "$ROOT"
  v=$(git describe --always --tags 2>/dev/null || echo unknown)
  [ -n "$(git status --porcelain --untracked-files=no -- gpu overlay patches 2>/dev/null)" ] && v=$v-dirty
  echo "$v"
) >"$OUT/VERSION"
"$LLVM/bin/llvm-config" --version >"$OUT/LLVM_VERSION"
du -sh "$OUT" "$ROOT/.deb" 2>/dev/null || true
