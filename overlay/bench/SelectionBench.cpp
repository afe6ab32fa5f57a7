//===- SelectionBench.cpp - Cost of choosing an OffloadBinary image -------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Measures, on binaries packed by llvm-offload-binary, what choosing an image
// costs:
//
//   parse       extractOffloadBinaries() over the whole file in memory
//   check       the plugin's acceptance test (compat/PluginCompat.h) on
//               every image
//   ranked      series v2 on the parsed images: the acceptance test on every
//               image, then offloading::selectImage() over the accepted ones
//   first_wins  today's registerLib loop on the same parsed images: the
//               acceptance test until the first image that passes
//
// ranked and first_wins run the same acceptance code, so the difference
// between them is what ranking adds: testing the images after the first
// accepted one, and ordering the accepted ones.
//
// The four run interleaved: each round times one batch of each, in an order
// that rotates from round to round, so that noise on a shared machine hits
// all of them alike. A batch is as many calls as fill the sample time; its
// time divided by the calls is one sample. The output is one JSON document
// with the median, p5, p95 and quartiles of each, and per round the ratio
// ranked / first_wins (paired samples).
//
//   kdl-selection-bench --manifest=FILE [--rounds=N] [--sample-us=N]
//
// FILE (written by `kdl bench`):
//   {"device": {"triple": T, "arch": A, "features": [F, ...]},
//    "cases": [{"name": N, "file": PATH,
//               "expect": {"ranked": I, "first_wins": J}}, ...]}
// The selections are checked against "expect" before anything is timed.
//
//===----------------------------------------------------------------------===//

#include "PluginCompat.h"
#include "common.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Frontend/Offloading/ImageRanking.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
using namespace llvm::object;
using namespace llvm::offloading;

static cl::OptionCategory BenchCategory("kdl-selection-bench options");
static cl::opt<std::string> ManifestPath("manifest", cl::Required,
                                         cl::desc("cases to measure (JSON)"),
                                         cl::value_desc("file"),
                                         cl::cat(BenchCategory));
static cl::opt<unsigned> Rounds("rounds", cl::init(301),
                                cl::desc("samples of each measurement"),
                                cl::cat(BenchCategory));
static cl::opt<unsigned> SampleUs("sample-us", cl::init(50),
                                  cl::desc("minimum time of one sample (us)"),
                                  cl::cat(BenchCategory));

/// Keep a value alive and the memory state opaque to the optimizer.
template <typename T> static inline void doNotOptimize(const T &Value) {
  asm volatile("" : : "r,m"(Value) : "memory");
}

/// The GPU harness's clock (gpu/src/common.h), as an unsigned count.
static uint64_t nowNs() { return static_cast<uint64_t>(kdl::nowNs()); }

/// Today's policy: libomptarget's PluginManager::registerLib loads, per
/// device, the first image the plugin accepts.
static std::optional<size_t> firstCompatibleWins(ArrayRef<OffloadFile> Files,
                                                 const kdl::PluginDevice &Dev) {
  std::string Why;
  for (size_t I = 0, E = Files.size(); I != E; ++I)
    if (kdl::pluginAccepts(Files[I].getBinary()->getImage(), Dev, Why))
      return I;
  return std::nullopt;
}

/// Series v2: every image the plugin accepts, the best of them. The keys are
/// read only when there is more than one to choose from.
static std::optional<size_t> ranked(ArrayRef<OffloadFile> Files,
                                    const kdl::PluginDevice &Dev,
                                    const ImageDevice &RankDev) {
  std::string Why;
  SmallVector<size_t, 8> Index;
  for (size_t I = 0, E = Files.size(); I != E; ++I)
    if (kdl::pluginAccepts(Files[I].getBinary()->getImage(), Dev, Why))
      Index.push_back(I);
  if (Index.size() <= 1)
    return Index.empty() ? std::nullopt : std::optional<size_t>(Index[0]);
  SmallVector<ImageCandidate, 8> Accepted;
  for (size_t I : Index) {
    const OffloadBinary &B = *Files[I].getBinary();
    Accepted.push_back({B.getImage(), offloading::getImageKeys(B)});
  }
  return Index[selectImage(Accepted, RankDev).Index];
}

