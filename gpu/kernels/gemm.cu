//===- gemm.cu - bf16 tensor-core GEMM used by the kdl GPU harness --------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One real ML kernel, compiled once per image of the harness's OffloadBinary
// (sm_80 cubin, sm_90 cubin, sm_90a cubin, compute_80 PTX):
//
//   kdl_gemm_bf16_nt: C[M][N] = A[M][K] * B[N][K]^T, bf16 inputs, fp32
//   accumulation and output. 128x128x32 block tile, 8 warps (2 x 4), each
//   warp 64x32 with mma.sync.m16n8k16 (HMMA), operands staged through shared
//   memory with cp.async in a 3-deep pipeline and read with ldmatrix.
//   Built for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL), the same kernel instead
//   uses Hopper's wgmma: two warpgroups, each 64 x 128 per
//   wgmma.mma_async.m64n128k16 (HGMMA), K tile 64, operands in shared memory
//   in the 128-byte swizzled K-major layout the GMMA descriptors describe,
//   filled by cp.async (3 stages). Needs M % 128 == 0, N % 128 == 0,
//   K % 64 == 0; dynamic shared memory KDL_GEMM_SMEM bytes (the host raises
//   the function's limit).
//
//   kdl_marker: writes KDL_VARIANT (a -D per image) and __CUDA_ARCH__ to
//   out[0], out[1]: tells the host which image the runtime loaded.
//
//   kdl_ref_gemm: plain fp32 reference of the same product (one thread per
//   output element), used to check kdl_gemm_bf16_nt.
//
//===----------------------------------------------------------------------===//

#include <cuda_bf16.h>
#include <stdint.h>

#ifndef KDL_VARIANT
#define KDL_VARIANT 0
#endif

#define BM 128
#define BN 128
#define BK 32
#define STAGES 3
#define PAD 8 // bf16 elements of padding per smem row: conflict-free ldmatrix
#define LDS (BK + PAD)
#define THREADS 256
// Dynamic shared memory of kdl_gemm_bf16_nt, the same for every image so the
// host needs no per-image knowledge: the larger of the two paths' needs
// (mma.sync: 3 x (128 + 128) x 40 bf16 = 61440 bytes; wgmma: 3 stages of two
// 128 x 64 bf16 tiles = 98304 bytes, + 1024 to align the first stage).
#define KDL_GEMM_SMEM 99328

extern "C" __global__ void kdl_marker(int *Out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    Out[0] = KDL_VARIANT;
#ifdef __CUDA_ARCH__
    Out[1] = __CUDA_ARCH__;
#else
    Out[1] = 0;
#endif
  }
}

__device__ __forceinline__ uint32_t smemAddr(const void *P) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(P));
}

__device__ __forceinline__ void cpAsync16(void *Smem, const void *Gmem) {
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smemAddr(Smem)),
      "l"(Gmem));
}

__device__ __forceinline__ void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int N> __device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrixX4(uint32_t &R0, uint32_t &R1,
                                           uint32_t &R2, uint32_t &R3,
                                           const void *P) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(R0), "=r"(R1), "=r"(R2), "=r"(R3)
      : "r"(smemAddr(P)));
}

__device__ __forceinline__ void mmaBf16(float *D, const uint32_t *A,
                                        const uint32_t *B) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(D[0]), "+f"(D[1]), "+f"(D[2]), "+f"(D[3])
               : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]),
                 "r"(B[1]));
}

// Copy one BM x BK tile of A and one BN x BK tile of B into stage S.
__device__ __forceinline__ void loadStage(__nv_bfloat16 *SA, __nv_bfloat16 *SB,
                                          const __nv_bfloat16 *A,
                                          const __nv_bfloat16 *B, int K,
                                          int BlockRow, int BlockCol, int K0) {
  // Each row has BK * 2 / 16 = 4 chunks of 16 bytes; 128 rows = 512 chunks,
  // two per thread for each operand.
#pragma unroll
  for (int I = 0; I < 2; ++I) {
    int Chunk = threadIdx.x + I * THREADS;
    int Row = Chunk >> 2;
    int Col = (Chunk & 3) * 8;
    cpAsync16(SA + Row * LDS + Col,
              A + (size_t)(BlockRow + Row) * K + K0 + Col);
    cpAsync16(SB + Row * LDS + Col,
              B + (size_t)(BlockCol + Row) * K + K0 + Col);
  }
}

