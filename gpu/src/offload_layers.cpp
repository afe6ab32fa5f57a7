//===- offload_layers.cpp - liboffload's dispatch path, layer by layer ----===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
//   offload_layers cold IMAGE        one fresh process: every layer once
//   offload_layers warm IMAGE N      N samples of each repeatable layer
//   offload_layers probe FILE...     for each FILE: olIsValidBinary, then
//                                    olCreateProgram, olGetSymbol(kdl_marker)
//                                    and a launch that reports which image ran
//
// Built against liboffload's OffloadAPI.h (LLVM 22) and linked against its
// libLLVMOffload.so; the probe is what the shim (LD_PRELOAD) is tested with.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <OffloadAPI.h>

#include <cstring>
#include <string>
#include <vector>

using namespace kdl;

static std::string errText(ol_result_t R) {
  if (R == OL_SUCCESS)
    return "";
  return "code " + std::to_string(static_cast<int>(R->Code)) + ": " +
         (R->Details ? R->Details : "");
}

static void check(ol_result_t R, const char *What) {
  if (R != OL_SUCCESS)
    fatal(std::string(What) + ": " + errText(R));
}

static const char *LAYERS = R"JSON({
  "runtime_init": "olInit(): loads the plugins, which initialise their drivers (cuInit) and devices (the CUDA plugin retains the primary context here)",
  "device_discovery": "olIterateDevices, with olGetDeviceInfo(TYPE) + olGetDeviceInfo(PLATFORM) + olGetPlatformInfo(BACKEND) per device until the first CUDA GPU, then olGetDeviceInfo(NAME)",
  "context_create": "(inside olInit; not separable through the API)",
  "queue_create": "olCreateQueue",
  "module_load_cold": "olCreateProgram(IMAGE), the first program on the device",
  "module_load_second": "olCreateProgram(IMAGE) again in the same process (one sample per process)",
  "symbol_lookup": "olGetSymbol(kdl_marker, OL_SYMBOL_KIND_KERNEL)",
  "first_launch_enqueue": "olLaunchKernel(kdl_marker, 1 group of 32) the first time",
  "first_launch_sync": "olSyncQueue after the first launch",
  "module_load_warm": "olCreateProgram(IMAGE) with other programs of IMAGE already created (olDestroyProgram outside the region)",
  "module_load_getfunc_warm": "olCreateProgram(IMAGE) + olGetSymbol(kdl_marker) on the new program",
  "symbol_lookup_warm": "olGetSymbol(kdl_marker) on a created program",
  "launch_enqueue": "olLaunchKernel(kdl_marker) alone; olSyncQueue outside the region",
  "launch_sync": "olLaunchKernel(kdl_marker) + olSyncQueue"
})JSON";

namespace {
struct Found {
  ol_device_handle_t Dev = nullptr;
  int Seen = 0;
};
struct MarkerArgs {
  int *Out;
};
} // namespace

static bool findCudaGpu(ol_device_handle_t D, void *User) {
  auto *F = static_cast<Found *>(User);
  ++F->Seen;
  ol_device_type_t Type;
  if (olGetDeviceInfo(D, OL_DEVICE_INFO_TYPE, sizeof(Type), &Type) !=
          OL_SUCCESS ||
      Type != OL_DEVICE_TYPE_GPU)
    return true;
  ol_platform_handle_t P;
  if (olGetDeviceInfo(D, OL_DEVICE_INFO_PLATFORM, sizeof(P), &P) != OL_SUCCESS)
    return true;
  ol_platform_backend_t B;
  if (olGetPlatformInfo(P, OL_PLATFORM_INFO_BACKEND, sizeof(B), &B) !=
          OL_SUCCESS ||
      B != OL_PLATFORM_BACKEND_CUDA)
    return true;
  F->Dev = D;
  return false; // stop
}

