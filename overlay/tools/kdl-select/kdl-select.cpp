//===- kdl-select.cpp - Rank the offloading images of a file for a device -===//
//
// Part of the kdl workspace, under the Apache License v2.0 with LLVM
// Exceptions.
//
//===----------------------------------------------------------------------===//
//
// kdl-select reads the OffloadBinary images of a file (a raw binary,
// concatenated binaries, or an object file with a .llvm.offloading section),
// checks each against a device with llvm::object::isMetadataCompatible, ranks
// the compatible ones and prints every verdict and the choice:
//
//   image 0: rank 2 native-compatible: sm_80 cubin runs on ...
//   image 1: rejected sm-minor-too-high: sm_89 cubin needs ...
//   selected: image 2
//
// Exit status: 0 when an image is selected, 1 when none is compatible, 2 for
// bad arguments or an unreadable file.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/STLExtras.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Object/OffloadMetadata.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace llvm::object;

static cl::OptionCategory SelectCategory("kdl-select options");

static cl::opt<std::string>
    DeviceSpec("device",
               cl::desc("The device to select for: its triple, its processor "
                        "(an AMDGPU target ID may carry xnack/sramecc), and "
                        "one feature= per capability token"),
               cl::value_desc("triple=T,arch=A[,feature=F]..."),
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
    } else if (Key == "triple" || Key == "arch") {
      return createStringError("--device: '" + Key + "' is given twice");
    } else {
      return createStringError("--device: unknown key '" + Key +
                               "' (expected triple, arch or feature)");
    }
  }
  if (!SeenTriple)
    return createStringError("--device: no triple= given");
  return Args;
}

/// The image kind as llvm-offload-binary spells it (the file extension).
static StringRef getKindName(ImageKind Kind) {
  switch (Kind) {
  case IMG_None:
    return "none";
  case IMG_Object:
    return "o";
  case IMG_Bitcode:
    return "bc";
  case IMG_Cubin:
    return "cubin";
  case IMG_Fatbinary:
    return "fatbin";
  case IMG_PTX:
    return "s";
  case IMG_SPIRV:
    return "spv";
  default:
    return "unknown";
  }
}

static void printText(const OffloadImageRanking &Ranking) {
  for (const RankedImage &RI : Ranking.Images) {
    outs() << "image " << RI.Index << ": ";
    if (RI.Rank)
      outs() << "rank " << RI.Rank << " " << getImageTierName(RI.Result.Tier);
    else
      outs() << "rejected " << getImageCompatibilityName(RI.Result.Reason);
    outs() << ": ";
    RI.Result.printDetail(outs());
    outs() << "\n";
  }
  if (Ranking.Selected)
    outs() << "selected: image " << *Ranking.Selected << "\n";
  else
    outs() << "selected: none\n";
}

static void printJSON(const OffloadImageRanking &Ranking,
                      const OffloadDevice &Device) {
  json::OStream J(outs(), /*IndentSize=*/2);
  J.object([&] {
    J.attributeObject("device", [&] {
      J.attribute("triple", Device.getTriple().str());
      J.attribute("arch", Device.getArch());
      J.attributeArray("features", [&] {
        for (const std::string &Feature : Device.getFeatures())
          J.value(Feature);
      });
    });
    if (Ranking.Selected)
      J.attribute("selected", static_cast<int64_t>(*Ranking.Selected));
    else
      J.attribute("selected", nullptr);
    J.attributeArray("images", [&] {
      for (const RankedImage &RI : Ranking.Images) {
        J.object([&] {
          J.attribute("index", static_cast<int64_t>(RI.Index));
          J.attribute("triple", RI.TripleName);
          J.attribute("arch", RI.ArchName);
          J.attribute("kind", getKindName(RI.Kind));
          J.attribute("compatible", RI.Rank != 0);
          J.attribute("reason", getImageCompatibilityName(RI.Result.Reason));
          J.attribute("detail", RI.Result.getDetail());
          if (RI.Rank)
            J.attribute("tier", getImageTierName(RI.Result.Tier));
          else
            J.attribute("tier", nullptr);
          if (RI.Priority)
            J.attribute("priority", static_cast<int64_t>(*RI.Priority));
          else
            J.attribute("priority", nullptr);
          if (RI.Tag)
            J.attribute("tag", *RI.Tag);
          else
            J.attribute("tag", nullptr);
          if (RI.Rank)
            J.attribute("rank", static_cast<int64_t>(RI.Rank));
          else
            J.attribute("rank", nullptr);
        });
      }
    });
  });
  outs() << "\n";
}

int main(int Argc, char **Argv) {
  InitLLVM X(Argc, Argv);
  cl::HideUnrelatedOptions(SelectCategory);
  std::string ParseErrors;
  raw_string_ostream ParseErrorStream(ParseErrors);
  if (!cl::ParseCommandLineOptions(
          Argc, Argv,
          "kdl-select: rank the offloading images of a file for a device\n",
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
  Expected<OffloadDevice> Device =
      OffloadDevice::create(Args->Triple, Args->Arch, Args->Features);
  if (!Device)
    return reportError("--device: " + toString(Device.takeError()));
  if (RequiredTag.getNumOccurrences())
    if (Error Err = checkVariantTag(RequiredTag))
      return reportError("--tag: " + toString(std::move(Err)));

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

  OffloadImageRanking Ranking =
      rankOffloadImages(Files, *Device, RequiredTag.getValue());
  if (JSONOutput)
    printJSON(Ranking, *Device);
  else
    printText(Ranking);
  outs().flush();

  Expected<size_t> Selected = Ranking.getSelected();
  if (!Selected) {
    WithColor::error(errs())
        << InputFile << ": " << toString(Selected.takeError()) << "\n";
    return ExitNoneCompatible;
  }
  return ExitSelected;
}
