//===- kdl-mlir-translate.cpp - mlir-translate with gpu.runtime_select ----===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mlir-translate's -mlir-to-llvmir, with the overlay's runtime_select
// attribute registered beside the installed dialects and translations.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeSelectCompat.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

using namespace mlir;

int main(int argc, char **argv) {
  TranslateFromMLIRRegistration toLLVMIR(
      "mlir-to-llvmir", "Translate MLIR to LLVMIR",
      [](Operation *op, raw_ostream &output) {
        llvm::LLVMContext context;
        std::unique_ptr<llvm::Module> module =
            translateModuleToLLVMIR(op, context);
        if (!module)
          return failure();
        module->print(output, nullptr);
        return success();
      },
      [](DialectRegistry &registry) {
        registry
            .insert<DLTIDialect, func::FuncDialect, kdl_gpu::KDLGPUDialect>();
        registerAllToLLVMIRTranslations(registry);
        gpu::registerRuntimeSelectLLVMTranslationInterfaceExternalModels(
            registry);
      });
  return failed(mlirTranslateMain(argc, argv, "kdl MLIR translation tool"));
}
