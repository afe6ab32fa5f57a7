//===- gemm_bench.cpp - load cost and kernel time of each GEMM image ------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
//   gemm_bench load IMAGE
//       fresh process; cuInit + primary context outside the region, then
//       times cuModuleLoadData(IMAGE) ("load") and
//       cuModuleGetFunction(kdl_gemm_bf16_nt) ("get_function"); an image the
//       device cannot run is recorded with the driver's error and the time
//       the failing call took.
//   gemm_bench run M N K ROUNDS NAME=IMAGE...
//       one process; random bf16 inputs (seed printed), fp32 reference from
//       kdl_ref_gemm (checked on the CPU at sampled entries), then per image:
//       output poisoned with NaN, one run, relative error ||C - R|| / ||R||
//       over all of C; then ROUNDS rounds of one event-timed launch per image
//       (interleaved, after 10 warm-ups each).
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace kdl;

// KDL_GEMM_SMEM of gpu/kernels/gemm.cu: the same for every image.
static const unsigned GemmSmem = 99328;

static std::string errName(CUresult R) {
  const char *Name = nullptr;
  const char *Str = nullptr;
  cuGetErrorName(R, &Name);
  cuGetErrorString(R, &Str);
  return std::string(Name ? Name : "?") + ": " + (Str ? Str : "?");
}

static void check(CUresult R, const char *What) {
  if (R != CUDA_SUCCESS)
    fatal(std::string(What) + ": " + errName(R));
}

