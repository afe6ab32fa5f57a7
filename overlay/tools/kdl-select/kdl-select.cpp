//===- kdl-select.cpp - Which image of a file a device would load ---------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// kdl-select reads the OffloadBinary images of a file (a raw binary,
// concatenated binaries, or an object file with a .llvm.offloading section),
// checks each as the device's offload plugin would (compat/PluginCompat.h),
// orders the accepted ones with the series' ranking
// (llvm/Frontend/Offloading/ImageRanking.h) and prints every verdict, the
// image today's runtime loads (the first accepted) and the ranked choice:
//
//   image 0: rejected: sm_80 cubin does not run on compute capability 9.0
//   image 1: rank 2: sm_90, exact fit
//   image 2: rank 1: sm_90a, exact fit
//   first compatible: image 1
//   selected: image 2
//
// Exit status: 0 when an image is selected, 1 when the plugin accepts none,
// 2 for bad arguments or an unreadable file.
//
//===----------------------------------------------------------------------===//

#include "PluginCompat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Frontend/Offloading/ImageRanking.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/TargetParser.h"

using namespace llvm;
using namespace llvm::object;
using namespace llvm::offloading;

static cl::OptionCategory SelectCategory("kdl-select options");

static cl::opt<std::string>
    DeviceSpec("device",
               cl::desc("The device to select for: its triple, its processor "
                        "(an AMDGPU target ID may carry xnack/sramecc), one "
                        "isa= per further ISA an AMDGPU agent reports (its "
                        "generic processor), one feature= per capability"),
               cl::value_desc("triple=T,arch=A[,isa=I]...[,feature=F]..."),
               cl::cat(SelectCategory));

static cl::opt<std::string>
    RequiredTag("tag", cl::desc("Select only an image with this variant_tag"),
                cl::value_desc("TAG"), cl::cat(SelectCategory));

static cl::opt<bool> JSONOutput("json",
                                cl::desc("Print one JSON document on stdout"),
                                cl::cat(SelectCategory));

static cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input file>"),
                                      cl::cat(SelectCategory));

enum ExitCode { ExitSelected = 0, ExitNoneCompatible = 1, ExitBadInput = 2 };

static int reportError(const Twine &Message) {
  WithColor::error(errs()) << Message << "\n";
  return ExitBadInput;
}

namespace {
struct DeviceArgs {
  std::string Triple;
  std::string Arch;
  SmallVector<StringRef, 4> Features;
  SmallVector<std::string, 2> ISAs;
};
} // namespace

/// Parse "triple=T,arch=A[,feature=F]...".
static Expected<DeviceArgs> parseDeviceSpec(StringRef Spec) {
  DeviceArgs Args;
  bool SeenTriple = false, SeenArch = false;
  SmallVector<StringRef, 4> Fields;
  Spec.split(Fields, ',');
  for (StringRef Field : Fields) {
    auto [Key, Value] = Field.split('=');
    if (!Field.contains('='))
      return createStringError("--device: expected key=value, got '" + Field +
                               "'");
    if (Key == "triple" && !SeenTriple) {
      Args.Triple = Value.str();
      SeenTriple = true;
    } else if (Key == "arch" && !SeenArch) {
      Args.Arch = Value.str();
      SeenArch = true;
    } else if (Key == "feature") {
      Args.Features.push_back(Value);
    } else if (Key == "isa") {
      Args.ISAs.push_back(Value.str());
    } else if (Key == "triple" || Key == "arch") {
      return createStringError("--device: '" + Key + "' is given twice");
    } else {
      return createStringError("--device: unknown key '" + Key +
                               "' (expected triple, arch, isa or feature)");
    }
  }
  if (!SeenTriple)
    return createStringError("--device: no triple= given");
  return Args;
}

static Error checkDevice(const DeviceArgs &Args) {
  Triple T(Args.Triple);
  if (T.isNVPTX()) {
    unsigned SM;
    StringRef Arch = Args.Arch;
    if (!Arch.consume_front("sm_") || Arch.getAsInteger(10, SM))
      return createStringError("--device: invalid NVPTX device architecture '" +
                               Args.Arch + "': expected sm_XY such as sm_86");
  } else if (T.isAMDGCN()) {
    StringRef Processor = StringRef(Args.Arch).split(':').first;
    if (AMDGPU::parseArchAMDGCN(Processor) == AMDGPU::GK_NONE)
      return createStringError("--device: unknown AMDGPU processor '" +
                               Processor + "'");
    if (Processor.ends_with("-generic"))
      return createStringError(
          "--device: invalid AMDGPU device architecture '" + Args.Arch +
          "': a device is never a generic processor (give it as isa=)");
  } else if (T.getArch() == Triple::UnknownArch) {
    return createStringError("--device: unknown triple '" + Args.Triple + "'");
  }
  return Error::success();
}

