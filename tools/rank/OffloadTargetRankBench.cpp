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
//===----------------------------------------------------------------------===//

#include "llvm/Object/OffloadTargetRank.h"
#include "llvm/Support/MemoryBuffer.h"

#include <benchmark/benchmark.h>

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

/// A container of \p N entries, the device's own target last, so that the
/// first-compatible loop looks at every entry.
SmallString<0> makeContainer(const Device &D, size_t N) {
  std::vector<OffloadBinary::OffloadingImage> Images(N);
  for (size_t I = 0; I < N; ++I) {
    auto &Image = Images[I];
    Image.TheImageKind = IMG_Object;
    Image.TheOffloadKind = OFK_OpenMP;
    bool Own = I + 1 == N;
    size_t Other = I % D.Others.size();
    Image.StringData["triple"] =
        Own ? (D.OwnTriple ? D.OwnTriple : D.Triple) : D.entryTriple(Other);
    Image.StringData["arch"] = Own ? D.TargetID : D.Others[Other];
    Image.Image = MemoryBuffer::getMemBuffer(StringRef("\x7f"
                                                       "ELF image",
                                                       9));
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
BENCHMARK_MAIN();
