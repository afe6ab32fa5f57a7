//===- OffloadTargetRankFuzzer.cpp - Fuzz the rank and its reader ---------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A libFuzzer target for the series' rank (llvm/Object/OffloadTargetRank.h,
// compiled from the release/22.x backport's texts as kdl-select is), built
// with ASan and UBSan by `kdl fuzz`.
//
// Each input is first read as an OffloadBinary container by the workspace's
// reader (overlay/container/OffloadEntries.h, kdl-select's);
// for each of several devices every entry it yields is checked by the
// model of the plugins' acceptance (overlay/plugin-model/PluginAcceptance.h)
// and ranked as
// kdl-select ranks it (the entry's triple, arch and ImageKind, all from the
// file), and the accepted ones are ordered as the series' loop orders them (a
// stable sort by rank). Then the input is split by FuzzedDataProvider into a
// device (a triple and a target ID, often garbled) and entries (a triple, an
// arch and an image kind each), which are ranked alike. Every rank must be a
// strict weak order's element (irreflexive, asymmetric) and a fit of none must
// not run. The seed corpus is the inputs the lit suite packs, most of them
// containers, and the committed OffloadBinary fixtures: versions 1 and 2, and
// version 3 as LLVM main writes it, uncompressed, zstd and zlib.
//
//===----------------------------------------------------------------------===//

#include "OffloadEntries.h"
#include "PluginAcceptance.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Object/OffloadTargetRank.h"
#include "llvm/Support/raw_ostream.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

using namespace llvm;
using namespace llvm::object;

namespace {
struct Device {
  const char *TripleName;
  const char *TargetID;
  const char *OtherISA;
};
} // namespace

static const Device Devices[] = {
    {"nvptx64-nvidia-cuda", "sm_90", nullptr},
    {"nvptx64-nvidia-cuda", "sm_86", nullptr},
    {"nvptx64-nvidia-cuda", "sm_100", nullptr},
    {"nvptx64-nvidia-cuda", "sm_103", nullptr},
    {"amdgcn-amd-amdhsa", "gfx942:sramecc+:xnack-",
     "gfx9-4-generic:sramecc+:xnack-"},
    {"amdgcn-amd-amdhsa", "gfx90a:xnack+", nullptr},
    {"x86_64-unknown-linux-gnu", "", nullptr},
};

/// Traps unless \p Ranks are elements of a strict weak order and a fit of
/// none does not run.
static void checkRanks(ArrayRef<OffloadTargetRank> Ranks) {
  for (const OffloadTargetRank &R : Ranks) {
    if (R < R || R.runs() == (R.Fit == OffloadTargetFit::None))
      __builtin_trap();
    nulls() << getOffloadTargetFitName(R.Fit);
    for (const OffloadTargetRank &S : Ranks)
      if (R < S && S < R)
        __builtin_trap();
  }
}

/// The input read as containers: the entries the reader yields, ranked for
/// every device as kdl-select ranks them.
static void rankContainer(StringRef Buffer) {
  std::vector<kdl::OffloadEntry> Entries;
  if (Error Err = kdl::readOffloadBinaries(Buffer, -1, Entries)) {
    consumeError(std::move(Err));
    return;
  }
  for (const kdl::OffloadEntry &E : Entries) {
    // An entry is a view of the buffer, inside it, or of a compressed
    // binary's inflated copy, which it holds.
    StringRef Within = E.Storage ? E.Storage->getBuffer() : Buffer;
    if (E.Image.data() < Within.data() ||
        E.Image.data() + E.Image.size() > Within.data() + Within.size())
      __builtin_trap();
  }
  for (const Device &D : Devices) {
    kdl::PluginDevice Plugin{kdl::parseTriple(D.TripleName),
                             StringRef(D.TargetID).split(':').first.str(),
                             D.TargetID,
                             {}};
    if (D.OtherISA)
      Plugin.OtherISAs.push_back(D.OtherISA);
    OffloadDeviceTarget Target(D.TripleName, D.TargetID);
    SmallVector<std::pair<OffloadTargetRank, size_t>, 8> Accepted;
    SmallVector<OffloadTargetRank, 8> Ranks;
    std::string Why;
    for (auto [I, E] : enumerate(Entries)) {
      OffloadTargetRank R = Target.rank(E.Triple, E.Arch, E.ImageKind);
      Ranks.push_back(R);
      if (!E.MetadataOnly && kdl::pluginAccepts(E.Image, Plugin, Why))
        Accepted.emplace_back(R, I);
    }
    checkRanks(Ranks);
    llvm::stable_sort(Accepted, less_first());
    for (size_t I = 1; I < Accepted.size(); ++I)
      if (Accepted[I].first < Accepted[I - 1].first)
        __builtin_trap();
  }
}

static const ImageKind Kinds[] = {IMG_None,  IMG_Object,    IMG_Bitcode,
                                  IMG_Cubin, IMG_Fatbinary, IMG_PTX,
                                  IMG_SPIRV};

static const char *const Triples[] = {
    "nvptx64-nvidia-cuda",   "nvptx64--cuda",
    "nvptx-nvidia-cuda",     "amdgcn-amd-amdhsa",
    "amdgpu9.42-amd-amdhsa", "x86_64-unknown-linux-gnu",
    "spirv64-intel",         ""};

static const char *const Archs[] = {"sm_90",
                                    "sm_90a",
                                    "sm_100f",
                                    "sm_86",
                                    "sm_103",
                                    "compute_80",
                                    "gfx942",
                                    "gfx90a",
                                    "gfx90a:xnack+",
                                    "gfx942:sramecc+:xnack-",
                                    "gfx9-4-generic",
                                    "gfx9-generic:xnack-",
                                    "gfx11-generic",
                                    "generic",
                                    ""};

/// A triple or an arch: one of \p Known, or a fuzzed string.
template <size_t N>
static StringRef pick(FuzzedDataProvider &P, const char *const (&Known)[N],
                      std::vector<std::string> &Storage) {
  if (P.ConsumeBool())
    return P.PickValueInArray(Known);
  return Storage.emplace_back(P.ConsumeRandomLengthString(24));
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  rankContainer(StringRef(reinterpret_cast<const char *>(Data), Size));
  FuzzedDataProvider P(Data, Size);
  std::vector<std::string> Storage;
  Storage.reserve(40);
  StringRef DeviceTriple = pick(P, Triples, Storage);
  StringRef DeviceID = pick(P, Archs, Storage);
  OffloadDeviceTarget Target(DeviceTriple, DeviceID);
  SmallVector<OffloadTargetRank, 8> Ranks;
  unsigned N = P.ConsumeIntegralInRange<unsigned>(1, 8);
  for (unsigned I = 0; I < N; ++I) {
    StringRef EntryTriple = pick(P, Triples, Storage);
    StringRef Arch = pick(P, Archs, Storage);
    Ranks.push_back(Target.rank(EntryTriple, Arch, P.PickValueInArray(Kinds)));
  }
  checkRanks(Ranks);
  return 0;
}
