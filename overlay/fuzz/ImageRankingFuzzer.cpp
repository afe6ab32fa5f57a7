//===- ImageRankingFuzzer.cpp - Fuzz the series' image ranking ------------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A libFuzzer target for llvm/Frontend/Offloading/ImageRanking.h, built with
// ASan and UBSan by `kdl fuzz`. FuzzedDataProvider splits each input into
// candidates (an image, often behind an ELF header with fuzzed machine and
// flags, and every selection key); for each of several devices the images
// its plugin accepts (overlay/compat/PluginCompat, the helpers'
// precondition) go through selectImage(), rankImage(), isBetterImage(),
// describeImage() and printImageSelection().
//
// Each input is first read as an OffloadBinary container by the workspace's
// reader (overlay/container/OffloadEntries.h), which the shim runs on what
// the runtime is given; the entries it yields are ranked for every device
// too, by v2's library and by v3's rules as kdl-select applies them
// (tools/kdl-select/EntryFit.h: the entry's arch, triple, kind and
// variant_priority, all from the file). (The series itself reads containers
// with main's OffloadBinary::create; LLVM 22's, all this build has, does not
// bound string offsets.) The seed corpus is the inputs the lit suite packs,
// most of them containers, and the committed OffloadBinary fixtures: versions 1
// and 2, and version 3 as LLVM main writes it, uncompressed, zstd and zlib.
//
//===----------------------------------------------------------------------===//

#include "EntryFit.h"
#include "OffloadEntries.h"
#include "PluginCompat.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Frontend/Offloading/ImageRanking.h"
#include "llvm/Support/raw_ostream.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <string>
#include <vector>

using namespace llvm;
using namespace llvm::offloading;

namespace {
struct Device {
  kdl::PluginDevice Plugin;
  StringRef Arch;
};
} // namespace

static const Device &device(unsigned I) {
  static const Device Devices[] = {
      {{Triple("nvptx64-nvidia-cuda"), "sm_90", "sm_90", {}}, "sm_90"},
      {{Triple("nvptx64-nvidia-cuda"), "sm_86", "sm_86", {}}, "sm_86"},
      {{Triple("nvptx64-nvidia-cuda"), "sm_100", "sm_100", {}}, "sm_100"},
      {{Triple("amdgcn-amd-amdhsa"),
        "gfx942",
        "gfx942:sramecc+:xnack-",
        {"gfx9-4-generic:sramecc+:xnack-"}},
       "gfx942"},
      {{Triple("x86_64-unknown-linux-gnu"), "", "", {}}, ""},
  };
  return Devices[I % std::size(Devices)];
}

/// A 64-byte ELF header with fuzzed machine, flags and ABI fields: most are
/// rejected by the plugins' test, some are accepted images.
static std::string header(FuzzedDataProvider &P) {
  ELF::Elf64_Ehdr H;
  std::memset(&H, 0, sizeof(H));
  std::memcpy(H.e_ident, ELF::ElfMagic, 4);
  H.e_ident[ELF::EI_CLASS] = ELF::ELFCLASS64;
  H.e_ident[ELF::EI_DATA] = ELF::ELFDATA2LSB;
  H.e_ident[ELF::EI_VERSION] = ELF::EV_CURRENT;
  H.e_ident[ELF::EI_OSABI] = P.PickValueInArray<uint8_t>({0x33, 0x29, 64, 0});
  H.e_ident[ELF::EI_ABIVERSION] = P.PickValueInArray<uint8_t>({7, 8, 3, 4});
  H.e_type = P.PickValueInArray<uint16_t>({ELF::ET_EXEC, ELF::ET_DYN});
  H.e_machine = P.PickValueInArray<uint16_t>(
      {ELF::EM_CUDA, ELF::EM_AMDGPU, ELF::EM_X86_64});
  H.e_version = ELF::EV_CURRENT;
  H.e_flags = P.ConsumeIntegral<uint32_t>();
  H.e_ehsize = sizeof(H);
  return std::string(reinterpret_cast<const char *>(&H), sizeof(H));
}

