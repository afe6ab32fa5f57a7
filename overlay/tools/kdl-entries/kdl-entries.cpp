//===- kdl-entries.cpp - The entries the container reader finds -----------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// kdl-entries FILE reads FILE with the workspace's C++ container reader
// (container/OffloadEntries.h, the one kdl-select uses) and prints one JSON
// document: every entry with its image kind, offload kind, flags, the size
// and SHA-256 of its image, and its "triple" and "arch" as hex (their bytes
// as stored). An input the reader refuses is one line, "error: ...", exit
// status 2. tests/offload/test_readers_agree.py compares it with kdl inspect
// (the Python reader) on a hostile corpus, and the reader benchmark measures
// its peak memory.
//
//===----------------------------------------------------------------------===//

#include "OffloadEntries.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory EntriesCategory("kdl-entries options");

static cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input file>"),
                                      cl::Required, cl::cat(EntriesCategory));

static cl::opt<uint64_t> MaxInflated(
    "max-inflated",
    cl::desc("What the input's compressed binaries may inflate to in all"),
    cl::value_desc("BYTES"),
    cl::init(kdl::offload_layout::DefaultMaxInflatedTotal),
    cl::cat(EntriesCategory));

static cl::opt<uint64_t> MaxBinaries(
    "max-binaries",
    cl::desc("How many OffloadBinaries, and how many images, the input may "
             "hold"),
    cl::value_desc("N"), cl::init(kdl::offload_layout::DefaultMaxBinaries),
    cl::cat(EntriesCategory));

static cl::opt<uint64_t> MaxStrings(
    "max-strings",
    cl::desc("How many key=value strings the input's images may hold in all"),
    cl::value_desc("N"), cl::init(kdl::offload_layout::DefaultMaxStrings),
    cl::cat(EntriesCategory));

static int fail(const Twine &Message) {
  WithColor::error(errs()) << Message << "\n";
  return 2;
}

int main(int Argc, char **Argv) {
  InitLLVM X(Argc, Argv);
  cl::HideUnrelatedOptions(EntriesCategory);
  cl::ParseCommandLineOptions(Argc, Argv,
                              "kdl-entries: the OffloadBinary entries of a "
                              "file, as the C++ container reader reads them\n");
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFileOrSTDIN(InputFile, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (std::error_code EC = Buffer.getError())
    return fail(InputFile + ": cannot read: " + EC.message());
  std::vector<kdl::OffloadEntry> Entries;
  if (Error Err = kdl::readOffloadFile((*Buffer)->getBuffer(), Entries,
                                       {MaxInflated, MaxBinaries, MaxStrings}))
    return fail(InputFile + ": " + toString(std::move(Err)));
  json::OStream J(outs(), 1);
  J.object([&] {
    J.attributeArray("entries", [&] {
      for (const kdl::OffloadEntry &E : Entries)
        J.object([&] {
          J.attribute("index", int64_t(E.Index));
          J.attribute("image_kind", int64_t(E.ImageKind));
          J.attribute("offload_kind", int64_t(E.OffloadKind));
          J.attribute("flags", int64_t(E.Flags));
          J.attribute("size", int64_t(E.Image.size()));
          J.attribute("sha256",
                      toHex(SHA256::hash(arrayRefFromStringRef(E.Image)),
                            /*LowerCase=*/true));
          J.attribute("triple", toHex(E.Triple, /*LowerCase=*/true));
          J.attribute("arch", toHex(E.Arch, /*LowerCase=*/true));
        });
    });
  });
  outs() << "\n";
  return 0;
}
