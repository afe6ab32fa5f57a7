//===- OffloadSections.cpp - The offloading sections of an ELF file -------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "OffloadSections.h"

#include "llvm/ADT/Twine.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/Endian.h"

using namespace llvm;

namespace kdl {

Error findOffloadSections(StringRef Data, std::vector<OffloadSection> &Found) {
  auto Fail = [](const Twine &What) {
    return createStringError(inconvertibleErrorCode(),
                             "malformed ELF: " + What);
  };
  if (Data.size() < 16)
    return Fail("truncated ELF identification: " + Twine(Data.size()) +
                " bytes");
  uint8_t Class = Data[4], Encoding = Data[5];
  if (Class != ELF::ELFCLASS32 && Class != ELF::ELFCLASS64)
    return Fail("unknown ELF class " + Twine(Class));
  if (Encoding != ELF::ELFDATA2LSB && Encoding != ELF::ELFDATA2MSB)
    return Fail("unknown ELF data encoding " + Twine(Encoding));
  bool Is64 = Class == ELF::ELFCLASS64;
  llvm::endianness Order = Encoding == ELF::ELFDATA2LSB
                               ? llvm::endianness::little
                               : llvm::endianness::big;
  auto Get16 = [&](uint64_t At) {
    return support::endian::read16(Data.data() + At, Order);
  };
  auto Get32 = [&](uint64_t At) {
    return support::endian::read32(Data.data() + At, Order);
  };
  auto GetWord = [&](uint64_t At) -> uint64_t {
    return Is64 ? support::endian::read64(Data.data() + At, Order)
                : support::endian::read32(Data.data() + At, Order);
  };
  uint64_t EhdrSize = Is64 ? 64 : 52, ShdrSize = Is64 ? 64 : 40;
  if (Data.size() < EhdrSize)
    return Fail("truncated ELF header: " + Twine(Data.size()) + " of " +
                Twine(EhdrSize) + " bytes");
  uint16_t Type = Get16(16);
  uint64_t ShOff = GetWord(Is64 ? 0x28 : 0x20);
  uint16_t ShEntSize = Get16(Is64 ? 0x3A : 0x2E);
  uint64_t ShNum = Get16(Is64 ? 0x3C : 0x30);
  if ((Type != ELF::ET_REL && Type != ELF::ET_EXEC && Type != ELF::ET_DYN) ||
      ShOff == 0)
    return Error::success();
  if (ShEntSize != ShdrSize)
    return Fail("section header size " + Twine(ShEntSize) + ", expected " +
                Twine(ShdrSize));
  if (ShOff > Data.size() - ShdrSize)
    return Fail("section header table at " + Twine(ShOff) + " is past the end");
  // Extended numbering: the real count is in section 0's sh_size.
  if (ShNum == 0)
    ShNum = GetWord(ShOff + (Is64 ? 32 : 20));
  if (ShNum > (Data.size() - ShOff) / ShdrSize)
    return Fail(Twine(ShNum) + " section headers at " + Twine(ShOff) +
                " do not fit in the file");
  for (uint64_t I = 0; I < ShNum; ++I) {
    uint64_t At = ShOff + I * ShdrSize;
    if (Get32(At + 4) != ELF::SHT_LLVM_OFFLOADING)
      continue;
    uint64_t Offset = GetWord(At + (Is64 ? 24 : 16));
    uint64_t Size = GetWord(At + (Is64 ? 32 : 20));
    if (Offset > Data.size() || Size > Data.size() - Offset)
      return Fail("section " + Twine(I) + " of " + Twine(Size) + " bytes at " +
                  Twine(Offset) + " is past the end of the file");
    Found.push_back({I, Offset, Size});
  }
  return Error::success();
}

} // namespace kdl