namespace {
struct Stats {
  double Median, P5, P95, Q1, Q3, Min, Mean;
};

struct Measure {
  const char *Name;
  std::function<size_t()> Call;
  uint64_t CallsPerSample = 1;
  std::vector<double> Samples;
};

struct Case {
  std::string Name;
  std::string File;
  std::optional<int64_t> ExpectRanked;
  std::optional<int64_t> ExpectFirstWins;
};
} // namespace

static double percentile(ArrayRef<double> Sorted, double P) {
  if (Sorted.empty())
    return 0;
  double Pos = P * (Sorted.size() - 1);
  size_t Lo = static_cast<size_t>(std::floor(Pos));
  size_t Hi = std::min(Lo + 1, Sorted.size() - 1);
  return Sorted[Lo] + (Sorted[Hi] - Sorted[Lo]) * (Pos - Lo);
}

static Stats summarize(std::vector<double> Samples) {
  llvm::sort(Samples);
  double Sum = 0;
  for (double S : Samples)
    Sum += S;
  return {percentile(Samples, 0.50),
          percentile(Samples, 0.05),
          percentile(Samples, 0.95),
          percentile(Samples, 0.25),
          percentile(Samples, 0.75),
          Samples.empty() ? 0 : Samples.front(),
          Samples.empty() ? 0 : Sum / Samples.size()};
}

static volatile size_t Sink;

/// Calls per sample so that one batch takes at least the sample time.
static uint64_t calibrate(const Measure &M) {
  const uint64_t Target = static_cast<uint64_t>(SampleUs) * 1000;
  for (uint64_t Calls = 1;; Calls *= 2) {
    uint64_t Start = nowNs();
    size_t Acc = 0;
    for (uint64_t I = 0; I < Calls; ++I)
      Acc += M.Call();
    uint64_t Elapsed = nowNs() - Start;
    Sink = Acc;
    if (Elapsed >= Target || Calls >= (uint64_t(1) << 30))
      return std::max<uint64_t>(
          1, static_cast<uint64_t>(
                 Calls * (double(Target) / std::max<uint64_t>(Elapsed, 1))));
  }
}

static void writeStats(json::OStream &J, StringRef Key, const Measure &M) {
  Stats S = summarize(M.Samples);
  J.attributeObject(Key, [&] {
    J.attribute("median_ns", S.Median);
    J.attribute("p5_ns", S.P5);
    J.attribute("p95_ns", S.P95);
    J.attribute("q1_ns", S.Q1);
    J.attribute("q3_ns", S.Q3);
    J.attribute("min_ns", S.Min);
    J.attribute("mean_ns", S.Mean);
    J.attribute("samples", static_cast<int64_t>(M.Samples.size()));
    J.attribute("calls_per_sample", static_cast<int64_t>(M.CallsPerSample));
  });
}

