//===- kdl-select.cpp - Which image of a file a device would load ---------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// kdl-select reads the OffloadBinary images of a file (a raw binary,
// concatenated binaries of versions 1 to 3, or an ELF file with an
// SHT_LLVM_OFFLOADING section) with the workspace's container reader
// (container/OffloadEntries.h; --max-inflated, --max-binaries and
// --max-strings raise its bounds for one input), checks each as the device's
// offload plugin with the series would (plugin-model/PluginAcceptance.h),
// orders the accepted ones as the series' loop does with the proposals'
// OffloadBinary keys, which kdl apply applies with it by default
// (GenericDeviceTy::loadBinary: each accepted entry ranked by
// llvm::object::OffloadDeviceTarget::rank, a stable sort; of equal ranks that
// run on the device, the higher variant_priority first, as
// patches/proposals/0002 orders them; otherwise the container's order; with
// --posting-stack, the container's order alone, as the posted series has it)
// and prints every verdict, the image a first-compatible loop (#186088's)
// loads, the first accepted, and the series' choice, the first in that order:
//
//   image 0: rejected: sm_89 cubin does not run on compute capability 9.0
//   image 1: rank 2: sm_90, native fit
//   image 2: rank 1: sm_90a, native fit
//   first compatible: image 1
//   selected: image 2 (sm_90a, native fit); image 1: not chosen (sm_90,
//   native fit)
//
// The rank is llvm/Object/OffloadTargetRank.h as the release/22.x backport of
// the series creates it, compiled from the series' texts (the overlay's
// CMakeLists.txt); this tool has no rule of its own. The device's target for
// the rank is the triple and arch of --device as given
// (triple=amdgcn-amd-amdhsa,arch=gfx942:sramecc+:xnack-), each entry's its
// "triple", "arch" and ImageKind. The runtime tries the accepted images in
// rank order down to the first compatible one, so the ranks above it are its
// fallbacks. Exit status: 0 when an image is selected, 1 when the plugin
// accepts none, 2 for bad arguments or an unreadable file. Bytes from the file
// that are not printable ASCII are written as \xNN in text output. Of the
// entry's other keys only variant_priority orders (not with --posting-stack);
// the selected image's variant_tag is reported, as the loop with the keys
// reports the tag of the entry it loads, and --tag is accepted and ignored,
// with a note: nothing chooses by a tag.
//
// --batch answers many questions in one process: each line of standard input
// is a JSON object {"device": SPEC, "file": PATH, "tag": TAG (optional),
// "posting_stack": BOOL (optional)}, and
// each answer is one line, written as soon as the question is read, holding
// the --json document with "status" (the exit status the question alone
// would give) and "error" (null, or the message); a line that is not such an
// object is answered with status 2.
//
//===----------------------------------------------------------------------===//

#include "DeviceSpec.h"
#include "OffloadEntries.h"
#include "PluginAcceptance.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Object/OffloadTargetRank.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/TargetParser.h"

#include <iostream>
#include <string>

using namespace llvm;
using namespace llvm::object;

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
    RequiredTag("tag",
                cl::desc("Accepted and ignored: the rank reads no "
                         "variant_tag"),
                cl::value_desc("TAG"), cl::cat(SelectCategory));

static cl::opt<bool> PostingStack(
    "posting-stack",
    cl::desc("Order as the posted series alone does: equal ranks in the "
             "file's order (without the proposals' variant_priority)"),
    cl::cat(SelectCategory));

static cl::opt<bool> JSONOutput("json",
                                cl::desc("Print one JSON document on stdout"),
                                cl::cat(SelectCategory));

static cl::opt<bool>
    Batch("batch",
          cl::desc("Read one JSON question per line from standard input and "
                   "write one JSON answer per line"),
          cl::cat(SelectCategory));

static cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input file>"),
                                      cl::cat(SelectCategory));

static cl::opt<uint64_t> MaxInflated(
    "max-inflated",
    cl::desc("What the input's compressed binaries may inflate to in all"),
    cl::value_desc("BYTES"),
    cl::init(kdl::offload_layout::DefaultMaxInflatedTotal),
    cl::cat(SelectCategory));

static cl::opt<uint64_t> MaxBinaries(
    "max-binaries",
    cl::desc("How many OffloadBinaries, and how many images, the input may "
             "hold"),
    cl::value_desc("N"), cl::init(kdl::offload_layout::DefaultMaxBinaries),
    cl::cat(SelectCategory));

static cl::opt<uint64_t> MaxStrings(
    "max-strings",
    cl::desc("How many key=value strings the input's images may hold in all"),
    cl::value_desc("N"), cl::init(kdl::offload_layout::DefaultMaxStrings),
    cl::cat(SelectCategory));

enum ExitCode { ExitSelected = 0, ExitNoneCompatible = 1, ExitBadInput = 2 };

