//===- OffloadEntries.cpp - The entries of OffloadBinaries, in place ------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The rules are those of kdl/offload/binary.py, check for check (the
// differential test, tests/offload/test_readers_agree.py, feeds both the same
// hostile corpus); the ELF search is OffloadSections.cpp.
//
//===----------------------------------------------------------------------===//

#include "OffloadEntries.h"
#include "OffloadSections.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Compression.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <string>

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

/// Sets the field of \p E that holds the key \p Key, if it has one.
static void setKey(OffloadEntry &E, StringRef Key, StringRef Value) {
  if (Key == "triple")
    E.Triple = Value;
  else if (Key == "arch")
    E.Arch = Value;
  else if (Key == "variant_priority")
    E.VariantPriority = Value;
  else if (Key == "variant_tag")
    E.VariantTag = Value;
}

namespace {
/// What one input has used of its ReadLimits.
struct Budget {
  ReadLimits Limits;
  uint64_t Inflated = 0;
  uint64_t Binaries = 0;
  uint64_t Entries = 0;
  uint64_t Strings = 0;
};

/// Byte ranges of one binary that must not overlap, with their names.
class Regions {
  struct Region {
    uint64_t Begin, End;
    std::string What;
  };
  std::vector<Region> Items;

public:
  void add(uint64_t Begin, uint64_t Length, const Twine &What) {
    if (Length)
      Items.push_back({Begin, Begin + Length, What.str()});
  }
  /// Sorts the regions; the first overlap, if any.
  std::optional<std::string> overlap() {
    llvm::sort(Items, [](const Region &L, const Region &R) {
      return std::tie(L.Begin, L.End) < std::tie(R.Begin, R.End);
    });
    uint64_t LastEnd = 0;
    const Region *Last = nullptr;
    for (const Region &R : Items) {
      if (Last && R.Begin < LastEnd)
        return R.What + " overlaps " + Last->What;
      if (!Last || R.End > LastEnd) {
        LastEnd = R.End;
        Last = &R;
      }
    }
    return std::nullopt;
  }
  /// The region [Begin, End) overlaps, if any (after overlap()).
  const std::string *find(uint64_t Begin, uint64_t End) const {
    auto It = llvm::partition_point(
        Items, [&](const Region &R) { return R.Begin < End; });
    if (It == Items.begin() || std::prev(It)->End <= Begin)
      return nullptr;
    return &std::prev(It)->What;
  }
};

/// One binary being read: its bytes (Size of them), where it starts in the
/// caller's buffer (for errors), and for an inflated binary the storage its
/// bytes are in.
struct Binary {
  StringRef Bytes;
  uint64_t Base = 0;
  int Source = -1;
  std::shared_ptr<const MemoryBuffer> Storage;
  /// Said before an error inside an inflated binary, whose offsets are not
  /// the caller's.
  StringRef Note;
  uint32_t Version = 0;
  uint64_t HeaderEnd = HeaderSize;
  uint64_t EntriesOffset = 0, Count = 0;
  uint64_t StringEntrySize = StringEntrySizeV2;
  uint64_t StringBytes = 0;
  Regions Structure;

  Error malformed(const Twine &What) const {
    return kdl::malformed(Base, Note + What);
  }
  uint64_t size() const { return Bytes.size(); }

  /// A NUL-terminated string at \p Offset, which must not overlap structure.
  Expected<StringRef> cString(uint64_t Offset, StringRef What) const {
    if (Offset >= size())
      return malformed(What + " offset " + Twine(Offset) +
                       " is past the end of the binary");
    size_t Nul = Bytes.find('\0', Offset);
    if (Nul == StringRef::npos)
      return malformed("unterminated " + What + " string");
    if (Error Err = notStructure(Offset, Nul + 1 - Offset, What))
      return std::move(Err);
    return Bytes.slice(Offset, Nul);
  }
  Error notStructure(uint64_t Offset, uint64_t Length, StringRef What) const {
    if (Length)
      if (const std::string *Hit = Structure.find(Offset, Offset + Length))
        return malformed(What + " string at offset " + Twine(Offset) +
                         " overlaps " + *Hit);
    return Error::success();
  }
};
} // namespace

