//===- LoopChoice.cpp - The order the plugins' loop tries entries in ------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reads lines of tab-separated fields: a device's triple and target ID, then
// the entries of a container that the plugin accepts, each "triple,arch,kind"
// (an empty arch as ",,"). Prints, for each line, the entries' indices in the
// order GenericDeviceTy::loadBinary of the series' loop tries them: ranked by
// OffloadDeviceTarget::rank, equal ranks in container order (the same two
// steps as the loop in PluginInterface.cpp, whose plugin sources LLVM main does
// not package).
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/STLExtras.h"
#include "llvm/Object/OffloadTargetRank.h"

#include <cstdio>
#include <iostream>
#include <string>

using namespace llvm;
using namespace llvm::object;

int main() {
  std::string Line;
  unsigned LineNo = 0;
  while (std::getline(std::cin, Line)) {
    ++LineNo;
    SmallVector<StringRef> Fields;
    StringRef(Line).split(Fields, '\t');
    if (Fields.size() < 3) {
      fprintf(stderr, "error: line %u: expected a device and an entry\n",
              LineNo);
      return 2;
    }
    OffloadDeviceTarget Target(Fields[0], Fields[1]);
    SmallVector<std::pair<OffloadTargetRank, size_t>> Candidates;
    for (auto [Idx, Entry] : enumerate(ArrayRef(Fields).drop_front(2))) {
      SmallVector<StringRef, 3> Parts;
      Entry.split(Parts, ',');
      if (Parts.size() != 3) {
        fprintf(stderr, "error: line %u: entry '%s' is not triple,arch,kind\n",
                LineNo, Entry.str().c_str());
        return 2;
      }
      Candidates.emplace_back(
          Target.rank(Parts[0], Parts[1], getImageKind(Parts[2])), Idx);
    }
    stable_sort(Candidates, less_first());
    for (auto [I, Candidate] : enumerate(Candidates))
      printf("%s%zu", I ? " " : "", Candidate.second);
    printf("\n");
  }
  return 0;
}
