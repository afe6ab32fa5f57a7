//===- mgpu_offload.h - The harness's view of mgpu_offload.c ------*- C -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KDL_GPU_MLIR_MGPU_OFFLOAD_H
#define KDL_GPU_MLIR_MGPU_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

/// What the module load (once, in MLIR's global constructor) and the last
/// launch measured and found.
struct kdl_mgpu_sample {
  double load_us;   ///< olCreateProgram
  double launch_us; ///< olLaunchKernel to the end of olSyncQueue
  int32_t marker;   ///< kdl_marker after the launch
};

struct kdl_mgpu_sample kdl_mgpu_last(void);

#endif // KDL_GPU_MLIR_MGPU_OFFLOAD_H
