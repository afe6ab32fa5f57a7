//===- OffloadTblgenDriver.cpp - offload-tblgen's backends, driven --------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kdl upstream-check` compiles the runtime's sources against upstream texts,
// and those include headers that liboffload's build generates from its .td
// files with offload-tblgen (OffloadErrcodes.inc, OffloadInfo.inc). The
// backends are upstream's own (offload/tools/offload-tblgen/MiscGen.cpp, read
// from upstream into the check's cache and compiled with this file); this
// file is only the command line that offload-tblgen.cpp gives them, whose
// text at a known commit the check does not have. Not part of the series.
//
//   offload-tblgen -gen-errcodes|-gen-info|-gen-func-names|-gen-exports
//                  [-I DIR] ROOT.td -o OUT
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"

using namespace llvm;

// The backends of MiscGen.cpp.
void EmitOffloadFuncNames(const RecordKeeper &Records, raw_ostream &OS);
void EmitOffloadExports(const RecordKeeper &Records, raw_ostream &OS);
void EmitOffloadErrcodes(const RecordKeeper &Records, raw_ostream &OS);
void EmitOffloadInfo(const RecordKeeper &Records, raw_ostream &OS);

namespace {
enum ActionType {
  PrintRecords,
  GenFuncNames,
  GenExports,
  GenErrcodes,
  GenInfo
};
} // namespace

static cl::opt<ActionType> Action(
    cl::desc("Action to perform:"),
    cl::values(clEnumValN(PrintRecords, "print-records", "Print all records"),
               clEnumValN(GenFuncNames, "gen-func-names",
                          "Generate the list of function names"),
               clEnumValN(GenExports, "gen-exports",
                          "Generate the export file for the library"),
               clEnumValN(GenErrcodes, "gen-errcodes",
                          "Generate the error codes (OffloadErrcodes.inc)"),
               clEnumValN(GenInfo, "gen-info",
                          "Generate the device info list (OffloadInfo.inc)")));

static bool emit(raw_ostream &OS, const RecordKeeper &Records) {
  switch (Action) {
  case PrintRecords:
    OS << Records;
    break;
  case GenFuncNames:
    EmitOffloadFuncNames(Records, OS);
    break;
  case GenExports:
    EmitOffloadExports(Records, OS);
    break;
  case GenErrcodes:
    EmitOffloadErrcodes(Records, OS);
    break;
  case GenInfo:
    EmitOffloadInfo(Records, OS);
    break;
  }
  return false;
}

int main(int Argc, char **Argv) {
  InitLLVM X(Argc, Argv);
  cl::ParseCommandLineOptions(Argc, Argv);
  return TableGenMain(Argv[0], &emit);
}
