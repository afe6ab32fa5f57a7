//===- ShimImages.h - Device images seen by the kdl shim --------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Turns what the runtime is given (an OpenMP __tgt_device_image, or the buffer
// passed to olCreateProgram) into a numbered list of candidate images, each
// with the selection keys of its OffloadBinary entry. Entries are read in
// place: images, triples and keys are views of the caller's memory, nothing
// is copied or re-encoded, and the bytes handed to the runtime are the
// caller's own.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_SHIM_SHIMIMAGES_H
#define KDL_SHIM_SHIMIMAGES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Frontend/Offloading/ImageRanking.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace kdl {
namespace shim {

/// One image the runtime could load.
struct Candidate {
  /// Number of the image: in the order the images appear in the descriptor
  /// (or buffer), entries of one binary in their stored order.
  unsigned Index = 0;
  /// The __tgt_device_image it came from (-1 for an olCreateProgram buffer).
  int DescImage = -1;
  /// The executable bytes, in the caller's memory.
  llvm::StringRef Image;
  /// Set when the image is an entry of an OffloadBinary; a raw image has no
  /// triple and no keys.
  bool InBinary = false;
  /// The entry's "triple", in the caller's memory.
  llvm::StringRef Triple;
  /// The entry's selection keys, in the caller's memory.
  llvm::offloading::ImageKeys Keys;
  /// Set for an OIF_Metadata entry of a version 2 binary (no image).
  bool MetadataOnly = false;
};

/// True if \p Data starts with the OffloadBinary magic bytes.
bool isOffloadBinary(llvm::StringRef Data);

/// Appends the images of the OffloadBinary (or several concatenated ones) in
/// \p Data to \p Out, numbering them from Out.size(). Versions 1 and 2 are
/// read; anything else is an error.
llvm::Error readBinaries(llvm::StringRef Data, int DescImage,
                         std::vector<Candidate> &Out);

/// Finds the OffloadBinary that holds the image [\p Begin, \p End) in this
/// process's memory: the layout llvm-offload-wrapper and clang-linker-wrapper
/// emit, where __tgt_device_image points at the image inside the binary. The
/// search stays inside the loaded segment that contains \p Begin. Returns the
/// whole binary, or an empty StringRef when the image is not inside one.
llvm::StringRef findEnclosingBinary(const char *Begin, const char *End);

} // namespace shim
} // namespace kdl

#endif // KDL_SHIM_SHIMIMAGES_H
