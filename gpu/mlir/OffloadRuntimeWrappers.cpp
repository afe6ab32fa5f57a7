//===- OffloadRuntimeWrappers.cpp - MLIR GPU runtime calls over liboffload ===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Implements the C wrappers that MLIR's GPU lowering calls (`gpu-to-llvm` and
// the `#gpu.select_object` / `#gpu.runtime_select` translations), with the
// signatures of CudaRuntimeWrappers.cpp, over liboffload (OffloadAPI.h)
// instead of the CUDA driver API. mgpuModuleLoad hands its whole blob to
// olCreateProgram, so a `#gpu.runtime_select` container (an OffloadBinary of
// several entries) is loaded by the runtime, which picks its entry.
//
// The calls are those a host function of gpu.alloc, gpu.memcpy,
// gpu.launch_func, gpu.dealloc and gpu.wait lowers to: module load, function
// lookup and unload, launch, allocation, copy, free, and streams. Every
// kernel argument must be pointer-sized (memrefs passed as bare pointers, and
// index or 64-bit integers), as SyclRuntimeWrappers.cpp assumes too:
// olLaunchKernel takes the arguments packed, and the lowering passes only
// their addresses. An error prints one line naming the call and liboffload's
// message; the call then returns as the CUDA wrappers do.
//
//===----------------------------------------------------------------------===//

#include "offload/OffloadAPI.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_set>
#include <vector>

#ifdef _WIN32
#define MLIR_OFFLOAD_WRAPPERS_EXPORT __declspec(dllexport)
#else
#define MLIR_OFFLOAD_WRAPPERS_EXPORT __attribute__((visibility("default")))
#endif // _WIN32

namespace {
/// Prints one line naming the failed liboffload call and its message.
bool reportIfError(ol_result_t result, const char *wrapper, const char *call) {
  if (result == OL_SUCCESS)
    return false;
  fprintf(stderr, "%s: '%s' failed with '%s' (ol_errc_t %d)\n", wrapper, call,
          result->Details ? result->Details : "<no details>",
          static_cast<int>(result->Code));
  return true;
}

#define OFFLOAD_REPORT_IF_ERROR(expr) reportIfError((expr), __func__, #expr)

/// The device the wrappers use (the first non-host device liboffload lists),
/// the host device that copies name for host memory, and the programs still
/// loaded.
struct OffloadRuntime {
  ol_device_handle_t device = nullptr;
  ol_device_handle_t host = nullptr;
  std::mutex mutex;
  std::unordered_set<ol_program_handle_t> programs;
};

OffloadRuntime &getRuntime();

/// The program's global destructors (where the module-unload calls of
/// `#gpu.select_object` live) run after the exit handlers that liboffload's
/// plugins and the drivers under them register, so an unload there reaches
/// a runtime that is gone. This handler, registered after olInit, runs first:
/// it unloads what is still loaded and shuts liboffload down; a later
/// mgpuModuleUnload of such a module does nothing.
void shutDownAtExit() {
  OffloadRuntime &runtime = getRuntime();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  for (ol_program_handle_t program : runtime.programs)
    OFFLOAD_REPORT_IF_ERROR(olDestroyProgram(program));
  runtime.programs.clear();
  OFFLOAD_REPORT_IF_ERROR(olShutDown());
}

/// Initializes liboffload and finds the devices.
OffloadRuntime *createRuntime() {
  auto *created = new OffloadRuntime();
  if (OFFLOAD_REPORT_IF_ERROR(olInit()))
    return created;
  OFFLOAD_REPORT_IF_ERROR(olIterateDevices(
      [](ol_device_handle_t device, void *data) {
        auto *found = static_cast<OffloadRuntime *>(data);
        ol_platform_handle_t platform = nullptr;
        ol_platform_backend_t backend = OL_PLATFORM_BACKEND_UNKNOWN;
        if (olGetDeviceInfo(device, OL_DEVICE_INFO_PLATFORM, sizeof(platform),
                            &platform) != OL_SUCCESS ||
            olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND,
                              sizeof(backend), &backend) != OL_SUCCESS)
          return true;
        if (backend == OL_PLATFORM_BACKEND_HOST) {
          if (!found->host)
            found->host = device;
        } else if (!found->device) {
          found->device = device;
        }
        return true;
      },
      created));
  if (!created->device)
    fprintf(stderr, "createRuntime: 'olIterateDevices' found no offload "
                    "device\n");
  std::atexit(shutDownAtExit);
  return created;
}

// A function-local static: the module-load constructors of a program run
// before its own static initializers.
OffloadRuntime &getRuntime() {
  static OffloadRuntime *runtime = createRuntime();
  return *runtime;
}

