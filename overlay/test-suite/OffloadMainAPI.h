//===- OffloadMainAPI.h - liboffload's main API over LLVM 22 ----*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The llvm-test-suite benchmark (patches/test-suite/) calls liboffload as main
// declares it: olInit(const ol_init_args_t *), contexts (#209144),
// olCreateQueue and olCreateProgram taking one (#213057, #218387), and
// olLaunchKernel with launch properties and an argument list
// (OffloadImpl.cpp at 0131390a). LLVM 22 has none of that. Force-included
// into the benchmark by the overlay build, these overloads map each call to
// LLVM 22's form, for kernels without arguments; a context is only a name for
// the device here.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_OVERLAY_OFFLOADMAINAPI_H
#define KDL_OVERLAY_OFFLOADMAINAPI_H

#include <offload/OffloadAPI.h>

#include <cstddef>

struct ol_init_args_t;
struct ol_kernel_launch_prop_t;

inline ol_result_t olInit(const ol_init_args_t *) { return ::olInit(); }

inline ol_result_t olCreateContext(size_t DevicesCount,
                                   ol_device_handle_t *Devices,
                                   ol_context_handle_t *Context) {
  static ol_error_struct_t OneDevice = {
      OL_ERRC_UNSUPPORTED, "the LLVM 22 compat context holds one device"};
  if (DevicesCount != 1 || !Devices || !Context)
    return &OneDevice;
  *Context = reinterpret_cast<ol_context_handle_t>(Devices[0]);
  return OL_SUCCESS;
}

inline ol_result_t olDestroyContext(ol_context_handle_t) { return OL_SUCCESS; }

inline ol_result_t olCreateQueue(ol_context_handle_t, ol_device_handle_t Device,
                                 ol_queue_handle_t *Queue) {
  return ::olCreateQueue(Device, Queue);
}

inline ol_result_t olCreateProgram(ol_context_handle_t,
                                   ol_device_handle_t Device,
                                   const void *ProgData, size_t ProgDataSize,
                                   ol_program_handle_t *Program) {
  return ::olCreateProgram(Device, ProgData, ProgDataSize, Program);
}

inline ol_result_t olLaunchKernel(ol_queue_handle_t Queue,
                                  ol_device_handle_t Device,
                                  ol_symbol_handle_t Kernel,
                                  const ol_kernel_launch_size_args_t *Size,
                                  const ol_kernel_launch_prop_t *, size_t,
                                  void **, const size_t *) {
  return ::olLaunchKernel(Queue, Device, Kernel, nullptr, 0, Size);
}

#endif // KDL_OVERLAY_OFFLOADMAINAPI_H
