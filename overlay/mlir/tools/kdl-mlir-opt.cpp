//===- kdl-mlir-opt.cpp - mlir-opt with gpu.runtime_select ----------------===//
//
// An mlir-opt for the series' round-trip tests: the GPU, LLVM, NVVM and ROCDL
// dialects and the overlay's runtime_select attribute.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeSelectCompat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

using namespace mlir;

int main(int argc, char **argv) {
  DialectRegistry registry;
  registry
      .insert<func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
              NVVM::NVVMDialect, ROCDL::ROCDLDialect, kdl_gpu::KDLGPUDialect>();
  return asMainReturnCode(
      MlirOptMain(argc, argv, "kdl MLIR optimizer driver", registry));
}
