//===- PluginAcceptance.cpp - A model of the plugins' acceptance ----------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Follows offload/plugins-nextgen with the series applied:
// common/src/PluginInterface.cpp (isPluginCompatible, isDeviceCompatible),
// common/src/Utils/ELF.cpp (checkMachine), and the CUDA and AMDGPU plugins'
// isELFCompatible and the CUDA plugin's isOtherImageCompatible. The CUDA
// plugin's isCubinCompatible and getPTXTarget are the series' text (0003 and
// 0007; release-22.x 0003 and 0013), which a test compares.
//
//===----------------------------------------------------------------------===//

#include "PluginAcceptance.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Frontend/Offloading/Utility.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/OffloadTargetRank.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TargetParser/NVPTXTargetParser.h"

using namespace llvm;
using namespace llvm::object;

static uint16_t getPluginMachine(const Triple &T) {
  if (T.isNVPTX())
    return ELF::EM_CUDA;
  if (T.isAMDGCN())
    return ELF::EM_AMDGPU;
  switch (T.getArch()) {
  case Triple::x86_64:
    return ELF::EM_X86_64;
  case Triple::aarch64:
    return ELF::EM_AARCH64;
  case Triple::ppc64le:
    return ELF::EM_PPC64;
  default:
    return ELF::EM_NONE;
  }
}

static bool isCudaV1(const ELF64LE::Ehdr &Header) {
  return Header.e_ident[ELF::EI_ABIVERSION] == ELF::ELFABIVERSION_CUDA_V1;
}

static unsigned getCubinSM(const ELF64LE::Ehdr &Header) {
  return isCudaV1(Header) ? Header.e_flags & ELF::EF_CUDA_SM
                          : (Header.e_flags & ELF::EF_CUDA_SM_MASK) >>
                                ELF::EF_CUDA_SM_OFFSET;
}

/// "sm_90a": the name without ELFObjectFileBase::tryGetCPUName, which has
/// none (llvm_unreachable) for a compute capability LLVM does not know.
static std::string getCubinName(const ELF64LE::Ehdr &Header) {
  bool Accelerated =
      Header.e_flags & (isCudaV1(Header) ? ELF::EF_CUDA_ACCELERATORS_V1
                                         : ELF::EF_CUDA_ACCELERATORS);
  return "sm_" + std::to_string(getCubinSM(Header)) + (Accelerated ? "a" : "");
}

/// EF_AMDGPU_MACH values LLVM 22 reserves: ELFObjectFileBase::tryGetCPUName
/// has no name for them (llvm_unreachable), and the AMDGPU plugin, which
/// calls it after checkMachine's range check, would crash on such an image.
static bool isReservedAMDGPUMach(unsigned Mach) {
  switch (Mach) {
  case ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X27:
  case ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X40:
  case ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X4B:
  case ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X4D:
  case ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X50:
  case ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X56:
  case ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X57:
    return true;
  default:
    return false;
  }
}

/// utils::elf::checkMachine: the header checks every plugin applies first.
static bool checkMachine(const ELF64LEObjectFile &Obj, uint16_t Machine,
                         std::string &Why) {
  const ELF64LE::Ehdr &Header = Obj.getELFFile().getHeader();
  if (Header.e_type != ELF::ET_EXEC && Header.e_type != ELF::ET_DYN) {
    Why = "not an executable or shared ELF object";
    return false;
  }
  if (Header.e_machine == ELF::EM_AMDGPU) {
    if (Header.e_ident[ELF::EI_OSABI] != ELF::ELFOSABI_AMDGPU_HSA ||
        Header.e_ident[ELF::EI_ABIVERSION] < ELF::ELFABIVERSION_AMDGPU_HSA_V5) {
      Why = "AMDGPU code object is not HSA code object version 5 or later";
      return false;
    }
    unsigned Mach = Header.e_flags & ELF::EF_AMDGPU_MACH;
    if (Mach < ELF::EF_AMDGPU_MACH_AMDGCN_FIRST ||
        Mach > ELF::EF_AMDGPU_MACH_AMDGCN_LAST || isReservedAMDGPUMach(Mach)) {
      Why = "unsupported AMDGPU architecture";
      return false;
    }
  } else if (Header.e_machine == ELF::EM_CUDA) {
    // ABI version 2 keeps the SM where version 1 has this flag.
    if (isCudaV1(Header) && (~Header.e_flags & ELF::EF_CUDA_64BIT_ADDRESS)) {
      Why = "cubin is not 64-bit";
      return false;
    }
    if (getCubinSM(Header) < ELF::EF_CUDA_SM35) {
      Why = "cubin is for a processor older than sm_35";
      return false;
    }
  }
  if (Header.e_machine != Machine) {
    Why = formatv("ELF machine {0} is not the plugin's ({1})", Header.e_machine,
                  Machine);
    return false;
  }
  return true;
}