static std::string deviceName(ol_device_handle_t D) {
  char Name[256] = {0};
  size_t Size = 0;
  if (olGetDeviceInfoSize(D, OL_DEVICE_INFO_NAME, &Size) != OL_SUCCESS ||
      Size > sizeof(Name))
    return "?";
  check(olGetDeviceInfo(D, OL_DEVICE_INFO_NAME, Size, Name), "olGetDeviceInfo");
  return Name;
}

static std::string deviceInfoString(ol_device_handle_t D, ol_device_info_t I) {
  size_t Size = 0;
  if (olGetDeviceInfoSize(D, I, &Size) != OL_SUCCESS || Size == 0)
    return "?";
  std::vector<char> Buf(Size + 1, 0);
  if (olGetDeviceInfo(D, I, Size, Buf.data()) != OL_SUCCESS)
    return "?";
  return Buf.data();
}

static const ol_kernel_launch_size_args_t OneWarp = {
    1, {1, 1, 1}, {32, 1, 1}, 0};

static ol_device_handle_t setup(ol_queue_handle_t &Q, int *&Out) {
  check(olInit(), "olInit");
  Found F;
  check(olIterateDevices(findCudaGpu, &F), "olIterateDevices");
  if (!F.Dev)
    fatal("no CUDA GPU among liboffload's devices");
  check(olCreateQueue(F.Dev, &Q), "olCreateQueue");
  void *Mem = nullptr;
  check(olMemAlloc(F.Dev, OL_ALLOC_TYPE_HOST, 2 * sizeof(int), &Mem),
        "olMemAlloc");
  Out = static_cast<int *>(Mem);
  return F.Dev;
}

static int cold(const std::string &Path) {
  std::vector<char> Image = readFile(Path);
  size_t Size = Image.size() - 1;
  int64_t Start = nowNs();
  JsonObject J;
  J.str("path", "liboffload").str("mode", "cold").str("image", Path);
  J.num("image_bytes", static_cast<int64_t>(Size));

  int64_t T0 = nowNs();
  check(olInit(), "olInit");
  int64_t T1 = nowNs();
  J.num("runtime_init", T1 - T0);

  T0 = nowNs();
  Found F;
  check(olIterateDevices(findCudaGpu, &F), "olIterateDevices");
  if (!F.Dev)
    fatal("no CUDA GPU among liboffload's devices");
  std::string Name = deviceName(F.Dev);
  T1 = nowNs();
  J.num("device_discovery", T1 - T0);
  J.num("devices_visited", F.Seen);

  T0 = nowNs();
  ol_queue_handle_t Q;
  check(olCreateQueue(F.Dev, &Q), "olCreateQueue");
  T1 = nowNs();
  J.num("queue_create", T1 - T0);

  T0 = nowNs();
  ol_program_handle_t Prog;
  check(olCreateProgram(F.Dev, Image.data(), Size, &Prog), "olCreateProgram");
  T1 = nowNs();
  J.num("module_load_cold", T1 - T0);

  T0 = nowNs();
  ol_symbol_handle_t K;
  check(olGetSymbol(Prog, "kdl_marker", OL_SYMBOL_KIND_KERNEL, &K),
        "olGetSymbol");
  T1 = nowNs();
  J.num("symbol_lookup", T1 - T0);

  void *Mem = nullptr;
  check(olMemAlloc(F.Dev, OL_ALLOC_TYPE_HOST, 2 * sizeof(int), &Mem),
        "olMemAlloc");
  int *Out = static_cast<int *>(Mem);
  Out[0] = Out[1] = -1;
  MarkerArgs Args = {Out};

  T0 = nowNs();
  check(olLaunchKernel(Q, F.Dev, K, &Args, sizeof(Args), &OneWarp),
        "olLaunchKernel");
  T1 = nowNs();
  check(olSyncQueue(Q), "olSyncQueue");
  int64_t T2 = nowNs();
  J.num("first_launch_enqueue", T1 - T0);
  J.num("first_launch_sync", T2 - T1);
  int Variant = Out[0], Arch = Out[1];

  T0 = nowNs();
  ol_program_handle_t Prog2;
  check(olCreateProgram(F.Dev, Image.data(), Size, &Prog2),
        "olCreateProgram (second)");
  T1 = nowNs();
  J.num("module_load_second", T1 - T0);
  J.num("process_main_to_here", T1 - Start);

  J.str("device_name", Name);
  J.str("device_driver_version",
        deviceInfoString(F.Dev, OL_DEVICE_INFO_DRIVER_VERSION));
  J.num("marker_variant", Variant).num("marker_cuda_arch", Arch);
  J.raw("boundaries", LAYERS);
  std::printf("%s\n", J.done().c_str());
  olDestroyProgram(Prog2);
  olDestroyProgram(Prog);
  olMemFree(Mem);
  olDestroyQueue(Q);
  olShutDown();
  return 0;
}