/// Checks the header of the binary at the start of \p Rest (the rest of
/// its run) and sets up \p B; B.Bytes becomes the binary's Size bytes.
static Error readHeader(StringRef Rest, Binary &B) {
  if (Rest.size() < HeaderSize || !isOffloadBinary(Rest))
    return B.malformed("bad magic or truncated header");
  B.Version = read32(Rest.data() + 4);
  uint64_t Size = read64(Rest.data() + 8);
  if (B.Version < 1 || B.Version > 3)
    return B.malformed("unsupported version " + Twine(B.Version));
  if (Size > Rest.size())
    return B.malformed("size " + Twine(Size) + " outside the buffer");
  B.HeaderEnd = B.Version >= 3 ? HeaderSizeV3 : HeaderSize;
  if (B.Version >= 3 && Rest.size() >= HeaderSizeV3 &&
      read64(Rest.data() + 32) != 0)
    return B.malformed("a compressed binary must be inflated first");
  if (Size < B.HeaderEnd + EntrySize)
    return B.malformed("size " + Twine(Size) +
                       " is less than a header and an entry");
  B.Bytes = Rest.take_front(Size);
  B.EntriesOffset = read64(Rest.data() + 16);
  B.Count = read64(Rest.data() + 24);
  if (B.Version == 1) {
    // EntrySize in version 1, which has one entry; LLVM only bounds it.
    if (B.Count > Size - HeaderSize)
      return B.malformed("entry size " + Twine(B.Count) +
                         " is larger than the binary");
    B.Count = 1;
    B.StringEntrySize = StringEntrySizeV1;
  } else if (B.Count > (Size - B.HeaderEnd) / EntrySize) {
    return B.malformed("entries outside the binary");
  }
  if (B.EntriesOffset < HeaderSize)
    return B.malformed("entry table overlaps the header");
  if (B.EntriesOffset > Size - EntrySize * B.Count)
    return B.malformed("entries outside the binary");
  return Error::success();
}

/// Reads the entries of \p B, its header checked, and appends them to \p Out.
static Error readEntries(Binary &B, Budget &Used,
                         std::vector<OffloadEntry> &Out) {
  StringRef Bin = B.Bytes;
  uint64_t Size = B.size(), SES = B.StringEntrySize;
  B.Structure.add(0, B.HeaderEnd, "the header");
  B.Structure.add(B.EntriesOffset, EntrySize * B.Count, "the entry table");
  for (uint64_t I = 0; I < B.Count; ++I) {
    const char *P = Bin.data() + B.EntriesOffset + I * EntrySize;
    uint64_t StringOffset = read64(P + 8), NumStrings = read64(P + 16);
    uint64_t ImageOffset = read64(P + 24), ImageSize = read64(P + 32);
    if (StringOffset > Size || NumStrings > (Size - StringOffset) / SES)
      return B.malformed("string table outside the binary");
    if (ImageOffset > Size || ImageSize > Size - ImageOffset)
      return B.malformed("image outside the binary");
    B.Structure.add(StringOffset, NumStrings * SES,
                    "the string map of entry " + Twine(I));
    B.Structure.add(ImageOffset, ImageSize, "the image of entry " + Twine(I));
  }
  if (std::optional<std::string> Overlap = B.Structure.overlap())
    return B.malformed(*Overlap);
  // Each count is at most the binary's size, so the sum cannot wrap.
  uint64_t Strings = 0;
  for (uint64_t I = 0; I < B.Count; ++I)
    Strings += read64(Bin.data() + B.EntriesOffset + I * EntrySize + 16);
  if (Strings > Used.Limits.MaxStrings - Used.Strings)
    return B.malformed(
        "more than " + Twine(Used.Limits.MaxStrings) +
        " strings in one input (--max-strings raises the limit)");
  Used.Strings += Strings;
  for (uint64_t I = 0; I < B.Count; ++I) {
    const char *P = Bin.data() + B.EntriesOffset + I * EntrySize;
    uint64_t StringOffset = read64(P + 8), NumStrings = read64(P + 16);
    OffloadEntry E;
    E.Index = Out.size();
    E.Source = B.Source;
    E.InBinary = true;
    E.Storage = B.Storage;
    E.Image = Bin.substr(read64(P + 24), read64(P + 32));
    E.ImageKind = static_cast<ImageKind>(read16(P));
    E.OffloadKind = static_cast<OffloadKind>(read16(P + 2));
    E.Flags = read32(P + 4);
    // OIF_Metadata (bit 0) is defined from version 2 on.
    E.MetadataOnly = B.Version >= 2 && (E.Flags & 1);
    for (uint64_t S = 0; S < NumStrings; ++S) {
      const char *SE = Bin.data() + StringOffset + S * SES;
      Expected<StringRef> Key = B.cString(read64(SE), "key");
      if (!Key)
        return Key.takeError();
      StringRef Value;
      uint64_t ValueOffset = read64(SE + 8);
      if (B.Version == 1) {
        Expected<StringRef> V = B.cString(ValueOffset, "value");
        if (!V)
          return V.takeError();
        Value = *V;
      } else {
        uint64_t ValueSize = read64(SE + 16);
        if (ValueOffset > Size || ValueSize > Size - ValueOffset)
          return B.malformed("value of " + Twine(ValueSize) +
                             " bytes at offset " + Twine(ValueOffset) +
                             " is past the end of the binary");
        if (Error Err = B.notStructure(ValueOffset, ValueSize, "value"))
          return Err;
        Value = Bin.substr(ValueOffset, ValueSize);
      }
      // Keys and values may share bytes (a common suffix), never more than
      // the binary holds in all.
      B.StringBytes += Key->size() + Value.size();
      if (B.StringBytes > Size)
        return B.malformed("string map holds more bytes than the binary (" +
                           Twine(Size) + "): aliased strings");
      setKey(E, *Key, Value);
    }
    Out.push_back(std::move(E));
  }
  return Error::success();
}

