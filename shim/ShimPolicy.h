//===- ShimPolicy.h - The kdl shim's image choice ---------------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The choice itself is the series' library
// (llvm/Frontend/Offloading/ImageRanking.h), over the images the device's
// plugin accepts (overlay/compat/PluginCompat.h): this file only adapts the
// shim's candidates to it, applies the user's tag override and words the one
// line per device that explains the choice.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_SHIM_SHIMPOLICY_H
#define KDL_SHIM_SHIMPOLICY_H

#include "ShimDevices.h"
#include "ShimImages.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <string>

/// Marks the entry points the shim interposes (everything else is hidden).
#define KDL_SHIM_EXPORT __attribute__((visibility("default")))

namespace kdl {
namespace shim {

struct Selection {
  /// The chosen candidate (its OffloadEntry::Index), if any.
  std::optional<unsigned> Selected;
  /// "image selection for DEVICE: image I (...); image J: ..." (no prefix).
  std::string Report;
  /// Set when nothing was chosen: "no compatible image for DEVICE; ...".
  std::string Error;
};

/// Ranks \p Candidates for \p Device with the series' library. With \p Tag,
/// only images whose variant_tag equals it are eligible. The report text is
/// built only when \p Report is set (the error text always).
Selection selectImage(const DeviceInfo &Device,
                      llvm::ArrayRef<const OffloadEntry *> Candidates,
                      std::optional<llvm::StringRef> Tag, bool Report);

/// The device family \p C is built for: from the triple of its OffloadBinary
/// entry, or from the ELF machine of a raw image.
DeviceFamily familyOf(const OffloadEntry &C);

/// KDL_INFO=1 (or a non-zero LIBOMPTARGET_INFO when \p OpenMP).
bool infoEnabled(bool OpenMP);

/// The KDL_IMAGE_TAG override, if set and not empty.
std::optional<std::string> tagOverride();

/// Writes "kdl: LINE" to stderr.
void printLine(const llvm::Twine &Line);

} // namespace shim
} // namespace kdl

#endif // KDL_SHIM_SHIMPOLICY_H
