# gpu/common.sh - what the GPU harness scripts share; sourced, not run.

# kdl_record_versions DIR COMPILER: the harness commit, the compiler's and
# ptxas's versions, next to what prepare built.
kdl_record_versions() {
  git -C "$ROOT" describe --always --dirty >"$1/VERSION"
  "$2" --version | head -1 >"$1/CLANG_VERSION"
  ptxas --version | tail -1 >"$1/PTXAS_VERSION"
}

# kdl_device: the GPU's name, driver version and compute capability, one line.
kdl_device() {
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
}

# kdl_unpack FOLDER DEST: every .deb file the call carried in FOLDER,
# unpacked into DEST (emptied first): Debian's libraries on a machine
# without Debian packages.
kdl_unpack() {
  rm -rf "$2" && mkdir -p "$2"
  local f
  for f in "$1"/*.deb; do
    [ -e "$f" ] || { echo "no .deb files in $1 (carry them)" >&2; return 1; }
    dpkg-deb -x "$f" "$2"
  done
}

# kdl_unpack_debs: Debian's LLVM 22 runtime from the .deb files in .deb/;
# sets LD_LIBRARY_PATH to it.
kdl_unpack_debs() {
  kdl_unpack "$ROOT/.deb" /tmp/kdl-deb
  export LD_LIBRARY_PATH=/tmp/kdl-deb/usr/lib/llvm-22/lib:/tmp/kdl-deb/usr/lib/x86_64-linux-gnu
}

# kdl_build_mark DIR LINK...: gpu/kernels/mark.cu built by clang-22 with
# -foffload-via-llvm for sm_90 and sm_90a as clang registers it (DIR/mark),
# and its host object with the two cubins registered sm_90 first by
# llvm-offload-wrapper (DIR/mark-90-first); the cubins, one-image binaries
# and clang's image list beside them. LINK: how both link libomptarget/libomp.
kdl_build_mark() {
  local dir=$1
  shift
  local B=${KDL_LLVM_PREFIX:-/usr/lib/llvm-22}/bin t=nvptx64-nvidia-cuda
  local src=$ROOT/gpu/kernels/mark.cu
  mkdir -p "$dir/lib"
  # Debian ships no OpenMP device runtime (libompdevice); CUDA kernels do
  # not need it, but the device link asks for it: an empty archive.
  "$B/llvm-ar" rcs "$dir/lib/libompdevice.a"
  local flags=(-x cuda -foffload-via-llvm --cuda-path="${CUDA_PATH:-/usr/local/cuda}"
    -Xoffload-linker "-L$dir/lib" -O2)
  "$B/clang++" "${flags[@]}" --offload-arch=sm_90 --offload-arch=sm_90a \
    "$src" -o "$dir/mark" "$@"
  "$B/llvm-objdump" --offloading "$dir/mark" >"$dir/mark.offloading.txt"
  (cd "$dir" && "$B/llvm-offload-binary" mark \
    --image=file=sm_90.cubin,arch=sm_90 --image=file=sm_90a.cubin,arch=sm_90a)
  # One binary per image, as clang-linker-wrapper registers them: the
  # wrapper makes one __tgt_device_image per input file.
  for a in sm_90 sm_90a; do
    "$B/llvm-offload-binary" -o "$dir/$a.bin" \
      "--image=file=$dir/$a.cubin,triple=$t,arch=$a,kind=openmp"
  done
  "$B/clang++" "${flags[@]}" --offload-arch=sm_90 --offload-host-only -c \
    "$src" -o "$dir/host.o"
  "$B/llvm-offload-wrapper" --kind=openmp --triple=x86_64-unknown-linux-gnu \
    -o "$dir/wrap.bc" "$dir/sm_90.bin" "$dir/sm_90a.bin"
  "$B/clang++" -Wno-override-module -c "$dir/wrap.bc" -o "$dir/wrap.o"
  "$B/clang++" "$dir/host.o" "$dir/wrap.o" -o "$dir/mark-90-first" "$@"
}