// The mma.sync path (sm_80 and later).
__device__ __forceinline__ void gemmMmaSync(const __nv_bfloat16 *__restrict__ A,
                                            const __nv_bfloat16 *__restrict__ B,
                                            float *__restrict__ C, int M, int N,
                                            int K, unsigned char *SmemRaw) {
  __nv_bfloat16 *Smem = reinterpret_cast<__nv_bfloat16 *>(SmemRaw);
  const int StageElems = (BM + BN) * LDS;

  const int BlockRow = blockIdx.y * BM;
  const int BlockCol = blockIdx.x * BN;
  const int Warp = threadIdx.x >> 5;
  const int Lane = threadIdx.x & 31;
  const int WarpRow = (Warp >> 2) * 64; // 2 warps along M
  const int WarpCol = (Warp & 3) * 32;  // 4 warps along N

  float Acc[4][4][4];
#pragma unroll
  for (int I = 0; I < 4; ++I)
#pragma unroll
    for (int J = 0; J < 4; ++J)
#pragma unroll
      for (int E = 0; E < 4; ++E)
        Acc[I][J][E] = 0.0f;

  const int KTiles = K / BK;
  // Prologue: fill STAGES - 1 stages.
#pragma unroll
  for (int S = 0; S < STAGES - 1; ++S) {
    if (S < KTiles)
      loadStage(Smem + S * StageElems, Smem + S * StageElems + BM * LDS, A, B,
                K, BlockRow, BlockCol, S * BK);
    cpAsyncCommit();
  }

  for (int KT = 0; KT < KTiles; ++KT) {
    cpAsyncWait<STAGES - 2>();
    __syncthreads();
    // Prefetch tile KT + STAGES - 1 into the stage freed at iteration KT - 1.
    int Next = KT + STAGES - 1;
    if (Next < KTiles) {
      int S = Next % STAGES;
      loadStage(Smem + S * StageElems, Smem + S * StageElems + BM * LDS, A, B,
                K, BlockRow, BlockCol, Next * BK);
    }
    cpAsyncCommit();

    const __nv_bfloat16 *SA = Smem + (KT % STAGES) * StageElems;
    const __nv_bfloat16 *SB = SA + BM * LDS;
#pragma unroll
    for (int KK = 0; KK < BK; KK += 16) {
      uint32_t AF[4][4];
      uint32_t BF[4][2];
#pragma unroll
      for (int I = 0; I < 4; ++I) {
        int Row = WarpRow + I * 16 + (Lane & 15);
        int Col = KK + (Lane >> 4) * 8;
        ldmatrixX4(AF[I][0], AF[I][1], AF[I][2], AF[I][3],
                   SA + Row * LDS + Col);
      }
#pragma unroll
      for (int J = 0; J < 4; J += 2) {
        int Row = WarpCol + J * 8 + (Lane & 7) + ((Lane >> 4) << 3);
        int Col = KK + ((Lane >> 3) & 1) * 8;
        ldmatrixX4(BF[J][0], BF[J][1], BF[J + 1][0], BF[J + 1][1],
                   SB + Row * LDS + Col);
      }
#pragma unroll
      for (int I = 0; I < 4; ++I)
#pragma unroll
        for (int J = 0; J < 4; ++J)
          mmaBf16(Acc[I][J], AF[I], BF[J]);
    }
  }
  cpAsyncWait<0>();

  // Epilogue: accumulator fragment (g = Lane / 4, t = Lane % 4) holds rows
  // g and g + 8, columns 2t and 2t + 1 of each 16 x 8 tile.
  const int G = Lane >> 2;
  const int T = Lane & 3;
#pragma unroll
  for (int I = 0; I < 4; ++I)
#pragma unroll
    for (int J = 0; J < 4; ++J) {
      int Row = BlockRow + WarpRow + I * 16 + G;
      int Col = BlockCol + WarpCol + J * 8 + T * 2;
      *reinterpret_cast<float2 *>(C + (size_t)Row * N + Col) =
          make_float2(Acc[I][J][0], Acc[I][J][1]);
      *reinterpret_cast<float2 *>(C + (size_t)(Row + 8) * N + Col) =
          make_float2(Acc[I][J][2], Acc[I][J][3]);
    }
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The wgmma path (sm_90a only).
#define WBK 64                // K per stage: 64 bf16 = 128 bytes/row
#define WTILE (128 * WBK * 2) // one 128-row operand tile, bytes
#define WSTAGE (2 * WTILE)    // A tile + B tile

// GMMA shared-memory descriptor: K-major operand, 128-byte swizzle, rows of
// 128 bytes, 8-row groups 1024 bytes apart (SBO); LBO is unused for this
// layout and set to 16 bytes as CUTLASS does.
__device__ __forceinline__ uint64_t gmmaDesc(uint32_t SmemAddr) {
  uint64_t D = 0;
  D |= static_cast<uint64_t>((SmemAddr & 0x3FFFF) >> 4);
  D |= static_cast<uint64_t>(16 >> 4) << 16;
  D |= static_cast<uint64_t>(1024 >> 4) << 32;
  D |= 1ull << 62; // 128B swizzle
  return D;
}

__device__ __forceinline__ void wgmma128(float *D, uint64_t DescA,
                                         uint64_t DescB) {
  // The 64 accumulator operands stay on one line.
  // clang-format off
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
               "%64, %65, p, 1, 1, 0, 0;\n"
               "}\n"
               : "+f"(D[0]), "+f"(D[1]), "+f"(D[2]), "+f"(D[3]), "+f"(D[4]), "+f"(D[5]), "+f"(D[6]), "+f"(D[7]), "+f"(D[8]), "+f"(D[9]), "+f"(D[10]), "+f"(D[11]), "+f"(D[12]), "+f"(D[13]), "+f"(D[14]), "+f"(D[15]), "+f"(D[16]), "+f"(D[17]), "+f"(D[18]), "+f"(D[19]), "+f"(D[20]), "+f"(D[21]), "+f"(D[22]), "+f"(D[23]), "+f"(D[24]), "+f"(D[25]), "+f"(D[26]), "+f"(D[27]), "+f"(D[28]), "+f"(D[29]), "+f"(D[30]), "+f"(D[31]), "+f"(D[32]), "+f"(D[33]), "+f"(D[34]), "+f"(D[35]), "+f"(D[36]), "+f"(D[37]), "+f"(D[38]), "+f"(D[39]), "+f"(D[40]), "+f"(D[41]), "+f"(D[42]), "+f"(D[43]), "+f"(D[44]), "+f"(D[45]), "+f"(D[46]), "+f"(D[47]), "+f"(D[48]), "+f"(D[49]), "+f"(D[50]), "+f"(D[51]), "+f"(D[52]), "+f"(D[53]), "+f"(D[54]), "+f"(D[55]), "+f"(D[56]), "+f"(D[57]), "+f"(D[58]), "+f"(D[59]), "+f"(D[60]), "+f"(D[61]), "+f"(D[62]), "+f"(D[63])
               : "l"(DescA), "l"(DescB), "r"(1)
               : "memory");
  // clang-format on
}

