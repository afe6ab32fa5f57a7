module attributes {gpu.container_module} {
  gpu.binary @kernels <#gpu.runtime_select> [
    #gpu.object<#nvvm.target<chip = "sm_80">, bin = "CUBIN_SM80">,
    #gpu.object<#nvvm.target<chip = "sm_90a">,
                properties = {variant_priority = 2 : i32, variant_tag = "wgmma",
                              min_sm = "90"},
                bin = "CUBIN_SM90A">,
    #gpu.object<#nvvm.target<chip = "sm_80">, assembly = "PTX_SM80">
  ]
  llvm.func @main() {
    %0 = llvm.mlir.constant(1 : index) : i64
    gpu.launch_func @kernels::@hello blocks in (%0, %0, %0) threads in (%0, %0, %0) : i64
    llvm.return
  }
}
