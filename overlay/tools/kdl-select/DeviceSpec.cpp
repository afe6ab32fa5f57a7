//===- DeviceSpec.cpp - kdl-select's --device argument --------------------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "DeviceSpec.h"
#include "PluginAcceptance.h"

#include "llvm/TargetParser/TargetParser.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;

namespace kdl {

/// Parse "triple=T,arch=A[,feature=F]...".
Expected<DeviceArgs> parseDeviceSpec(StringRef Spec) {
  DeviceArgs Args;
  bool SeenTriple = false, SeenArch = false;
  SmallVector<StringRef, 4> Fields;
  Spec.split(Fields, ',');
  for (StringRef Field : Fields) {
    auto [Key, Value] = Field.split('=');
    if (!Field.contains('='))
      return createStringError("--device: expected key=value, got '" + Field +
                               "'");
    if (Key == "triple" && !SeenTriple) {
      Args.Triple = Value.str();
      SeenTriple = true;
    } else if (Key == "arch" && !SeenArch) {
      Args.Arch = Value.str();
      SeenArch = true;
    } else if (Key == "feature") {
      Args.Features.push_back(Value);
    } else if (Key == "isa") {
      Args.ISAs.push_back(Value.str());
    } else if (Key == "triple" || Key == "arch") {
      return createStringError("--device: '" + Key + "' is given twice");
    } else {
      return createStringError("--device: unknown key '" + Key +
                               "' (expected triple, arch, isa or feature)");
    }
  }
  if (!SeenTriple)
    return createStringError("--device: no triple= given");
  return Args;
}

Error checkDevice(const DeviceArgs &Args) {
  Triple T = parseTriple(Args.Triple);
  if (T.isNVPTX()) {
    unsigned SM;
    StringRef Arch = Args.Arch;
    if (!Arch.consume_front("sm_") || Arch.getAsInteger(10, SM))
      return createStringError("--device: invalid NVPTX device architecture '" +
                               Args.Arch + "': expected sm_XY such as sm_86");
  } else if (T.isAMDGCN()) {
    StringRef Processor = StringRef(Args.Arch).split(':').first;
    if (AMDGPU::parseArchAMDGCN(Processor) == AMDGPU::GK_NONE)
      return createStringError("--device: unknown AMDGPU processor '" +
                               Processor + "'");
    if (Processor.ends_with("-generic"))
      return createStringError(
          "--device: invalid AMDGPU device architecture '" + Args.Arch +
          "': a device is never a generic processor (give it as isa=)");
  } else if (T.getArch() == Triple::UnknownArch) {
    return createStringError("--device: unknown triple '" + Args.Triple + "'");
  }
  return Error::success();
}

} // namespace kdl
