//===- EntryFit.cpp - How well an OffloadBinary entry fits a device -------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "EntryFit.h"
#include "PluginCompat.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace llvm;

/// How the arch fits (getOffloadEntryFit of the patch).
static kdl::EntryFit getEntryFit(StringRef EntryTriple, StringRef Arch,
                                 StringRef DeviceArch,
                                 const Triple &PluginTriple) {
  using kdl::EntryFit;
  // An NVPTX arch-specific target such as sm_90a only runs on the device it
  // names and may use features the plain sm_90 code cannot. The plugin's
  // compute capability check also accepts it on a later minor version, where
  // it does not run.
  if (PluginTriple.isNVPTX() && Arch.ends_with("a"))
    return Arch.drop_back() == DeviceArch ? EntryFit::ArchSpecific
                                          : EntryFit::Mismatch;
  if (Arch == DeviceArch)
    return EntryFit::Exact;
  // An AMDGPU target ID such as gfx90a:xnack+ is code for the device's
  // processor in the modes the plugin has checked against the device's, more
  // specific than code for either mode (gfx90a). The plugin passes the
  // entry's triple as it is; LLVM 22's helper knows main's amdgpu<ver>
  // spelling only as amdgcn.
  if (PluginTriple.isAMDGPU()) {
    std::string Normalized = kdl::parseTriple(EntryTriple).str();
    if (object::areTargetsCompatible({Normalized, Arch},
                                     {Normalized, DeviceArch}))
      return EntryFit::TargetID;
  }
  if (Arch.contains("generic"))
    return EntryFit::Generic;
  return EntryFit::Other;
}

/// The order within a fit (getOffloadEntryOrder of the patch): for NVPTX the
/// compute capability, higher first, as the CUDA driver loads the closest
/// cubin that runs.
static int getEntryOrder(StringRef Arch, const Triple &PluginTriple) {
  unsigned SM = 0;
  if (!PluginTriple.isNVPTX() || !Arch.consume_front("sm_") ||
      Arch.take_while(isDigit).getAsInteger(10, SM))
    return 0;
  return -static_cast<int>(SM);
}

std::optional<uint32_t> kdl::parseVariantPriority(StringRef Value) {
  uint32_t Priority;
  if (Value.getAsInteger(10, Priority))
    return std::nullopt;
  return Priority;
}

kdl::EntryRank kdl::getEntryRank(object::ImageKind Kind, StringRef EntryTriple,
                                 StringRef Arch, StringRef VariantPriority,
                                 StringRef DeviceArch,
                                 const Triple &PluginTriple) {
  EntryRank R;
  R.Fit = getEntryFit(EntryTriple, Arch, DeviceArch, PluginTriple);
  R.Mismatch = R.Fit == EntryFit::Mismatch;
  // Native code comes before code compiled at load, as the CUDA driver
  // prefers a cubin to PTX.
  R.JIT = Kind == object::IMG_Bitcode || Kind == object::IMG_PTX;
  R.Order = getEntryOrder(Arch, PluginTriple);
  // Among entries that rank alike otherwise, the higher variant_priority; a
  // missing or malformed one counts as 0.
  R.Priority = parseVariantPriority(VariantPriority);
  return R;
}

StringRef kdl::getEntryFitName(EntryFit Fit) {
  switch (Fit) {
  case EntryFit::ArchSpecific:
    return "arch-specific";
  case EntryFit::TargetID:
    return "target-id";
  case EntryFit::Exact:
    return "exact";
  case EntryFit::Generic:
    return "generic";
  case EntryFit::Other:
    return "compatible";
  case EntryFit::Mismatch:
    return "mismatch";
  }
  llvm_unreachable("unknown entry fit");
}
