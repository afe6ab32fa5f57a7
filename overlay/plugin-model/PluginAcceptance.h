//===- PluginAcceptance.h - A model of the plugins' acceptance --*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A model of which images the offload plugins accept for a device, with the
// series' changes, for the tools that run without a device (kdl-select, the
// fuzzer): GenericPluginTy::isPluginCompatible / isDeviceCompatible (an ELF
// image of the plugin's machine that the plugin's isELFCompatible accepts
// for the device; a bitcode image for the plugin's architecture; the CUDA
// plugin's isImageCompatible, #185663's hook, for anything else) with the
// CUDA and AMDGPU plugins' isELFCompatible rules. The series' changes it
// follows:
//
//   0003 (release-22.x 0003): an arch-specific cubin (sm_XYa, as
//        tryGetCPUName names it) runs only on compute capability X.Y;
//   0007 (release-22.x 0014): PTX text is accepted where the rank of PTX for
//        its .target on the device says it runs, or where the NVPTX target
//        parser does not know that target (left to the driver).
//
// It is a model, not the plugins' code: their checks query the device
// (cuDeviceGetAttribute, the HSA agent's ISAs), which the real trees cannot
// do without one, so the rules are restated here on a described device.
// tests/offload/test_plugin_model.py checks that it restates the series'
// plugin text where it can: the arch-specific rule and the PTX acceptance.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_PLUGINMODEL_PLUGINACCEPTANCE_H
#define KDL_PLUGINMODEL_PLUGINACCEPTANCE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/TargetParser/Triple.h"

#include <string>
#include <vector>

namespace kdl {

/// \p Name as a triple of this LLVM 22 build, main's AMDGPU spellings
/// included. Main names the architecture `amdgpu`, with a subarch per GFX
/// version: clang-24 writes `amdgpu9.42-amd-amdhsa` for gfx942 and
/// `amdgpu9.0a-amd-amdhsa` for gfx90a. LLVM 22 knows that architecture only
/// as `amdgcn`; the subarch is dropped because the processor is the entry's
/// `arch` (or the code object's e_flags), which is what the checks read.
llvm::Triple parseTriple(llvm::StringRef Name);

/// A device as its plugin describes it.
struct PluginDevice {
  llvm::Triple Triple;
  /// getComputeUnitKind(): "sm_90", "gfx942"; empty for a host device.
  std::string Arch;
  /// The AMDGPU plugin's target ID of the agent ("gfx90a:sramecc+:xnack-");
  /// the processor alone when the modes are not known.
  std::string TargetID;
  /// Further ISAs the agent reports (hsa_agent_iterate_isas), such as the
  /// generic processor of its family ("gfx9-4-generic:sramecc+:xnack-"); the
  /// plugin accepts a code object that any of them runs.
  std::vector<std::string> OtherISAs;
};

/// Whether the plugin of \p Device, with the series, loads \p Image on it;
/// when it does not, \p Why says why in one line.
bool pluginAccepts(llvm::StringRef Image, const PluginDevice &Device,
                   std::string &Why);

} // namespace kdl

#endif // KDL_PLUGINMODEL_PLUGINACCEPTANCE_H
