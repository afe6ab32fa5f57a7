//===- ShimPolicy.cpp - The kdl shim's image choice -------------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ShimPolicy.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Object/OffloadMetadata.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

using namespace llvm;
using namespace llvm::object;

namespace kdl {
namespace shim {

static bool isFeatureToken(StringRef S) {
  return !S.empty() && S.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "abcdefghijklmnopqrstuvwxyz"
                                           "0123456789_.+-") == StringRef::npos;
}

/// "rank 1, native-exact, priority 5, tag 'fast'" for a compatible image.
static void describeRanked(raw_ostream &OS, const RankedImage &RI) {
  OS << "rank " << RI.Rank << ", " << getImageTierName(RI.Result.Tier);
  if (RI.Priority)
    OS << ", priority " << *RI.Priority;
  if (RI.Tag)
    OS << ", tag '" << *RI.Tag << "'";
}

Selection selectImage(const DeviceInfo &Device,
                      ArrayRef<const Candidate *> Candidates,
                      std::optional<StringRef> Tag) {
  Selection S;
  SmallVector<StringRef, 32> Features;
  for (const std::string &F : Device.Features)
    if (isFeatureToken(F))
      Features.push_back(F);
  Expected<OffloadDevice> Dev =
      OffloadDevice::create(Device.Triple, Device.Arch, Features);
  if (!Dev) {
    S.Error =
        "cannot describe " + Device.Label + ": " + toString(Dev.takeError());
    return S;
  }

  SmallVector<const OffloadBinary *, 8> Images;
  for (const Candidate *C : Candidates)
    Images.push_back(C->Binary.get());
  OffloadImageRanking Ranking =
      rankOffloadImages(Images, *Dev, Tag ? *Tag : StringRef());

  raw_string_ostream OS(S.Report);
  OS << "image selection for " << Ranking.Device << " (" << Device.Label << ")";
  if (Tag)
    OS << " with variant_tag=" << *Tag;
  OS << ": ";
  if (Ranking.Selected) {
    const RankedImage &Best = Ranking.Images[*Ranking.Selected];
    OS << "image " << Candidates[Best.Index]->Index << " (";
    describeRanked(OS, Best);
    OS << ")";
  } else {
    OS << "no image";
  }
  for (const RankedImage &RI : Ranking.Images) {
    if (Ranking.Selected && RI.Index == *Ranking.Selected)
      continue;
    OS << "; image " << Candidates[RI.Index]->Index << ": ";
    if (RI.Result) {
      OS << "out-ranked (";
      describeRanked(OS, RI);
      OS << ")";
    } else {
      OS << "rejected (" << getImageCompatibilityName(RI.Result.Reason) << ": ";
      RI.Result.printDetail(OS);
      OS << ")";
    }
  }
  OS.flush();

  Expected<size_t> Selected = Ranking.getSelected();
  if (!Selected) {
    S.Error = toString(Selected.takeError());
    return S;
  }
  S.Selected = Candidates[*Selected]->Index;
  return S;
}

static bool nonZero(const char *Value) {
  if (!Value || !*Value)
    return false;
  char *End = nullptr;
  long N = std::strtol(Value, &End, 0);
  return End != Value ? N != 0 : true;
}

bool infoEnabled(bool OpenMP) {
  return nonZero(std::getenv("KDL_INFO")) ||
         (OpenMP && nonZero(std::getenv("LIBOMPTARGET_INFO")));
}

std::optional<std::string> tagOverride() {
  const char *Tag = std::getenv("KDL_IMAGE_TAG");
  if (!Tag || !*Tag)
    return std::nullopt;
  return std::string(Tag);
}

void printLine(const Twine &Line) {
  SmallString<256> Buffer;
  StringRef Text = Line.toStringRef(Buffer);
  std::fprintf(stderr, "kdl: %.*s\n", static_cast<int>(Text.size()),
               Text.data());
}

} // namespace shim
} // namespace kdl