static int warm(const std::string &Path, int N) {
  std::vector<char> Image = readFile(Path);
  size_t Size = Image.size() - 1;
  ol_queue_handle_t Q;
  int *Out = nullptr;
  ol_device_handle_t Dev = setup(Q, Out);
  ol_program_handle_t Prog;
  check(olCreateProgram(Dev, Image.data(), Size, &Prog), "olCreateProgram");
  ol_symbol_handle_t K;
  check(olGetSymbol(Prog, "kdl_marker", OL_SYMBOL_KIND_KERNEL, &K),
        "olGetSymbol");
  MarkerArgs Args = {Out};
  for (int I = 0; I < 20; ++I) {
    ol_program_handle_t Tmp;
    ol_symbol_handle_t TK;
    check(olCreateProgram(Dev, Image.data(), Size, &Tmp), "olCreateProgram");
    check(olGetSymbol(Tmp, "kdl_marker", OL_SYMBOL_KIND_KERNEL, &TK),
          "olGetSymbol");
    check(olDestroyProgram(Tmp), "olDestroyProgram");
    check(olLaunchKernel(Q, Dev, K, &Args, sizeof(Args), &OneWarp),
          "olLaunchKernel");
    check(olSyncQueue(Q), "olSyncQueue");
  }
  std::vector<int64_t> Load, LoadGet, Sym, Enq, Sync;
  for (int I = 0; I < N; ++I) {
    ol_program_handle_t Tmp;
    int64_t T0 = nowNs();
    check(olCreateProgram(Dev, Image.data(), Size, &Tmp), "olCreateProgram");
    int64_t T1 = nowNs();
    check(olDestroyProgram(Tmp), "olDestroyProgram");
    Load.push_back(T1 - T0);
  }
  for (int I = 0; I < N; ++I) {
    ol_program_handle_t Tmp;
    ol_symbol_handle_t TK;
    int64_t T0 = nowNs();
    check(olCreateProgram(Dev, Image.data(), Size, &Tmp), "olCreateProgram");
    check(olGetSymbol(Tmp, "kdl_marker", OL_SYMBOL_KIND_KERNEL, &TK),
          "olGetSymbol");
    int64_t T1 = nowNs();
    check(olDestroyProgram(Tmp), "olDestroyProgram");
    LoadGet.push_back(T1 - T0);
  }
  for (int I = 0; I < N; ++I) {
    ol_symbol_handle_t TK;
    int64_t T0 = nowNs();
    check(olGetSymbol(Prog, "kdl_marker", OL_SYMBOL_KIND_KERNEL, &TK),
          "olGetSymbol");
    int64_t T1 = nowNs();
    Sym.push_back(T1 - T0);
  }
  for (int I = 0; I < N; ++I) {
    int64_t T0 = nowNs();
    check(olLaunchKernel(Q, Dev, K, &Args, sizeof(Args), &OneWarp),
          "olLaunchKernel");
    int64_t T1 = nowNs();
    check(olSyncQueue(Q), "olSyncQueue");
    Enq.push_back(T1 - T0);
  }
  for (int I = 0; I < N; ++I) {
    int64_t T0 = nowNs();
    check(olLaunchKernel(Q, Dev, K, &Args, sizeof(Args), &OneWarp),
          "olLaunchKernel");
    check(olSyncQueue(Q), "olSyncQueue");
    int64_t T1 = nowNs();
    Sync.push_back(T1 - T0);
  }
  JsonObject J;
  J.str("path", "liboffload").str("mode", "warm").str("image", Path);
  J.num("image_bytes", static_cast<int64_t>(Size)).num("n", N);
  J.samples("module_load_warm", Load);
  J.samples("module_load_getfunc_warm", LoadGet);
  J.samples("symbol_lookup_warm", Sym);
  J.samples("launch_enqueue", Enq);
  J.samples("launch_sync", Sync);
  J.num("marker_variant", Out[0]).num("marker_cuda_arch", Out[1]);
  J.raw("boundaries", LAYERS);
  std::printf("%s\n", J.done().c_str());
  olDestroyProgram(Prog);
  olDestroyQueue(Q);
  olShutDown();
  return 0;
}