static CUdevice initPrimary() {
  check(cuInit(0), "cuInit");
  CUdevice Dev;
  check(cuDeviceGet(&Dev, 0), "cuDeviceGet");
  CUcontext Ctx;
  check(cuDevicePrimaryCtxRetain(&Ctx, Dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(Ctx), "cuCtxSetCurrent");
  return Dev;
}

static int load(const std::string &Path) {
  std::vector<char> Image = readFile(Path);
  initPrimary();
  JsonObject J;
  J.str("mode", "load").str("image", Path);
  J.num("image_bytes", static_cast<int64_t>(Image.size() - 1));
  CUmodule Mod;
  int64_t T0 = nowNs();
  CUresult R = cuModuleLoadData(&Mod, Image.data());
  int64_t T1 = nowNs();
  J.num("load", T1 - T0);
  if (R != CUDA_SUCCESS) {
    J.boolean("ok", false).str("error", errName(R));
  } else {
    CUfunction F;
    T0 = nowNs();
    check(cuModuleGetFunction(&F, Mod, "kdl_gemm_bf16_nt"),
          "cuModuleGetFunction");
    T1 = nowNs();
    J.boolean("ok", true).num("get_function", T1 - T0);
  }
  const char *Lazy = std::getenv("CUDA_MODULE_LOADING");
  J.str("CUDA_MODULE_LOADING", Lazy ? Lazy : "(unset: driver default)");
  const char *Cache = std::getenv("CUDA_CACHE_DISABLE");
  J.str("CUDA_CACHE_DISABLE", Cache ? Cache : "(unset)");
  std::printf("%s\n", J.done().c_str());
  return 0;
}

static uint16_t toBf16(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  U += 0x7fff + ((U >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(U >> 16);
}

static float fromBf16(uint16_t H) {
  uint32_t U = static_cast<uint32_t>(H) << 16;
  float F;
  std::memcpy(&F, &U, 4);
  return F;
}

namespace {
struct Variant {
  std::string Name, Path;
  CUmodule Mod = nullptr;
  CUfunction F = nullptr;
  std::vector<float> Times; // ms
  double RelErr = NAN;
  int64_t Unwritten = 0;
};
} // namespace

static void launchGemm(CUfunction F, CUdeviceptr A, CUdeviceptr B,
                       CUdeviceptr C, int M, int N, int K) {
  void *Args[] = {&A, &B, &C, &M, &N, &K};
  check(cuLaunchKernel(F, N / 128, M / 128, 1, 256, 1, 1, GemmSmem, nullptr,
                       Args, nullptr),
        "cuLaunchKernel(gemm)");
}

static double pct(std::vector<float> V, double P) {
  std::sort(V.begin(), V.end());
  double Idx = P * (V.size() - 1);
  size_t Lo = static_cast<size_t>(Idx);
  size_t Hi = std::min(Lo + 1, V.size() - 1);
  return V[Lo] + (V[Hi] - V[Lo]) * (Idx - Lo);
}

static int run(int M, int N, int K, int Rounds, int Argc, char **Argv,
               int First) {
  initPrimary();
  std::vector<Variant> Vs;
  for (int I = First; I < Argc; ++I) {
    std::string Arg = Argv[I];
    size_t Eq = Arg.find('=');
    if (Eq == std::string::npos)
      fatal("expected NAME=IMAGE, got " + Arg);
    Variant V;
    V.Name = Arg.substr(0, Eq);
    V.Path = Arg.substr(Eq + 1);
    std::vector<char> Image = readFile(V.Path);
    check(cuModuleLoadData(&V.Mod, Image.data()), "cuModuleLoadData");
    check(cuModuleGetFunction(&V.F, V.Mod, "kdl_gemm_bf16_nt"),
          "cuModuleGetFunction");
    check(cuFuncSetAttribute(
              V.F, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, GemmSmem),
          "cuFuncSetAttribute");
    Vs.push_back(V);
  }
  if (Vs.empty())
    fatal("no images");
  CUfunction Ref;
  check(cuModuleGetFunction(&Ref, Vs[0].Mod, "kdl_ref_gemm"),
        "cuModuleGetFunction(ref)");

  uint64_t Seed = std::random_device{}();
  std::mt19937_64 Rng(Seed);
  std::uniform_real_distribution<float> U(-1.0f, 1.0f);
  std::vector<uint16_t> HA(static_cast<size_t>(M) * K),
      HB(static_cast<size_t>(N) * K);
  for (auto &X : HA)
    X = toBf16(U(Rng));
  for (auto &X : HB)
    X = toBf16(U(Rng));
  CUdeviceptr A, B, C, R;
  size_t CBytes = static_cast<size_t>(M) * N * sizeof(float);
  check(cuMemAlloc(&A, HA.size() * 2), "cuMemAlloc");
  check(cuMemAlloc(&B, HB.size() * 2), "cuMemAlloc");
  check(cuMemAlloc(&C, CBytes), "cuMemAlloc");
  check(cuMemAlloc(&R, CBytes), "cuMemAlloc");
  check(cuMemcpyHtoD(A, HA.data(), HA.size() * 2), "cuMemcpyHtoD");
  check(cuMemcpyHtoD(B, HB.data(), HB.size() * 2), "cuMemcpyHtoD");

  {
    int Mi = M, Ni = N, Ki = K;
    void *Args[] = {&A, &B, &R, &Mi, &Ni, &Ki};
    check(cuLaunchKernel(Ref, N / 16, M / 16, 1, 16, 16, 1, 0, nullptr, Args,
                         nullptr),
          "cuLaunchKernel(ref)");
    check(cuCtxSynchronize(), "reference GEMM");
  }
  std::vector<float> HR(static_cast<size_t>(M) * N), HC(HR.size());
  check(cuMemcpyDtoH(HR.data(), R, CBytes), "cuMemcpyDtoH");
  // The GPU reference checked in double precision on the CPU at samples.
  double RefMaxRel = 0;
  std::uniform_int_distribution<int> RowD(0, M - 1), ColD(0, N - 1);
  const int Samples = 512;
  for (int S = 0; S < Samples; ++S) {
    int I = RowD(Rng), Jc = ColD(Rng);
    double Sum = 0, Abs = 0;
    for (int Kk = 0; Kk < K; ++Kk) {
      double P = static_cast<double>(fromBf16(HA[size_t(I) * K + Kk])) *
                 fromBf16(HB[size_t(Jc) * K + Kk]);
      Sum += P;
      Abs += std::fabs(P);
    }
    double Err = std::fabs(HR[size_t(I) * N + Jc] - Sum) / (Abs > 0 ? Abs : 1);
    RefMaxRel = std::max(RefMaxRel, Err);
  }
  double RefNorm = 0;
  for (float X : HR)
    RefNorm += double(X) * X;
  RefNorm = std::sqrt(RefNorm);

  for (auto &V : Vs) {
    check(cuMemsetD8(C, 0xff, CBytes), "cuMemsetD8"); // NaN everywhere
    launchGemm(V.F, A, B, C, M, N, K);
    check(cuCtxSynchronize(), ("gemm " + V.Name).c_str());
    check(cuMemcpyDtoH(HC.data(), C, CBytes), "cuMemcpyDtoH");
    double Diff = 0;
    V.Unwritten = 0;
    for (size_t I = 0; I < HC.size(); ++I) {
      if (!std::isfinite(HC[I])) {
        ++V.Unwritten;
        continue;
      }
      double D = double(HC[I]) - HR[I];
      Diff += D * D;
    }
    V.RelErr = V.Unwritten ? NAN : std::sqrt(Diff) / RefNorm;
  }

  CUevent E0, E1;
  check(cuEventCreate(&E0, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventCreate(&E1, CU_EVENT_DEFAULT), "cuEventCreate");
  for (auto &V : Vs)
    for (int I = 0; I < 10; ++I)
      launchGemm(V.F, A, B, C, M, N, K);
  check(cuCtxSynchronize(), "warm-up");
  for (int Rd = 0; Rd < Rounds; ++Rd)
    for (auto &V : Vs) {
      check(cuEventRecord(E0, nullptr), "cuEventRecord");
      launchGemm(V.F, A, B, C, M, N, K);
      check(cuEventRecord(E1, nullptr), "cuEventRecord");
      check(cuEventSynchronize(E1), "cuEventSynchronize");
      float Ms = 0;
      check(cuEventElapsedTime(&Ms, E0, E1), "cuEventElapsedTime");
      V.Times.push_back(Ms);
    }

  double Flop = 2.0 * M * N * K;
  std::string Items;
  for (auto &V : Vs) {
    JsonObject J;
    J.str("name", V.Name).str("image", V.Path);
    if (std::isnan(V.RelErr))
      J.null("rel_err");
    else
      J.real("rel_err", V.RelErr);
    J.num("unwritten", V.Unwritten);
    double Med = pct(V.Times, 0.5);
    J.real("median_ms", Med).real("p5_ms", pct(V.Times, 0.05));
    J.real("p95_ms", pct(V.Times, 0.95));
    J.real("tflops_at_median", Flop / (Med * 1e-3) / 1e12);
    std::string Ts = "[";
    for (size_t I = 0; I < V.Times.size(); ++I) {
      char Buf[32];
      std::snprintf(Buf, sizeof(Buf), "%s%.6g", I ? "," : "", V.Times[I]);
      Ts += Buf;
    }
    J.raw("times_ms", Ts + "]");
    Items += (Items.empty() ? "" : ",\n  ") + J.done();
  }
  JsonObject Top;
  Top.str("mode", "run").num("M", M).num("N", N).num("K", K);
  Top.num("rounds", Rounds).num("warmup_per_variant", 10);
  Top.str("seed", std::to_string(Seed));
  Top.str("inputs", "uniform(-1,1) rounded to bf16, one buffer set (no "
                    "rotation); C poisoned with NaN before the checked run");
  Top.str("reference", "kdl_ref_gemm: fp32 FMA over the same bf16 inputs, "
                       "on the GPU");
  Top.num("reference_cpu_samples", Samples);
  Top.real("reference_cpu_max_rel_err", RefMaxRel);
  Top.str("timing", "cuEventRecord around one launch on the null stream, "
                    "rounds interleaved across images");
  Top.raw("variants", "[\n  " + Items + "]");
  std::printf("%s\n", Top.done().c_str());
  return 0;
}

int main(int Argc, char **Argv) {
  std::string Mode = Argc > 1 ? Argv[1] : "";
  if (Mode == "load" && Argc == 3)
    return load(Argv[2]);
  if (Mode == "run" && Argc >= 7)
    return run(std::atoi(Argv[2]), std::atoi(Argv[3]), std::atoi(Argv[4]),
               std::atoi(Argv[5]), Argc, Argv, 6);
  std::fprintf(stderr, "usage: gemm_bench load IMAGE | run M N K ROUNDS "
                       "NAME=IMAGE...\n");
  return 2;
}
