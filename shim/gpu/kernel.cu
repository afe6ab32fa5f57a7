// Each image says which one it is through a global the probe reads back.
__device__ char kdl_variant[64] = VARIANT;
extern "C" __global__ void kdl_kernel(char *Out) { Out[0] = kdl_variant[0]; }
