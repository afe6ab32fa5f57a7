//===- ShimDevices.h - Devices the kdl shim selects for ---------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// LLVM 22's libomptarget exposes no way to ask its plugins what a device is,
// so the shim asks the same sources the plugins use: the host CPU (LLVM's
// sys::getHostCPUName/getHostCPUFeatures, as the host plugin runs code on it)
// and the CUDA driver (libcuda's compute capability, as the CUDA plugin
// does). For liboffload, olGetDeviceInfo/olGetPlatformInfo name the backend
// and the CUDA driver gives the compute capability the API does not expose.
// AMDGPU devices are not described (no HSA query is made): images for amdgcn
// pass through unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_SHIM_SHIMDEVICES_H
#define KDL_SHIM_SHIMDEVICES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/TargetParser/Triple.h"

#include <string>
#include <vector>

namespace kdl {
namespace shim {

/// What the shim knows about one device.
struct DeviceInfo {
  std::string Triple;
  std::string Arch;
  std::vector<std::string> Features;
  /// How the device is named in messages, e.g. "cuda device 0".
  std::string Label;
};

enum class DeviceFamily { Host, Cuda, Unknown };

/// The device family an image built for \p ImageTriple runs on.
DeviceFamily familyOf(const llvm::Triple &ImageTriple);

/// The host CPU as the host plugin sees it (one description for all of its
/// devices).
DeviceInfo hostDevice();

/// The CUDA devices the driver reports, in driver order; empty if there is
/// no libcuda or no device.
const std::vector<DeviceInfo> &cudaDevices();

/// The devices of \p Family the shim knows about.
std::vector<DeviceInfo> devicesOf(DeviceFamily Family);

} // namespace shim
} // namespace kdl

#endif // KDL_SHIM_SHIMDEVICES_H
