//===- OffloadEntries.h - OffloadBinary entries, in place -------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The workspace's one reader of the OffloadBinary container in C++, shared by
// the shim (what the runtime is given) and kdl-select (a file). Versions 1
// and 2 are read, each offset bounded by the buffer; entries are views of the
// caller's memory: nothing is copied or re-encoded, so the bytes handed on
// are the caller's own. LLVM 22's object::OffloadBinary reads version 1
// only, and copies the buffer; main's reads version 2 as well.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_CONTAINER_OFFLOADENTRIES_H
#define KDL_CONTAINER_OFFLOADENTRIES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Frontend/Offloading/ImageRanking.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace kdl {

/// The fixed sizes of the format (llvm/Object/OffloadBinary.h).
namespace offload_layout {
/// Magic, Version, Size, EntriesOffset, EntriesCount (EntrySize in v1).
inline constexpr uint64_t HeaderSize = 32;
/// ImageKind, OffloadKind, Flags, StringOffset, NumStrings, ImageOffset,
/// ImageSize.
inline constexpr uint64_t EntrySize = 40;
} // namespace offload_layout

/// One image the runtime could load: an entry of an OffloadBinary, or a raw
/// image (no triple, no keys).
struct OffloadEntry {
  /// Number of the image, in the order the images appear in the input;
  /// entries of one binary in their stored order.
  unsigned Index = 0;
  /// Where the input came from, for the caller (the shim: the
  /// __tgt_device_image; -1 otherwise).
  int Source = -1;
  /// The executable bytes, in the caller's memory.
  llvm::StringRef Image;
  /// Set when the image is an entry of an OffloadBinary.
  bool InBinary = false;
  /// The entry's header fields.
  llvm::object::ImageKind ImageKind = llvm::object::IMG_None;
  llvm::object::OffloadKind OffloadKind = llvm::object::OFK_None;
  uint32_t Flags = 0;
  /// Set for an OIF_Metadata entry of a version 2 binary (no image).
  bool MetadataOnly = false;
  /// The entry's "triple", in the caller's memory.
  llvm::StringRef Triple;
  /// The entry's "arch" and selection keys, in the caller's memory.
  llvm::offloading::ImageKeys Keys;
};

/// True if \p Data starts with the OffloadBinary magic bytes.
bool isOffloadBinary(llvm::StringRef Data);

/// Appends the entries of the OffloadBinary (or several concatenated ones,
/// each starting at 8-byte alignment) in \p Data to \p Out, numbering them
/// from Out.size(). Anything but versions 1 and 2, or an offset outside the
/// buffer, is an error naming the binary's offset.
llvm::Error readOffloadBinaries(llvm::StringRef Data, int Source,
                                std::vector<OffloadEntry> &Out);

/// Appends the entries of a file's contents: OffloadBinaries, or an object
/// file whose .llvm.offloading sections hold them.
llvm::Error readOffloadFile(llvm::StringRef Data,
                            std::vector<OffloadEntry> &Out);

} // namespace kdl

#endif // KDL_CONTAINER_OFFLOADENTRIES_H
