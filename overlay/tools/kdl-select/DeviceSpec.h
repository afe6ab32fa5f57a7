//===- DeviceSpec.h - kdl-select's --device argument ------------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The device kdl-select selects for, as given on its command line:
// "triple=T,arch=A[,isa=I]...[,feature=F]...".
//
//===----------------------------------------------------------------------===//

#ifndef KDL_SELECT_DEVICESPEC_H
#define KDL_SELECT_DEVICESPEC_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace kdl {

/// The fields of a --device argument.
struct DeviceArgs {
  std::string Triple;
  std::string Arch;
  llvm::SmallVector<llvm::StringRef, 4> Features;
  llvm::SmallVector<std::string, 2> ISAs;
};

/// Parses "triple=T,arch=A[,isa=I]...[,feature=F]..."; the features are
/// views of \p Spec.
llvm::Expected<DeviceArgs> parseDeviceSpec(llvm::StringRef Spec);

/// Checks that \p Args names a device: an NVPTX sm_XY, an AMDGPU processor
/// (never a generic one), or another known triple.
llvm::Error checkDevice(const DeviceArgs &Args);

} // namespace kdl

#endif // KDL_SELECT_DEVICESPEC_H
