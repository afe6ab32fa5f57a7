/* stand-in for the missing OpenMP device runtime (not packaged for main) */
int __kmpc_target_init(void *KernelEnv, void *LaunchEnv) { return -1; }
void __kmpc_target_deinit(void) {}
