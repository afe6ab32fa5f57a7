//===- ShimPolicy.cpp - The kdl shim's image choice -------------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ShimPolicy.h"
#include "PluginCompat.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Frontend/Offloading/ImageRanking.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

using namespace llvm;
using namespace llvm::object;
using namespace llvm::offloading;

namespace kdl {
namespace shim {

DeviceFamily familyOf(const OffloadEntry &C) {
  if (C.InBinary)
    return familyOf(parseTriple(C.Triple));
  Expected<std::unique_ptr<ObjectFile>> Obj =
      ObjectFile::createObjectFile(MemoryBufferRef(C.Image, ""));
  if (!Obj) {
    consumeError(Obj.takeError());
    return DeviceFamily::Unknown;
  }
  Triple T = (*Obj)->makeTriple();
  if (T.isNVPTX() || (*Obj)->getArch() == Triple::nvptx64)
    return DeviceFamily::Cuda;
  return familyOf(T);
}

Selection selectImage(const DeviceInfo &Device,
                      ArrayRef<const OffloadEntry *> Candidates,
                      std::optional<StringRef> Tag, bool Report) {
  Selection S;
  PluginDevice Plugin{parseTriple(Device.Triple), Device.Arch, Device.Arch, {}};
  SmallVector<StringRef, 16> Features(Device.Features.begin(),
                                      Device.Features.end());
  ImageDevice Dev{Device.Arch, std::nullopt};
  if (!Features.empty())
    Dev.Features = ArrayRef(Features);

  // What the plugin accepts, in the order the runtime would try it.
  SmallVector<ImageCandidate, 8> Accepted;
  SmallVector<unsigned, 8> AcceptedIndex; // each one's OffloadEntry::Index
  SmallVector<std::pair<const OffloadEntry *, std::string>, 8> Rejected;
  for (const OffloadEntry *C : Candidates) {
    std::string Why;
    if (pluginAccepts(C->Image, Plugin, Why)) {
      Accepted.push_back({C->Image, C->Keys});
      AcceptedIndex.push_back(C->Index);
    } else {
      Rejected.push_back({C, std::move(Why)});
    }
  }

  if (Accepted.empty()) {
    raw_string_ostream Err(S.Error);
    Err << "no compatible image for " << Device.Label << "; available:";
    for (auto [C, Why] : Rejected)
      Err << " [" << C->Index << "] " << Why << ";";
    S.Error.pop_back();
    if (Report)
      S.Report = "image selection for " + Device.Triple + " " + Device.Arch +
                 " (" + Device.Label + "): no image";
    return S;
  }

  ImageSelection Choice =
      offloading::selectImage(Accepted, Dev, Tag ? *Tag : StringRef());
  S.Selected = AcceptedIndex[Choice.Index];
  if (Choice.TagIgnored)
    printLine("note: no image for " + Device.Label +
              " has variant_tag=" + *Tag + "; the tag is ignored");
  if (!Report)
    return S;

  // The words are the library's (printImageSelection), with the shim's own
  // numbers; the images the plugin rejected are the shim's to add.
  raw_string_ostream OS(S.Report);
  OS << "image selection for " << Device.Triple << " " << Device.Arch << " ("
     << Device.Label << ")";
  if (Tag)
    OS << " with variant_tag=" << *Tag;
  OS << ": " << printImageSelection(Accepted, Dev, Choice, AcceptedIndex);
  for (auto [C, Why] : Rejected)
    OS << "; image " << C->Index << ": rejected (" << Why << ")";
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