__device__ __forceinline__ void wgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmmaWaitAll() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ __forceinline__ void fenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Copy the 128 x 64 tiles of A (rows BlockRow..) and B (rows BlockCol..) at
// K0 into one stage, 16-byte chunk c of row r stored at chunk c ^ (r % 8).
__device__ __forceinline__ void loadStageSwizzled(uint32_t Stage,
                                                  const __nv_bfloat16 *A,
                                                  const __nv_bfloat16 *B, int K,
                                                  int BlockRow, int BlockCol,
                                                  int K0) {
#pragma unroll
  for (int I = 0; I < 4; ++I) {
    int Chunk = threadIdx.x + I * THREADS; // 0..1023: 128 rows x 8 chunks
    int Row = Chunk >> 3;
    int Col = Chunk & 7;
    uint32_t Off = Row * 128 + ((Col ^ (Row & 7)) << 4);
    const __nv_bfloat16 *GA = A + (size_t)(BlockRow + Row) * K + K0 + Col * 8;
    const __nv_bfloat16 *GB = B + (size_t)(BlockCol + Row) * K + K0 + Col * 8;
    asm volatile(
        "cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(Stage + Off),
        "l"(GA));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                     Stage + WTILE + Off),
                 "l"(GB));
  }
}

__device__ __forceinline__ void gemmWgmma(const __nv_bfloat16 *__restrict__ A,
                                          const __nv_bfloat16 *__restrict__ B,
                                          float *__restrict__ C, int M, int N,
                                          int K, unsigned char *SmemRaw) {
  const uint32_t Base = (smemAddr(SmemRaw) + 1023) & ~1023u;
  const int BlockRow = blockIdx.y * 128;
  const int BlockCol = blockIdx.x * 128;
  const int WarpGroup = threadIdx.x >> 7; // 0, 1: rows 0-63, 64-127
  float D[64];
#pragma unroll
  for (int I = 0; I < 64; ++I)
    D[I] = 0.0f;

  const int KTiles = K / WBK;
#pragma unroll
  for (int S = 0; S < STAGES - 1; ++S) {
    if (S < KTiles)
      loadStageSwizzled(Base + S * WSTAGE, A, B, K, BlockRow, BlockCol,
                        S * WBK);
    cpAsyncCommit();
  }
  for (int KT = 0; KT < KTiles; ++KT) {
    cpAsyncWait<STAGES - 2>();
    fenceProxyAsync(); // cp.async wrote the stage; wgmma reads it (async proxy)
    __syncthreads();
    int Next = KT + STAGES - 1;
    if (Next < KTiles)
      loadStageSwizzled(Base + (Next % STAGES) * WSTAGE, A, B, K, BlockRow,
                        BlockCol, Next * WBK);
    cpAsyncCommit();

    uint32_t SA = Base + (KT % STAGES) * WSTAGE + WarpGroup * 64 * 128;
    uint32_t SB = Base + (KT % STAGES) * WSTAGE + WTILE;
    wgmmaFence();
#pragma unroll
    for (int KK = 0; KK < WBK / 16; ++KK)
      wgmma128(D, gmmaDesc(SA + KK * 32), gmmaDesc(SB + KK * 32));
    wgmmaCommit();
    wgmmaWaitAll();
  }
  cpAsyncWait<0>();

  // Accumulator layout of m64nNk16 (f32): warp w of the warpgroup holds rows
  // 16w + g and 16w + g + 8; D[4j..4j+3] are columns 8j + 2t, 8j + 2t + 1.
  const int Lane = threadIdx.x & 31;
  const int WarpInGroup = (threadIdx.x >> 5) & 3;
  const int G = Lane >> 2;
  const int T = Lane & 3;
  const int Row = BlockRow + WarpGroup * 64 + WarpInGroup * 16 + G;
#pragma unroll
  for (int J = 0; J < 16; ++J) {
    int Col = BlockCol + J * 8 + T * 2;
    *reinterpret_cast<float2 *>(C + (size_t)Row * N + Col) =
        make_float2(D[4 * J], D[4 * J + 1]);
    *reinterpret_cast<float2 *>(C + (size_t)(Row + 8) * N + Col) =
        make_float2(D[4 * J + 2], D[4 * J + 3]);
  }
}
#endif // __CUDA_ARCH_FEAT_SM90_ALL

