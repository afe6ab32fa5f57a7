/*===- Resident.h - This process's resident memory, for the C probes -------===*
 *
 * Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
 * See https://llvm.org/LICENSE.txt for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 *===----------------------------------------------------------------------===*
 *
 * Used by gpu/src/ol_choice.c and gpu/src/cu_leak.c.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KDL_RESIDENT_H
#define KDL_RESIDENT_H

#include <stdio.h>

/* Resident memory of this process, in KiB (/proc/self/statm), or -1. */
static long residentKiB(void) {
  long Pages = 0, Resident = 0;
  FILE *F = fopen("/proc/self/statm", "r");
  if (!F)
    return -1;
  if (fscanf(F, "%ld %ld", &Pages, &Resident) != 2)
    Resident = -1;
  fclose(F);
  return Resident < 0 ? -1 : Resident * 4;
}

#endif