/// \p Text with every byte that is not printable ASCII (other than a
/// newline) written as \xNN, so that bytes from a file cannot reach the
/// terminal as themselves.
static std::string escaped(StringRef Text) {
  std::string Out;
  raw_string_ostream OS(Out);
  for (unsigned char C : Text) {
    if (C == '\n' || (C >= 0x20 && C < 0x7f))
      OS << C;
    else
      OS << "\\x" << format_hex_no_prefix(C, 2);
  }
  return Out;
}

static int reportError(const Twine &Message) {
  WithColor::error(errs()) << escaped(Message.str()) << "\n";
  return ExitBadInput;
}

namespace {
/// One image of the input and the plugin's verdict on it.
struct Verdict {
  const kdl::OffloadEntry *Entry = nullptr;
  bool Accepted = false;
  /// Why the plugin rejects the image or, if it accepts it, how it fits.
  std::string Detail;
  /// How an accepted image ranks for the device.
  OffloadTargetRank Rank;
  /// Position among the accepted images, best first (1-based), if accepted.
  unsigned Position = 0;
};

/// One question: a device, a file, perhaps a tag, and which series orders.
struct Question {
  std::string Device;
  std::string File;
  std::optional<std::string> Tag;
  /// The posted series alone: variant_priority is not read.
  bool PostingStack = false;
};

/// The answer to a question: the JSON document, the text report, the exit
/// status and, for status 1 and 2, the error message.
struct Answer {
  json::Object Document;
  std::string Text;
  int Status = ExitSelected;
  std::string Error;
  /// Set when a tag was asked for: the rank reads no variant_tag.
  bool TagIgnored = false;
};
} // namespace

/// \p S as a JSON string (copied: a json::Value made from a StringRef only
/// refers to it, and the document outlives the file's buffer), or null.
static json::Value orNull(StringRef S) {
  return S.empty() ? json::Value(nullptr) : json::Value(S.str());
}

static Answer fail(const Twine &Message) {
  Answer A;
  A.Status = ExitBadInput;
  A.Error = Message.str();
  return A;
}

/// The variant_priority of \p Entry as OffloadBinary::getVariantPriority of
/// patches/proposals/0001 reads it: a decimal number of at most 32 bits; 0
/// where it has none or a malformed one, as the loop of 0002 counts it.
static uint32_t priorityOf(const kdl::OffloadEntry &Entry) {
  uint32_t Priority;
  return Entry.VariantPriority.getAsInteger(10, Priority) ? 0 : Priority;
}

/// How an accepted image fits, in the report's words.
static std::string describe(const Verdict &V) {
  std::string Out;
  raw_string_ostream OS(Out);
  StringRef Arch = V.Entry->Arch;
  OS << (Arch.empty() ? StringRef("no arch") : Arch) << ", "
     << getOffloadTargetFitName(V.Rank.Fit) << " fit";
  if (V.Rank.CompiledAtLoad)
    OS << ", compiled at load";
  return Out;
}

