//===- cuda_layers.cpp - the CUDA driver API dispatch path, layer by layer ===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
//   cuda_layers cold IMAGE       one fresh process: every layer once
//   cuda_layers warm IMAGE N     N samples of each repeatable layer
//
// IMAGE is a cubin or a PTX file holding kdl_marker (gpu/kernels/gemm.cu).
// Each key of the output names exactly the calls inside its timed region; see
// LAYERS below, which is also printed as "boundaries".
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cuda.h>

#include <string>
#include <vector>

using namespace kdl;

static void check(CUresult R, const char *What) {
  if (R == CUDA_SUCCESS)
    return;
  const char *Name = nullptr;
  const char *Str = nullptr;
  cuGetErrorName(R, &Name);
  cuGetErrorString(R, &Str);
  fatal(std::string(What) + ": " + (Name ? Name : "?") + " (" +
        (Str ? Str : "?") + ")");
}

static const char *LAYERS = R"JSON({
  "runtime_init": "cuInit(0)",
  "device_discovery": "cuDeviceGetCount + cuDeviceGet(0) + cuDeviceGetAttribute(compute capability major, minor) + cuDeviceGetName",
  "context_create": "cuDevicePrimaryCtxRetain + cuCtxSetCurrent",
  "queue_create": "cuStreamCreate(CU_STREAM_NON_BLOCKING)",
  "module_load_cold": "cuModuleLoadData(IMAGE), the first module of the fresh context",
  "module_load_second": "cuModuleLoadData(IMAGE) again in the same process (one sample per process)",
  "symbol_lookup": "cuModuleGetFunction(kdl_marker)",
  "first_launch_enqueue": "cuLaunchKernel(kdl_marker, 1 block of 32 threads) the first time",
  "first_launch_sync": "cuStreamSynchronize after the first launch",
  "module_load_warm": "cuModuleLoadData(IMAGE) with other modules of IMAGE already loaded (cuModuleUnload outside the region)",
  "module_load_getfunc_warm": "cuModuleLoadData(IMAGE) + cuModuleGetFunction(kdl_marker) on the new module",
  "symbol_lookup_warm": "cuModuleGetFunction(kdl_marker) on a loaded module",
  "launch_enqueue": "cuLaunchKernel(kdl_marker) alone; cuStreamSynchronize outside the region",
  "launch_sync": "cuLaunchKernel(kdl_marker) + cuStreamSynchronize"
})JSON";

namespace {
struct Marker {
  CUdeviceptr Out = 0;
  void *Args[1] = {&Out};
};
} // namespace

static void launchMarker(CUfunction F, CUstream S, Marker &M) {
  check(cuLaunchKernel(F, 1, 1, 1, 32, 1, 1, 0, S, M.Args, nullptr),
        "cuLaunchKernel");
}

