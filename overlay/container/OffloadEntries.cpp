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
#include "llvm/Support/Compression.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
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
static void write64(char *P, uint64_t V) { support::endian::write64le(P, V); }

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

namespace {
/// One binary being read: its bytes, where it starts in the caller's buffer
/// (for errors), and for an inflated binary the storage its bytes are in.
struct Binary {
  StringRef Bytes;
  uint64_t Base;
  int Source;
  std::shared_ptr<const MemoryBuffer> Storage;
  /// Said before an error inside an inflated binary, whose offsets are not
  /// the caller's.
  StringRef Note;

  Error malformed(const Twine &What) const {
    return kdl::malformed(Base, Note + What);
  }
};
} // namespace

/// Reads entry \p I of \p B, whose entry table starts at \p EntriesOffset.
static Error readEntry(const Binary &B, uint64_t EntriesOffset, uint64_t I,
                       uint64_t StringEntrySize,
                       std::vector<OffloadEntry> &Out) {
  StringRef Bin = B.Bytes;
  const char *P = Bin.data() + EntriesOffset + I * EntrySize;
  uint64_t StringOffset = read64(P + 8), NumStrings = read64(P + 16);
  uint64_t ImageOffset = read64(P + 24), ImageSize = read64(P + 32);
  if (StringOffset > Bin.size() ||
      NumStrings > (Bin.size() - StringOffset) / StringEntrySize)
    return B.malformed("string table outside the binary");
  if (ImageOffset > Bin.size() || ImageSize > Bin.size() - ImageOffset)
    return B.malformed("image outside the binary");
  OffloadEntry E;
  E.Index = Out.size();
  E.Source = B.Source;
  E.InBinary = true;
  E.Storage = B.Storage;
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
      return B.malformed("string outside the binary");
    uint64_t ValueSize =
        StringEntrySize == StringEntrySizeV2
            ? read64(SE + 16)
            : strnlen(Bin.data() + ValueOffset, Bin.size() - ValueOffset);
    if (ValueSize > Bin.size() - ValueOffset)
      return B.malformed("string outside the binary");
    StringRef Key(Bin.data() + KeyOffset,
                  strnlen(Bin.data() + KeyOffset, Bin.size() - KeyOffset));
    setKey(E, Key, StringRef(Bin.data() + ValueOffset, ValueSize));
  }
  Out.push_back(std::move(E));
  return Error::success();
}

/// Reads the entry table of \p B, an uncompressed binary of version 2 or 3
/// whose header is \p HeaderEnd bytes.
static Error readEntries(const Binary &B, uint64_t HeaderEnd,
                         std::vector<OffloadEntry> &Out) {
  StringRef Bin = B.Bytes;
  if (Bin.size() < HeaderEnd)
    return B.malformed("size " + Twine(Bin.size()) +
                       " is less than the header");
  uint64_t EntriesOffset = read64(Bin.data() + 16);
  uint64_t Count = read64(Bin.data() + 24);
  if (EntriesOffset > Bin.size() ||
      Count > (Bin.size() - EntriesOffset) / EntrySize)
    return B.malformed("entries outside the binary");
  for (uint64_t I = 0; I < Count; ++I)
    if (Error Err = readEntry(B, EntriesOffset, I, StringEntrySizeV2, Out))
      return Err;
  return Error::success();
}