/// Answers \p Q as the tool answers its command line.
static Answer answer(const Question &Q) {
  Expected<kdl::DeviceArgs> Args = kdl::parseDeviceSpec(Q.Device);
  if (!Args)
    return fail(toString(Args.takeError()));
  if (Error Err = kdl::checkDevice(*Args))
    return fail(toString(std::move(Err)));

  StringRef Name = Q.File == "-" ? "<stdin>" : StringRef(Q.File);
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFileOrSTDIN(Q.File, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (std::error_code EC = Buffer.getError())
    return fail(Name + ": cannot read: " + EC.message());
  std::vector<kdl::OffloadEntry> Entries;
  if (Error Err = kdl::readOffloadFile((*Buffer)->getBuffer(), Entries,
                                       {MaxInflated, MaxBinaries, MaxStrings}))
    return fail(Name + ": " + toString(std::move(Err)));
  if (Entries.empty())
    return fail(Name + ": no offloading image found");

  // The plugin's device: its compute unit kind is the processor alone.
  kdl::PluginDevice Device{kdl::parseTriple(Args->Triple),
                           StringRef(Args->Arch).split(':').first.str(),
                           Args->Arch,
                           {Args->ISAs.begin(), Args->ISAs.end()}};

  // The device's target for the rank, as the user names it.
  OffloadDeviceTarget Target(Args->Triple, Args->Arch);
  SmallVector<Verdict> Verdicts;
  for (const kdl::OffloadEntry &E : Entries) {
    Verdict V;
    V.Entry = &E;
    if (E.MetadataOnly)
      V.Detail = "metadata-only entry (OIF_Metadata): no image";
    else
      // The candidates: what the plugins with the series accept
      // (isPluginCompatible, isDeviceCompatible, the CUDA and AMDGPU
      // isELFCompatible and the CUDA plugin's isImageCompatible,
      // plugin-model/PluginAcceptance.h): an arch-specific cubin only on its
      // SM (0003), PTX where the rank says it runs (0007).
      V.Accepted = kdl::pluginAccepts(E.Image, Device, V.Detail);
    if (V.Accepted) {
      V.Rank = Target.rank(E.Triple, E.Arch, E.ImageKind);
      V.Detail = describe(V);
    }
    Verdicts.push_back(std::move(V));
  }

  // The accepted images best first (OffloadTargetRank's order); of equal
  // ranks that run on the device the higher variant_priority first (with the
  // proposals' keys); otherwise in the file's order, as the series' loop
  // tries them. The plugin tries them in this order down to the first
  // compatible one, which it loads if every better one fails to load.
  SmallVector<size_t> Order;
  for (auto [I, V] : enumerate(Verdicts))
    if (V.Accepted)
      Order.push_back(I);
  llvm::stable_sort(Order, [&](size_t L, size_t R) {
    const OffloadTargetRank &A = Verdicts[L].Rank, &B = Verdicts[R].Rank;
    if (A < B || B < A)
      return A < B;
    return !Q.PostingStack && A.runs() &&
           priorityOf(*Verdicts[L].Entry) > priorityOf(*Verdicts[R].Entry);
  });
  for (auto [Position, I] : enumerate(Order))
    Verdicts[I].Position = Position + 1;
  std::optional<size_t> Selected, First;
  if (!Order.empty()) {
    Selected = Order.front();
    First = *llvm::min_element(Order);
  }

  Answer A;
  // The rank reads no variant_tag.
  A.TagIgnored = Q.Tag.has_value();
  json::Array Features;
  for (StringRef Feature : Args->Features)
    Features.push_back(Feature.str());
  json::Array Images;
  for (auto [I, V] : enumerate(Verdicts)) {
    Images.push_back(json::Object{
        {"index", int64_t(I)},
        // Copies: the entries are views of the file's buffer.
        {"triple", V.Entry->Triple.str()},
        {"arch", V.Entry->Arch.str()},
        {"kind", getImageKindName(V.Entry->ImageKind).str()},
        {"compatible", V.Accepted},
        {"reason", V.Accepted ? "accepted" : "rejected"},
        {"detail", V.Detail},
        {"fit", V.Accepted
                    ? json::Value(getOffloadTargetFitName(V.Rank.Fit).str())
                    : nullptr},
        // The ranking reads the entry's arch, not the image's header.
        {"processor", nullptr},
        {"priority", orNull(V.Entry->VariantPriority)},
        {"tag", orNull(V.Entry->VariantTag)},
        {"rank", V.Position ? json::Value(int64_t(V.Position)) : nullptr},
    });
  }
  StringRef Selection =
      Order.empty() ? "none" : (Order.size() == 1 ? "single" : "ranked");
  A.Document = json::Object{
      {"device", json::Object{{"triple", Args->Triple},
                              {"arch", Args->Arch},
                              {"features", std::move(Features)}}},
      {"selected", Selected ? json::Value(int64_t(*Selected)) : nullptr},
      {"first_compatible", First ? json::Value(int64_t(*First)) : nullptr},
      {"selection", Selection},
      {"posting_stack", Q.PostingStack},
      {"tag_ignored", A.TagIgnored},
      {"images", std::move(Images)},
  };

  raw_string_ostream OS(A.Text);
  for (auto [I, V] : enumerate(Verdicts)) {
    OS << "image " << I << ": ";
    if (V.Accepted)
      OS << "rank " << V.Position << ": ";
    else
      OS << "rejected: ";
    OS << V.Detail << "\n";
  }
  if (First)
    OS << "first compatible: image " << *First << "\n";
  if (!Selected) {
    OS << "selected: none\n";
  } else {
    OS << "selected: image " << *Selected << " (" << Verdicts[*Selected].Detail;
    // The tag of the entry the loop loads, as the loop with the keys reports
    // it.
    if (StringRef Tag = Verdicts[*Selected].Entry->VariantTag;
        !Q.PostingStack && !Tag.empty())
      OS << ", variant_tag '" << Tag << "'";
    OS << ")";
    if (*Selected != *First)
      OS << "; image " << *First << ": not chosen (" << Verdicts[*First].Detail
         << ")";
    OS << "\n";
  }

  if (!Selected) {
    raw_string_ostream Err(A.Error);
    Err << Name << ": no compatible image for " << Args->Triple;
    if (!Args->Arch.empty())
      Err << " " << Args->Arch;
    Err << "; available:";
    for (auto [I, V] : enumerate(Verdicts)) {
      Err << (I ? ", [" : " [") << I << "] " << V.Entry->Arch;
      if (StringRef Kind = getImageKindName(V.Entry->ImageKind); !Kind.empty())
        Err << " " << Kind;
    }
    A.Status = ExitNoneCompatible;
  }
  return A;
}

/// The order in which the members of the document and of each image are
/// written (json::Object itself keeps none).
static constexpr StringLiteral DocumentOrder[] = {
    "device",      "selected", "first_compatible", "selection", "posting_stack",
    "tag_ignored", "images",   "status",           "error"};
static constexpr StringLiteral DeviceOrder[] = {"triple", "arch", "features"};
static constexpr StringLiteral ImageOrder[] = {
    "index",  "triple", "arch",      "kind",     "compatible", "reason",
    "detail", "fit",    "processor", "priority", "tag",        "rank"};

/// Writes \p O with its members in \p Order (members not listed are not
/// written).
static void writeObject(json::OStream &J, const json::Object &O,
                        ArrayRef<StringLiteral> Order) {
  J.object([&] {
    for (StringLiteral Key : Order) {
      const json::Value *V = O.get(Key);
      if (!V)
        continue;
      if (Key == "device") {
        J.attributeBegin(Key);
        writeObject(J, *V->getAsObject(), DeviceOrder);
        J.attributeEnd();
      } else if (Key == "images") {
        J.attributeArray(Key, [&] {
          for (const json::Value &Image : *V->getAsArray())
            writeObject(J, *Image.getAsObject(), ImageOrder);
        });
      } else {
        J.attribute(Key, *V);
      }
    }
  });
}

static void writeDocument(raw_ostream &OS, const json::Object &Document,
                          unsigned Indent) {
  json::OStream J(OS, Indent);
  writeObject(J, Document, DocumentOrder);
}

/// Parses one line of --batch input.
static Expected<Question> parseQuestion(StringRef Line) {
  Expected<json::Value> Value = json::parse(Line);
  if (!Value)
    return Value.takeError();
  const json::Object *O = Value->getAsObject();
  if (!O)
    return createStringError("expected a JSON object");
  Question Q;
  std::optional<StringRef> Device = O->getString("device");
  std::optional<StringRef> File = O->getString("file");
  if (!Device || !File)
    return createStringError("expected string members \"device\" and \"file\"");
  Q.Device = Device->str();
  Q.File = File->str();
  if (const json::Value *Tag = O->get("tag"); Tag && !Tag->getAsNull()) {
    std::optional<StringRef> S = Tag->getAsString();
    if (!S)
      return createStringError("\"tag\" must be a string");
    Q.Tag = S->str();
  }
  if (const json::Value *Stack = O->get("posting_stack");
      Stack && !Stack->getAsNull()) {
    std::optional<bool> B = Stack->getAsBoolean();
    if (!B)
      return createStringError("\"posting_stack\" must be true or false");
    Q.PostingStack = *B;
  }
  if (Q.File == "-")
    return createStringError("\"file\" cannot be standard input in --batch");
  return Q;
}

/// --batch: one answer per line of standard input, in order, each written
/// and flushed before the next line is read (a caller may ask, read the
/// answer, then ask again).
static int runBatch() {
  std::string Line;
  while (std::getline(std::cin, Line)) {
    if (StringRef(Line).trim().empty())
      continue;
    Answer A;
    if (Expected<Question> Q = parseQuestion(Line))
      A = answer(*Q);
    else
      A = fail("--batch: " + toString(Q.takeError()));
    A.Document["status"] = A.Status;
    A.Document["error"] = orNull(A.Error);
    writeDocument(outs(), A.Document, /*Indent=*/0);
    outs() << "\n";
    outs().flush();
  }
  if (std::cin.bad())
    return reportError("<stdin>: cannot read");
  return ExitSelected;
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
  if (Batch) {
    if (!DeviceSpec.empty() || !InputFile.empty() ||
        RequiredTag.getNumOccurrences() || JSONOutput ||
        PostingStack.getNumOccurrences())
      return reportError("--batch takes its questions from standard input "
                         "only");
    return runBatch();
  }
  if (DeviceSpec.empty())
    return reportError("--device is required");
  if (InputFile.empty())
    return reportError("no input file");

  Question Q{DeviceSpec, InputFile, std::nullopt, PostingStack};
  if (RequiredTag.getNumOccurrences())
    Q.Tag = RequiredTag;
  Answer A = answer(Q);
  if (A.Status == ExitBadInput)
    return reportError(A.Error);
  if (A.TagIgnored)
    WithColor::note(errs()) << "the rank reads no variant_tag; the tag '"
                            << escaped(RequiredTag) << "' is ignored\n";
  if (JSONOutput) {
    writeDocument(outs(), A.Document, /*Indent=*/2);
    outs() << "\n";
  } else {
    outs() << escaped(A.Text);
  }
  outs().flush();
  if (A.Status == ExitNoneCompatible)
    WithColor::error(errs()) << escaped(A.Error) << "\n";
  return A.Status;
}