/// Whether a compressed version 3 binary starts \p Rest.
static bool isCompressedV3(StringRef Rest) {
  return Rest.size() >= HeaderSizeV3 && isOffloadBinary(Rest) &&
         read32(Rest.data() + 4) == 3 && read64(Rest.data() + 32) != 0;
}

/// The compressed version 3 binary at the start of \p Rest inflated: its
/// header, with Size the inflated size and InflatedSize 0, then the inflated
/// stream. InflatedSize is checked against the stream's size and what the
/// input may still inflate before anything is allocated, and must be exactly
/// what the stream inflates to. \p Size is set to the binary's Size on disk.
static Expected<std::shared_ptr<const MemoryBuffer>>
inflate(StringRef Rest, uint64_t Base, Budget &Used, uint64_t &Size) {
  auto Fail = [&](const Twine &What) {
    return kdl::malformed(Base, "compressed binary: " + What);
  };
  Size = read64(Rest.data() + 8);
  if (Size > Rest.size())
    return kdl::malformed(Base, "size " + Twine(Size) + " outside the buffer");
  uint64_t EntriesOffset = read64(Rest.data() + 16);
  uint64_t InflatedSize = read64(Rest.data() + 32);
  if (EntriesOffset != HeaderSizeV3)
    return Fail("entries offset " + Twine(EntriesOffset) + ", expected " +
                Twine(HeaderSizeV3));
  if (Size < EntriesOffset)
    return Fail("size " + Twine(Size) + " is less than the header");
  StringRef Stream = Rest.slice(HeaderSizeV3, Size);
  uint64_t Limit = MaxInflatedSize;
  if (Stream.size() < MaxInflatedSize / MaxInflateRatio)
    Limit = MaxInflateRatio * std::max<uint64_t>(Stream.size(), 1);
  if (InflatedSize < HeaderSizeV3 || InflatedSize - HeaderSizeV3 > Limit)
    return Fail("inflated size " + Twine(InflatedSize) +
                " is not believable for " + Twine(Stream.size()) +
                " compressed bytes");
  uint64_t Left = Used.Limits.MaxInflated - Used.Inflated;
  if (InflatedSize > Left)
    return Fail("inflated size " + Twine(InflatedSize) +
                " takes the input past its budget of " +
                Twine(Used.Limits.MaxInflated) + " inflated bytes (" +
                Twine(Used.Inflated) + " used; --max-inflated raises it)");
  auto Bytes = arrayRefFromStringRef(Stream);
  bool Zstd = Stream.size() >= 4 && read32(Stream.data()) == 0xFD2FB528;
  bool Zlib = !Zstd && Stream.size() >= 2 && (Bytes[0] & 0x0F) == 8 &&
              ((Bytes[0] << 8) | Bytes[1]) % 31 == 0;
  if (!Zstd && !Zlib)
    return Fail("unknown compression format (neither zstd nor zlib)");
  StringRef Format = Zstd ? "zstd" : "zlib";
  if (const char *Why = compression::getReasonIfUnsupported(
          Zstd ? compression::Format::Zstd : compression::Format::Zlib))
    return Fail(Why);
  Used.Inflated += InflatedSize;
  std::unique_ptr<WritableMemoryBuffer> Buffer =
      WritableMemoryBuffer::getNewUninitMemBuffer(InflatedSize,
                                                  "inflated OffloadBinary");
  if (!Buffer)
    return Fail("cannot allocate " + Twine(InflatedSize) + " bytes");
  char *Inflated = Buffer->getBufferStart();
  std::memcpy(Inflated, Rest.data(), HeaderSizeV3);
  write64(Inflated + 8, InflatedSize);
  write64(Inflated + 32, 0);
  uint8_t *Body = reinterpret_cast<uint8_t *>(Inflated + HeaderSizeV3);
  size_t BodySize = InflatedSize - HeaderSizeV3, Got = BodySize;
  Error Err = Zstd ? compression::zstd::decompress(Bytes, Body, Got)
                   : compression::zlib::decompress(Bytes, Body, Got);
  if (Err)
    return Fail("the " + Format + " stream does not inflate to the " +
                Twine(BodySize) + " bytes its header says (" +
                toString(std::move(Err)) + ")");
  if (Got != BodySize)
    return Fail("the " + Format + " stream inflates to " + Twine(Got) +
                " bytes, its header says " + Twine(BodySize));
  return std::shared_ptr<const MemoryBuffer>(std::move(Buffer));
}

