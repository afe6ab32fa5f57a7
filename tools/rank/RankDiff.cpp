//===- RankDiff.cpp - What the rank answers for a corpus of targets -------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reads lines of five tab-separated fields (an entry's triple, arch and image
// kind; a device's triple and target ID) and prints, for each, what
// OffloadDeviceTarget::rank answers and what areTargetsEquivalent and
// areTargetsCompatible answer. Built against LLVM main and against the
// release/22.x backport, the two outputs must be the same.
//
//===----------------------------------------------------------------------===//

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
    SmallVector<StringRef, 5> Fields;
    StringRef(Line).split(Fields, '\t');
    if (Fields.size() != 5) {
      fprintf(stderr, "error: line %u: expected 5 tab-separated fields\n",
              LineNo);
      return 2;
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
  }
  return 0;
}