ol_device_handle_t getDevice() { return getRuntime().device; }

/// The device a pointer belongs to: liboffload's for its allocations, the
/// host device for any other address.
ol_device_handle_t getMemoryDevice(const void *ptr) {
  ol_device_handle_t device = nullptr;
  if (olGetMemInfo(ptr, OL_MEM_INFO_DEVICE, sizeof(device), &device) ==
      OL_SUCCESS)
    return device;
  return getRuntime().host;
}
} // namespace

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT ol_program_handle_t
mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  OffloadRuntime &runtime = getRuntime();
  ol_program_handle_t program = nullptr;
  if (OFFLOAD_REPORT_IF_ERROR(
          olCreateProgram(runtime.device, data, gpuBlobSize, &program)))
    return nullptr;
  std::lock_guard<std::mutex> lock(runtime.mutex);
  runtime.programs.insert(program);
  return program;
}

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT void
mgpuModuleUnload(ol_program_handle_t module) {
  OffloadRuntime &runtime = getRuntime();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  // Unloaded at exit already (or never loaded).
  if (!runtime.programs.erase(module))
    return;
  OFFLOAD_REPORT_IF_ERROR(olDestroyProgram(module));
}

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT ol_symbol_handle_t
mgpuModuleGetFunction(ol_program_handle_t module, const char *name) {
  ol_symbol_handle_t kernel = nullptr;
  OFFLOAD_REPORT_IF_ERROR(
      olGetSymbol(module, name, OL_SYMBOL_KIND_KERNEL, &kernel));
  return kernel;
}

// The wrapper uses intptr_t instead of uint32_t to match the type of MLIR's
// index type, as the CUDA wrappers do.
extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT void
mgpuLaunchKernel(ol_symbol_handle_t function, intptr_t gridX, intptr_t gridY,
                 intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                 intptr_t blockZ, int32_t smem, ol_queue_handle_t stream,
                 void **params, void ** /*extra*/, size_t paramsCount) {
  // Every argument is pointer-sized: pack their values in order.
  std::vector<void *> arguments(paramsCount);
  for (size_t i = 0; i < paramsCount; ++i)
    arguments[i] = *static_cast<void **>(params[i]);
  ol_kernel_launch_size_args_t size = {
      /*Dimensions=*/3,
      /*NumGroups=*/
      {static_cast<uint32_t>(gridX), static_cast<uint32_t>(gridY),
       static_cast<uint32_t>(gridZ)},
      /*GroupSize=*/
      {static_cast<uint32_t>(blockX), static_cast<uint32_t>(blockY),
       static_cast<uint32_t>(blockZ)},
      /*DynSharedMemory=*/static_cast<size_t>(smem)};
  OFFLOAD_REPORT_IF_ERROR(olLaunchKernel(stream, getDevice(), function,
                                         arguments.data(),
                                         paramsCount * sizeof(void *), &size));
}

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT ol_queue_handle_t mgpuStreamCreate() {
  ol_queue_handle_t stream = nullptr;
  OFFLOAD_REPORT_IF_ERROR(olCreateQueue(getDevice(), &stream));
  return stream;
}

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT void
mgpuStreamDestroy(ol_queue_handle_t stream) {
  OFFLOAD_REPORT_IF_ERROR(olDestroyQueue(stream));
}

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT void
mgpuStreamSynchronize(ol_queue_handle_t stream) {
  OFFLOAD_REPORT_IF_ERROR(olSyncQueue(stream));
}

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT void *
mgpuMemAlloc(uint64_t sizeBytes, ol_queue_handle_t /*stream*/,
             bool isHostShared) {
  void *ptr = nullptr;
  ol_alloc_type_t type =
      isHostShared ? OL_ALLOC_TYPE_MANAGED : OL_ALLOC_TYPE_DEVICE;
  OFFLOAD_REPORT_IF_ERROR(olMemAlloc(getDevice(), type, sizeBytes, &ptr));
  return ptr;
}

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT void
mgpuMemFree(void *ptr, ol_queue_handle_t stream) {
  // olMemFree is not ordered on a queue: let the work queued before the free
  // (a copy out of this memory, say) finish first.
  if (stream)
    OFFLOAD_REPORT_IF_ERROR(olSyncQueue(stream));
  OFFLOAD_REPORT_IF_ERROR(olMemFree(ptr));
}

extern "C" MLIR_OFFLOAD_WRAPPERS_EXPORT void
mgpuMemcpy(void *dst, void *src, size_t sizeBytes, ol_queue_handle_t stream) {
  OFFLOAD_REPORT_IF_ERROR(olMemcpy(stream, dst, getMemoryDevice(dst), src,
                                   getMemoryDevice(src), sizeBytes));
}
