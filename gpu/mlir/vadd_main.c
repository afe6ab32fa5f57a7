/*===- vadd_main.c - Runs gpu/mlir/vadd.mlir's @vadd and checks it ---------===*
 *
 * Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
 * See https://llvm.org/LICENSE.txt for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 *===----------------------------------------------------------------------===*
 *
 * Calls @vadd (its C interface) RUNS times (default 2) on fresh inputs, with
 * the output poisoned (NaN, marker -1) before each call, and checks every
 * element on the host. Prints per call:
 *
 *   run I marker M entry NAME checked N mismatches K
 *
 * and exits 0 only if every call ran one entry and every sum was exact.
 *
 *===----------------------------------------------------------------------===*
 */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 1048579 };

// A rank-1 memref descriptor, as MLIR's C interface passes it.
struct MemRef1D {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
};

void _mlir_ciface_vadd(struct MemRef1D *a, struct MemRef1D *b,
                       struct MemRef1D *c, struct MemRef1D *m);

static struct MemRef1D wrap(void *data, int64_t size) {
  struct MemRef1D d = {data, data, 0, {size}, {1}};
  return d;
}

static const char *entry(int32_t marker) {
  switch (marker) {
  case 80:
    return "sm_80-cubin";
  case 90:
    return "sm_90-cubin";
  case 91:
    return "sm_90a-cubin";
  case 8:
    return "sm_80-ptx";
  default:
    return "none";
  }
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 2;
  float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
  float *c = malloc(N * sizeof(float));
  int32_t marker;
  int failed = 0;
  srand(12345);
  for (int run = 0; run < runs; ++run) {
    for (int i = 0; i < N; ++i) {
      a[i] = (float)(rand() % 100000) / 64.0f;
      b[i] = (float)(rand() % 100000) / 32.0f - 1000.0f;
      c[i] = NAN;
    }
    marker = -1;
    struct MemRef1D A = wrap(a, N), B = wrap(b, N), C = wrap(c, N);
    struct MemRef1D M = wrap(&marker, 1);
    _mlir_ciface_vadd(&A, &B, &C, &M);
    long mismatches = 0;
    for (int i = 0; i < N; ++i)
      if (!(c[i] == a[i] + b[i]))
        ++mismatches;
    printf("run %d marker %d entry %s checked %d mismatches %ld\n", run, marker,
           entry(marker), N, mismatches);
    fflush(stdout);
    if (mismatches || marker == -1)
      failed = 1;
  }
  free(a);
  free(b);
  free(c);
  return failed;
}
