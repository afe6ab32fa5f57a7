//===- OffloadTargetRankBench.cpp - The cost of ranking entries -----------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What choosing among the N entries of an OffloadBinary costs, beside reading
// the container and beside a loop that takes the first entry whose target is
// compatible (areTargetsCompatible stands in for a plugin's check, which needs
// a device): rank every entry for a device target parsed once, and keep the
// lowest. rankCold also parses the device's target, as a first load would.
//
// The two designs of a runtime's loop, side by side with the loop they
// replace: askThenRank asks the plugin about every entry and ranks those it
// accepts (series v9); rankThenAsk ranks the entries from their metadata,
// each when the search for the next best first reaches it, stopping at an
// entry nothing outranks, and asks the plugin in rank order, stopping at the
// first it accepts (series v11, the loop's code); firstAccepted asks in
// container order (#186088's loop). The plugin's answer costs what the CUDA and
// AMDGPU plugins' first step costs, a read of the image read as an ELF object
// file (ELF64LEObjectFile::create, its machine and flags); the answer itself is
// the rank's, written into e_entry when the container is made, so that every
// design chooses the same entry. The load is not timed. Each design runs over a
// container whose only entry that runs on the device is last (Last) and over
// one where it is first (First).
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/STLExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/OffloadTargetRank.h"
#include "llvm/Support/MemoryBuffer.h"

#include <benchmark/benchmark.h>
#include <cstring>
#include <optional>

using namespace llvm;
using namespace llvm::object;

namespace {

struct Device {
  const char *Triple;               // as the plugin reports it
  const char *TargetID;             // as the plugin reports it
  std::vector<const char *> Others; // archs of the entries that are not its own
  // The entries' triples, where they are not the device's: the own entry's,
  // then one per element of Others.
  const char *OwnTriple = nullptr;
  std::vector<const char *> OtherTriples = {};