/// The series' CUDAPluginTy::isCubinCompatible (0003), as it is there.
/// Whether a cubin with the ELF header fields \p ABIVersion and \p EFlags
/// runs on a device of compute capability \p Major.\p Minor.
static bool isCubinCompatible(uint8_t ABIVersion, uint32_t EFlags,
                              int32_t Major, int32_t Minor) {
  // ABI v1 stores the SM in the low byte and marks arch-specific code
  // (sm_XXa) with EF_CUDA_ACCELERATORS_V1; ABI v2 stores it in bits 8-15 and
  // marks it with EF_CUDA_ACCELERATORS. Each flag is part of the SM number
  // under the other ABI.
  bool IsV1 = ABIVersion == ELF::ELFABIVERSION_CUDA_V1;
  unsigned SM = IsV1
                    ? EFlags & ELF::EF_CUDA_SM
                    : (EFlags & ELF::EF_CUDA_SM_MASK) >> ELF::EF_CUDA_SM_OFFSET;
  bool IsArchSpecific = EFlags & (IsV1 ? ELF::EF_CUDA_ACCELERATORS_V1
                                       : ELF::EF_CUDA_ACCELERATORS);
  int32_t ImageMajor = SM / 10;
  int32_t ImageMinor = SM % 10;

  // Arch-specific code runs only on the compute capability it was built
  // for.
  if (IsArchSpecific)
    return Major == ImageMajor && Minor == ImageMinor;

  // Other code runs on any GPU with the same major revision and the same or
  // a higher minor revision. This is also the rule for family-specific code
  // (sm_XXf), for which ELF.h defines no flag.
  return Major == ImageMajor && Minor >= ImageMinor;
}

/// The series' CUDAPluginTy::getPTXTarget (0007), as it is there.
/// Return the target PTX text \p Image is written for (sm_80 for
/// ".target sm_80"), or nothing if it is not PTX. A PTX module begins with
/// its .version directive, then its .target directive, after any comments.
static StringRef getPTXTarget(StringRef Image) {
  auto SkipSpaceAndComments = [](StringRef Text) {
    while (true) {
      Text = Text.ltrim();
      if (Text.consume_front("//"))
        Text = Text.drop_until([](char C) { return C == '\n'; });
      else if (Text.consume_front("/*"))
        Text = Text.split("*/").second;
      else
        return Text;
    }
  };
  StringRef Text = SkipSpaceAndComments(Image);
  if (!Text.consume_front(".version"))
    return {};
  Text = Text.ltrim(" \t").drop_while(
      [](char C) { return isDigit(C) || C == '.'; });
  Text = SkipSpaceAndComments(Text);
  if (!Text.consume_front(".target"))
    return {};
  return Text.ltrim(" \t").take_until(
      [](char C) { return C == ',' || isSpace(C); });
}

/// The device's compute capability (major, minor) from its compute unit
/// kind, "sm_90"; what the plugin's getComputeCapability asks the driver.
static std::optional<std::pair<int32_t, int32_t>>
getComputeCapability(StringRef DeviceArch) {
  unsigned DeviceSM = 0;
  if (!DeviceArch.consume_front("sm_") || DeviceArch.getAsInteger(10, DeviceSM))
    return std::nullopt;
  return std::make_pair(int32_t(DeviceSM / 10), int32_t(DeviceSM % 10));
}

/// The CUDA plugin's isELFCompatible: isCubinCompatible on the device's
/// compute capability.
static bool cudaAccepts(const ELF64LEObjectFile &Obj, StringRef DeviceArch,
                        std::string &Why) {
  auto CC = getComputeCapability(DeviceArch);
  if (!CC) {
    Why = "device has no compute capability";
    return false;
  }
  auto [Major, Minor] = *CC;
  const ELF64LE::Ehdr &Header = Obj.getELFFile().getHeader();
  if (isCubinCompatible(Header.e_ident[ELF::EI_ABIVERSION], Header.e_flags,
                        Major, Minor))
    return true;
  Why = formatv("{0} cubin does not run on compute capability {1}.{2}",
                getCubinName(Header), Major, Minor);
  return false;
}

