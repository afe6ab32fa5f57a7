//===- EntryFit.h - How well an OffloadBinary entry fits a device -*- C++ -*-=//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Series v5's ranking (release-22.x 0003 and 0006 at the git tag
// offload-ranked-selection-v5: utils::getOffloadEntryRank) for a tool that
// runs without a plugin. A stand-in: the applied series (v6) ranks with
// llvm/Object/OffloadTargetRank.cpp, which kdl-select does not build yet.
// It reads the fields v5 read (the entry's ImageKind, "arch" and
// "variant_priority") and the target the user names.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_SELECT_ENTRYFIT_H
#define KDL_SELECT_ENTRYFIT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdint>
#include <optional>
#include <tuple>

namespace kdl {

/// How well the target of an entry fits a device, best first
/// (utils::OffloadEntryFitTy of the patch).
enum class EntryFit {
  /// An NVPTX arch-specific variant of the device's arch (sm_90a on sm_90).
  ArchSpecific,
  /// The device's target (object::areTargetsEquivalent).
  Exact,
  /// The device's processor for any of the modes the device's target ID
  /// names (gfx90a on gfx90a:xnack+).
  Processor,
  /// Another target whose code runs on the device's, such as a generic
  /// processor (gfx9-4-generic on gfx942).
  Generic,
  /// Other code the plugin accepts (sm_80 on sm_86).
  Other,
  /// An NVPTX arch-specific variant of another arch (sm_100a on sm_103): the
  /// plugin's compute capability check accepts it, but it only runs on the
  /// arch it names.
  Mismatch,
};

/// The rank of an entry, lower first (OffloadEntryRankTy of the patch):
/// whether its arch does not run on the device, whether its code is compiled
/// at load time, the fit of its arch, its order within the fit and its
/// variant_priority, higher first (release-22.x 0006; none counts as 0).
struct EntryRank {
  bool Mismatch = false;
  bool JIT = false;
  EntryFit Fit = EntryFit::Other;
  int Order = 0;
  std::optional<uint32_t> Priority;

  bool operator<(const EntryRank &R) const {
    int64_t Negated = -int64_t(Priority.value_or(0));
    int64_t RNegated = -int64_t(R.Priority.value_or(0));
    return std::tie(Mismatch, JIT, Fit, Order, Negated) <
           std::tie(R.Mismatch, R.JIT, R.Fit, R.Order, RNegated);
  }
};

/// OffloadBinary::getVariantPriority of release-22.x 0005 for a value of the
/// key (LLVM 22's OffloadBinary has no such member): a decimal number of at
/// most 32 bits, std::nullopt otherwise.
std::optional<uint32_t> parseVariantPriority(llvm::StringRef Value);

/// The rank of an entry of kind \p Kind for \p Arch with the
/// variant_priority \p VariantPriority on a device whose target is
/// \p DeviceArch ("sm_90", "gfx90a:sramecc+:xnack-"), for a plugin of target
/// \p PluginTriple (only
/// its architecture is read). \p EntryTriple is the entry's "triple", read as
/// kdl::parseTriple reads it.
EntryRank getEntryRank(llvm::object::ImageKind Kind,
                       llvm::StringRef EntryTriple, llvm::StringRef Arch,
                       llvm::StringRef VariantPriority,
                       llvm::StringRef DeviceArch,
                       const llvm::Triple &PluginTriple);

/// The fit's short name: "arch-specific", "exact", "processor", "generic",
/// "compatible" or "mismatch".
llvm::StringRef getEntryFitName(EntryFit Fit);

} // namespace kdl

#endif // KDL_SELECT_ENTRYFIT_H
