//===- AMDGPUTargetParser.h - LLVM 22 stand-in ------------------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Compat layer of the overlay build. On llvm-project main the AMDGPU target
// parser (parseArchAMDGCN, getIsaVersion, getArchAttrAMDGCN, TargetID) has
// its own header; LLVM 22.1.8 declares the same functions in TargetParser.h.
//
//===----------------------------------------------------------------------===//

#ifndef KDL_COMPAT_LLVM_TARGETPARSER_AMDGPUTARGETPARSER_H
#define KDL_COMPAT_LLVM_TARGETPARSER_AMDGPUTARGETPARSER_H

#include "llvm/TargetParser/TargetParser.h"

#endif // KDL_COMPAT_LLVM_TARGETPARSER_AMDGPUTARGETPARSER_H