/// The compressed version 3 binary \p B inflated: its header, with Size the
/// inflated size and InflatedSize 0, then the inflated stream. InflatedSize
/// is checked against the stream's size before anything is allocated, and
/// must be exactly what the stream inflates to.
static Expected<std::shared_ptr<const MemoryBuffer>> inflate(const Binary &B) {
  StringRef Bin = B.Bytes;
  uint64_t EntriesOffset = read64(Bin.data() + 16);
  uint64_t InflatedSize = read64(Bin.data() + 32);
  if (EntriesOffset != HeaderSizeV3)
    return B.malformed("compressed binary: entries offset " +
                       Twine(EntriesOffset) + ", expected " +
                       Twine(HeaderSizeV3));
  StringRef Stream = Bin.drop_front(HeaderSizeV3);
  uint64_t Limit = MaxInflatedSize;
  if (Stream.size() < MaxInflatedSize / MaxInflateRatio)
    Limit = MaxInflateRatio * std::max<uint64_t>(Stream.size(), 1);
  if (InflatedSize < HeaderSizeV3 || InflatedSize - HeaderSizeV3 > Limit)
    return B.malformed("compressed binary: inflated size " +
                       Twine(InflatedSize) + " is not believable for " +
                       Twine(Stream.size()) + " compressed bytes");
  auto Bytes = arrayRefFromStringRef(Stream);
  bool Zstd = Stream.size() >= 4 && read32(Stream.data()) == 0xFD2FB528;
  bool Zlib = !Zstd && Stream.size() >= 2 && (Bytes[0] & 0x0F) == 8 &&
              ((Bytes[0] << 8) | Bytes[1]) % 31 == 0;
  if (!Zstd && !Zlib)
    return B.malformed(
        "compressed binary: unknown compression format (neither zstd "
        "nor zlib)");
  StringRef Format = Zstd ? "zstd" : "zlib";
  if (const char *Why = compression::getReasonIfUnsupported(
          Zstd ? compression::Format::Zstd : compression::Format::Zlib))
    return B.malformed("compressed binary: " + Twine(Why));
  std::unique_ptr<WritableMemoryBuffer> Buffer =
      WritableMemoryBuffer::getNewUninitMemBuffer(InflatedSize,
                                                  "inflated OffloadBinary");
  if (!Buffer)
    return B.malformed("compressed binary: cannot allocate " +
                       Twine(InflatedSize) + " bytes");
  char *Inflated = Buffer->getBufferStart();
  std::memcpy(Inflated, Bin.data(), HeaderSizeV3);
  write64(Inflated + 8, InflatedSize);
  write64(Inflated + 32, 0);
  uint8_t *Body = reinterpret_cast<uint8_t *>(Inflated + HeaderSizeV3);
  size_t BodySize = InflatedSize - HeaderSizeV3, Got = BodySize;
  Error Err = Zstd ? compression::zstd::decompress(Bytes, Body, Got)
                   : compression::zlib::decompress(Bytes, Body, Got);
  if (Err)
    return B.malformed("compressed binary: the " + Format +
                       " stream does not inflate to the " + Twine(BodySize) +
                       " bytes its header says (" + toString(std::move(Err)) +
                       ")");
  if (Got != BodySize)
    return B.malformed("compressed binary: the " + Format +
                       " stream inflates to " + Twine(Got) +
                       " bytes, its header says " + Twine(BodySize));
  return std::shared_ptr<const MemoryBuffer>(std::move(Buffer));
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
    Binary B{Rest.take_front(Size), Offset, Source, nullptr, ""};
    uint64_t EntriesOffset = read64(B.Bytes.data() + 16);
    if (Version == 1) {
      // One entry at EntriesOffset.
      if (EntriesOffset > Size || EntrySize > Size - EntriesOffset)
        return malformed(Offset, "entry outside the binary");
      if (Error Err = readEntry(B, EntriesOffset, 0, StringEntrySizeV1, Out))
        return Err;
    } else if (Version == 2) {
      if (Error Err = readEntries(B, HeaderSize, Out))
        return Err;
    } else if (Version == 3) {
      if (Size < HeaderSizeV3)
        return malformed(Offset, "size " + Twine(Size) +
                                     " is less than the version 3 header");
      if (read64(B.Bytes.data() + 32) != 0) {
        Expected<std::shared_ptr<const MemoryBuffer>> Inflated = inflate(B);
        if (!Inflated)
          return Inflated.takeError();
        B.Storage = std::move(*Inflated);
        B.Bytes = B.Storage->getBuffer();
        B.Note = "inflated: ";
      }
      if (Error Err = readEntries(B, HeaderSizeV3, Out))
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