  const char *entryTriple(size_t Other) const {
    return OtherTriples.empty() ? Triple : OtherTriples[Other];
  }
};

const Device NVPTXDevice = {"nvptx64-nvidia-cuda",
                            "sm_90",
                            {"sm_50", "sm_60", "sm_70", "sm_75", "sm_80",
                             "sm_86", "sm_89", "sm_100", "sm_100a", "sm_120"}};
const Device AMDGPUDevice = {"amdgcn-amd-amdhsa",
                             "gfx942:sramecc+:xnack-",
                             {"gfx900", "gfx906", "gfx908", "gfx90a:xnack+",
                              "gfx1030", "gfx1100", "gfx1201", "gfx950",
                              "gfx9-generic", "gfx10-3-generic"}};
// The same entries with the triples LLVM main's clang writes for each
// processor (clang-24 --target=amdgcn-amd-amdhsa -mcpu=P
// -print-effective-triple, Debian's snapshot of main at 7e3c57157096): no
// entry spells the device's triple, so every entry's target ID is parsed.
const Device AMDGPUMainTriples = {
    "amdgcn-amd-amdhsa",
    "gfx942:sramecc+:xnack-",
    {"gfx900", "gfx906", "gfx908", "gfx90a:xnack+", "gfx1030", "gfx1100",
     "gfx1201", "gfx950", "gfx9-generic", "gfx10-3-generic"},
    "amdgpu9.42-amd-amdhsa",
    {"amdgpu9.00-amd-amdhsa", "amdgpu9.06-amd-amdhsa", "amdgpu9.08-amd-amdhsa",
     "amdgpu9.0a-amd-amdhsa", "amdgpu10.30-amd-amdhsa",
     "amdgpu11.00-amd-amdhsa", "amdgpu12.01-amd-amdhsa",
     "amdgpu9.50-amd-amdhsa", "amdgpu9-amd-amdhsa", "amdgpu10.3-amd-amdhsa"}};

uint16_t machine(const Device &D) {
  return Triple(D.Triple).isNVPTX() ? ELF::EM_CUDA : ELF::EM_AMDGPU;
}

/// The ELF header of an image for \p D's plugin; e_entry is the plugin's
/// answer, set where the entry's rank says the code runs.
std::string makeImage(const Device &D, bool Runs) {
  ELF::Elf64_Ehdr Header{};
  std::memcpy(Header.e_ident, ELF::ElfMagic, 4);
  Header.e_ident[ELF::EI_CLASS] = ELF::ELFCLASS64;
  Header.e_ident[ELF::EI_DATA] = ELF::ELFDATA2LSB;
  Header.e_ident[ELF::EI_VERSION] = ELF::EV_CURRENT;
  Header.e_type = ELF::ET_EXEC;
  Header.e_machine = machine(D);
  Header.e_version = ELF::EV_CURRENT;
  Header.e_ehsize = sizeof(Header);
  Header.e_entry = Runs;
  return std::string(reinterpret_cast<const char *>(&Header), sizeof(Header));
}

/// The plugin's answer for \p Image on \p D's device, as the CUDA and AMDGPU
/// plugins begin theirs: the image read as an ELF object file, its machine
/// and flags looked at.
bool accepts(const Device &D, StringRef Image) {
  Expected<object::ELF64LEObjectFile> File = object::ELF64LEObjectFile::create(
      MemoryBufferRef(Image, ""), /*InitContent=*/false);
  if (!File) {
    consumeError(File.takeError());
    return false;
  }
  const auto &Header = File->getELFFile().getHeader();
  benchmark::DoNotOptimize(File->getPlatformFlags());
  return Header.e_machine == machine(D) && Header.e_entry;
}

/// A container of \p N entries, the device's own target last (or first, with
/// \p OwnFirst), so that the first-compatible loop looks at every entry.
SmallString<0> makeContainer(const Device &D, size_t N, bool OwnFirst = false) {
  std::vector<OffloadBinary::OffloadingImage> Images(N);
  std::vector<std::string> Bytes(N);
  OffloadDeviceTarget Target(D.Triple, D.TargetID);
  for (size_t I = 0; I < N; ++I) {
    auto &Image = Images[I];
    Image.TheImageKind = IMG_Object;
    Image.TheOffloadKind = OFK_OpenMP;
    bool Own = OwnFirst ? I == 0 : I + 1 == N;
    size_t Other = I % D.Others.size();
    Image.StringData["triple"] =
        Own ? (D.OwnTriple ? D.OwnTriple : D.Triple) : D.entryTriple(Other);
    Image.StringData["arch"] = Own ? D.TargetID : D.Others[Other];
    Bytes[I] = makeImage(D, Target
                                .rank(Image.StringData["triple"],
                                      Image.StringData["arch"], IMG_Object)
                                .runs());
    Image.Image = MemoryBuffer::getMemBuffer(Bytes[I], "", false);
  }
  SmallString<0> Data;
  for (auto &Image : Images) // one binary per entry, as LLVM 22 writes them
    Data.append(OffloadBinary::write(Image));
  return Data;
}

SmallVector<OffloadFile> read(const SmallString<0> &Data) {
  SmallVector<OffloadFile> Files;
  if (Error Err = extractOffloadBinaries(MemoryBufferRef(Data, ""), Files))
    report_fatal_error(std::move(Err));
  return Files;
}

void readContainer(benchmark::State &State, const Device &D) {
  SmallString<0> Data = makeContainer(D, State.range(0));
  for (auto _ : State)
    benchmark::DoNotOptimize(read(Data));
}

void firstCompatible(benchmark::State &State, const Device &D) {
  SmallString<0> Data = makeContainer(D, State.range(0));
  SmallVector<OffloadFile> Files = read(Data);
  OffloadFile::TargetID Target(D.Triple, D.TargetID);
  for (auto _ : State) {
    const OffloadFile *First = nullptr;
    for (const OffloadFile &File : Files)
      if (areTargetsCompatible(File, Target)) {
        First = &File;
        break;
      }
    benchmark::DoNotOptimize(First);
  }
}

/// The entry of \p Files that suits \p Target best, as a loader would pick it.
const OffloadFile *pickBest(const OffloadDeviceTarget &Target,
                            ArrayRef<OffloadFile> Files) {
  const OffloadFile *Best = nullptr;
  OffloadTargetRank BestRank;
  for (const OffloadFile &File : Files) {
    OffloadTargetRank Rank = Target.rank(*File.getBinary());
    if (Rank.runs() && (!Best || Rank < BestRank)) {
      Best = &File;
      BestRank = Rank;
    }
  }
  return Best;
}

void rankEntries(benchmark::State &State, const Device &D) {
  SmallString<0> Data = makeContainer(D, State.range(0));
  SmallVector<OffloadFile> Files = read(Data);
  OffloadDeviceTarget Target(D.Triple, D.TargetID);
  for (auto _ : State)
    benchmark::DoNotOptimize(pickBest(Target, Files));
}

void rankCold(benchmark::State &State, const Device &D) {
  SmallString<0> Data = makeContainer(D, State.range(0));
  SmallVector<OffloadFile> Files = read(Data);
  for (auto _ : State) {
    OffloadDeviceTarget Target(D.Triple, D.TargetID);
    benchmark::DoNotOptimize(pickBest(Target, Files));
  }
}

/// Series v9: every entry asked, the accepted ones ranked, the best taken.
const OffloadBinary *askThenRank(const Device &D,
                                 const OffloadDeviceTarget &Target,
                                 ArrayRef<OffloadFile> Files) {
  SmallVector<std::pair<OffloadTargetRank, size_t>> Candidates;
  for (auto [Idx, File] : enumerate(Files))
    if (accepts(D, File.getBinary()->getImage()))
      Candidates.emplace_back(Target.rank(*File.getBinary()), Idx);
  if (Candidates.empty())
    return nullptr;
  stable_sort(Candidates, less_first());
  return Files[Candidates.front().second].getBinary();
}

/// Series v10: every entry ranked from its metadata, then asked in rank
/// order (the next is the first least of those left); the first accepted
/// taken.
const OffloadBinary *rankThenAsk(const Device &D,
                                 const OffloadDeviceTarget &Target,
                                 ArrayRef<OffloadFile> Files) {
  SmallVector<std::optional<OffloadTargetRank>, 8> Ranks(Files.size());
  SmallVector<bool, 8> Tried(Files.size());
  auto FindNext = [&]() -> std::optional<size_t> {
    std::optional<size_t> Next;
    for (size_t Idx = 0; Idx < Files.size(); ++Idx) {
      if (Tried[Idx])
        continue;
      if (!Ranks[Idx])
        Ranks[Idx] = Files.size() > 1 ? Target.rank(*Files[Idx].getBinary())
                                      : OffloadTargetRank();
      if (!Next || *Ranks[Idx] < *Ranks[*Next])
        Next = Idx;
      if (Target.isBest(*Ranks[Idx]))
        break;
    }
    return Next;
  };
  while (std::optional<size_t> Next = FindNext()) {
    Tried[*Next] = true;
    if (accepts(D, Files[*Next].getBinary()->getImage()))
      return Files[*Next].getBinary();
  }
  return nullptr;
}

/// #186088's loop: asked in container order; the first accepted taken.
const OffloadBinary *firstAccepted(const Device &D, const OffloadDeviceTarget &,
                                   ArrayRef<OffloadFile> Files) {
  for (const OffloadFile &File : Files)
    if (accepts(D, File.getBinary()->getImage()))
      return File.getBinary();
  return nullptr;
}

using Design = const OffloadBinary *(*)(const Device &,
                                        const OffloadDeviceTarget &,
                                        ArrayRef<OffloadFile>);

template <Design Choose>
void design(benchmark::State &State, const Device &D, bool OwnFirst) {
  SmallString<0> Data = makeContainer(D, State.range(0), OwnFirst);
  SmallVector<OffloadFile> Files = read(Data);
  OffloadDeviceTarget Target(D.Triple, D.TargetID);
  const OffloadBinary *Own = Files[OwnFirst ? 0 : Files.size() - 1].getBinary();
  if (Choose(D, Target, Files) != Own)
    State.SkipWithError("the design does not choose the device's own entry");
  for (auto _ : State)
    benchmark::DoNotOptimize(Choose(D, Target, Files));
}

void parseDevice(benchmark::State &State, const Device &D) {
  for (auto _ : State)
    benchmark::DoNotOptimize(OffloadDeviceTarget(D.Triple, D.TargetID));
}

} // namespace

