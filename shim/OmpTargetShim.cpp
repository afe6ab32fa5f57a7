//===- OmpTargetShim.cpp - Ranked image registration for libomptarget -----===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Preloaded in front of libomptarget, this interposes __tgt_register_lib: it
// reads every image of the binary descriptor with its OffloadBinary metadata,
// ranks the images for each device the shim can describe, and registers a
// copy of the descriptor that holds only the chosen image(s). libomptarget
// then does what it always does (the first compatible image wins), but it is
// only offered the best one. Images for device families the shim does not
// describe, and images that are not inside an OffloadBinary, pass through.
//
//===----------------------------------------------------------------------===//

#include "ShimDevices.h"
#include "ShimImages.h"
#include "ShimPolicy.h"
#include "ShimTiming.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <set>

using namespace llvm;
using namespace kdl;
using namespace kdl::shim;

// The registration ABI of LLVM 22's libomptarget (omptarget.h); entries are
// only copied, never read.
struct __tgt_device_image {
  void *ImageStart;
  void *ImageEnd;
  void *EntriesBegin;
  void *EntriesEnd;
};

struct __tgt_bin_desc {
  int32_t NumDeviceImages;
  __tgt_device_image *DeviceImages;
  void *HostEntriesBegin;
  void *HostEntriesEnd;
};

namespace {
/// A registered copy of a descriptor; kept until it is unregistered.
struct Filtered {
  std::vector<__tgt_device_image> Images;
  __tgt_bin_desc Desc;
};
} // namespace

static std::mutex Lock;
static std::map<__tgt_bin_desc *, std::unique_ptr<Filtered>> &registry() {
  static auto *Registry =
      new std::map<__tgt_bin_desc *, std::unique_ptr<Filtered>>();
  return *Registry;
}

template <typename FnTy> static FnTy *next(const char *Name) {
  void *Sym = dlsym(RTLD_NEXT, Name);
  if (!Sym) {
    printLine(Twine("error: ") + Name +
              " not found after the shim; is libomptarget loaded?");
    abort();
  }
  return reinterpret_cast<FnTy *>(Sym);
}

