/*===- ol_choice.c - Which entry a real liboffload loads, and at what cost -===*
 *
 * Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
 * See https://llvm.org/LICENSE.txt for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 *===----------------------------------------------------------------------===*
 *
 * Usage: ol_choice choice FILE...
 *        ol_choice cost FILE WARM
 *        ol_choice leak FILE LOADS
 *        ol_choice growth FILE STEPS
 *
 * Runs against whichever libLLVMOffload the dynamic linker finds: LLVM 22.1.8
 * built with or without the series, or LLVM main's (built with
 * -DKDL_OL_MAIN, whose API has contexts and a new launch call).
 *
 * choice: on the first CUDA device, for each FILE one JSON line: what
 * olIsValidBinary says, whether olCreateProgram made a program (or its
 * error), the string the loaded image's global kdl_marker holds (which entry
 * was loaded; gpu/kernels/marker.cu) and whether its kernel kdl_touch ran.
 *
 * cost: one JSON line: the time of olInit, of this process's first
 * olCreateProgram of FILE (cold), and of WARM more olCreateProgram calls,
 * each followed by an untimed olDestroyProgram. Microseconds, CLOCK_MONOTONIC.
 *
 * leak: one JSON line: this process's resident memory and the device's free
 * memory (cuMemGetInfo in the device's primary context) after one
 * olCreateProgram of FILE and olDestroyProgram, and again after LOADS more;
 * a load that fails counts as one (what it allocated must be freed too).
 *
 * growth: as leak, with three readings (after one load, after STEPS more,
 * after STEPS more again: is the growth linear), malloc_trim(0) before each,
 * and the bytes malloc holds in use (mallinfo2) beside the resident memory;
 * gpu/src/cu_leak.c is the same without LLVM.
 *
 *===----------------------------------------------------------------------===*/

/* LLVM 22's OffloadAPI.h uses bool without including stdbool.h. */
#include <stdbool.h>

#include <offload/OffloadAPI.h>

#include "ReadFile.h"
#include "Resident.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ol_device_handle_t Device, Host;

static bool collect(ol_device_handle_t D, void *UserData) {
  (void)UserData;
  ol_platform_handle_t Platform = NULL;
  ol_platform_backend_t Backend = OL_PLATFORM_BACKEND_UNKNOWN;
  olGetDeviceInfo(D, OL_DEVICE_INFO_PLATFORM, sizeof(Platform), &Platform);
  olGetPlatformInfo(Platform, OL_PLATFORM_INFO_BACKEND, sizeof(Backend),
                    &Backend);
  if (Backend == OL_PLATFORM_BACKEND_CUDA && !Device)
    Device = D;
  if (Backend == OL_PLATFORM_BACKEND_HOST && !Host)
    Host = D;
  return true;
}

#ifdef KDL_OL_MAIN
static ol_context_handle_t Context;
#define KDL_INIT() olInit(NULL)
#define KDL_CREATE(Data, Size, Program)                                        \
  olCreateProgram(Context, Device, Data, Size, Program)
#define KDL_QUEUE(Queue) olCreateQueue(Context, Device, Queue)
#define KDL_HOST NULL
#else
#define KDL_INIT() olInit()
#define KDL_CREATE(Data, Size, Program)                                        \
  olCreateProgram(Device, Data, Size, Program)
#define KDL_QUEUE(Queue) olCreateQueue(Device, Queue)
#define KDL_HOST Host
#endif

static double now(void) {
  struct timespec T;
  clock_gettime(CLOCK_MONOTONIC, &T);
  return T.tv_sec * 1e6 + T.tv_nsec / 1e3;
}

/* Prints S as a JSON string (the error details may hold anything). */
static void printString(const char *S) {
  putchar('"');
  for (; S && *S; ++S) {
    unsigned char C = (unsigned char)*S;
    if (C == '"' || C == '\\')
      printf("\\%c", C);
    else if (C < 0x20 || C > 0x7e)
      printf("\\u%04x", C);
    else
      putchar(C);
  }
  putchar('"');
}

static const char *details(ol_result_t Result) {
  return Result && Result->Details ? Result->Details : "";
}

