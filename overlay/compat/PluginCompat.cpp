//===- PluginCompat.cpp - Which images the offload plugins accept ---------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Follows offload/plugins-nextgen: common/src/PluginInterface.cpp
// (isPluginCompatible, isDeviceCompatible), common/src/Utils/ELF.cpp
// (checkMachine) and the isELFCompatible of cuda/src/rtl.cpp and
// amdgpu/src/rtl.cpp, which are the same in LLVM 22.1.8 and in the bases
// recorded in patches/series.
//
//===----------------------------------------------------------------------===//

#include "PluginCompat.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Frontend/Offloading/Utility.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/FormatVariadic.h"

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

/// The CUDA plugin's isELFCompatible: the same major compute capability and
/// a minor one no higher than the device's.
static bool cudaAccepts(const ELF64LEObjectFile &Obj, StringRef DeviceArch,
                        std::string &Why) {
  unsigned SM = getCubinSM(Obj.getELFFile().getHeader());
  unsigned DeviceSM = 0;
  if (!DeviceArch.starts_with("sm_") ||
      DeviceArch.drop_front(3).getAsInteger(10, DeviceSM)) {
    Why = "device has no compute capability";
    return false;
  }
  if (SM / 10 == DeviceSM / 10 && SM % 10 <= DeviceSM % 10)
    return true;
  Why = formatv("{0} cubin does not run on compute capability {1}.{2}",
                getCubinName(Obj.getELFFile().getHeader()), DeviceSM / 10,
                DeviceSM % 10);
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
    // isImageCompatible(): neither the CUDA, the AMDGPU nor the host plugin
    // accepts anything else (raw PTX, SPIR-V, fatbinaries) here.
    Why =
        "neither ELF nor bitcode: the plugin's image check does not accept it";
    return false;
  }
}
