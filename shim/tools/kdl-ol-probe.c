/*===- kdl-ol-probe.c - Load a program through liboffload, report it -------===*
 *
 * Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
 * See https://llvm.org/LICENSE.txt for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 *===----------------------------------------------------------------------===*
 *
 * Usage: kdl-ol-probe FILE [SYMBOL]
 *
 * For every device liboffload offers: asks olIsValidBinary about FILE, creates
 * a program from it with olCreateProgram and, if SYMBOL is given, reads the
 * NUL-terminated string (at most 63 bytes) that the global variable SYMBOL
 * holds in the loaded image, so a test can tell which image was loaded.
 * Exit status: 0 if a program was created on some device, 1 otherwise.
 *
 *===----------------------------------------------------------------------===*/

/* LLVM 22's OffloadAPI.h uses bool without including stdbool.h. */
#include <stdbool.h>

#include <offload/OffloadAPI.h>

#include "ReadFile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 64

static ol_device_handle_t Devices[MAX_DEVICES];
static int NumDevices;
static ol_device_handle_t HostDevice;

static bool collect(ol_device_handle_t Device, void *UserData) {
  (void)UserData;
  ol_device_type_t Type;
  if (!olGetDeviceInfo(Device, OL_DEVICE_INFO_TYPE, sizeof(Type), &Type) &&
      Type == OL_DEVICE_TYPE_HOST && !HostDevice)
    HostDevice = Device;
  Devices[NumDevices++] = Device;
  return NumDevices < MAX_DEVICES;
}

static const char *backendName(ol_platform_backend_t Backend) {
  switch (Backend) {
  case OL_PLATFORM_BACKEND_CUDA:
    return "cuda";
  case OL_PLATFORM_BACKEND_AMDGPU:
    return "amdgpu";
  case OL_PLATFORM_BACKEND_LEVEL_ZERO:
    return "level_zero";
  case OL_PLATFORM_BACKEND_HOST:
    return "host";
  default:
    return "unknown";
  }
}

static void printError(const char *What, ol_result_t Result) {
  printf("  %s: error %d: %s\n", What, Result->Code,
         Result->Details ? Result->Details : "");
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: kdl-ol-probe FILE [SYMBOL]\n");
    return 2;
  }
  size_t Size = 0;
  char *Data = readFile(argv[1], &Size);
  if (!Data) {
    fprintf(stderr, "error: %s: cannot read\n", argv[1]);
    return 2;
  }
  ol_result_t Result = olInit();
  if (Result) {
    printError("olInit", Result);
    return 1;
  }
  olIterateDevices(collect, NULL);
  int Created = 0;
  for (int I = 0; I < NumDevices; ++I) {
    ol_platform_handle_t Platform = NULL;
    ol_platform_backend_t Backend = OL_PLATFORM_BACKEND_UNKNOWN;
    char Name[256] = "";
    olGetDeviceInfo(Devices[I], OL_DEVICE_INFO_PLATFORM, sizeof(Platform),
                    &Platform);
    olGetPlatformInfo(Platform, OL_PLATFORM_INFO_BACKEND, sizeof(Backend),
                      &Backend);
    olGetDeviceInfo(Devices[I], OL_DEVICE_INFO_NAME, sizeof(Name), Name);
    printf("device %d: %s (%s)\n", I, backendName(Backend), Name);
    fflush(stdout);

    bool Valid = false;
    Result = olIsValidBinary(Devices[I], Data, Size, &Valid);
    if (Result)
      printError("olIsValidBinary", Result);
    else
      printf("  valid: %s\n", Valid ? "yes" : "no");
    fflush(stdout);

    ol_program_handle_t Program = NULL;
    Result = olCreateProgram(Devices[I], Data, Size, &Program);
    if (Result) {
      printError("olCreateProgram", Result);
      continue;
    }
    ++Created;
    printf("  program: created\n");
    if (argc == 3) {
      ol_symbol_handle_t Symbol = NULL;
      void *Address = NULL;
      char Value[64] = "";
      Result = olGetSymbol(Program, argv[2], OL_SYMBOL_KIND_GLOBAL_VARIABLE,
                           &Symbol);
      if (!Result)
        Result = olGetSymbolInfo(Symbol, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS,
                                 sizeof(Address), &Address);
      if (!Result)
        Result = olMemcpy(NULL, Value, HostDevice, Address, Devices[I],
                          sizeof(Value) - 1);
      if (Result)
        printError(argv[2], Result);
      else
        printf("  %s: %s\n", argv[2], Value);
    }
    olDestroyProgram(Program);
    fflush(stdout);
  }
  olShutDown();
  free(Data);
  return Created ? 0 : 1;
}
