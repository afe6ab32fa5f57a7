// Three objects of one kernel module for the main series' #gpu.runtime_select:
// the ELF headers of an sm_80 and an sm_90a cubin (CUDA ELF ABI v1; the
// translation reads their target from them), the second preferred, and PTX.
module attributes {gpu.container_module} {
  gpu.binary @kernels <#gpu.runtime_select> [
    #gpu.object<#nvvm.target<chip = "sm_80">, bin = "\7F\45\4C\46\02\01\01\33\07\00\00\00\00\00\00\00\02\00\BE\00\01\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\50\05\50\00\40\00\00\00\00\00\00\00\00\00\00\00">,
    #gpu.object<#nvvm.target<chip = "sm_90a">, properties = {variant_priority = 2 : i32}, bin = "\7F\45\4C\46\02\01\01\33\07\00\00\00\00\00\00\00\02\00\BE\00\01\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\5A\0C\5A\00\40\00\00\00\00\00\00\00\00\00\00\00">,
    #gpu.object<#nvvm.target<chip = "sm_80">, assembly = ".version 8.0\n.target sm_80\n.address_size 64\n">
  ]
}
