//===- run_main.c - Runs the MLIR-built launch and reports it -------------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// kdl_run is the host function of gpu/mlir/mark.mlir's harness module: one
// gpu.launch_func, translated by #gpu.runtime_select or #gpu.select_object
// (get function, launch, synchronize; the module is loaded once, in a global
// constructor). It runs N times in this process (the first is cold); each
// run prints one line, L being that one load's time:
//
//   run I marker M load_us L launch_us T
//
//===----------------------------------------------------------------------===//

#include "mgpu_offload.h"

#include <stdio.h>
#include <stdlib.h>

void kdl_run(void);

int main(int argc, char **argv) {
  int Runs = argc > 1 ? atoi(argv[1]) : 10;
  for (int I = 0; I < Runs; ++I) {
    kdl_run();
    struct kdl_mgpu_sample S = kdl_mgpu_last();
    printf("run %d marker %d load_us %.1f launch_us %.1f\n", I, S.marker,
           S.load_us, S.launch_us);
  }
  return 0;
}