/// Reads the run of binaries in Data[Begin, End), as LLVM 22 walks it.
static Error walk(StringRef Data, uint64_t Begin, uint64_t End, int Source,
                  Budget &Used, std::vector<OffloadEntry> &Out) {
  uint64_t Offset = Begin;
  while (Offset < End) {
    if (Used.Binaries >= Used.Limits.MaxBinaries)
      return malformed(Offset, "more than " + Twine(Used.Limits.MaxBinaries) +
                                   " OffloadBinaries in one input "
                                   "(--max-binaries raises the limit)");
    StringRef Rest = Data.slice(Offset, End);
    Binary B;
    B.Bytes = Rest;
    B.Base = Offset;
    B.Source = Source;
    uint64_t Step;
    if (isCompressedV3(Rest)) {
      Expected<std::shared_ptr<const MemoryBuffer>> Inflated =
          inflate(Rest, Offset, Used, Step);
      if (!Inflated)
        return Inflated.takeError();
      B.Storage = std::move(*Inflated);
      B.Note = "inflated: ";
      if (Error Err = readHeader(B.Storage->getBuffer(), B))
        return Err;
    } else {
      if (Error Err = readHeader(Rest, B))
        return Err;
      Step = B.size();
    }
    if (B.Count > Used.Limits.MaxBinaries - Used.Entries)
      return malformed(Offset, "more than " + Twine(Used.Limits.MaxBinaries) +
                                   " images in one input "
                                   "(--max-binaries raises the limit)");
    Used.Entries += B.Count;
    if (Error Err = readEntries(B, Used, Out))
      return Err;
    ++Used.Binaries;
    // Version 3 pads a binary to 8 bytes after its Size.
    Offset += B.Version >= 3 ? alignTo(Step, uint64_t(8)) : Step;
  }
  return Error::success();
}

Error readOffloadBinaries(StringRef Data, int Source,
                          std::vector<OffloadEntry> &Out,
                          const ReadLimits &Limits) {
  Budget Used{Limits};
  return walk(Data, 0, Data.size(), Source, Used, Out);
}

Error readOffloadFile(StringRef Data, std::vector<OffloadEntry> &Out,
                      const ReadLimits &Limits) {
  Budget Used{Limits};
  if (isOffloadBinary(Data))
    return walk(Data, 0, Data.size(), -1, Used, Out);
  if (!Data.starts_with("\x7f"
                        "ELF")) {
    std::string Text;
    raw_string_ostream OS(Text);
    OS << "not an OffloadBinary or ELF file (";
    if (Data.size() < 4) {
      OS << Data.size() << " bytes)";
      return createStringError(inconvertibleErrorCode(), Text);
    }
    OS << "magic";
    for (unsigned char C : Data.take_front(4))
      OS << ' ' << format_hex_no_prefix(C, 2);
    OS << ", expected 10 ff 10 ad)";
    return createStringError(inconvertibleErrorCode(), Text);
  }
  std::vector<OffloadSection> Sections;
  if (Error Err = findOffloadSections(Data, Sections))
    return Err;
  // Two sections over the same bytes would list their images twice (and
  // inflate a compressed binary once for each): refused, as overlapping.
  std::vector<OffloadSection> ByOffset = Sections;
  llvm::stable_sort(ByOffset,
                    [](const OffloadSection &L, const OffloadSection &R) {
                      return L.Offset < R.Offset;
                    });
  for (size_t I = 1; I < ByOffset.size(); ++I)
    if (ByOffset[I].Offset < ByOffset[I - 1].Offset + ByOffset[I - 1].Size)
      return createStringError(
          inconvertibleErrorCode(),
          "malformed ELF: section [" + Twine(ByOffset[I].Index) +
              "] overlaps section [" + Twine(ByOffset[I - 1].Index) + "]");
  for (const OffloadSection &S : Sections)
    if (Error Err = walk(Data, S.Offset, S.Offset + S.Size, -1, Used, Out))
      return Err;
  return Error::success();
}

} // namespace kdl
