//===- OffloadEntries.cpp - The entries of OffloadBinaries, in place ------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "OffloadEntries.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace llvm;
using namespace llvm::object;

namespace kdl {

using namespace offload_layout;

static constexpr uint8_t Magic[4] = {0x10, 0xFF, 0x10, 0xAD};
// String entries: key and value offsets; version 2 adds the value's size
// (version 1's value ends at a NUL).
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

/// Sets the key \p Key of \p E to \p Value if it is one the ranking reads.
static void setKey(OffloadEntry &E, StringRef Key, StringRef Value) {
  using namespace llvm::offloading;
  if (Key == "triple")
    E.Triple = Value;
  else if (Key == "arch")
    E.Keys.Arch = Value;
  else if (Key == image_key::VariantPriority)
    E.Keys.VariantPriority = Value;
  else if (Key == image_key::VariantTag)
    E.Keys.VariantTag = Value;
  else if (Key == image_key::MinSM)
    E.Keys.MinSM = Value;
  else if (Key == image_key::MinGFX)
    E.Keys.MinGFX = Value;
  else if (Key == image_key::RequiresFeatures)
    E.Keys.RequiresFeatures = Value;
}

/// Reads entry \p I of the binary \p Bin, whose entry table starts at
/// \p EntriesOffset.
static Error readEntry(StringRef Bin, uint64_t Base, uint64_t EntriesOffset,
                       uint64_t I, uint64_t StringEntrySize, int Source,
                       std::vector<OffloadEntry> &Out) {
  const char *P = Bin.data() + EntriesOffset + I * EntrySize;
  uint64_t StringOffset = read64(P + 8), NumStrings = read64(P + 16);
  uint64_t ImageOffset = read64(P + 24), ImageSize = read64(P + 32);
  if (StringOffset > Bin.size() ||
      NumStrings > (Bin.size() - StringOffset) / StringEntrySize)
    return malformed(Base, "string table outside the binary");
  if (ImageOffset > Bin.size() || ImageSize > Bin.size() - ImageOffset)
    return malformed(Base, "image outside the binary");
  OffloadEntry E;
  E.Index = Out.size();
  E.Source = Source;
  E.InBinary = true;
  E.Image = Bin.substr(ImageOffset, ImageSize);
  E.ImageKind = static_cast<ImageKind>(read16(P));
  E.OffloadKind = static_cast<OffloadKind>(read16(P + 2));
  E.Flags = read32(P + 4);
  // OIF_Metadata (bit 0) is defined from version 2 on.
  E.MetadataOnly = StringEntrySize == StringEntrySizeV2 && (E.Flags & 1);
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
    setKey(E, Key, StringRef(Bin.data() + ValueOffset, ValueSize));
  }
  Out.push_back(std::move(E));
  return Error::success();
}

Error readOffloadBinaries(StringRef Data, int Source,
                          std::vector<OffloadEntry> &Out) {
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
      // One entry at EntriesOffset.
      if (EntriesOffset > Bin.size() || EntrySize > Bin.size() - EntriesOffset)
        return malformed(Offset, "entry outside the binary");
      if (Error Err = readEntry(Bin, Offset, EntriesOffset, 0,
                                StringEntrySizeV1, Source, Out))
        return Err;
    } else if (Version == 2) {
      uint64_t Count = read64(Bin.data() + 24);
      if (EntriesOffset > Bin.size() ||
          Count > (Bin.size() - EntriesOffset) / EntrySize)
        return malformed(Offset, "entries outside the binary");
      for (uint64_t I = 0; I < Count; ++I)
        if (Error Err = readEntry(Bin, Offset, EntriesOffset, I,
                                  StringEntrySizeV2, Source, Out))
          return Err;
    } else {
      return malformed(Offset, "unsupported version " + Twine(Version));
    }
    Offset = alignTo(Offset + Size, uint64_t(8));
  }
  return Error::success();
}

/// Whether \p Section holds OffloadBinaries: SHT_LLVM_OFFLOADING in an ELF
/// file, the .llvm.offloading name elsewhere.
static bool isOffloadingSection(const SectionRef &Section) {
  if (isa<ELFObjectFileBase>(Section.getObject()))
    return ELFSectionRef(Section).getType() == ELF::SHT_LLVM_OFFLOADING;
  Expected<StringRef> Name = Section.getName();
  if (!Name) {
    consumeError(Name.takeError());
    return false;
  }
  return *Name == ".llvm.offloading";
}

Error readOffloadFile(StringRef Data, std::vector<OffloadEntry> &Out) {
  if (Data.empty())
    return Error::success();
  if (isOffloadBinary(Data))
    return readOffloadBinaries(Data, -1, Out);
  file_magic Type = identify_magic(Data);
  if (!Type.is_object() || Type == file_magic::bitcode) {
    std::string Text;
    raw_string_ostream OS(Text);
    OS << "not an OffloadBinary or object file (magic";
    for (unsigned char C : Data.take_front(4))
      OS << ' ' << format_hex_no_prefix(C, 2);
    OS << ", expected 10 ff 10 ad)";
    return createStringError(inconvertibleErrorCode(), Text);
  }
  Expected<std::unique_ptr<ObjectFile>> Obj =
      ObjectFile::createObjectFile(MemoryBufferRef(Data, ""), Type);
  if (!Obj)
    return Obj.takeError();
  for (const SectionRef &Section : (*Obj)->sections()) {
    if (!isOffloadingSection(Section))
      continue;
    Expected<StringRef> Contents = Section.getContents();
    if (!Contents)
      return Contents.takeError();
    // The section's bytes are views into Data, which outlives *Obj.
    if (Error Err = readOffloadBinaries(*Contents, -1, Out))
      return Err;
  }
  return Error::success();
}

} // namespace kdl
