//===- OffloadSections.h - Offloading sections of an ELF file ---*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Where an ELF file keeps its OffloadBinaries: its SHT_LLVM_OFFLOADING
// sections, found by the rules of kdl/offload/elf.py (the Python reader's),
// so that both readers search the same files alike. Written out here rather
// than through llvm::object::ELFObjectFile, whose checks are other ones.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_CONTAINER_OFFLOADSECTIONS_H
#define KDL_CONTAINER_OFFLOADSECTIONS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace kdl {

/// An SHT_LLVM_OFFLOADING section: its index and its bytes in the file.
struct OffloadSection {
  uint64_t Index, Offset, Size;
};

/// Appends the offloading sections of the ELF file \p Data to \p Found, in
/// section order: ELF32 and ELF64 of either byte order; relocatable,
/// executable and shared objects only (others hold none); every offset and
/// count checked against the file. A header that does not fit is an error.
llvm::Error findOffloadSections(llvm::StringRef Data,
                                std::vector<OffloadSection> &Found);

} // namespace kdl

#endif // KDL_CONTAINER_OFFLOADSECTIONS_H
