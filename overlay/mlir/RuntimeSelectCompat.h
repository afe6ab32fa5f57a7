//===- RuntimeSelectCompat.h - The kdl_gpu stand-in dialect -----*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the proposals' RuntimeSelectAttr.cpp needs and main's packaged MLIR
// lacks (kdl/build/mlirmain.py compiles it in the sid root). It is
// force-included (-include) into that file only; the file itself is compiled
// as the patch has it.
//
// - mlir::gpu::RuntimeSelectAttr is generated from CompilationAttrs.td in the
//   patched tree. An installed GPU dialect cannot gain attributes, so here it
//   belongs to a small dialect, `kdl_gpu`, and is spelled
//   `#kdl_gpu.runtime_select` in the lit tests.
// - The registration function the patch declares in GPUToLLVMIRTranslation.h.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_OVERLAY_MLIR_RUNTIMESELECTCOMPAT_H
#define KDL_OVERLAY_MLIR_RUNTIMESELECTCOMPAT_H

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/MLIRContext.h"

namespace mlir {
class DialectRegistry;

namespace kdl_gpu {
/// The dialect that owns the overlay's runtime_select attribute.
class KDLGPUDialect : public Dialect {
public:
  explicit KDLGPUDialect(MLIRContext *ctx);
  static constexpr StringLiteral getDialectNamespace() { return "kdl_gpu"; }
  Attribute parseAttribute(DialectAsmParser &parser, Type type) const override;
  void printAttribute(Attribute attr, DialectAsmPrinter &os) const override;
};
} // namespace kdl_gpu

namespace gpu {
class RuntimeSelectAttr
    : public Attribute::AttrBase<RuntimeSelectAttr, Attribute, AttributeStorage,
                                 OffloadingTranslationAttrTrait> {
public:
  using Base::Base;
  static constexpr StringLiteral name = "kdl_gpu.runtime_select";
  static constexpr StringLiteral getMnemonic() { return "runtime_select"; }
  static RuntimeSelectAttr get(MLIRContext *ctx) { return Base::get(ctx); }

  /// The GPU dialect's extension attaches the interface; the attribute's own
  /// dialect has to be loaded first.
  template <typename... Models> static void attachInterface(MLIRContext &ctx) {
    ctx.getOrLoadDialect<kdl_gpu::KDLGPUDialect>();
    Base::template attachInterface<Models...>(ctx);
  }
};

void registerRuntimeSelectLLVMTranslationInterfaceExternalModels(
    DialectRegistry &registry);
} // namespace gpu
} // namespace mlir

#endif // KDL_OVERLAY_MLIR_RUNTIMESELECTCOMPAT_H
