// bf16 GEMM C = A @ B^T for Hopper (sm_90a): the suite's hand-written reference entry.
// A is [M, K], B is [N, K] (both K-major), C is [M, N] bf16 row-major, fp32 accumulation.
// The skeleton (persistent, warp-specialised, TMA ring, wgmma consumers) is common/gemm_ws.cuh;
// here: 128 x 256 tiles, 64-element (128-byte) k-blocks, 4 stages, wgmma m64n256k16; split-K
// when the shape has fewer tiles than SMs (the plans choose `splits`).
#include "gemm_ws.cuh"

// The second launch of a split-K plan (see finish_splits); any grid.
extern "C" __global__ void __launch_bounds__(256)
    gemm_ws_finish(const float* __restrict__ ws, u16* __restrict__ c, u32 m, u32 n, u32 splits) {
  gemm_ws::finish_splits(ws, c, m, n, splits);
}

struct Bf16 {
  static constexpr u32 BN = 256, BK_BYTES = 128, STAGES = 4, ELEM_BYTES = 2, PROMOTE = 0;
  static __device__ __forceinline__ void mma(float (&d)[BN / 2], u64 da, u64 db, u32 accumulate) {
    wgmma_ss_bf16_m64n256k16(d, da, db, accumulate);
  }
};
static_assert(gemm_ws::shared_bytes<Bf16>() == 197696, "the plans' shared_mem");

extern "C" __global__ void __launch_bounds__(gemm_ws::THREADS, 1)
    gemm_bf16_ws(const __grid_constant__ TmaMap tm_a, const __grid_constant__ TmaMap tm_b,
                 u16* __restrict__ c, float* __restrict__ ws, u32 m, u32 n, u32 k, u32 splits) {
  gemm_ws::run<Bf16>(&tm_a, &tm_b, c, ws, m, n, k, splits, 1.f);
}