namespace {
/// One image of the input and the plugin's verdict on it.
struct Verdict {
  const OffloadBinary *Binary;
  bool Accepted = false;
  std::string Why;
  /// Position among the accepted images, best first (1-based), if accepted.
  unsigned Rank = 0;
  ImageCandidate Candidate;
};
} // namespace

static StringRef getSelectionName(ImageSelectionKind Kind) {
  switch (Kind) {
  case ImageSelectionKind::Single:
    return "single";
  case ImageSelectionKind::Ranked:
    return "ranked";
  case ImageSelectionKind::FirstUnranked:
    return "first-unranked";
  }
  llvm_unreachable("unknown selection kind");
}

int main(int Argc, char **Argv) {
  InitLLVM X(Argc, Argv);
  cl::HideUnrelatedOptions(SelectCategory);
  std::string ParseErrors;
  raw_string_ostream ParseErrorStream(ParseErrors);
  if (!cl::ParseCommandLineOptions(
          Argc, Argv,
          "kdl-select: which offloading image of a file a device loads\n",
          &ParseErrorStream)) {
    // The command-line library prefixes each line with the tool's name.
    std::string ToolPrefix = (sys::path::filename(Argv[0]) + ": ").str();
    SmallVector<StringRef, 2> Lines;
    StringRef(ParseErrors).trim().split(Lines, '\n');
    for (auto [I, Line] : enumerate(Lines)) {
      Line.consume_front(ToolPrefix);
      (I == 0 ? WithColor::error(errs()) : WithColor::note(errs()))
          << Line.trim() << "\n";
    }
    return ExitBadInput;
  }
  if (DeviceSpec.empty())
    return reportError("--device is required");
  if (InputFile.empty())
    return reportError("no input file");

  Expected<DeviceArgs> Args = parseDeviceSpec(DeviceSpec);
  if (!Args)
    return reportError(toString(Args.takeError()));
  if (Error Err = checkDevice(*Args))
    return reportError(toString(std::move(Err)));
  if (RequiredTag.getNumOccurrences()) {
    // The library's own check of a variant_tag value.
    ImageCandidate Probe{"", {}};
    Probe.Keys.VariantTag = RequiredTag;
    if (Expected<ImageScore> S = scoreImage(Probe, {"", std::nullopt}); !S)
      return reportError("--tag: " + toString(S.takeError()));
  }

  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFileOrSTDIN(InputFile, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (std::error_code EC = Buffer.getError())
    return reportError(InputFile + ": " + EC.message());
  SmallVector<OffloadFile, 4> Files;
  if (Error Err = extractOffloadBinaries(**Buffer, Files))
    return reportError(InputFile + ": " + toString(std::move(Err)));
  if (Files.empty())
    return reportError(InputFile + ": no offloading image found");

  kdl::PluginDevice Device{Triple(Args->Triple),
                           StringRef(Args->Arch).split(':').first.str(),
                           Args->Arch,
                           {Args->ISAs.begin(), Args->ISAs.end()}};
  ImageDevice RankDevice{Device.Arch, std::nullopt};
  if (!Args->Features.empty())
    RankDevice.Features = ArrayRef(Args->Features);

  SmallVector<Verdict> Verdicts;
  SmallVector<ImageCandidate> Candidates;
  SmallVector<size_t> CandidateIndex;
  for (const OffloadFile &File : Files) {
    const OffloadBinary &Binary = *File.getBinary();
    Verdict V{&Binary,
              false,
              "",
              0,
              {Binary.getImage(), offloading::getImageKeys(Binary)}};
    // An entry flagged OIF_Metadata (bit 0) describes the binary and holds
    // no image.
    if (Binary.getFlags() & 1)
      V.Why = "metadata-only entry (OIF_Metadata): no image";
    else
      V.Accepted = kdl::pluginAccepts(Binary.getImage(), Device, V.Why);
    if (V.Accepted) {
      Candidates.push_back(V.Candidate);
      CandidateIndex.push_back(Verdicts.size());
    }
    Verdicts.push_back(std::move(V));
  }

  ImageSelection Selection =
      selectImage(Candidates, RankDevice, RequiredTag.getValue());
  if (Selection.TagIgnored)
    WithColor::note(errs()) << "no image has variant_tag '" << RequiredTag
                            << "'; the tag is ignored\n";
  // Rank the accepted images best first; equal scores keep their order.
  SmallVector<std::pair<ImageScore, size_t>> Order;
  for (auto [I, C] : enumerate(Candidates)) {
    Expected<ImageScore> Score = scoreImage(C, RankDevice);
    Order.push_back({Score ? *Score : ImageScore(), I});
    if (!Score)
      consumeError(Score.takeError());
  }
  llvm::stable_sort(
      Order, [](const auto &A, const auto &B) { return B.first < A.first; });
  for (auto [Position, Entry] : enumerate(Order))
    Verdicts[CandidateIndex[Entry.second]].Rank = Position + 1;

  std::optional<size_t> Selected, First;
  if (!Candidates.empty()) {
    Selected = CandidateIndex[Selection.Index];
    First = CandidateIndex.front();
  }

  auto Describe = [&](const Verdict &V) {
    std::string Text;
    raw_string_ostream OS(Text);
    if (V.Accepted)
      describeImage(OS, V.Candidate, RankDevice);
    else
      OS << V.Why;
    return Text;
  };

  if (JSONOutput) {
    json::OStream J(outs(), /*IndentSize=*/2);
    J.object([&] {
      J.attributeObject("device", [&] {
        J.attribute("triple", Args->Triple);
        J.attribute("arch", Args->Arch);
        J.attributeArray("features", [&] {
          for (StringRef Feature : Args->Features)
            J.value(Feature);
        });
      });
      J.attribute("selected", Selected ? json::Value(int64_t(*Selected))
                                       : json::Value(nullptr));
      J.attribute("first_compatible",
                  First ? json::Value(int64_t(*First)) : json::Value(nullptr));
      J.attribute("selection", Candidates.empty()
                                   ? "none"
                                   : getSelectionName(Selection.Kind));
      J.attributeArray("images", [&] {
        for (auto [I, V] : enumerate(Verdicts)) {
          J.object([&] {
            // Only accepted images are ranked (as in the runtime).
            ImageRank Rank;
            if (V.Accepted)
              Rank = rankImage(V.Candidate.Image, RankDevice.Arch);
            J.attribute("index", int64_t(I));
            J.attribute("triple", V.Binary->getTriple());
            J.attribute("arch", V.Binary->getArch());
            J.attribute("kind", getImageKindName(V.Binary->getImageKind()));
            J.attribute("compatible", V.Accepted);
            J.attribute("reason", V.Accepted ? "accepted" : "rejected");
            J.attribute("detail", Describe(V));
            J.attribute("fit", V.Accepted
                                   ? json::Value(getImageFitName(Rank.Fit))
                                   : json::Value(nullptr));
            J.attribute("processor", Rank.Processor);
            StringRef Priority = V.Candidate.Keys.VariantPriority;
            J.attribute("priority", Priority.empty() ? json::Value(nullptr)
                                                     : json::Value(Priority));
            StringRef Tag = V.Candidate.Keys.VariantTag;
            J.attribute("tag",
                        Tag.empty() ? json::Value(nullptr) : json::Value(Tag));
            J.attribute("rank", V.Rank ? json::Value(int64_t(V.Rank))
                                       : json::Value(nullptr));
          });
        }
      });
    });
    outs() << "\n";
  } else {
    for (auto [I, V] : enumerate(Verdicts)) {
      outs() << "image " << I << ": ";
      if (V.Accepted)
        outs() << "rank " << V.Rank << ": ";
      else
        outs() << "rejected: ";
      outs() << Describe(V) << "\n";
    }
    if (First)
      outs() << "first compatible: image " << *First << "\n";
    if (!Selected)
      outs() << "selected: none\n";
    else if (Selection.Kind == ImageSelectionKind::FirstUnranked)
      outs() << "selected: image " << *Selected
             << " (it cannot be ranked; the first compatible is kept)\n";
    else
      outs() << "selected: image " << *Selected << "\n";
  }
  outs().flush();

  if (!Selected) {
    auto &OS = WithColor::error(errs());
    OS << InputFile << ": no compatible image for " << Args->Triple;
    if (!Args->Arch.empty())
      OS << " " << Args->Arch;
    OS << "; available:";
    for (auto [I, V] : enumerate(Verdicts)) {
      OS << (I ? ", [" : " [") << I << "] " << V.Binary->getArch();
      if (StringRef Kind = getImageKindName(V.Binary->getImageKind());
          !Kind.empty())
        OS << " " << Kind;
    }
    OS << "\n";
    return ExitNoneCompatible;
  }
  return ExitSelected;
}
