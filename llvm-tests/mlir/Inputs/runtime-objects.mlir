// Three objects of one kernel module for the proposals' #gpu.runtime_select:
// the ELF headers of an sm_80 cubin (CUDA ELF ABI v1) and of ptxas 13.0's
// sm_90a cubin (ABI v2, OS ABI 0x41, which main's ELF reader takes for AMD
// PAL), the second preferred, and PTX. The entries' keys are the targets'.
module attributes {gpu.container_module} {
  gpu.binary @kernels <#gpu.runtime_select> [
    #gpu.object<#nvvm.target<chip = "sm_80">, bin = "\7F\45\4C\46\02\01\01\33\07\00\00\00\00\00\00\00\02\00\BE\00\01\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\50\05\50\00\40\00\00\00\00\00\00\00\00\00\00\00">,
    #gpu.object<#nvvm.target<chip = "sm_90a">, properties = {variant_priority = 2 : i32}, bin = "\7F\45\4C\46\02\01\01\41\08\00\00\00\00\00\00\00\02\00\BE\00\01\00\00\00\00\00\00\00\00\00\00\00\D8\0C\00\00\00\00\00\00\18\09\00\00\00\00\00\00\04\5A\00\06\40\00\38\00\05\00\40\00\0F\00\01\00">,
    #gpu.object<#nvvm.target<chip = "sm_80">, assembly = ".version 8.0\n.target sm_80\n.address_size 64\n">
  ]
}
