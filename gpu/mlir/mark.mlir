// One kernel for gpu/runtime_select.sh: it stores MARKER into the device
// global kdl_marker. The script substitutes MARKER per target (80 for
// sm_80, 90 for sm_90, 91 for sm_90a, 8 for the sm_80 PTX) so that the run
// shows which object the runtime loaded, and compiles each copy with
// gpu-module-to-binary.
module attributes {gpu.container_module} {
  gpu.module @kernels [TARGET] {
    llvm.mlir.global external @kdl_marker(0 : i32) {addr_space = 1 : i32} : i32
    llvm.func @mark() attributes {gpu.kernel, nvvm.kernel} {
      %c = llvm.mlir.constant(MARKER : i32) : i32
      %p = llvm.mlir.addressof @kdl_marker : !llvm.ptr<1>
      llvm.store %c, %p : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
