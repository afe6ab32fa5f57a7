//===- EntryFit.cpp - How well an OffloadBinary entry fits a device -------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "EntryFit.h"
#include "PluginCompat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace llvm;

/// Whether code for target \p Arch runs on a device of target \p DeviceArch
/// with the same processor: every mode the code names is the device's
/// (isSameProcessorCompatible of the patch).
static bool isSameProcessorCompatible(StringRef Arch, StringRef DeviceArch) {
  auto [Processor, Modes] = Arch.split(':');
  auto [DeviceProcessor, DeviceModes] = DeviceArch.split(':');
  if (Processor != DeviceProcessor)
    return false;
  SmallVector<StringRef> Wanted, Have;
  Modes.split(Wanted, ':', -1, /*KeepEmpty=*/false);
  DeviceModes.split(Have, ':', -1, /*KeepEmpty=*/false);
  return all_of(Wanted,
                [&](StringRef Mode) { return is_contained(Have, Mode); });
}

/// How the target fits (getOffloadEntryFit of the patch).
static kdl::EntryFit getEntryFit(StringRef EntryTriple, StringRef Arch,
                                 StringRef DeviceArch,
                                 const Triple &PluginTriple) {
  using kdl::EntryFit;
  // An NVPTX arch-specific target such as sm_90a only runs on the arch it
  // names and may use features the plain sm_90 code cannot.
  if (PluginTriple.isNVPTX() && Arch.ends_with("a"))
    return Arch.drop_back() == DeviceArch ? EntryFit::ArchSpecific
                                          : EntryFit::Mismatch;
  if (Arch == DeviceArch)
    return EntryFit::Exact;
  // The plugin passes the entry's triple as it is; LLVM 22's Triple knows
  // main's amdgpu<ver> spelling only through kdl::parseTriple.
  if (kdl::parseTriple(EntryTriple).isAMDGPU() &&
      isSameProcessorCompatible(Arch, DeviceArch))
    return EntryFit::Processor;
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
  case EntryFit::Exact:
    return "exact";
  case EntryFit::Processor:
    return "processor";
  case EntryFit::Generic:
    return "generic";
  case EntryFit::Other:
    return "compatible";
  case EntryFit::Mismatch:
    return "mismatch";
  }
  llvm_unreachable("unknown entry fit");
}
