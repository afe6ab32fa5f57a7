//===- LibOffloadShim.cpp - Ranked olCreateProgram for liboffload ---------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Preloaded in front of liboffload, this interposes olCreateProgram and
// olIsValidBinary. A buffer that is an OffloadBinary (one or several images,
// format version 1 or 2) is ranked for the device with the series' library
// and the chosen image's own bytes go to the real olCreateProgram; any other
// buffer goes through untouched. olIsValidBinary answers whether
// olCreateProgram would find an image, so the two agree.
//
//===----------------------------------------------------------------------===//

#include "ShimDevices.h"
#include "ShimImages.h"
#include "ShimPolicy.h"
#include "ShimTiming.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <offload/OffloadAPI.h>

#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

using namespace llvm;
using namespace kdl;
using namespace kdl::shim;

/// An error result owned by the shim. liboffload's own results live for the
/// whole process too; a failed call is rare enough that they are not reused.
static ol_result_t makeError(ol_errc_t Code, const Twine &Details) {
  std::string Text = ("kdl: " + Details).str();
  auto *Err = new ol_error_struct_t{Code, strdup(Text.c_str())};
  return Err;
}

template <typename FnTy> static FnTy *lookup(void *Handle, const char *Name) {
  return reinterpret_cast<FnTy *>(dlsym(Handle, Name));
}

namespace {
struct DeviceQuery {
  ol_device_handle_t Target;
  ol_platform_handle_t Platform;
  int Ordinal = -1; // Position among the devices of the same platform.
  int Seen = 0;
};
} // namespace

static bool findOrdinal(ol_device_handle_t Device, void *Data) {
  auto *Q = static_cast<DeviceQuery *>(Data);
  static auto *GetInfo =
      lookup<decltype(olGetDeviceInfo)>(RTLD_DEFAULT, "olGetDeviceInfo");
  ol_platform_handle_t Platform = nullptr;
  if (GetInfo(Device, OL_DEVICE_INFO_PLATFORM, sizeof(Platform), &Platform))
    return true;
  if (Platform != Q->Platform)
    return true;
  if (Device == Q->Target) {
    Q->Ordinal = Q->Seen;
    return false;
  }
  ++Q->Seen;
  return true;
}

/// \p Device's platform and its backend; false if liboffload cannot say.
static bool platformOf(ol_device_handle_t Device,
                       ol_platform_handle_t &Platform,
                       ol_platform_backend_t &Backend) {
  static auto *GetInfo =
      lookup<decltype(olGetDeviceInfo)>(RTLD_DEFAULT, "olGetDeviceInfo");
  static auto *GetPlatformInfo =
      lookup<decltype(olGetPlatformInfo)>(RTLD_DEFAULT, "olGetPlatformInfo");
  return GetInfo && GetPlatformInfo &&
         !GetInfo(Device, OL_DEVICE_INFO_PLATFORM, sizeof(Platform),
                  &Platform) &&
         !GetPlatformInfo(Platform, OL_PLATFORM_INFO_BACKEND, sizeof(Backend),
                          &Backend);
}

/// Describes \p Device, or returns an error for one the shim cannot load on.
static Expected<DeviceInfo> query(ol_device_handle_t Device) {
  auto *GetInfo =
      lookup<decltype(olGetDeviceInfo)>(RTLD_DEFAULT, "olGetDeviceInfo");
  auto *Iterate =
      lookup<decltype(olIterateDevices)>(RTLD_DEFAULT, "olIterateDevices");
  if (!GetInfo || !Iterate)
    return createStringError("liboffload entry points not found");

  ol_platform_handle_t Platform = nullptr;
  ol_platform_backend_t Backend = OL_PLATFORM_BACKEND_UNKNOWN;
  if (!platformOf(Device, Platform, Backend))
    return createStringError("cannot query the device's platform");

  DeviceQuery Q{Device, Platform};
  Iterate(findOrdinal, &Q);
  std::string Ordinal = std::to_string(Q.Ordinal);

  switch (Backend) {
  case OL_PLATFORM_BACKEND_CUDA: {
    const std::vector<DeviceInfo> &Cuda = cudaDevices();
    if (Q.Ordinal < 0 || static_cast<size_t>(Q.Ordinal) >= Cuda.size())
      return createStringError("cuda device " + Ordinal +
                               " is not known to the CUDA driver");
    return Cuda[Q.Ordinal];
  }
  case OL_PLATFORM_BACKEND_AMDGPU: {
    // The AMDGPU plugin names the device by its processor (gfx90a); the
    // xnack/sramecc mode is not exposed, so images asking for one are
    // judged against an unknown mode by the library.
    char Name[256] = {0};
    if (GetInfo(Device, OL_DEVICE_INFO_NAME, sizeof(Name), Name))
      return createStringError("cannot query the device name");
    DeviceInfo D;
    D.Triple = "amdgcn-amd-amdhsa";
    D.Arch = Name;
    D.Label = "amdgpu device " + Ordinal;
    return D;
  }
  case OL_PLATFORM_BACKEND_HOST:
    // LLVM 22's liboffload offers only the virtual host device, which has
    // no plugin: it cannot load programs (its olIsValidBinary and
    // olCreateProgram dereference a null plugin).
    return createStringError("the host device of this liboffload cannot load "
                             "programs (it has no plugin)");
  default:
    return createStringError("device of an unknown backend");
  }
}