/// Exercises the ranking on \p Candidates as the runtime would: only the
/// images the device's plugin accepts (the helpers' precondition).
static void choose(ArrayRef<ImageCandidate> All, const Device &D,
                   StringRef Tag) {
  SmallVector<ImageCandidate, 8> Candidates;
  std::string Why;
  for (const ImageCandidate &C : All)
    if (kdl::pluginAccepts(C.Image, D.Plugin, Why))
      Candidates.push_back(C);
  StringRef Features[] = {"bf16"};
  for (ImageDevice RankDevice :
       {ImageDevice{D.Arch, std::nullopt}, ImageDevice{D.Arch, Features}}) {
    ImageSelection S = selectImage(Candidates, RankDevice, Tag);
    if (!Candidates.empty() && S.Index >= Candidates.size())
      __builtin_trap();
    nulls() << printImageSelection(Candidates, RankDevice, S);
    for (const ImageCandidate &C : Candidates) {
      (void)rankImage(C.Image, RankDevice.Arch, C.Keys.Arch);
      describeImage(nulls(), C, RankDevice);
      (void)isBetterImage(Candidates.front(), C, RankDevice);
    }
  }
}

/// The input read as containers: the entries the reader yields, ranked.
static void chooseFromContainer(StringRef Buffer) {
  std::vector<kdl::OffloadEntry> Entries;
  if (Error Err = kdl::readOffloadBinaries(Buffer, -1, Entries)) {
    consumeError(std::move(Err));
    return;
  }
  SmallVector<ImageCandidate, 8> Candidates;
  for (const kdl::OffloadEntry &E : Entries) {
    // An entry is a view of the buffer, inside it, or of a compressed
    // binary's inflated copy, which it holds.
    StringRef Within = E.Storage ? E.Storage->getBuffer() : Buffer;
    if (E.Image.data() < Within.data() ||
        E.Image.data() + E.Image.size() > Within.data() + Within.size())
      __builtin_trap();
    if (!E.MetadataOnly)
      Candidates.push_back({E.Image, E.Keys});
  }
  for (unsigned I = 0; I < 5; ++I) {
    const Device &D = device(I);
    choose(Candidates, D, "");
    // v3: every entry's rank, a strict weak order.
    SmallVector<kdl::EntryRank, 8> Ranks;
    for (const kdl::OffloadEntry &E : Entries)
      Ranks.push_back(kdl::getEntryRank(E.ImageKind, E.Triple, E.Keys.Arch,
                                        E.Keys.VariantPriority,
                                        D.Plugin.TargetID, D.Plugin.Triple));
    for (const kdl::EntryRank &R : Ranks) {
      if (R < R)
        __builtin_trap();
      nulls() << kdl::getEntryFitName(R.Fit);
    }
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  chooseFromContainer(StringRef(reinterpret_cast<const char *>(Data), Size));
  FuzzedDataProvider P(Data, Size);
  std::vector<std::string> Storage;
  Storage.reserve(64);
  SmallVector<ImageCandidate, 8> Candidates;
  unsigned N = P.ConsumeIntegralInRange<unsigned>(1, 8);
  for (unsigned I = 0; I < N; ++I) {
    ImageCandidate C;
    StringRef *Fields[] = {
        &C.Keys.VariantPriority, &C.Keys.VariantTag,       &C.Keys.MinSM,
        &C.Keys.MinGFX,          &C.Keys.RequiresFeatures, &C.Keys.Arch};
    for (StringRef *Field : Fields)
      if (P.ConsumeBool())
        *Field = Storage.emplace_back(P.ConsumeRandomLengthString(16));
    std::string Image = P.ConsumeBool() ? header(P) : std::string();
    Image += P.ConsumeRandomLengthString(256);
    C.Image = Storage.emplace_back(std::move(Image));
    Candidates.push_back(C);
  }
  StringRef Tag = Storage.emplace_back(P.ConsumeRandomLengthString(8));
  for (unsigned I = 0; I < 5; ++I)
    choose(Candidates, device(I), Tag);
  return 0;
}