static int cold(const std::string &Path) {
  std::vector<char> Image = readFile(Path);
  int64_t Start = nowNs();
  JsonObject J;
  J.str("path", "cuda").str("mode", "cold").str("image", Path);
  J.num("image_bytes", static_cast<int64_t>(Image.size() - 1));

  int64_t T0 = nowNs();
  check(cuInit(0), "cuInit");
  int64_t T1 = nowNs();
  J.num("runtime_init", T1 - T0);

  T0 = nowNs();
  int Count = 0;
  check(cuDeviceGetCount(&Count), "cuDeviceGetCount");
  if (Count < 1)
    fatal("no CUDA device");
  CUdevice Dev;
  check(cuDeviceGet(&Dev, 0), "cuDeviceGet");
  int Major = 0, Minor = 0;
  check(cuDeviceGetAttribute(&Major,
                             CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, Dev),
        "cuDeviceGetAttribute");
  check(cuDeviceGetAttribute(&Minor,
                             CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, Dev),
        "cuDeviceGetAttribute");
  char Name[256] = {0};
  check(cuDeviceGetName(Name, sizeof(Name), Dev), "cuDeviceGetName");
  T1 = nowNs();
  J.num("device_discovery", T1 - T0);

  T0 = nowNs();
  CUcontext Ctx;
  check(cuDevicePrimaryCtxRetain(&Ctx, Dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(Ctx), "cuCtxSetCurrent");
  T1 = nowNs();
  J.num("context_create", T1 - T0);

  T0 = nowNs();
  CUstream Stream;
  check(cuStreamCreate(&Stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  T1 = nowNs();
  J.num("queue_create", T1 - T0);

  T0 = nowNs();
  CUmodule Mod;
  check(cuModuleLoadData(&Mod, Image.data()), "cuModuleLoadData");
  T1 = nowNs();
  J.num("module_load_cold", T1 - T0);

  T0 = nowNs();
  CUfunction F;
  check(cuModuleGetFunction(&F, Mod, "kdl_marker"), "cuModuleGetFunction");
  T1 = nowNs();
  J.num("symbol_lookup", T1 - T0);

  Marker M;
  check(cuMemAlloc(&M.Out, 2 * sizeof(int)), "cuMemAlloc");
  check(cuMemsetD32(M.Out, 0xffffffffu, 2), "cuMemsetD32");
  check(cuCtxSynchronize(), "cuCtxSynchronize");

  T0 = nowNs();
  launchMarker(F, Stream, M);
  T1 = nowNs();
  check(cuStreamSynchronize(Stream), "cuStreamSynchronize");
  int64_t T2 = nowNs();
  J.num("first_launch_enqueue", T1 - T0);
  J.num("first_launch_sync", T2 - T1);

  int Out[2] = {-1, -1};
  check(cuMemcpyDtoH(Out, M.Out, sizeof(Out)), "cuMemcpyDtoH");

  T0 = nowNs();
  CUmodule Mod2;
  check(cuModuleLoadData(&Mod2, Image.data()), "cuModuleLoadData (second)");
  T1 = nowNs();
  J.num("module_load_second", T1 - T0);
  J.num("process_main_to_here", T1 - Start);

  int DriverVersion = 0;
  check(cuDriverGetVersion(&DriverVersion), "cuDriverGetVersion");
  J.num("cuda_driver_api_version", DriverVersion);
  J.str("device_name", Name);
  J.str("compute_capability",
        std::to_string(Major) + "." + std::to_string(Minor));
  J.num("marker_variant", Out[0]).num("marker_cuda_arch", Out[1]);
  const char *Lazy = std::getenv("CUDA_MODULE_LOADING");
  J.str("CUDA_MODULE_LOADING", Lazy ? Lazy : "(unset: driver default)");
  const char *Cache = std::getenv("CUDA_CACHE_DISABLE");
  J.str("CUDA_CACHE_DISABLE", Cache ? Cache : "(unset)");
  J.raw("boundaries", LAYERS);
  std::printf("%s\n", J.done().c_str());
  cuModuleUnload(Mod2);
  cuModuleUnload(Mod);
  cuMemFree(M.Out);
  cuStreamDestroy(Stream);
  cuDevicePrimaryCtxRelease(Dev);
  return 0;
}

static int warm(const std::string &Path, int N) {
  std::vector<char> Image = readFile(Path);
  check(cuInit(0), "cuInit");
  CUdevice Dev;
  check(cuDeviceGet(&Dev, 0), "cuDeviceGet");
  CUcontext Ctx;
  check(cuDevicePrimaryCtxRetain(&Ctx, Dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(Ctx), "cuCtxSetCurrent");
  CUstream Stream;
  check(cuStreamCreate(&Stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUmodule Mod;
  check(cuModuleLoadData(&Mod, Image.data()), "cuModuleLoadData");
  CUfunction F;
  check(cuModuleGetFunction(&F, Mod, "kdl_marker"), "cuModuleGetFunction");
  Marker M;
  check(cuMemAlloc(&M.Out, 2 * sizeof(int)), "cuMemAlloc");
  // Warm-up: 20 of everything, not recorded.
  for (int I = 0; I < 20; ++I) {
    CUmodule Tmp;
    CUfunction TF;
    check(cuModuleLoadData(&Tmp, Image.data()), "cuModuleLoadData");
    check(cuModuleGetFunction(&TF, Tmp, "kdl_marker"), "cuModuleGetFunction");
    check(cuModuleUnload(Tmp), "cuModuleUnload");
    launchMarker(F, Stream, M);
    check(cuStreamSynchronize(Stream), "cuStreamSynchronize");
  }

  std::vector<int64_t> Load, LoadGet, Sym, Enq, Sync;
  Load.reserve(N), LoadGet.reserve(N), Sym.reserve(N), Enq.reserve(N),
      Sync.reserve(N);
  for (int I = 0; I < N; ++I) {
    CUmodule Tmp;
    int64_t T0 = nowNs();
    check(cuModuleLoadData(&Tmp, Image.data()), "cuModuleLoadData");
    int64_t T1 = nowNs();
    check(cuModuleUnload(Tmp), "cuModuleUnload");
    Load.push_back(T1 - T0);
  }
  for (int I = 0; I < N; ++I) {
    CUmodule Tmp;
    CUfunction TF;
    int64_t T0 = nowNs();
    check(cuModuleLoadData(&Tmp, Image.data()), "cuModuleLoadData");
    check(cuModuleGetFunction(&TF, Tmp, "kdl_marker"), "cuModuleGetFunction");
    int64_t T1 = nowNs();
    check(cuModuleUnload(Tmp), "cuModuleUnload");
    LoadGet.push_back(T1 - T0);
  }
  for (int I = 0; I < N; ++I) {
    CUfunction TF;
    int64_t T0 = nowNs();
    check(cuModuleGetFunction(&TF, Mod, "kdl_marker"), "cuModuleGetFunction");
    int64_t T1 = nowNs();
    Sym.push_back(T1 - T0);
  }
  for (int I = 0; I < N; ++I) {
    int64_t T0 = nowNs();
    launchMarker(F, Stream, M);
    int64_t T1 = nowNs();
    check(cuStreamSynchronize(Stream), "cuStreamSynchronize");
    Enq.push_back(T1 - T0);
  }
  for (int I = 0; I < N; ++I) {
    int64_t T0 = nowNs();
    launchMarker(F, Stream, M);
    check(cuStreamSynchronize(Stream), "cuStreamSynchronize");
    int64_t T1 = nowNs();
    Sync.push_back(T1 - T0);
  }
  int Out[2] = {-1, -1};
  check(cuMemcpyDtoH(Out, M.Out, sizeof(Out)), "cuMemcpyDtoH");

  JsonObject J;
  J.str("path", "cuda").str("mode", "warm").str("image", Path);
  J.num("image_bytes", static_cast<int64_t>(Image.size() - 1)).num("n", N);
  J.samples("module_load_warm", Load);
  J.samples("module_load_getfunc_warm", LoadGet);
  J.samples("symbol_lookup_warm", Sym);
  J.samples("launch_enqueue", Enq);
  J.samples("launch_sync", Sync);
  J.num("marker_variant", Out[0]).num("marker_cuda_arch", Out[1]);
  const char *Lazy = std::getenv("CUDA_MODULE_LOADING");
  J.str("CUDA_MODULE_LOADING", Lazy ? Lazy : "(unset: driver default)");
  J.raw("boundaries", LAYERS);
  std::printf("%s\n", J.done().c_str());
  return 0;
}

int main(int Argc, char **Argv) {
  std::string Mode = Argc > 1 ? Argv[1] : "";
  if (Mode == "cold" && Argc == 3)
    return cold(Argv[2]);
  if (Mode == "warm" && Argc == 4)
    return warm(Argv[2], std::atoi(Argv[3]));
  std::fprintf(stderr, "usage: cuda_layers cold IMAGE | warm IMAGE N\n");
  return 2;
}
