// The cheat zoo, a path that depends on the shape: the suite's reference TMA + wgmma GEMM
// (tasks/reference/wgmma_gemm/gemm.cu, included unchanged) for M <= 128, and for larger M a
// plain warp-level mma.sync.m16n8k16 GEMM reading A and B from global memory (the tensor cores'
// older, non-Hopper path: HMMA, no wgmma, no TMA). Counted on one small workload, the kernel
// looks like an honest wgmma GEMM; on every larger one it is not.
//   -> correct. Counted on every workload (suite 1.3), graded on the worst performance workload:
//      at M232 no wgmma executes and the mma.sync FLOPs are all of the task's, so wgmma is not
//      executed on every workload (not correct with arch) and the MMA share is 0 (not on target);
//      at M70 alone the grade would have been on target.
// Built by nvcc (tasks/ptx-sources.txt) into shape_switch.ptx.
#include "gemm.cu"

// C[M, N] = A[M, K] @ B[N, K]^T in bf16 with fp32 accumulation: each warp takes 16 x 8 tiles
// of C in turn (grid-stride over all warps of the grid) and walks K in steps of 16.
__device__ __forceinline__ void gemm_mma_sync(const u16* __restrict__ a, const u16* __restrict__ b,
                                              u16* __restrict__ c, u32 m, u32 n, u32 k) {
  const u32 lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const u32 warps = gridDim.x * (blockDim.x >> 5);
  const u32 tiles_n = n / 8, tiles = ((m + 15) / 16) * tiles_n;
  for (u32 tile = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); tile < tiles;
       tile += warps) {
    const u32 r0 = (tile / tiles_n) * 16, c0 = (tile % tiles_n) * 8;
    const u32 ra = r0 + g, rb = r0 + g + 8;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (u32 k0 = 0; k0 < k; k0 += 16) {
      const u32 ka = k0 + 2 * t;
      const u32* pa = reinterpret_cast<const u32*>(a);
      const u32* pb = reinterpret_cast<const u32*>(b);
      const u32 a0 = ra < m ? pa[((u64)ra * k + ka) / 2] : 0u;
      const u32 a1 = rb < m ? pa[((u64)rb * k + ka) / 2] : 0u;
      const u32 a2 = ra < m ? pa[((u64)ra * k + ka + 8) / 2] : 0u;
      const u32 a3 = rb < m ? pa[((u64)rb * k + ka + 8) / 2] : 0u;
      const u32 b0 = pb[((u64)(c0 + g) * k + ka) / 2];
      const u32 b1 = pb[((u64)(c0 + g) * k + ka + 8) / 2];
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
          "{%8, %9}, {%0, %1, %2, %3};"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    if (ra < m) st_global_b32(c + (u64)ra * n + c0 + 2 * t, pack_bf16(d[0], d[1]));
    if (rb < m) st_global_b32(c + (u64)rb * n + c0 + 2 * t, pack_bf16(d[2], d[3]));
  }
}

extern "C" __global__ void __launch_bounds__(gemm_ws::THREADS, 1)
    gemm_shape_switch(const __grid_constant__ TmaMap tm_a, const __grid_constant__ TmaMap tm_b,
                      const u16* __restrict__ a, const u16* __restrict__ b, u16* __restrict__ c,
                      float* __restrict__ ws, u32 m, u32 n, u32 k, u32 splits) {
  if (m <= 128) {
    gemm_ws::run<Bf16>(&tm_a, &tm_b, c, ws, m, n, k, splits, 1.f);
  } else {
    gemm_mma_sync(a, b, c, m, n, k);
  }
}

// The split-K finish of the wgmma path (the mma.sync path stores C itself).
extern "C" __global__ void __launch_bounds__(256)
    shape_switch_finish(const float* __restrict__ ws, u16* __restrict__ c, u32 m, u32 n,
                        u32 splits) {
  if (m <= 128) gemm_ws::finish_splits(ws, c, m, n, splits);
}
