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
// isELFCompatible and the CUDA plugin's isImageCompatible. The series' rule
// for arch-specific cubins and its PTX acceptance are the series' text (0003
// and 0007; release-22.x 0003 and 0014), which a test compares.
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

/// "sm_90a": the cubin's CPU name, or "sm_<SM>" for an SM that this LLVM
/// does not know (tryGetCPUName has no name for it).
static std::string getCubinName(const ELF64LEObjectFile &Obj) {
  if (std::optional<StringRef> CPU = Obj.tryGetCPUName())
    return CPU->str();
  return "sm_" + std::to_string(getCubinSM(Obj.getELFFile().getHeader()));
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

/// The device's compute capability (major, minor) from its compute unit
/// kind, "sm_90"; what the plugin's getComputeCapability asks the driver.
static std::optional<std::pair<int32_t, int32_t>>
getComputeCapability(StringRef DeviceArch) {
  unsigned DeviceSM = 0;
  if (!DeviceArch.consume_front("sm_") || DeviceArch.getAsInteger(10, DeviceSM))
    return std::nullopt;
  return std::make_pair(int32_t(DeviceSM / 10), int32_t(DeviceSM % 10));
}

/// The CUDA plugin's isELFCompatible after its compute capability query:
/// the SM from e_flags as upstream reads it, and the series' rule for
/// arch-specific cubins (0003) as it is there.
static bool cubinRunsOn(const ELF64LEObjectFile &Obj, int32_t Major,
                        int32_t Minor) {
  // Named as the plugin names it, so that its text can be compared.
  const ELF64LEObjectFile *ElfOrErr = &Obj;
  unsigned SM = getCubinSM(ElfOrErr->getELFFile().getHeader());
  int32_t ImageMajor = SM / 10;
  int32_t ImageMinor = SM % 10;

  // Arch-specific code (sm_90a) runs only on the compute capability it was
  // built for. The CPU name says whether the cubin is such code, from the
  // flag of its ABI or from nvcc's .nv.compat section.
  std::optional<StringRef> CPU = ElfOrErr->tryGetCPUName();
  if (CPU && CPU->ends_with("a"))
    return Major == ImageMajor && Minor == ImageMinor;

  return Major == ImageMajor && Minor >= ImageMinor;
}

/// The CUDA plugin's isELFCompatible on the device's compute capability.
static bool cudaAccepts(const ELF64LEObjectFile &Obj, StringRef DeviceArch,
                        std::string &Why) {
  auto CC = getComputeCapability(DeviceArch);
  if (!CC) {
    Why = "device has no compute capability";
    return false;
  }
  auto [Major, Minor] = *CC;
  if (cubinRunsOn(Obj, Major, Minor))
    return true;
  Why = formatv("{0} cubin does not run on compute capability {1}.{2}",
                getCubinName(Obj), Major, Minor);
  return false;
}

/// The CUDA plugin's isImageCompatible(DeviceId, Image) (0007), as it is
/// there but for the names of the device and its triple: PTX, where the rank
/// of PTX for its target on the device says it runs, or for a target this
/// LLVM does not know. Every other plugin accepts no such image.
static bool otherImageAccepted(StringRef Image, const kdl::PluginDevice &Dev,
                               std::string &Why) {
  if (!Dev.Triple.isNVPTX()) {
    Why = "neither ELF nor bitcode: the plugin's image checks do not accept it";
    return false;
  }
  StringRef Target = object::getPTXTarget(Image);
  if (Target.empty()) {
    Why = "neither ELF, bitcode nor PTX: the plugin's image checks do not "
          "accept it";
    return false;
  }
  if (NVPTX::parseArch(Target) == NVPTX::GK_NONE)
    return true;

  auto CC = getComputeCapability(Dev.Arch);
  if (!CC) {
    Why = "device has no compute capability";
    return false;
  }
  auto [Major, Minor] = *CC;
  std::string ImageTriple = Dev.Triple.str();
  object::OffloadDeviceTarget Device(ImageTriple,
                                     ("sm_" + Twine(Major * 10 + Minor)).str());
  if (Device.rank(ImageTriple, Target, object::IMG_PTX).runs())
    return true;
  Why = formatv("PTX for {0} does not run on compute capability {1}.{2}",
                Target, Major, Minor);
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
    // isImageCompatible: the CUDA plugin's PTX; nothing else (SPIR-V,
    // fatbinaries) is accepted by the CUDA, the AMDGPU or the host plugin.
    return otherImageAccepted(Image, Device, Why);
  }
}