/// True for LLVM 22's virtual host device, which has no plugin: liboffload
/// dereferences a null plugin if asked to load a program on it.
static bool isHostDevice(ol_device_handle_t Device) {
  ol_platform_handle_t Platform = nullptr;
  ol_platform_backend_t Backend = OL_PLATFORM_BACKEND_UNKNOWN;
  if (!platformOf(Device, Platform, Backend))
    return true; // Let describe() say what is wrong.
  return Backend == OL_PLATFORM_BACKEND_HOST;
}

/// query(), once per device: a device handle lives as long as liboffload.
static Expected<DeviceInfo> describe(ol_device_handle_t Device) {
  static std::mutex Lock;
  static std::vector<std::pair<ol_device_handle_t, DeviceInfo>> Known;
  std::lock_guard<std::mutex> Guard(Lock);
  for (const auto &[Handle, Info] : Known)
    if (Handle == Device)
      return Info;
  Expected<DeviceInfo> Info = query(Device);
  if (Info)
    Known.emplace_back(Device, *Info);
  return Info;
}

namespace {
/// What olCreateProgram would load for a device, or why it cannot.
struct Plan {
  std::vector<OffloadEntry> Candidates;
  std::optional<unsigned> Selected;
  ol_errc_t Code = OL_ERRC_SUCCESS;
  std::string Message;
};
} // namespace

/// KDL_SHIM_TIMING: the steps of the first olCreateProgram of an
/// OffloadBinary (ShimTiming.h).
static FirstCallTiming FirstCall("olCreateProgram");

static Plan plan(ol_device_handle_t Device, const void *Data, size_t Size) {
  Plan P;
  StringRef Buffer(static_cast<const char *>(Data), Size);
  FirstCallTiming::Clock::time_point T = FirstCall.start();
  Error ReadErr = readOffloadBinaries(Buffer, -1, P.Candidates);
  FirstCall.set("images", P.Candidates.size());
  FirstCall.since("read_ns", T);
  if (Error Err = std::move(ReadErr)) {
    P.Code = OL_ERRC_INVALID_BINARY;
    P.Message = toString(std::move(Err));
    return P;
  }
  // One image: nothing to choose. liboffload gets it as it would get a
  // raw image, and accepts or refuses it itself.
  const OffloadEntry *Only = nullptr;
  unsigned Images = 0;
  for (const OffloadEntry &C : P.Candidates)
    if (!C.MetadataOnly && Images++ == 0)
      Only = &C;
  if (Images == 1 && !isHostDevice(Device)) {
    P.Selected = Only->Index;
    return P;
  }
  T = FirstCall.start();
  Expected<DeviceInfo> D = describe(Device);
  FirstCall.since("describe_ns", T);
  if (!D) {
    P.Code = OL_ERRC_UNSUPPORTED;
    P.Message = toString(D.takeError());
    return P;
  }
  std::vector<const OffloadEntry *> Ptrs;
  for (const OffloadEntry &C : P.Candidates)
    Ptrs.push_back(&C);
  std::optional<std::string> Tag = tagOverride();
  bool Info = infoEnabled(/*OpenMP=*/false);
  T = FirstCall.start();
  Selection S = selectImage(*D, Ptrs, Tag, /*Report=*/Info);
  FirstCall.since("select_ns", T);
  if (Info && !S.Report.empty())
    printLine(S.Report);
  if (!S.Selected) {
    P.Code = OL_ERRC_INVALID_BINARY;
    P.Message = S.Error;
    return P;
  }
  P.Selected = S.Selected;
  return P;
}