/// The CUDA plugin's isOtherImageCompatible (0007): PTX for a target the
/// NVPTX target parser knows, where the rank of PTX for that target on the
/// device says it runs. Every other plugin accepts no such image.
static bool otherImageAccepted(StringRef Image, const kdl::PluginDevice &Device,
                               std::string &Why) {
  if (!Device.Triple.isNVPTX()) {
    Why = "neither ELF nor bitcode: the plugin's image checks do not accept it";
    return false;
  }
  StringRef PTXTarget = getPTXTarget(Image);
  if (PTXTarget.empty()) {
    Why = "neither ELF, bitcode nor PTX: the plugin's image checks do not "
          "accept it";
    return false;
  }
  if (NVPTX::parseArch(PTXTarget) == NVPTX::GK_NONE) {
    Why = ("PTX for an unknown target " + PTXTarget).str();
    return false;
  }
  auto CC = getComputeCapability(Device.Arch);
  if (!CC) {
    Why = "device has no compute capability";
    return false;
  }
  auto [Major, Minor] = *CC;
  std::string Triple = Device.Triple.str();
  OffloadDeviceTarget Target(Triple, ("sm_" + Twine(Major * 10 + Minor)).str());
  if (Target.rank(Triple, PTXTarget, IMG_PTX).runs())
    return true;
  Why = formatv("PTX for {0} does not run on compute capability {1}.{2}",
                PTXTarget, Major, Minor);
  return false;
}

/// The AMDGPU plugin's isELFCompatible: one of the ISAs the agent reports
/// runs the code object's processor with its xnack and sramecc modes.
static bool amdgpuAccepts(const ELF64LEObjectFile &Obj,
                          const kdl::PluginDevice &Device, std::string &Why) {
  std::optional<StringRef> Processor = Obj.tryGetCPUName();
  if (Processor) {
    if (offloading::amdgpu::isImageCompatibleWithEnv(
            *Processor, Obj.getPlatformFlags(), Device.TargetID))
      return true;
    for (const std::string &ISA : Device.OtherISAs)
      if (offloading::amdgpu::isImageCompatibleWithEnv(
              *Processor, Obj.getPlatformFlags(), ISA))
        return true;
  }
  Why = formatv("{0} code object does not run on {1}",
                Processor.value_or("unknown"), Device.TargetID);
  return false;
}

Triple kdl::parseTriple(StringRef Name) {
  auto [Arch, Rest] = Name.split('-');
  // "amdgpu" alone, or followed by a GFX version such as 9.42, 9.0a, 11.
  StringRef Version = Arch;
  if (!Version.consume_front("amdgpu") ||
      (!Version.empty() && !isDigit(Version.front())) ||
      Version.find_first_not_of("0123456789abcdefABCDEF._") != StringRef::npos)
    return Triple(Name);
  return Triple(Rest.empty() ? "amdgcn" : ("amdgcn-" + Rest).str());
}

bool kdl::pluginAccepts(StringRef Image, const PluginDevice &Device,
                        std::string &Why) {
  uint16_t Machine = getPluginMachine(Device.Triple);
  switch (identify_magic(Image)) {
  case file_magic::elf_relocatable:
  case file_magic::elf_executable:
  case file_magic::elf_shared_object:
  case file_magic::elf_core: {
    Expected<ELF64LEObjectFile> Obj = ELF64LEObjectFile::create(
        MemoryBufferRef(Image, ""), /*InitContent=*/false);
    if (!Obj) {
      Why = "malformed ELF: " + toString(Obj.takeError());
      return false;
    }
    if (!checkMachine(*Obj, Machine, Why))
      return false;
    if (Machine == ELF::EM_CUDA)
      return cudaAccepts(*Obj, Device.Arch, Why);
    if (Machine == ELF::EM_AMDGPU)
      return amdgpuAccepts(*Obj, Device, Why);
    return true;
  }
  case file_magic::bitcode: {
    // checkBitcodeImage: the module's triple must have the plugin's
    // architecture (and the plugin must be built with JIT support).
    Expected<std::string> TripleOrErr =
        getBitcodeTargetTriple(MemoryBufferRef(Image, ""));
    if (!TripleOrErr) {
      consumeError(TripleOrErr.takeError());
      Why = "malformed bitcode";
      return false;
    }
    if (parseTriple(*TripleOrErr).getArch() == Device.Triple.getArch())
      return true;
    Why = "bitcode is for " + *TripleOrErr;
    return false;
  }
  default:
    // isOtherImageCompatible: the CUDA plugin's PTX; nothing else (SPIR-V,
    // fatbinaries) is accepted by the CUDA, the AMDGPU or the host plugin.
    return otherImageAccepted(Image, Device, Why);
  }
}
