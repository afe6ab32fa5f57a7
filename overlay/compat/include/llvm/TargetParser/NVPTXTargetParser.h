//===- NVPTXTargetParser.h - LLVM 22 stand-in for main's API ----*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Compat layer of the overlay build. llvm-project main has
// llvm/TargetParser/NVPTXTargetParser.h (NVPTX::parseArch, getSmVersion,
// getArchSuffix, over a table of every sm_ processor); LLVM 22.1.8 does not,
// and the series uses it. This gives the same declarations for the names the
// series calls, computed from the name instead of a table: "sm_XY" is SM
// version XY * 10, an "a" suffix is ACCELERATED and an "f" suffix FAMILY.
// Unlike main it accepts any sm_ number, which only matters for names no
// image or device carries.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_COMPAT_LLVM_TARGETPARSER_NVPTXTARGETPARSER_H
#define KDL_COMPAT_LLVM_TARGETPARSER_NVPTXTARGETPARSER_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace llvm {
namespace NVPTX {

/// Main's GPUKind enumerates the processors; here a kind encodes the SM
/// version (bits 2 and up) and the suffix (bits 0-1). GK_NONE is 0 in both.
enum GPUKind : uint32_t { GK_NONE = 0 };

enum class ArchSuffix { NONE, ACCELERATED, FAMILY };

inline GPUKind parseArch(StringRef CPU) {
  if (!CPU.consume_front("sm_"))
    return GK_NONE;
  unsigned Suffix = 0;
  if (CPU.consume_back("a"))
    Suffix = 1;
  else if (CPU.consume_back("f"))
    Suffix = 2;
  unsigned SM = 0;
  if (CPU.empty() || !all_of(CPU, isDigit) || CPU.getAsInteger(10, SM) ||
      SM < 20 || SM > 9999)
    return GK_NONE;
  return static_cast<GPUKind>((SM * 10) << 2 | Suffix);
}

inline unsigned getSmVersion(GPUKind Kind) { return Kind >> 2; }

inline ArchSuffix getArchSuffix(GPUKind Kind) {
  switch (Kind & 3) {
  case 1:
    return ArchSuffix::ACCELERATED;
  case 2:
    return ArchSuffix::FAMILY;
  default:
    return ArchSuffix::NONE;
  }
}

inline bool isAcceleratedArch(GPUKind Kind) {
  return getArchSuffix(Kind) == ArchSuffix::ACCELERATED;
}

} // namespace NVPTX
} // namespace llvm

#endif // KDL_COMPAT_LLVM_TARGETPARSER_NVPTXTARGETPARSER_H