static ol_result_t createProgram(ol_device_handle_t Device,
                                 const void *ProgData, size_t ProgDataSize,
                                 ol_program_handle_t *Program,
                                 ol_code_location_t *Loc, bool WithLoc) {
  static auto *Real =
      lookup<decltype(olCreateProgram)>(RTLD_NEXT, "olCreateProgram");
  static auto *RealLoc = lookup<decltype(olCreateProgramWithCodeLoc)>(
      RTLD_NEXT, "olCreateProgramWithCodeLoc");
  if (!Real || !RealLoc)
    return makeError(OL_ERRC_UNINITIALIZED, "liboffload is not loaded");
  auto Forward = [&](const void *Data, size_t Size) {
    return WithLoc ? RealLoc(Device, Data, Size, Program, Loc)
                   : Real(Device, Data, Size, Program);
  };
  if (!Device || !ProgData || !Program ||
      !isOffloadBinary(
          StringRef(static_cast<const char *>(ProgData), ProgDataSize)))
    return Forward(ProgData, ProgDataSize);
  Plan P = plan(Device, ProgData, ProgDataSize);
  if (!P.Selected) {
    printLine("error: " + P.Message);
    return makeError(P.Code, P.Message);
  }
  StringRef Image = P.Candidates[*P.Selected].Image;
  if (!FirstCall.wanted())
    return Forward(Image.data(), Image.size());
  FirstCallTiming::Clock::time_point T = FirstCall.start();
  ol_result_t Result = Forward(Image.data(), Image.size());
  FirstCall.since("forward_ns", T);
  FirstCall.done();
  return Result;
}

static ol_result_t isValidBinary(ol_device_handle_t Device,
                                 const void *ProgData, size_t ProgDataSize,
                                 bool *Valid, ol_code_location_t *Loc,
                                 bool WithLoc) {
  static auto *Real =
      lookup<decltype(olIsValidBinary)>(RTLD_NEXT, "olIsValidBinary");
  static auto *RealLoc = lookup<decltype(olIsValidBinaryWithCodeLoc)>(
      RTLD_NEXT, "olIsValidBinaryWithCodeLoc");
  if (!Real || !RealLoc)
    return makeError(OL_ERRC_UNINITIALIZED, "liboffload is not loaded");
  if (!Device || !ProgData || !Valid ||
      !isOffloadBinary(
          StringRef(static_cast<const char *>(ProgData), ProgDataSize)))
    return WithLoc ? RealLoc(Device, ProgData, ProgDataSize, Valid, Loc)
                   : Real(Device, ProgData, ProgDataSize, Valid);
  // Valid exactly when liboffload accepts what olCreateProgram would hand it:
  // a single image goes on unchecked by the shim (plan()), so liboffload's
  // own answer for it is the one that counts.
  Plan P = plan(Device, ProgData, ProgDataSize);
  if (!P.Selected) {
    *Valid = false;
    return OL_SUCCESS;
  }
  StringRef Image = P.Candidates[*P.Selected].Image;
  return WithLoc ? RealLoc(Device, Image.data(), Image.size(), Valid, Loc)
                 : Real(Device, Image.data(), Image.size(), Valid);
}

extern "C" {
KDL_SHIM_EXPORT ol_result_t olCreateProgram(ol_device_handle_t Device,
                                            const void *ProgData,
                                            size_t ProgDataSize,
                                            ol_program_handle_t *Program) {
  return createProgram(Device, ProgData, ProgDataSize, Program, nullptr,
                       /*WithLoc=*/false);
}

KDL_SHIM_EXPORT ol_result_t olCreateProgramWithCodeLoc(
    ol_device_handle_t Device, const void *ProgData, size_t ProgDataSize,
    ol_program_handle_t *Program, ol_code_location_t *CodeLocation) {
  return createProgram(Device, ProgData, ProgDataSize, Program, CodeLocation,
                       /*WithLoc=*/true);
}

KDL_SHIM_EXPORT ol_result_t olIsValidBinary(ol_device_handle_t Device,
                                            const void *ProgData,
                                            size_t ProgDataSize, bool *Valid) {
  return isValidBinary(Device, ProgData, ProgDataSize, Valid, nullptr,
                       /*WithLoc=*/false);
}

KDL_SHIM_EXPORT ol_result_t olIsValidBinaryWithCodeLoc(
    ol_device_handle_t Device, const void *ProgData, size_t ProgDataSize,
    bool *Valid, ol_code_location_t *CodeLocation) {
  return isValidBinary(Device, ProgData, ProgDataSize, Valid, CodeLocation,
                       /*WithLoc=*/true);
}
}
