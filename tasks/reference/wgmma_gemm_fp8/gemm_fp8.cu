// fp8 (e4m3) GEMM C = scale_a * scale_b * (A @ B^T) for Hopper (sm_90a): the suite's
// hand-written reference entry. A is [M, K], B is [N, K] (K-major, as fp8 wgmma requires),
// scale_a and scale_b are f32 [1] in device memory, C is [M, N] bf16 row-major.
// The skeleton is common/gemm_ws.cuh; here: 128 x 128 tiles, 128-element (128-byte) k-blocks,
// 6 stages, wgmma m64n128k32 e4m3, products promoted to fp32 registers every 128-byte k-block.
#include "gemm_ws.cuh"

// PROMOTE: how many wgmmas (32 bytes of K each) accumulate on the tensor core between
// promotions to the fp32 registers (4: once per 128-byte k-block).
struct E4m3 {
  static constexpr u32 BN = 128, BK_BYTES = 128, STAGES = 6, ELEM_BYTES = 1, PROMOTE = 4;
  static __device__ __forceinline__ void mma(float (&d)[BN / 2], u64 da, u64 db, u32 accumulate) {
    wgmma_ss_e4m3_m64n128k32(d, da, db, accumulate);
  }
};
static_assert(gemm_ws::shared_bytes<E4m3>() == 197728, "the plans' shared_mem");

extern "C" __global__ void __launch_bounds__(gemm_ws::THREADS, 1)
    gemm_fp8_ws(const __grid_constant__ TmaMap tm_a, const __grid_constant__ TmaMap tm_b,
                u16* __restrict__ c, const float* __restrict__ scale_a,
                const float* __restrict__ scale_b, u32 m, u32 n, u32 k) {
  // No split-K: measured on the H200 it made the fp8 GEMM slower at M = 70 and 952.
  gemm_ws::run<E4m3>(&tm_a, &tm_b, c, nullptr, m, n, k, 1, *scale_a * *scale_b);
}
