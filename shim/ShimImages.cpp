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

using namespace offload_layout;

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
    if (isOffloadBinary(StringRef(H, HeaderSize))) {
      using support::endian::read32le, support::endian::read64le;
      uint32_t Version = read32le(H + 4);
      uint64_t Size = read64le(H + 8), EntriesOffset = read64le(H + 16);
      if ((Version == 1 || Version == 2) && P + Size <= Q.End &&
          Size >= HeaderSize && EntriesOffset + EntrySize <= Size) {
        const char *E = H + EntriesOffset;
        if (P + read64le(E + 24) == Image && read64le(E + 32) == ImageSize)
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