static ol_result_t touch(ol_program_handle_t Program) {
  ol_symbol_handle_t Kernel = NULL;
  ol_queue_handle_t Queue = NULL;
  void *Out = NULL;
  ol_kernel_launch_size_args_t Size = {1, {1, 1, 1}, {1, 1, 1}, 0};
  ol_result_t Result =
      olGetSymbol(Program, "kdl_touch", OL_SYMBOL_KIND_KERNEL, &Kernel);
  if (!Result)
    Result = KDL_QUEUE(&Queue);
#ifdef KDL_OL_MAIN
  void *Args[] = {&Out};
  size_t Sizes[] = {sizeof(Out)};
  if (!Result)
    Result = olLaunchKernel(Queue, Device, Kernel, &Size, NULL, 1, Args, Sizes);
#else
  if (!Result)
    Result = olLaunchKernel(Queue, Device, Kernel, &Out, sizeof(Out), &Size);
#endif
  if (!Result)
    Result = olSyncQueue(Queue);
  if (Queue)
    olDestroyQueue(Queue);
  return Result;
}

static void choice(const char *Path) {
  size_t Size = 0;
  char *Data = readFile(Path, &Size);
  printf("{\"file\": ");
  printString(Path);
  if (!Data) {
    printf(", \"error\": \"cannot read\"}\n");
    return;
  }
  bool Valid = false;
  ol_result_t Result = olIsValidBinary(Device, Data, Size, &Valid);
  printf(", \"valid\": %s", Result ? "null" : Valid ? "true" : "false");
  ol_program_handle_t Program = NULL;
  Result = KDL_CREATE(Data, Size, &Program);
  if (Result) {
    printf(", \"created\": false, \"error\": ");
    printString(details(Result));
    printf("}\n");
    free(Data);
    return;
  }
  char Marker[16] = "";
  ol_symbol_handle_t Symbol = NULL;
  void *Address = NULL;
  Result = olGetSymbol(Program, "kdl_marker", OL_SYMBOL_KIND_GLOBAL_VARIABLE,
                       &Symbol);
  if (!Result)
    Result = olGetSymbolInfo(Symbol, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS,
                             sizeof(Address), &Address);
  if (!Result)
    Result =
        olMemcpy(NULL, Marker, KDL_HOST, Address, Device, sizeof(Marker) - 1);
  printf(", \"created\": true, \"marker\": ");
  printString(Result ? "" : Marker);
  Result = touch(Program);
  printf(", \"ran\": %s", Result ? "false" : "true");
  if (Result) {
    printf(", \"run_error\": ");
    printString(details(Result));
  }
  printf("}\n");
  olDestroyProgram(Program);
  free(Data);
}

static int cost(const char *Path, int Warm) {
  size_t Size = 0;
  char *Data = readFile(Path, &Size);
  if (!Data)
    return 2;
  ol_program_handle_t Program = NULL;
  double T0 = now();
  ol_result_t Result = KDL_CREATE(Data, Size, &Program);
  double Cold = now() - T0;
  if (Result) {
    printf("{\"file\": ");
    printString(Path);
    printf(", \"error\": ");
    printString(details(Result));
    printf("}\n");
    return 1;
  }
  olDestroyProgram(Program);
  printf("{\"file\": ");
  printString(Path);
  printf(", \"cold_us\": %.3f, \"warm_us\": [", Cold);
  for (int I = 0; I < Warm; ++I) {
    T0 = now();
    Result = KDL_CREATE(Data, Size, &Program);
    double T = now() - T0;
    if (Result)
      return 1;
    olDestroyProgram(Program);
    printf("%s%.3f", I ? ", " : "", T);
  }
  printf("]}\n");
  free(Data);
  return 0;
}

/* Free memory of CUDA device 0 in KiB, through the driver API in the
 * device's primary context (the one the CUDA plugin uses); -1 if unknown. */
static long deviceFreeKiB(void) {
  typedef int (*RetainFn)(void **, int);
  typedef int (*ReleaseFn)(int);
  typedef int (*CtxFn)(void *);
  typedef int (*PopFn)(void **);
  typedef int (*MemFn)(size_t *, size_t *);
  void *Cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!Cuda)
    return -1;
  RetainFn Retain = (RetainFn)dlsym(Cuda, "cuDevicePrimaryCtxRetain");
  ReleaseFn Release = (ReleaseFn)dlsym(Cuda, "cuDevicePrimaryCtxRelease_v2");
  CtxFn Push = (CtxFn)dlsym(Cuda, "cuCtxPushCurrent_v2");
  PopFn Pop = (PopFn)dlsym(Cuda, "cuCtxPopCurrent_v2");
  MemFn MemInfo = (MemFn)dlsym(Cuda, "cuMemGetInfo_v2");
  void *Ctx = NULL, *Popped = NULL;
  size_t Free = 0, Total = 0;
  long KiB = -1;
  if (Retain && Release && Push && Pop && MemInfo && !Retain(&Ctx, 0)) {
    if (!Push(Ctx)) {
      if (!MemInfo(&Free, &Total))
        KiB = (long)(Free / 1024);
      Pop(&Popped);
    }
    Release(0);
  }
  return KiB;
}