BENCHMARK_CAPTURE(readContainer, nvptx, NVPTXDevice)->Arg(1)->Arg(4)->Arg(64);
BENCHMARK_CAPTURE(firstCompatible, nvptx, NVPTXDevice)->Arg(1)->Arg(4)->Arg(64);
BENCHMARK_CAPTURE(rankEntries, nvptx, NVPTXDevice)->Arg(1)->Arg(4)->Arg(64);
BENCHMARK_CAPTURE(readContainer, amdgpu, AMDGPUDevice)->Arg(1)->Arg(4)->Arg(64);
BENCHMARK_CAPTURE(firstCompatible, amdgpu, AMDGPUDevice)
    ->Arg(1)
    ->Arg(4)
    ->Arg(64);
BENCHMARK_CAPTURE(rankEntries, amdgpu, AMDGPUDevice)->Arg(1)->Arg(4)->Arg(64);
BENCHMARK_CAPTURE(rankCold, nvptx, NVPTXDevice)->Arg(1)->Arg(4)->Arg(64);
BENCHMARK_CAPTURE(rankCold, amdgpu, AMDGPUDevice)->Arg(1)->Arg(4)->Arg(64);
BENCHMARK_CAPTURE(parseDevice, nvptx, NVPTXDevice);
BENCHMARK_CAPTURE(parseDevice, amdgpu, AMDGPUDevice);
BENCHMARK_CAPTURE(readContainer, amdgpu_main, AMDGPUMainTriples)
    ->Arg(1)
    ->Arg(4)
    ->Arg(64);
