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

# kdl_unpack_debs: Debian's LLVM 22 runtime from the carried .deb files, on
# a machine without Debian packages; sets LD_LIBRARY_PATH to it.
kdl_unpack_debs() {
  mkdir -p /tmp/kdl-deb
  for f in "$ROOT"/.deb/*.deb; do dpkg-deb -x "$f" /tmp/kdl-deb; done
  export LD_LIBRARY_PATH=/tmp/kdl-deb/usr/lib/llvm-22/lib:/tmp/kdl-deb/usr/lib/x86_64-linux-gnu
}
