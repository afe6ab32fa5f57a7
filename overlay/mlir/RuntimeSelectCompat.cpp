//===- RuntimeSelectCompat.cpp - The kdl_gpu stand-in dialect -------------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// See RuntimeSelectCompat.h.
//
//===----------------------------------------------------------------------===//

#include "RuntimeSelectCompat.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;

kdl_gpu::KDLGPUDialect::KDLGPUDialect(MLIRContext *ctx)
    : Dialect(getDialectNamespace(), ctx, TypeID::get<KDLGPUDialect>()) {
  addAttributes<gpu::RuntimeSelectAttr>();
}

Attribute kdl_gpu::KDLGPUDialect::parseAttribute(DialectAsmParser &parser,
                                                 Type type) const {
  StringRef mnemonic;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&mnemonic))
    return {};
  if (mnemonic == gpu::RuntimeSelectAttr::getMnemonic())
    return gpu::RuntimeSelectAttr::get(getContext());
  parser.emitError(loc) << "unknown kdl_gpu attribute '" << mnemonic << "'";
  return {};
}

void kdl_gpu::KDLGPUDialect::printAttribute(Attribute attr,
                                            DialectAsmPrinter &os) const {
  if (isa<gpu::RuntimeSelectAttr>(attr))
    os << gpu::RuntimeSelectAttr::getMnemonic();
}

MLIR_DECLARE_EXPLICIT_TYPE_ID(mlir::kdl_gpu::KDLGPUDialect)
MLIR_DEFINE_EXPLICIT_TYPE_ID(mlir::kdl_gpu::KDLGPUDialect)
