//===- OffloadEntries.h - OffloadBinary entries, in place -------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The workspace's one reader of the OffloadBinary container in C++, shared by
// kdl-select, kdl-entries and the fuzz target. Versions 1, 2
// and 3 are read with the rules of kdl/offload/binary.py, the workspace's
// Python reader, so that both accept the same files with the same entries and
// refuse the rest: every offset bounded by its binary; a binary's header,
// entry table, string maps and images never overlap; keys (and version 1
// values) NUL-terminated inside the binary, strings never over structure and
// never more bytes in all than the binary holds (aliased strings); ELF files
// searched for SHT_LLVM_OFFLOADING sections, which must not overlap. The
// whole input is bounded too (ReadLimits): what its compressed binaries
// inflate to in all, and how many binaries, entries and strings it holds,
// checked before anything is allocated. Entries are views of the caller's
// memory: nothing is copied or re-encoded, so the bytes handed on are the
// caller's own; the one exception is a compressed version 3 binary, inflated
// (LLVM's zlib or zstd, its size bounded before anything is allocated) into a
// buffer its entries share and keep alive (Storage). LLVM 22's
// object::OffloadBinary reads version 1 only, and copies the buffer; main's
// reads versions 2 and 3 as well.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_CONTAINER_OFFLOADENTRIES_H
#define KDL_CONTAINER_OFFLOADENTRIES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/Error.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace kdl {

/// The fixed sizes of the format (llvm/Object/OffloadBinary.h).
namespace offload_layout {
/// Magic, Version, Size, EntriesOffset, EntriesCount (EntrySize in v1).
inline constexpr uint64_t HeaderSize = 32;
/// Version 3 adds InflatedSize: the size of the whole binary, header
/// included, before compression; 0 when the binary is not compressed. A
/// compressed binary's stream starts right after the header and ends at
/// Size; its offsets are those of the inflated binary.
inline constexpr uint64_t HeaderSizeV3 = 40;
/// What a compressed binary's InflatedSize may say: everything after the
/// header at most MaxInflateRatio times the stream and never past
/// MaxInflatedSize (the bounds of kdl/offload/inflate.py).
inline constexpr uint64_t MaxInflateRatio = 1024;
inline constexpr uint64_t MaxInflatedSize = uint64_t(1) << 30;
/// The defaults of ReadLimits (kdl/offload/binary.py's Limits).
inline constexpr uint64_t DefaultMaxInflatedTotal = uint64_t(64) << 20;
inline constexpr uint64_t DefaultMaxBinaries = 4096;
inline constexpr uint64_t DefaultMaxStrings = 65536;
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
  /// Where the input came from, as the caller numbers its inputs; -1 when
  /// it does not.
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
  /// The entry's "triple" and "arch", which the rank reads, in the caller's
  /// memory.
  llvm::StringRef Triple;
  llvm::StringRef Arch;
  /// The entry's "variant_priority" and "variant_tag", which kdl-select
  /// reports and the rank does not read, in the caller's memory.
  llvm::StringRef VariantPriority;
  llvm::StringRef VariantTag;
  /// For an entry of a compressed version 3 binary, the inflated binary that
  /// Image and the strings above are views of, shared by the binary's entries:
  /// the views stay valid while a copy of the entry lives. Null when they
  /// are views of the caller's memory.
  std::shared_ptr<const llvm::MemoryBuffer> Storage;
};

/// Bounds for one whole input.
struct ReadLimits {
  /// What all its compressed binaries may inflate to together, in bytes.
  uint64_t MaxInflated = offload_layout::DefaultMaxInflatedTotal;
  /// How many binaries, and separately how many entries, it may hold.
  uint64_t MaxBinaries = offload_layout::DefaultMaxBinaries;
  /// How many string-map entries (key=value pairs) its entries may hold.
  uint64_t MaxStrings = offload_layout::DefaultMaxStrings;
};

/// True if \p Data starts with the OffloadBinary magic bytes.
bool isOffloadBinary(llvm::StringRef Data);

/// Appends the entries of the OffloadBinary (or several concatenated ones:
/// versions 1 and 2 follow each other at Size, version 3 at Size rounded up
/// to 8) in \p Data to \p Out, numbering them from Out.size(). Anything but
/// versions 1 to 3, an offset outside its binary, overlapping structures,
/// aliased strings, a compressed binary that does not inflate to its header's
/// believable InflatedSize, or an input past \p Limits is an error naming the
/// binary's offset.
llvm::Error readOffloadBinaries(llvm::StringRef Data, int Source,
                                std::vector<OffloadEntry> &Out,
                                const ReadLimits &Limits = {});

/// Appends the entries of a file's contents: OffloadBinaries, or an ELF
/// relocatable, executable or shared object whose SHT_LLVM_OFFLOADING
/// sections hold them. Anything else (an empty file included) is an error.
llvm::Error readOffloadFile(llvm::StringRef Data,
                            std::vector<OffloadEntry> &Out,
                            const ReadLimits &Limits = {});

} // namespace kdl

#endif // KDL_CONTAINER_OFFLOADENTRIES_H