static Error measureCase(const Case &C, const kdl::PluginDevice &Dev,
                         const ImageDevice &RankDev, json::OStream &J) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> BufOrErr =
      MemoryBuffer::getFile(C.File, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!BufOrErr)
    return createFileError(C.File, BufOrErr.getError());
  MemoryBufferRef Buffer = (*BufOrErr)->getMemBufferRef();

  SmallVector<OffloadFile, 0> Files;
  if (Error Err = extractOffloadBinaries(Buffer, Files))
    return createFileError(C.File, std::move(Err));
  if (Files.empty())
    return createFileError(C.File, createStringError("no offload binary"));

  // Check what is measured before measuring it.
  std::optional<size_t> Ranked = ranked(Files, Dev, RankDev);
  std::optional<size_t> First = firstCompatibleWins(Files, Dev);
  auto AsIndex = [](std::optional<size_t> I) -> std::optional<int64_t> {
    if (!I)
      return std::nullopt;
    return static_cast<int64_t>(*I);
  };
  if (AsIndex(Ranked) != C.ExpectRanked)
    return createStringError(
        "%s: ranked selection chose %s, expected %s", C.Name.c_str(),
        Ranked ? std::to_string(*Ranked).c_str() : "none",
        C.ExpectRanked ? std::to_string(*C.ExpectRanked).c_str() : "none");
  if (AsIndex(First) != C.ExpectFirstWins)
    return createStringError(
        "%s: first-wins chose %s, expected %s", C.Name.c_str(),
        First ? std::to_string(*First).c_str() : "none",
        C.ExpectFirstWins ? std::to_string(*C.ExpectFirstWins).c_str()
                          : "none");
  size_t Compatible = 0;
  std::string Why;
  for (const OffloadFile &F : Files)
    Compatible += kdl::pluginAccepts(F.getBinary()->getImage(), Dev, Why);

  std::array<Measure, 4> Measures = {{
      {"parse",
       [&] {
         SmallVector<OffloadFile, 0> Parsed;
         if (Error Err = extractOffloadBinaries(Buffer, Parsed))
           consumeError(std::move(Err)); // cannot fail: parsed above
         doNotOptimize(Parsed.data());
         return Parsed.size();
       }},
      {"check",
       [&] {
         size_t N = 0;
         std::string Why;
         for (const OffloadFile &F : Files)
           N += kdl::pluginAccepts(F.getBinary()->getImage(), Dev, Why);
         doNotOptimize(N);
         return N;
       }},
      {"ranked",
       [&] {
         std::optional<size_t> R = ranked(Files, Dev, RankDev);
         doNotOptimize(R);
         return R.value_or(0);
       }},
      {"first_wins",
       [&] {
         std::optional<size_t> R = firstCompatibleWins(Files, Dev);
         doNotOptimize(R);
         return R.value_or(0);
       }},
  }};

  // Warm up (caches, branch predictors, allocator), then calibrate.
  for (Measure &M : Measures) {
    uint64_t End = nowNs() + 2'000'000;
    size_t Acc = 0;
    while (nowNs() < End)
      Acc += M.Call();
    Sink = Acc;
    M.CallsPerSample = calibrate(M);
    M.Samples.reserve(Rounds);
  }

  for (unsigned Round = 0; Round < Rounds; ++Round) {
    for (size_t K = 0; K < Measures.size(); ++K) {
      Measure &M = Measures[(Round + K) % Measures.size()];
      size_t Acc = 0;
      uint64_t Start = nowNs();
      for (uint64_t I = 0; I < M.CallsPerSample; ++I)
        Acc += M.Call();
      uint64_t Elapsed = nowNs() - Start;
      Sink = Acc;
      M.Samples.push_back(double(Elapsed) / M.CallsPerSample);
    }
  }

  std::vector<double> Ratios;
  for (unsigned Round = 0; Round < Rounds; ++Round)
    Ratios.push_back(Measures[2].Samples[Round] / Measures[3].Samples[Round]);
  Stats R = summarize(Ratios);

  J.object([&] {
    J.attribute("name", C.Name);
    J.attribute("file", C.File);
    J.attribute("file_bytes", static_cast<int64_t>(Buffer.getBufferSize()));
    J.attribute("images", static_cast<int64_t>(Files.size()));
    J.attribute("compatible_images", static_cast<int64_t>(Compatible));
    J.attributeObject("selected", [&] {
      J.attribute("ranked", AsIndex(Ranked) ? json::Value(*AsIndex(Ranked))
                                            : json::Value(nullptr));
      J.attribute("first_wins", AsIndex(First) ? json::Value(*AsIndex(First))
                                               : json::Value(nullptr));
    });
    for (const Measure &M : Measures)
      writeStats(J, M.Name, M);
    J.attributeObject("ratio", [&] {
      J.attribute("median", R.Median);
      J.attribute("p5", R.P5);
      J.attribute("p95", R.P95);
      J.attribute("q1", R.Q1);
      J.attribute("q3", R.Q3);
    });
  });
  return Error::success();
}

