//===- RankDiff.cpp - What the rank answers for a corpus of targets -------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Built against LLVM main and against the release/22.x backport; the two
// builds must print the same. It reads lines of tab-separated fields:
//
// - by default, five: an entry's triple, arch and image kind, a device's
//   triple and target ID; it prints what OffloadDeviceTarget::rank answers
//   and what areTargetsEquivalent and areTargetsCompatible answer;
// - with --loop, a device's triple and target ID, then the entries of a
//   container the plugin accepts, each "triple,arch,kind"; it prints the
//   entries' indices in the order GenericDeviceTy::loadBinary of the series'
//   loop tries them: ranked by OffloadDeviceTarget::rank, equal ranks in
//   container order (the loop's two steps in PluginInterface.cpp, whose plugin
//   sources LLVM main does not package).
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/STLExtras.h"
#include "llvm/Object/OffloadTargetRank.h"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

using namespace llvm;
using namespace llvm::object;

static bool rankPair(ArrayRef<StringRef> Fields, unsigned LineNo) {
  if (Fields.size() != 5) {
    fprintf(stderr, "error: line %u: expected 5 tab-separated fields\n",
            LineNo);
    return false;
  }
  OffloadDeviceTarget Device(Fields[3], Fields[4]);
  OffloadTargetRank Rank =
      Device.rank(Fields[0], Fields[1], getImageKind(Fields[2]));
  OffloadFile::TargetID Entry(Fields[0], Fields[1]);
  OffloadFile::TargetID Target(Fields[3], Fields[4]);
  printf("%s\t%d\t%u\t%u\t%d\t%d\n", getOffloadTargetFitName(Rank.Fit).data(),
         Rank.CompiledAtLoad, unsigned(Rank.SmVersion),
         unsigned(Rank.Specificity), areTargetsEquivalent(Entry, Target),
         areTargetsCompatible(Entry, Target));
  return true;
}

static bool loopOrder(ArrayRef<StringRef> Fields, unsigned LineNo) {
  if (Fields.size() < 3) {
    fprintf(stderr, "error: line %u: expected a device and an entry\n", LineNo);
    return false;
  }
  OffloadDeviceTarget Target(Fields[0], Fields[1]);
  SmallVector<std::pair<OffloadTargetRank, size_t>> Candidates;
  for (auto [Idx, Entry] : enumerate(Fields.drop_front(2))) {
    SmallVector<StringRef, 3> Parts;
    Entry.split(Parts, ',');
    if (Parts.size() != 3) {
      fprintf(stderr, "error: line %u: entry '%s' is not triple,arch,kind\n",
              LineNo, Entry.str().c_str());
      return false;
    }
    Candidates.emplace_back(
        Target.rank(Parts[0], Parts[1], getImageKind(Parts[2])), Idx);
  }
  stable_sort(Candidates, less_first());
  for (auto [I, Candidate] : enumerate(Candidates))
    printf("%s%zu", I ? " " : "", Candidate.second);
  printf("\n");
  return true;
}

int main(int Argc, char **Argv) {
  bool Loop = Argc == 2 && strcmp(Argv[1], "--loop") == 0;
  if (Argc > 1 && !Loop) {
    fprintf(stderr, "usage: %s [--loop] < LINES\n", Argv[0]);
    return 2;
  }
  std::string Line;
  unsigned LineNo = 0;
  while (std::getline(std::cin, Line)) {
    SmallVector<StringRef> Fields;
    StringRef(Line).split(Fields, '\t');
    if (!(Loop ? loopOrder : rankPair)(Fields, ++LineNo))
      return 2;
  }
  return 0;
}