/// One JSON object per FILE: what LLVM 22's liboffload (or whatever is
/// preloaded in front of it) does with that buffer.
static int probe(int Argc, char **Argv) {
  ol_queue_handle_t Q;
  int *Out = nullptr;
  ol_device_handle_t Dev = setup(Q, Out);
  std::string Items;
  for (int A = 2; A < Argc; ++A) {
    std::vector<char> Image = readFile(Argv[A]);
    size_t Size = Image.size() - 1;
    JsonObject J;
    J.str("file", Argv[A]).num("bytes", static_cast<int64_t>(Size));
    bool Valid = false;
    ol_result_t R = olIsValidBinary(Dev, Image.data(), Size, &Valid);
    if (R != OL_SUCCESS)
      J.str("is_valid_binary_error", errText(R));
    else
      J.boolean("is_valid_binary", Valid);
    ol_program_handle_t Prog = nullptr;
    int64_t T0 = nowNs();
    R = olCreateProgram(Dev, Image.data(), Size, &Prog);
    int64_t T1 = nowNs();
    J.num("create_program_ns", T1 - T0);
    if (R != OL_SUCCESS) {
      J.boolean("create_program_ok", false)
          .str("create_program_error", errText(R));
    } else {
      J.boolean("create_program_ok", true);
      ol_symbol_handle_t K;
      R = olGetSymbol(Prog, "kdl_marker", OL_SYMBOL_KIND_KERNEL, &K);
      if (R != OL_SUCCESS) {
        J.str("get_symbol_error", errText(R));
      } else {
        Out[0] = Out[1] = -1;
        MarkerArgs Args = {Out};
        R = olLaunchKernel(Q, Dev, K, &Args, sizeof(Args), &OneWarp);
        if (R == OL_SUCCESS)
          R = olSyncQueue(Q);
        if (R != OL_SUCCESS)
          J.str("launch_error", errText(R));
        else
          J.num("marker_variant", Out[0]).num("marker_cuda_arch", Out[1]);
      }
      olDestroyProgram(Prog);
    }
    Items += (Items.empty() ? "" : ",\n  ") + J.done();
  }
  const char *Pre = std::getenv("LD_PRELOAD");
  JsonObject Top;
  Top.str("path", "liboffload").str("mode", "probe");
  Top.str("device_name", deviceName(Dev));
  Top.str("LD_PRELOAD", Pre ? Pre : "");
  Top.raw("files", "[\n  " + Items + "]");
  std::printf("%s\n", Top.done().c_str());
  olDestroyQueue(Q);
  olShutDown();
  return 0;
}

int main(int Argc, char **Argv) {
  std::string Mode = Argc > 1 ? Argv[1] : "";
  if (Mode == "cold" && Argc == 3)
    return cold(Argv[2]);
  if (Mode == "warm" && Argc == 4)
    return warm(Argv[2], std::atoi(Argv[3]));
  if (Mode == "probe" && Argc >= 3)
    return probe(Argc, Argv);
  std::fprintf(stderr, "usage: offload_layers cold IMAGE | warm IMAGE N | "
                       "probe FILE...\n");
  return 2;
}
