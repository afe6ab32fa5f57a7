//===- ShimDevices.cpp - Devices the kdl shim selects for -------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ShimDevices.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <dlfcn.h>

using namespace llvm;

namespace kdl {
namespace shim {

DeviceFamily familyOf(const Triple &T) {
  if (T.isNVPTX())
    return DeviceFamily::Cuda;
  if (T.isAMDGPU() || T.isSPIRV())
    return DeviceFamily::Unknown;
  Triple Host(sys::getProcessTriple());
  if (T.getArch() == Host.getArch() && T.getOS() == Host.getOS())
    return DeviceFamily::Host;
  return DeviceFamily::Unknown;
}

DeviceInfo hostDevice() {
  DeviceInfo D;
  // The host plugin registers under the generic vendor-less triple.
  Triple Host(sys::getProcessTriple());
  Host.setVendor(Triple::UnknownVendor);
  D.Triple = Host.str();
  D.Arch = sys::getHostCPUName().str();
  for (const auto &F : sys::getHostCPUFeatures())
    if (F.getValue())
      D.Features.push_back(F.getKey().str());
  std::sort(D.Features.begin(), D.Features.end());
  D.Label = "host";
  return D;
}

// The few CUDA driver entry points needed, loaded the way the CUDA plugin
// loads them (dlopen of libcuda.so.1), so no CUDA toolkit is needed to build.
using CUresult = int;
using CUdevice = int;
static constexpr int AttrCCMajor =
    75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
static constexpr int AttrCCMinor =
    76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

static std::vector<DeviceInfo> queryCuda() {
  std::vector<DeviceInfo> Devices;
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!Lib)
    return Devices;
  auto *Init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(Lib, "cuInit"));
  auto *Count =
      reinterpret_cast<CUresult (*)(int *)>(dlsym(Lib, "cuDeviceGetCount"));
  auto *Get = reinterpret_cast<CUresult (*)(CUdevice *, int)>(
      dlsym(Lib, "cuDeviceGet"));
  auto *Attr = reinterpret_cast<CUresult (*)(int *, int, CUdevice)>(
      dlsym(Lib, "cuDeviceGetAttribute"));
  int N = 0;
  if (!Init || !Count || !Get || !Attr || Init(0) != 0 || Count(&N) != 0)
    return Devices;
  for (int I = 0; I < N; ++I) {
    CUdevice Dev;
    int Major = 0, Minor = 0;
    if (Get(&Dev, I) != 0 || Attr(&Major, AttrCCMajor, Dev) != 0 ||
        Attr(&Minor, AttrCCMinor, Dev) != 0)
      continue;
    DeviceInfo D;
    D.Triple = "nvptx64-nvidia-cuda";
    D.Arch = "sm_" + std::to_string(Major * 10 + Minor);
    D.Label = "cuda device " + std::to_string(I);
    Devices.push_back(std::move(D));
  }
  // Keep libcuda loaded: the CUDA plugin loads it too.
  return Devices;
}

const std::vector<DeviceInfo> &cudaDevices() {
  static const std::vector<DeviceInfo> Devices = queryCuda();
  return Devices;
}

std::vector<DeviceInfo> devicesOf(DeviceFamily Family) {
  switch (Family) {
  case DeviceFamily::Host:
    return {hostDevice()};
  case DeviceFamily::Cuda:
    return cudaDevices();
  case DeviceFamily::Unknown:
    break;
  }
  return {};
}

} // namespace shim
} // namespace kdl
