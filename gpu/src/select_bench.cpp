//===- select_bench.cpp - cost of choosing an image, in process -----------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
//   select_bench cold POLICY FILE ARCH     one timed selection (fresh process)
//   select_bench warm POLICY FILE ARCH N   N timed selections
//
// FILE is read into memory outside the timed region. One selection is: parse
// every OffloadBinary in the buffer with llvm::object::extractOffloadBinaries
// (LLVM 22, libLLVM.so.22.1), then choose for the device
// {nvptx64-nvidia-cuda, ARCH}:
//   first-wins  the first image whose metadata says it runs on the device:
//               a compatible triple (llvm::Triple::isCompatibleWith) and, for
//               an sm_XY arch, the same major and a minor <= the device's,
//               else an equal arch or "generic" (the rule overlay/bench uses
//               for today's first-compatible loop)
//   kdl-ranked  the series' ranking (KDLOffloadMetadata, patches/), which
//               checks every image's compatibility and ranks the survivors
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include "llvm/Object/OffloadBinary.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Triple.h"

#ifdef KDL_HAVE_RANKING
#include KDL_RANKING_ADAPTER
#endif

#include <optional>
#include <string>
#include <vector>

using namespace kdl;
using namespace llvm;

static bool parseSM(StringRef Arch, unsigned &Major, unsigned &Minor) {
  unsigned SM;
  if (!Arch.consume_front("sm_") || Arch.consumeInteger(10, SM) ||
      !Arch.empty() || SM < 10)
    return false;
  Major = SM / 10;
  Minor = SM % 10;
  return true;
}

static int selectFirstWins(StringRef Data, StringRef Arch, size_t &NImages) {
  static const Triple DevTriple("nvptx64-nvidia-cuda");
  unsigned DevMajor = 0, DevMinor = 0;
  parseSM(Arch, DevMajor, DevMinor);
  SmallVector<object::OffloadFile> Files;
  if (Error E = object::extractOffloadBinaries(
          MemoryBufferRef(Data, "input"), Files))
    fatal(toString(std::move(E)));
  NImages = Files.size();
  for (size_t I = 0; I < Files.size(); ++I) {
    const object::OffloadBinary &B = *Files[I].getBinary();
    if (!Triple(B.getTriple()).isCompatibleWith(DevTriple))
      continue;
    unsigned Major, Minor;
    if (DevMajor && parseSM(B.getArch(), Major, Minor)) {
      if (Major == DevMajor && Minor <= DevMinor)
        return static_cast<int>(I);
      continue;
    }
    if (B.getArch() == Arch || B.getArch() == "generic")
      return static_cast<int>(I);
  }
  return -1;
}

static int selectOnce(const std::string &Policy, StringRef Data,
                      StringRef Arch, size_t &NImages) {
  if (Policy == "first-wins")
    return selectFirstWins(Data, Arch, NImages);
#ifdef KDL_HAVE_RANKING
  if (Policy == "kdl-ranked")
    return kdlRankedSelect(Data, Arch, NImages);
#endif
  fatal("unknown or unavailable policy " + Policy);
}

int main(int Argc, char **Argv) {
  std::string Mode = Argc > 1 ? Argv[1] : "";
  if (!((Mode == "cold" && Argc == 5) || (Mode == "warm" && Argc == 6))) {
    std::fprintf(stderr, "usage: select_bench cold POLICY FILE ARCH | warm "
                         "POLICY FILE ARCH N\n");
    return 2;
  }
  std::string Policy = Argv[2], Path = Argv[3], Arch = Argv[4];
  std::vector<char> Bytes = readFile(Path);
  StringRef Data(Bytes.data(), Bytes.size() - 1);
  size_t NImages = 0;
  JsonObject J;
  J.str("mode", Mode).str("policy", Policy).str("file", Path);
  J.str("device", "nvptx64-nvidia-cuda " + Arch);
  J.num("file_bytes", static_cast<int64_t>(Data.size()));
  if (Mode == "cold") {
    int64_t T0 = nowNs();
    int Sel = selectOnce(Policy, Data, Arch, NImages);
    int64_t T1 = nowNs();
    J.num("selection", T1 - T0).num("selected", Sel);
  } else {
    int N = std::atoi(Argv[5]);
    int Sel = -1;
    for (int I = 0; I < 20; ++I)
      Sel = selectOnce(Policy, Data, Arch, NImages);
    std::vector<int64_t> T;
    T.reserve(N);
    for (int I = 0; I < N; ++I) {
      int64_t T0 = nowNs();
      Sel = selectOnce(Policy, Data, Arch, NImages);
      int64_t T1 = nowNs();
      T.push_back(T1 - T0);
    }
    J.num("n", N).samples("selection", T).num("selected", Sel);
  }
  J.num("images", static_cast<int64_t>(NImages));
  J.str("boundary", "extractOffloadBinaries over the in-memory FILE + the "
                    "policy's choice for the device; reading FILE is outside");
  std::printf("%s\n", J.done().c_str());
  return 0;
}
