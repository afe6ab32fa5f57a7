//===- kdl-mlir-opt.cpp - mlir-opt with gpu.runtime_select ----------------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mlir-opt (every dialect, extension and pass of the installed MLIR), with
// the stand-in runtime_select attribute registered: the proposals' round-trip
// tests.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeSelectCompat.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

using namespace mlir;

int main(int argc, char **argv) {
  registerAllPasses();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<kdl_gpu::KDLGPUDialect>();
  gpu::registerRuntimeSelectLLVMTranslationInterfaceExternalModels(registry);
  return asMainReturnCode(
      MlirOptMain(argc, argv, "kdl MLIR optimizer driver", registry));
}