/// Builds the descriptor libomptarget will see, or returns null to pass
/// \p Desc through unchanged.
static std::unique_ptr<Filtered> filter(__tgt_bin_desc *Desc) {
  bool Info = infoEnabled(/*OpenMP=*/true);
  std::vector<OffloadEntry> Cands;
  SmallVector<bool> Located(Desc->NumDeviceImages, false);
  for (int32_t I = 0; I < Desc->NumDeviceImages; ++I) {
    const __tgt_device_image &Img = Desc->DeviceImages[I];
    const char *Begin = static_cast<const char *>(Img.ImageStart);
    const char *End = static_cast<const char *>(Img.ImageEnd);
    StringRef Buffer(Begin, End - Begin);
    StringRef Binary =
        isOffloadBinary(Buffer) ? Buffer : findEnclosingBinary(Begin, End);
    if (!Binary.empty()) {
      size_t Before = Cands.size();
      if (Error Err = readOffloadBinaries(Binary, I, Cands)) {
        printLine("warning: " + toString(std::move(Err)) +
                  "; registering the images unchanged");
        return nullptr;
      }
      Located[I] = Cands.size() > Before;
      continue;
    }
    OffloadEntry Raw;
    Raw.Index = Cands.size();
    Raw.Source = I;
    Raw.Image = Buffer;
    Cands.push_back(std::move(Raw));
  }

  // Every image is ranked, with the keys of its OffloadBinary where it has
  // one: the device family comes from the image's triple, or from its ELF
  // machine for a raw image (what clang's OpenMP wrapper registers).
  std::vector<const OffloadEntry *> Ranked;
  std::set<DeviceFamily> Families;
  for (OffloadEntry &C : Cands) {
    C.Index = C.MetadataOnly ? ~0u : Ranked.size();
    if (C.MetadataOnly)
      continue;
    Ranked.push_back(&C);
    Families.insert(familyOf(C));
  }

  std::optional<std::string> Tag = tagOverride();
  std::set<unsigned> Keep;
  std::set<DeviceFamily> Decided;
  for (DeviceFamily Family : Families) {
    std::vector<DeviceInfo> Devices = devicesOf(Family);
    if (Devices.empty())
      continue;
    Decided.insert(Family);
    for (const DeviceInfo &D : Devices) {
      Selection S = selectImage(D, Ranked, Tag, Info);
      if (Info && !S.Report.empty())
        printLine(S.Report);
      if (S.Selected)
        Keep.insert(*S.Selected);
      else
        printLine("error: " + S.Error);
    }
  }
  if (Decided.empty())
    return nullptr;

  // Chosen images in their original order, then everything the shim did not
  // decide on, exactly as it was registered.
  auto F = std::make_unique<Filtered>();
  std::set<int32_t> PassedThrough;
  for (const OffloadEntry &C : Cands) {
    const __tgt_device_image &Orig = Desc->DeviceImages[C.Source];
    bool Undecided = C.MetadataOnly || !Decided.count(familyOf(C));
    if (Undecided) {
      if (PassedThrough.insert(C.Source).second)
        F->Images.push_back(Orig);
      continue;
    }
    if (!Keep.count(C.Index))
      continue;
    F->Images.push_back(
        __tgt_device_image{const_cast<char *>(C.Image.data()),
                           const_cast<char *>(C.Image.data() + C.Image.size()),
                           Orig.EntriesBegin, Orig.EntriesEnd});
  }
  F->Desc =
      __tgt_bin_desc{static_cast<int32_t>(F->Images.size()), F->Images.data(),
                     Desc->HostEntriesBegin, Desc->HostEntriesEnd};
  if (Info)
    printLine("registering " + Twine(F->Images.size()) + " of " +
              Twine(Cands.size()) + " image(s) with libomptarget");
  return F;
}

/// KDL_SHIM_TIMING: the first __tgt_register_lib, split into the shim's
/// choice and libomptarget's own registration (ShimTiming.h). With
/// KDL_SHIM_BYPASS set, descriptors pass through unranked: libomptarget's
/// first compatible image, timed the same way, for comparison.
static FirstCallTiming FirstRegister("__tgt_register_lib");

extern "C" KDL_SHIM_EXPORT void __tgt_register_lib(__tgt_bin_desc *Desc) {
  static auto *Real = next<void(__tgt_bin_desc *)>("__tgt_register_lib");
  static const bool Bypass = std::getenv("KDL_SHIM_BYPASS") != nullptr;
  __tgt_bin_desc *Use = Desc;
  FirstCallTiming::Clock::time_point T = FirstRegister.start();
  if (Desc && Desc->NumDeviceImages > 0 && !Bypass) {
    std::lock_guard<std::mutex> Guard(Lock);
    if (std::unique_ptr<Filtered> F = filter(Desc)) {
      Use = &F->Desc;
      registry()[Desc] = std::move(F);
    }
  }
  FirstRegister.set("images", Desc ? Desc->NumDeviceImages : 0);
  FirstRegister.set("registered", Use ? Use->NumDeviceImages : 0);
  FirstRegister.since("choose_ns", T);
  T = FirstRegister.start();
  Real(Use);
  FirstRegister.since("register_ns", T);
  FirstRegister.done();
}

extern "C" KDL_SHIM_EXPORT void __tgt_unregister_lib(__tgt_bin_desc *Desc) {
  static auto *Real = next<void(__tgt_bin_desc *)>("__tgt_unregister_lib");
  __tgt_bin_desc *Use = Desc;
  {
    std::lock_guard<std::mutex> Guard(Lock);
    auto It = registry().find(Desc);
    if (It != registry().end())
      Use = &It->second->Desc;
  }
  Real(Use);
}
