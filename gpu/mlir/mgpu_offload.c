//===- mgpu_offload.c - MLIR's mgpu* runtime calls over liboffload --------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The runtime calls that #gpu.select_object and #gpu.runtime_select emit
// (mgpuModuleLoad, mgpuModuleGetFunction, mgpuStreamCreate, mgpuLaunchKernel,
// ...), implemented over liboffload for the GPU harness
// (gpu/runtime_select.sh): mgpuModuleLoad hands its buffer, a raw image or
// a whole OffloadBinary, to olCreateProgram on the first CUDA device. A
// buffer the runtime cannot load ends the program with one line naming why.
//
// Harness-only limits, each refused with a message: kernels without
// arguments (mgpuLaunchKernel gets no argument sizes, olLaunchKernel needs
// them), no mgpuModuleLoadJIT (its PTX has no size). After each launch it
// reads the device global kdl_marker, which the harness's kernel sets, and
// records it with the module's load time and the launch's time. MLIR loads
// the module in a global constructor and unloads it in a global destructor,
// after main: an unload that fails there is reported, not fatal.
//
//===----------------------------------------------------------------------===//

#include "mgpu_offload.h"

// OffloadAPI.h uses bool without including stdbool.h.
#include <stdbool.h>

#include <offload/OffloadAPI.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static ol_device_handle_t Device, HostDevice;
static ol_program_handle_t LastProgram;
static struct kdl_mgpu_sample Current;

static void check(ol_result_t Result, const char *What) {
  if (!Result)
    return;
  fprintf(stderr, "kdl-mgpu: %s: %s\n", What,
          Result->Details ? Result->Details : "error");
  exit(3);
}

static double now_us(void) {
  struct timespec T;
  clock_gettime(CLOCK_MONOTONIC, &T);
  return T.tv_sec * 1e6 + T.tv_nsec / 1e3;
}

static bool pick(ol_device_handle_t D, void *UserData) {
  (void)UserData;
  ol_device_type_t Type;
  if (!olGetDeviceInfo(D, OL_DEVICE_INFO_TYPE, sizeof(Type), &Type) &&
      Type == OL_DEVICE_TYPE_HOST && !HostDevice)
    HostDevice = D;
  ol_platform_handle_t Platform;
  ol_platform_backend_t Backend = OL_PLATFORM_BACKEND_UNKNOWN;
  if (!olGetDeviceInfo(D, OL_DEVICE_INFO_PLATFORM, sizeof(Platform), &Platform))
    olGetPlatformInfo(Platform, OL_PLATFORM_INFO_BACKEND, sizeof(Backend),
                      &Backend);
  if (Backend == OL_PLATFORM_BACKEND_CUDA && !Device)
    Device = D;
  return true;
}

static void init(void) {
  if (Device)
    return;
  check(olInit(), "olInit");
  olIterateDevices(pick, NULL);
  if (!Device || !HostDevice) {
    fprintf(stderr, "kdl-mgpu: no CUDA device (or no host device) found\n");
    exit(3);
  }
}

void *mgpuModuleLoad(void *Data, size_t Size) {
  init();
  ol_program_handle_t Program;
  double T0 = now_us();
  check(olCreateProgram(Device, Data, Size, &Program), "mgpuModuleLoad");
  Current.load_us = now_us() - T0;
  return Program;
}

void *mgpuModuleLoadJIT(void *Data, int OptLevel) {
  (void)Data;
  (void)OptLevel;
  fprintf(stderr, "kdl-mgpu: mgpuModuleLoadJIT: not supported (the PTX "
                  "comes without its size)\n");
  exit(3);
}

void *mgpuModuleGetFunction(void *Module, const char *Name) {
  ol_symbol_handle_t Kernel;
  check(olGetSymbol((ol_program_handle_t)Module, Name, OL_SYMBOL_KIND_KERNEL,
                    &Kernel),
        "mgpuModuleGetFunction");
  LastProgram = (ol_program_handle_t)Module;
  return Kernel;
}

void *mgpuStreamCreate(void) {
  init();
  ol_queue_handle_t Queue;
  check(olCreateQueue(Device, &Queue), "mgpuStreamCreate");
  return Queue;
}

void mgpuStreamSynchronize(void *Stream) {
  check(olSyncQueue((ol_queue_handle_t)Stream), "mgpuStreamSynchronize");
  Current.launch_us = now_us() - Current.launch_us;
  ol_symbol_handle_t Global;
  void *Address;
  check(olGetSymbol(LastProgram, "kdl_marker", OL_SYMBOL_KIND_GLOBAL_VARIABLE,
                    &Global),
        "kdl_marker");
  check(olGetSymbolInfo(Global, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS,
                        sizeof(Address), &Address),
        "kdl_marker address");
  check(olMemcpy(NULL, &Current.marker, HostDevice, Address, Device,
                 sizeof(Current.marker)),
        "kdl_marker read");
}

void mgpuStreamDestroy(void *Stream) {
  check(olDestroyQueue((ol_queue_handle_t)Stream), "mgpuStreamDestroy");
}

void mgpuLaunchKernel(void *Function, intptr_t GridX, intptr_t GridY,
                      intptr_t GridZ, intptr_t BlockX, intptr_t BlockY,
                      intptr_t BlockZ, int32_t SharedMemory, void *Stream,
                      void **Params, void **Extra, size_t ParamsCount) {
  (void)Params;
  (void)Extra;
  if (ParamsCount) {
    fprintf(stderr, "kdl-mgpu: mgpuLaunchKernel: kernels with arguments are "
                    "not supported by this harness\n");
    exit(3);
  }
  ol_kernel_launch_size_args_t Size = {
      3,
      {(uint32_t)GridX, (uint32_t)GridY, (uint32_t)GridZ},
      {(uint32_t)BlockX, (uint32_t)BlockY, (uint32_t)BlockZ},
      (size_t)SharedMemory};
  Current.launch_us = now_us();
  check(olLaunchKernel((ol_queue_handle_t)Stream, Device,
                       (ol_symbol_handle_t)Function, NULL, 0, &Size),
        "mgpuLaunchKernel");
}

void mgpuModuleUnload(void *Module) {
  if (!Module) // The load failed and ended the program.
    return;
  ol_result_t Result = olDestroyProgram((ol_program_handle_t)Module);
  if (Result)
    fprintf(stderr, "kdl-mgpu: mgpuModuleUnload (after main): %s\n",
            Result->Details ? Result->Details : "error");
}

struct kdl_mgpu_sample kdl_mgpu_last(void) { return Current; }
