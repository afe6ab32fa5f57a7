//===- ShimImages.h - Device images seen by the kdl shim --------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Where the OffloadBinary of an OpenMP __tgt_device_image is: the entries
// themselves are read by the workspace's one container reader
// (overlay/container/OffloadEntries.h), in place.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_SHIM_SHIMIMAGES_H
#define KDL_SHIM_SHIMIMAGES_H

#include "OffloadEntries.h"

#include "llvm/ADT/StringRef.h"

namespace kdl {
namespace shim {

/// Finds the OffloadBinary that holds the image [\p Begin, \p End) in this
/// process's memory: the layout llvm-offload-wrapper and clang-linker-wrapper
/// emit, where __tgt_device_image points at the image inside the binary. The
/// search stays inside the loaded segment that contains \p Begin. Returns the
/// whole binary, or an empty StringRef when the image is not inside one.
llvm::StringRef findEnclosingBinary(const char *Begin, const char *End);

} // namespace shim
} // namespace kdl

#endif // KDL_SHIM_SHIMIMAGES_H