BENCHMARK_CAPTURE(firstCompatible, amdgpu_main, AMDGPUMainTriples)
    ->Arg(1)
    ->Arg(4)
    ->Arg(64);
BENCHMARK_CAPTURE(rankEntries, amdgpu_main, AMDGPUMainTriples)
    ->Arg(1)
    ->Arg(4)
    ->Arg(64);
BENCHMARK_CAPTURE(rankCold, amdgpu_main, AMDGPUMainTriples)
    ->Arg(1)
    ->Arg(4)
    ->Arg(64);
// The designs: NVPTX and AMDGPU in main's spellings, the device's own entry
// last and first.
#define KDL_DESIGN(FN, NAME, DEV, FIRST)                                       \
  BENCHMARK_CAPTURE(design<FN>, NAME, DEV, FIRST)->Arg(1)->Arg(4)->Arg(64)
KDL_DESIGN(askThenRank, nvptx_last, NVPTXDevice, false);
KDL_DESIGN(rankThenAsk, nvptx_last, NVPTXDevice, false);
KDL_DESIGN(firstAccepted, nvptx_last, NVPTXDevice, false);
KDL_DESIGN(askThenRank, nvptx_first, NVPTXDevice, true);
KDL_DESIGN(rankThenAsk, nvptx_first, NVPTXDevice, true);
KDL_DESIGN(firstAccepted, nvptx_first, NVPTXDevice, true);
KDL_DESIGN(askThenRank, amdgpu_main_last, AMDGPUMainTriples, false);
KDL_DESIGN(rankThenAsk, amdgpu_main_last, AMDGPUMainTriples, false);
KDL_DESIGN(firstAccepted, amdgpu_main_last, AMDGPUMainTriples, false);
KDL_DESIGN(askThenRank, amdgpu_main_first, AMDGPUMainTriples, true);
KDL_DESIGN(rankThenAsk, amdgpu_main_first, AMDGPUMainTriples, true);
KDL_DESIGN(firstAccepted, amdgpu_main_first, AMDGPUMainTriples, true);
BENCHMARK_MAIN();
