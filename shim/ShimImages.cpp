//===- ShimImages.cpp - Device images seen by the kdl shim ------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ShimImages.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>
#include <link.h>

using namespace llvm;
using namespace llvm::object;

namespace kdl {
namespace shim {

static constexpr uint8_t Magic[4] = {0x10, 0xFF, 0x10, 0xAD};
// Version 1: Magic, Version, Size, EntryOffset, EntrySize (one entry).
// Version 2: Magic, Version, Size, EntriesOffset, EntriesCount.
static constexpr uint64_t HeaderSize = 32;
// Entry (all versions): u16 ImageKind, u16 OffloadKind, u32 Flags,
// u64 StringOffset, u64 NumStrings, u64 ImageOffset, u64 ImageSize.
static constexpr uint64_t EntrySize = 40;
static constexpr uint64_t StringEntrySizeV1 = 16;
static constexpr uint64_t StringEntrySizeV2 = 24;

static uint64_t read64(const char *P) { return support::endian::read64le(P); }
static uint32_t read32(const char *P) { return support::endian::read32le(P); }
static uint16_t read16(const char *P) { return support::endian::read16le(P); }

bool isOffloadBinary(StringRef Data) {
  return Data.size() >= sizeof(Magic) &&
         std::memcmp(Data.data(), Magic, sizeof(Magic)) == 0;
}

static Error malformed(uint64_t Offset, const Twine &What) {
  return createStringError(inconvertibleErrorCode(),
                           "malformed OffloadBinary at offset " +
                               Twine(Offset) + ": " + What);
}

/// Sets the key \p Key of \p C to \p Value if it is one the ranking reads.
static void setKey(Candidate &C, StringRef Key, StringRef Value) {
  using namespace llvm::offloading;
  if (Key == "triple")
    C.Triple = Value;
  else if (Key == "arch")
    C.Keys.Arch = Value;
  else if (Key == image_key::VariantPriority)
    C.Keys.VariantPriority = Value;
  else if (Key == image_key::VariantTag)
    C.Keys.VariantTag = Value;
  else if (Key == image_key::MinSM)
    C.Keys.MinSM = Value;
  else if (Key == image_key::MinGFX)
    C.Keys.MinGFX = Value;
  else if (Key == image_key::RequiresFeatures)
    C.Keys.RequiresFeatures = Value;
}

/// Reads entry \p I of the binary \p Bin: the entry table starts at
/// \p EntriesOffset, string entries are \p StringEntrySize bytes (16 in
/// version 1: key and value offsets, the value ends at a NUL; 24 in
/// version 2: with the value's size).
static Error readEntry(StringRef Bin, uint64_t Base, uint64_t EntriesOffset,
                       uint64_t I, uint64_t StringEntrySize, int DescImage,
                       std::vector<Candidate> &Out) {
  const char *E = Bin.data() + EntriesOffset + I * EntrySize;
  uint64_t StringOffset = read64(E + 8), NumStrings = read64(E + 16);
  uint64_t ImageOffset = read64(E + 24), ImageSize = read64(E + 32);
  if (StringOffset > Bin.size() ||
      NumStrings > (Bin.size() - StringOffset) / StringEntrySize)
    return malformed(Base, "string table outside the binary");
  if (ImageOffset > Bin.size() || ImageSize > Bin.size() - ImageOffset)
    return malformed(Base, "image outside the binary");
  Candidate C;
  C.Index = Out.size();
  C.DescImage = DescImage;
  C.InBinary = true;
  C.Image = Bin.substr(ImageOffset, ImageSize);
  C.MetadataOnly = StringEntrySize == StringEntrySizeV2 && (read32(E + 4) & 1);
  for (uint64_t S = 0; S < NumStrings; ++S) {
    const char *SE = Bin.data() + StringOffset + S * StringEntrySize;
    uint64_t KeyOffset = read64(SE), ValueOffset = read64(SE + 8);
    if (KeyOffset >= Bin.size() || ValueOffset >= Bin.size())
      return malformed(Base, "string outside the binary");
    uint64_t ValueSize =
        StringEntrySize == StringEntrySizeV2
            ? read64(SE + 16)
            : strnlen(Bin.data() + ValueOffset, Bin.size() - ValueOffset);
    if (ValueSize > Bin.size() - ValueOffset)
      return malformed(Base, "string outside the binary");
    StringRef Key(Bin.data() + KeyOffset,
                  strnlen(Bin.data() + KeyOffset, Bin.size() - KeyOffset));
    setKey(C, Key, StringRef(Bin.data() + ValueOffset, ValueSize));
  }
  Out.push_back(std::move(C));
  return Error::success();
}

Error readBinaries(StringRef Data, int DescImage, std::vector<Candidate> &Out) {
  uint64_t Offset = 0;
  while (Offset < Data.size()) {
    StringRef Rest = Data.drop_front(Offset);
    if (!isOffloadBinary(Rest) || Rest.size() < HeaderSize)
      return malformed(Offset, "bad magic or truncated header");
    uint32_t Version = read32(Rest.data() + 4);
    uint64_t Size = read64(Rest.data() + 8);
    if (Size < HeaderSize || Size > Rest.size())
      return malformed(Offset, "size " + Twine(Size) + " outside the buffer");
    StringRef Bin = Rest.take_front(Size);
    uint64_t EntriesOffset = read64(Bin.data() + 16);
    if (Version == 1) {
      // One entry of EntrySize bytes at EntriesOffset.
      if (EntriesOffset > Bin.size() || EntrySize > Bin.size() - EntriesOffset)
        return malformed(Offset, "entry outside the binary");
      if (Error Err = readEntry(Bin, Offset, EntriesOffset, 0,
                                StringEntrySizeV1, DescImage, Out))
        return Err;
    } else if (Version == 2) {
      uint64_t Count = read64(Bin.data() + 24);
      if (EntriesOffset > Bin.size() ||
          Count > (Bin.size() - EntriesOffset) / EntrySize)
        return malformed(Offset, "entries outside the binary");
      for (uint64_t I = 0; I < Count; ++I)
        if (Error Err = readEntry(Bin, Offset, EntriesOffset, I,
                                  StringEntrySizeV2, DescImage, Out))
          return Err;
    } else {
      return malformed(Offset, "unsupported version " + Twine(Version));
    }
    Offset = alignTo(Offset + Size, uint64_t(8));
  }
  return Error::success();
}

namespace {
struct SegmentQuery {
  uintptr_t Address;
  uintptr_t Begin = 0;
  uintptr_t End = 0;
};
} // namespace

static int findSegment(struct dl_phdr_info *Info, size_t, void *Data) {
  auto *Q = static_cast<SegmentQuery *>(Data);
  for (unsigned I = 0; I < Info->dlpi_phnum; ++I) {
    const ElfW(Phdr) &P = Info->dlpi_phdr[I];
    if (P.p_type != PT_LOAD)
      continue;
    uintptr_t Begin = Info->dlpi_addr + P.p_vaddr;
    uintptr_t End = Begin + P.p_memsz;
    if (Q->Address >= Begin && Q->Address < End) {
      Q->Begin = Begin;
      Q->End = End;
      return 1;
    }
  }
  return 0;
}

StringRef findEnclosingBinary(const char *Begin, const char *End) {
  if (!Begin || End <= Begin)
    return {};
  SegmentQuery Q{reinterpret_cast<uintptr_t>(Begin)};
  if (!dl_iterate_phdr(findSegment, &Q))
    return {};
  // The wrapper aligns the binary to 8 bytes and puts the image after the
  // header, the entries and the string table: look back at most 1 MiB.
  uintptr_t Image = reinterpret_cast<uintptr_t>(Begin);
  uintptr_t Lowest =
      std::max<uintptr_t>(Q.Begin, Image > (1u << 20) ? Image - (1u << 20) : 0);
  uint64_t ImageSize = End - Begin;
  for (uintptr_t P = alignDown(Image, 8);
       P >= Lowest && P + HeaderSize <= Q.End; P -= 8) {
    const char *H = reinterpret_cast<const char *>(P);
    if (std::memcmp(H, Magic, sizeof(Magic)) == 0) {
      uint32_t Version = read32(H + 4);
      uint64_t Size = read64(H + 8), EntriesOffset = read64(H + 16);
      if ((Version == 1 || Version == 2) && P + Size <= Q.End &&
          Size >= HeaderSize && EntriesOffset + EntrySize <= Size) {
        const char *E = H + EntriesOffset;
        if (P + read64(E + 24) == Image && read64(E + 32) == ImageSize)
          return StringRef(H, Size);
      }
    }
    if (P < 8)
      break;
  }
  return {};
}

} // namespace shim
} // namespace kdl