extern "C" __global__ void __launch_bounds__(THREADS)
    kdl_gemm_bf16_nt(const __nv_bfloat16 *__restrict__ A,
                     const __nv_bfloat16 *__restrict__ B, float *__restrict__ C,
                     int M, int N, int K) {
  extern __shared__ __align__(16) unsigned char SmemRaw[];
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  gemmWgmma(A, B, C, M, N, K, SmemRaw);
#else
  gemmMmaSync(A, B, C, M, N, K, SmemRaw);
#endif
}

extern "C" __global__ void kdl_ref_gemm(const __nv_bfloat16 *__restrict__ A,
                                        const __nv_bfloat16 *__restrict__ B,
                                        float *__restrict__ C, int M, int N,
                                        int K) {
  int Col = blockIdx.x * blockDim.x + threadIdx.x;
  int Row = blockIdx.y * blockDim.y + threadIdx.y;
  if (Row >= M || Col >= N)
    return;
  const __nv_bfloat16 *PA = A + (size_t)Row * K;
  const __nv_bfloat16 *PB = B + (size_t)Col * K;
  float Sum = 0.0f;
  for (int I = 0; I < K; ++I)
    Sum = fmaf(__bfloat162float(PA[I]), __bfloat162float(PB[I]), Sum);
  C[(size_t)Row * N + Col] = Sum;
}
