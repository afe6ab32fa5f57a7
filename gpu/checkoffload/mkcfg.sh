#!/usr/bin/env bash
# mkcfg.sh VARIANT SRCROOT OBJBASE ARCH [DEST]: write nvptx64 lit.site.cfg files for one
# variant, derived from the build's own x86_64 lit.site.cfg (same tools, same
# libraries), with what LIBOMPTARGET_FORCE_NVIDIA_TESTS=ON + a detected GPU
# would have set: current target, cuda_test_arch, and the device runtime dir.
# The device runtime (libompdevice.a) of a standalone openmp/device build is not
# in clang's lib/nvptx64-nvidia-cuda (where an in-tree runtimes build puts it),
# so the device linker gets its folder with -Xoffload-linker -L.
set -euo pipefail
V=$1 SRC=$2 OBJ=$3 ARCH=${4:-sm_90} DEST=${5:-$3}  # DEST: where, if not OBJBASE
B=${KDL_WORKSPACE:-$(cd "$(dirname "$0")/../.." && pwd)}/build/real-22/$V
IN=$B/offload/test/x86_64-unknown-linux-gnu/lit.site.cfg
for T in nvptx64-nvidia-cuda nvptx64-nvidia-cuda-LTO; do
  D=$OBJ/$V/$T
  mkdir -p "$DEST/$V/$T"
  sed -e "s|^config.cuda_test_arch = .*|config.cuda_test_arch = \"$ARCH\"|" \
      -e "s|^config.libomptarget_obj_root = .*|config.libomptarget_obj_root = \"$D\"|" \
      -e "s|^config.libomptarget_current_target = .*|config.libomptarget_current_target = \"$T\"|" \
      -e "s|^config.llvm_library_intdir = .*|config.llvm_library_intdir = \"$B/devrtl-nvptx64-nvidia-cuda/lib\"|" \
      -e "s|^config.test_extra_flags = .*|config.test_extra_flags = \"-Xoffload-linker -L$B/devrtl-nvptx64-nvidia-cuda/lib/nvptx64-nvidia-cuda\"|" \
      -e "s|^config.cuda_path = .*|config.cuda_path = \"/usr/local/cuda\"|" \
      -e "s|^config.cuda_libdir = .*|config.cuda_libdir = \"/usr/local/cuda/lib64\"|" \
      -e "s|lit_config.load_config(config, \".*\")|lit_config.load_config(config, \"$SRC/offload/test/lit.cfg\")|" \
      "$IN" >"$DEST/$V/$T/lit.site.cfg"
done
