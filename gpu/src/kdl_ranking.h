//===- kdl_ranking.h - select_bench's adapter to the series' library ------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Included by select_bench.cpp when gpu/prepare.sh finds the overlay build
// (KDLOffloadMetadata and the series' extracted headers).
//
//===----------------------------------------------------------------------===//

#ifndef KDL_GPU_KDL_RANKING_H
#define KDL_GPU_KDL_RANKING_H

#include "llvm/Object/OffloadBinary.h"
#include "llvm/Object/OffloadMetadata.h"

/// Parse every image of \p Data and return the series' choice for the device
/// {nvptx64-nvidia-cuda, \p Arch} (-1 when none is compatible). The device
/// description is built once per process, outside the timed selections.
static int kdlRankedSelect(llvm::StringRef Data, llvm::StringRef Arch,
                           size_t &NImages) {
  using namespace llvm;
  using namespace llvm::object;
  static std::optional<OffloadDevice> Dev;
  if (!Dev) {
    Expected<OffloadDevice> D =
        OffloadDevice::create("nvptx64-nvidia-cuda", Arch, {});
    if (!D)
      kdl::fatal(toString(D.takeError()));
    Dev.emplace(std::move(*D));
  }
  SmallVector<OffloadFile> Files;
  if (Error E = extractOffloadBinaries(MemoryBufferRef(Data, "input"), Files))
    kdl::fatal(toString(std::move(E)));
  NImages = Files.size();
  OffloadImageRanking R = rankOffloadImages(Files, *Dev);
  return R.Selected ? static_cast<int>(*R.Selected) : -1;
}

#endif // KDL_GPU_KDL_RANKING_H
