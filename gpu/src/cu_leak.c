/*===- cu_leak.c - What CUDA module loads leave behind, without LLVM -------===*
 *
 * Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
 * See https://llvm.org/LICENSE.txt for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 *===----------------------------------------------------------------------===*
 *
 * Usage: cu_leak fail BAD STEPS
 *        cu_leak load GOOD STEPS
 *        cu_leak fallback BAD GOOD STEPS
 *        cu_leak keep GOOD STEPS
 *
 * The control for ol_choice's `growth`: the CUDA driver alone (libcuda.so.1
 * through dlopen, no LLVM), in the device's primary context as the CUDA
 * plugin uses it, the same calls the plugin makes: cuModuleLoadDataEx with
 * no options, cuModuleUnload. One step is
 *   fail:     cuModuleLoadDataEx(BAD), which must fail;
 *   load:     cuModuleLoadDataEx(GOOD), cuModuleUnload;
 *   fallback: cuModuleLoadDataEx(BAD), which must fail, then GOOD's load and
 *             unload (what the series' olCreateProgram and olDestroyProgram
 *             do with [GOOD, BAD] when BAD ranks first);
 *   keep:     cuModuleLoadDataEx(GOOD) and no unload (what a module that is
 *             never unloaded leaves behind).
 * PTX files are passed NUL-terminated, as the driver wants them.
 *
 * Prints one JSON line: the resident memory (/proc/self/statm), the bytes
 * malloc holds in use (mallinfo2) and the device's free memory
 * (cuMemGetInfo), each after one step, after STEPS more and after STEPS
 * more again, malloc_trim(0) before each reading.
 *
 *===----------------------------------------------------------------------===*/

#include "ReadFile.h"
#include "Resident.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;

static CUresult (*Init)(unsigned);
static CUresult (*DeviceGet)(CUdevice *, int);
static CUresult (*Retain)(CUcontext *, CUdevice);
static CUresult (*SetCurrent)(CUcontext);
static CUresult (*Load)(CUmodule *, const void *, unsigned, void *, void **);
static CUresult (*Unload)(CUmodule);
static CUresult (*MemInfo)(size_t *, size_t *);
static CUresult (*ErrorName)(CUresult, const char **);

static int bind(void) {
  void *Cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!Cuda)
    return 1;
  struct {
    void **Fn;
    const char *Name;
  } Syms[] = {
      {(void **)&Init, "cuInit"},
      {(void **)&DeviceGet, "cuDeviceGet"},
      {(void **)&Retain, "cuDevicePrimaryCtxRetain"},
      {(void **)&SetCurrent, "cuCtxSetCurrent"},
      {(void **)&Load, "cuModuleLoadDataEx"},
      {(void **)&Unload, "cuModuleUnload"},
      {(void **)&MemInfo, "cuMemGetInfo_v2"},
      {(void **)&ErrorName, "cuGetErrorName"},
  };
  for (size_t I = 0; I < sizeof(Syms) / sizeof(Syms[0]); ++I)
    if (!(*Syms[I].Fn = dlsym(Cuda, Syms[I].Name))) {
      fprintf(stderr, "error: libcuda.so.1 has no %s\n", Syms[I].Name);
      return 1;
    }
  return 0;
}

/* The file's bytes with a NUL after them. */
static char *image(const char *Path) {
  size_t Size = 0;
  char *Data = readFile(Path, &Size);
  char *Image = Data ? realloc(Data, Size + 1) : NULL;
  if (!Image) {
    free(Data);
    fprintf(stderr, "error: %s: cannot read it\n", Path);
    return NULL;
  }
  Image[Size] = 0;
  return Image;
}

static CUresult LastError;
static int Unexpected, Keep;

/* Loads Image; unloads it when it loaded. Returns whether it loaded. */
static int loadUnload(const char *Image) {
  CUmodule Module = NULL;
  CUresult Res = Load(&Module, Image, 0, NULL, NULL);
  if (Res) {
    LastError = Res;
    return 0;
  }
  if (!Keep && Unload(Module))
    ++Unexpected;
  return 1;
}

int main(int argc, char **argv) {
  int Fallback = argc == 5 && !strcmp(argv[1], "fallback");
  Keep = argc == 4 && !strcmp(argv[1], "keep");
  if (!(argc == 4 && (!strcmp(argv[1], "fail") || !strcmp(argv[1], "load"))) &&
      !Fallback && !Keep) {
    fprintf(stderr, "usage: cu_leak fail BAD STEPS | load GOOD STEPS | "
                    "fallback BAD GOOD STEPS | keep GOOD STEPS\n");
    return 2;
  }
  int Steps = atoi(argv[argc - 1]);
  const char *BadPath = strcmp(argv[1], "load") && !Keep ? argv[2] : NULL;
  const char *GoodPath = Fallback ? argv[3] : !BadPath ? argv[2] : NULL;
  char *Bad = BadPath ? image(BadPath) : NULL;
  char *Good = GoodPath ? image(GoodPath) : NULL;
  if ((BadPath && !Bad) || (GoodPath && !Good) || Steps < 1)
    return 2;
  CUdevice Device = 0;
  CUcontext Context = NULL;
  if (bind() || Init(0) || DeviceGet(&Device, 0) || Retain(&Context, Device) ||
      SetCurrent(Context)) {
    fprintf(stderr, "error: no CUDA device through libcuda.so.1\n");
    return 1;
  }
  long Rss[3], Heap[3], Free[3];
  int Loaded = 0, Failed = 0;
  for (int Phase = 0; Phase < 3; ++Phase) {
    for (int I = 0; I < (Phase ? Steps : 1); ++I) {
      if (Bad) {
        if (loadUnload(Bad))
          ++Unexpected; /* BAD must fail. */
        else
          ++Failed;
      }
      if (Good) {
        if (loadUnload(Good))
          ++Loaded;
        else
          ++Unexpected;
      }
    }
    malloc_trim(0);
    struct mallinfo2 M = mallinfo2();
    size_t FreeBytes = 0, Total = 0;
    Rss[Phase] = residentKiB();
    Heap[Phase] = (long)(M.uordblks / 1024);
    Free[Phase] = MemInfo(&FreeBytes, &Total) ? -1 : (long)(FreeBytes / 1024);
  }
  const char *Name = "";
  if (LastError)
    ErrorName(LastError, &Name);
  printf("{\"probe\": \"cuda\", \"mode\": \"%s\", \"bad\": \"%s\", "
         "\"good\": \"%s\", \"steps\": [1, %d, %d], \"loaded\": %d, "
         "\"failed\": %d, \"unexpected\": %d, \"error\": \"%s\", "
         "\"rss_kib\": [%ld, %ld, %ld], \"heap_kib\": [%ld, %ld, %ld], "
         "\"device_free_kib\": [%ld, %ld, %ld]}\n",
         argv[1], BadPath ? BadPath : "", GoodPath ? GoodPath : "", Steps + 1,
         2 * Steps + 1, Loaded, Failed, Unexpected, Name ? Name : "", Rss[0],
         Rss[1], Rss[2], Heap[0], Heap[1], Heap[2], Free[0], Free[1], Free[2]);
  free(Bad);
  free(Good);
  return Unexpected ? 1 : 0;
}