static int leak(const char *Path, int Loads) {
  size_t Size = 0;
  char *Data = readFile(Path, &Size);
  if (!Data)
    return 2;
  int Failed = 0;
  long Rss[2], Dev[2];
  for (int Phase = 0; Phase < 2; ++Phase) {
    for (int I = 0; I < (Phase ? Loads : 1); ++I) {
      ol_program_handle_t Program = NULL;
      if (KDL_CREATE(Data, Size, &Program))
        ++Failed;
      else
        olDestroyProgram(Program);
    }
    Rss[Phase] = residentKiB();
    Dev[Phase] = deviceFreeKiB();
  }
  printf("{\"file\": ");
  printString(Path);
  printf(", \"loads\": %d, \"failed\": %d, \"rss_kib\": [%ld, %ld], "
         "\"device_free_kib\": [%ld, %ld]}\n",
         Loads + 1, Failed, Rss[0], Rss[1], Dev[0], Dev[1]);
  free(Data);
  return 0;
}

static int growth(const char *Path, int Steps) {
  size_t Size = 0;
  char *Data = readFile(Path, &Size);
  if (!Data || Steps < 1)
    return 2;
  int Failed = 0, DestroyFailed = 0;
  char DestroyError[256] = "";
  long Rss[3], Heap[3], Dev[3];
  for (int Phase = 0; Phase < 3; ++Phase) {
    for (int I = 0; I < (Phase ? Steps : 1); ++I) {
      ol_program_handle_t Program = NULL;
      if (KDL_CREATE(Data, Size, &Program)) {
        ++Failed;
        continue;
      }
      ol_result_t Result = olDestroyProgram(Program);
      if (Result && !DestroyFailed++)
        snprintf(DestroyError, sizeof(DestroyError), "%s", details(Result));
    }
    malloc_trim(0);
    struct mallinfo2 M = mallinfo2();
    Rss[Phase] = residentKiB();
    Heap[Phase] = (long)(M.uordblks / 1024);
    Dev[Phase] = deviceFreeKiB();
  }
  printf("{\"probe\": \"liboffload\", \"file\": ");
  printString(Path);
  printf(", \"steps\": [1, %d, %d], \"failed\": %d, \"destroy_failed\": %d, "
         "\"destroy_error\": ",
         Steps + 1, 2 * Steps + 1, Failed, DestroyFailed);
  printString(DestroyError);
  printf(", "
         "\"rss_kib\": [%ld, %ld, %ld], \"heap_kib\": [%ld, %ld, %ld], "
         "\"device_free_kib\": [%ld, %ld, %ld]}\n",
         Rss[0], Rss[1], Rss[2], Heap[0], Heap[1], Heap[2], Dev[0], Dev[1],
         Dev[2]);
  free(Data);
  return 0;
}

int main(int argc, char **argv) {
  bool Counted =
      argc > 1 && (!strcmp(argv[1], "cost") || !strcmp(argv[1], "leak") ||
                   !strcmp(argv[1], "growth"));
  if (argc < 3 || (strcmp(argv[1], "choice") && !Counted) ||
      (Counted && argc != 4)) {
    fprintf(stderr,
            "usage: ol_choice choice FILE... | cost FILE WARM | leak FILE N | "
            "growth FILE N\n");
    return 2;
  }
  double T0 = now();
  ol_result_t Result = KDL_INIT();
  double Init = now() - T0;
  if (Result) {
    fprintf(stderr, "error: olInit: %s\n", details(Result));
    return 1;
  }
  olIterateDevices(collect, NULL);
  if (!Device) {
    fprintf(stderr, "error: no CUDA device\n");
    return 1;
  }
#ifdef KDL_OL_MAIN
  Result = olCreateContext(1, &Device, &Context);
  if (Result) {
    fprintf(stderr, "error: olCreateContext: %s\n", details(Result));
    return 1;
  }
#endif
  int Status = 0;
  if (!strcmp(argv[1], "choice")) {
    for (int I = 2; I < argc; ++I) {
      choice(argv[I]);
      fflush(stdout);
    }
  } else if (!strcmp(argv[1], "leak")) {
    Status = leak(argv[2], atoi(argv[3]));
  } else if (!strcmp(argv[1], "growth")) {
    Status = growth(argv[2], atoi(argv[3]));
  } else {
    printf("{\"init_us\": %.3f}\n", Init);
    Status = cost(argv[2], atoi(argv[3]));
  }
  olShutDown();
  return Status;
}
