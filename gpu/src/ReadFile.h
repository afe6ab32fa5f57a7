/*===- ReadFile.h - Read a whole file into memory, for the C probes --------===*
 *
 * Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
 * See https://llvm.org/LICENSE.txt for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 *===----------------------------------------------------------------------===*
 *
 * Used by gpu/src/ol_choice.c (once shared with the retired shim's probe).
 *
 *===----------------------------------------------------------------------===*/

#ifndef KDL_READFILE_H
#define KDL_READFILE_H

#include <stdio.h>
#include <stdlib.h>

/* The bytes of the file at Path (malloc'ed) and their count in *Size, or NULL
 * if it cannot be read or is empty. */
static char *readFile(const char *Path, size_t *Size) {
  FILE *F = fopen(Path, "rb");
  if (!F)
    return NULL;
  fseek(F, 0, SEEK_END);
  long N = ftell(F);
  rewind(F);
  char *Data = N > 0 ? malloc(N) : NULL;
  if (Data && fread(Data, 1, N, F) != (size_t)N) {
    free(Data);
    Data = NULL;
  }
  fclose(F);
  *Size = N > 0 ? (size_t)N : 0;
  return Data;
}

#endif
