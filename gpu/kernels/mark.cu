//===- mark.cu - A CUDA program that says which device image ran ----------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Built by gpu/clang_selection.sh with clang -foffload-via-llvm for sm_90 and
// sm_90a: the sm_90a image defines __CUDA_ARCH_FEAT_SM90_ALL.
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <omp.h>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KDL_IMAGE "sm_90a"
#else
#define KDL_IMAGE "sm_90"
#endif

// Read by kdl-ol-probe when the images are loaded through liboffload (it
// reads up to 64 bytes).
__device__ char kdl_image[64] = KDL_IMAGE;

__global__ void which(int *Out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *Out = 2;
#elif defined(__CUDA_ARCH__)
  *Out = 1;
#endif
}

int main() {
  int Dev = omp_get_default_device(), Host = omp_get_initial_device();
  int *D = static_cast<int *>(omp_target_alloc(sizeof(int), Dev));
  int Zero = 0, R = -1;
  if (!D || omp_target_memcpy(D, &Zero, sizeof(int), 0, 0, Dev, Host)) {
    std::printf("ran image: none (no device)\n");
    return 1;
  }
  which<<<1, 1>>>(D);
  omp_target_memcpy(&R, D, sizeof(int), 0, 0, Host, Dev);
  std::printf("ran image: %s\n", R == 2 ? "sm_90a" : R == 1 ? "sm_90" : "none");
  return R > 0 ? 0 : 1;
}
