//===- marker.cu - A kernel image that says which target it was built for -===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Compiled once per target with -DKDL_MARKER='"sm_90a"' and so on: the
// global kdl_marker tells a probe which entry of a container was loaded, and
// kdl_touch, launched, that it runs.
//
//===----------------------------------------------------------------------===//

extern "C" __device__ char kdl_marker[16] = KDL_MARKER;

extern "C" __global__ void kdl_touch(int *Out) {
  if (Out)
    *Out = kdl_marker[0];
}