static Expected<std::vector<Case>> readCases(const json::Object &Manifest) {
  const json::Array *Cases = Manifest.getArray("cases");
  if (!Cases)
    return createStringError("manifest: no \"cases\" array");
  std::vector<Case> Out;
  for (const json::Value &V : *Cases) {
    const json::Object *O = V.getAsObject();
    if (!O || !O->getString("name") || !O->getString("file"))
      return createStringError("manifest: a case needs \"name\" and \"file\"");
    Case C;
    C.Name = O->getString("name")->str();
    C.File = O->getString("file")->str();
    if (const json::Object *E = O->getObject("expect")) {
      C.ExpectRanked = E->getInteger("ranked");
      C.ExpectFirstWins = E->getInteger("first_wins");
    }
    Out.push_back(std::move(C));
  }
  return Out;
}

static Error run() {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Text =
      MemoryBuffer::getFile(ManifestPath, /*IsText=*/true);
  if (!Text)
    return createFileError(ManifestPath, Text.getError());
  Expected<json::Value> Doc = json::parse((*Text)->getBuffer());
  if (!Doc)
    return createFileError(ManifestPath, Doc.takeError());
  const json::Object *Manifest = Doc->getAsObject();
  const json::Object *DevObj =
      Manifest ? Manifest->getObject("device") : nullptr;
  if (!DevObj || !DevObj->getString("triple") || !DevObj->getString("arch"))
    return createFileError(ManifestPath,
                           createStringError("no device triple and arch"));
  StringRef TripleName = *DevObj->getString("triple");
  StringRef Arch = *DevObj->getString("arch");
  SmallVector<StringRef, 4> Features;
  if (const json::Array *F = DevObj->getArray("features"))
    for (const json::Value &V : *F)
      if (std::optional<StringRef> S = V.getAsString())
        Features.push_back(*S);

  kdl::PluginDevice Dev{Triple(TripleName), Arch.split(':').first.str(),
                        Arch.str()};
  ImageDevice RankDev{Dev.Arch, std::nullopt};
  if (!Features.empty())
    RankDev.Features = ArrayRef(Features);

  Expected<std::vector<Case>> Cases = readCases(*Manifest);
  if (!Cases)
    return createFileError(ManifestPath, Cases.takeError());

  json::OStream J(outs(), /*IndentSize=*/1);
  Error Failure = Error::success();
  J.object([&] {
    J.attribute("rounds", static_cast<int64_t>(Rounds));
    J.attribute("sample_us", static_cast<int64_t>(SampleUs));
    J.attribute("device", (TripleName + " " + Arch).str());
    J.attributeArray("cases", [&] {
      for (const Case &C : *Cases) {
        if (Failure)
          break;
        if (Error Err = measureCase(C, Dev, RankDev, J))
          Failure = std::move(Err);
      }
    });
  });
  outs() << "\n";
  return Failure;
}

int main(int Argc, char **Argv) {
  cl::HideUnrelatedOptions(BenchCategory);
  cl::ParseCommandLineOptions(Argc, Argv,
                              "cost of ranked OffloadBinary image selection "
                              "against first-compatible-wins\n");
  if (Rounds < 1 || SampleUs < 1) {
    WithColor::error(errs(), "kdl-selection-bench")
        << "--rounds and --sample-us must be positive\n";
    return 2;
  }
  if (Error Err = run()) {
    logAllUnhandledErrors(std::move(Err),
                          WithColor::error(errs(), "kdl-selection-bench"));
    return 1;
  }
  return 0;
}
