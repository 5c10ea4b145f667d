// bf16 and fp8 GEMMs for Hopper (sm_90a) on the v2 skeleton (common/gemm_sk.cuh): the v1
// reference GEMMs' tiles, rings and consumers (common/gemm_ws.cuh) with stream-K for the tiles
// past the last whole wave, and optionally clusters of 2 CTAs sharing B by TMA multicast.
// bf16: C = A @ B^T, A [M, K], B [N, K], C [M, N], 128 x 256 tiles, 4 stages, wgmma m64n256k16.
// fp8: C = scale_a * scale_b * (A @ B^T) in e4m3, 128 x 128 tiles, 6 stages, wgmma m64n128k32,
// promoted to fp32 every 128-byte k-block.
#include "gemm_sk.cuh"

namespace {

struct Bf16 {
  static constexpr u32 BN = 256, BK_BYTES = 128, STAGES = 4, ELEM_BYTES = 2, PROMOTE = 0;
  static constexpr u32 CLUSTER = 1;
  static __device__ __forceinline__ void mma(float (&d)[BN / 2], u64 da, u64 db, u32 accumulate) {
    wgmma_ss_bf16_m64n256k16(d, da, db, accumulate);
  }
};
static_assert(gemm_ws::shared_bytes<Bf16>() == 197696, "the plans' shared_mem");

struct Bf16x2 : Bf16 {
  static constexpr u32 CLUSTER = 2;
};

struct E4m3x2 {
  static constexpr u32 BN = 128, BK_BYTES = 128, STAGES = 6, ELEM_BYTES = 1, PROMOTE = 4;
  static constexpr u32 CLUSTER = 2;
  static __device__ __forceinline__ void mma(float (&d)[BN / 2], u64 da, u64 db, u32 accumulate) {
    wgmma_ss_e4m3_m64n128k32(d, da, db, accumulate);
  }
};
static_assert(gemm_ws::shared_bytes<E4m3x2>() == 197728, "the fp8 plan's shared_mem");

}  // namespace

// One CTA per SM; `splits` = 0 for stream-K (the plans), >= 1 for v1's units.
extern "C" __global__ void __launch_bounds__(gemm_ws::THREADS, 1)
    gemm_bf16_sk(const __grid_constant__ TmaMap tm_a, const __grid_constant__ TmaMap tm_b,
                 u16* __restrict__ c, float* __restrict__ ws, u32 m, u32 n, u32 k, u32 splits) {
  gemm_ws::run_sk<Bf16>(&tm_a, &tm_b, c, ws, m, n, k, splits, 1.f);
}

// Clusters of 2 CTAs (grid even): tile rows 2i and 2i + 1 of one tile column, B multicast.
extern "C" __global__ void __launch_bounds__(gemm_ws::THREADS, 1)
    gemm_bf16_sk_x2(const __grid_constant__ TmaMap tm_a, const __grid_constant__ TmaMap tm_b,
                    u16* __restrict__ c, float* __restrict__ ws, u32 m, u32 n, u32 k, u32 splits) {
  gemm_ws::run_sk<Bf16x2>(&tm_a, &tm_b, c, ws, m, n, k, splits, 1.f);
}

// The second launch of a stream-K plan: `workers` is the first launch's grid (CTAs).
extern "C" __global__ void __launch_bounds__(256)
    gemm_sk_finish(float* __restrict__ ws, u16* __restrict__ c, u32 m, u32 n, u32 workers) {
  gemm_ws::finish_stream_k<256, 1>(ws, c, m, n, workers);
}

// The same after gemm_bf16_sk_x2: `workers` is its grid / 2 (clusters).
extern "C" __global__ void __launch_bounds__(256)
    gemm_sk_finish_x2(float* __restrict__ ws, u16* __restrict__ c, u32 m, u32 n, u32 workers) {
  gemm_ws::finish_stream_k<256, 2>(ws, c, m, n, workers);
}

// fp8 in clusters of 2 CTAs (grid even), whole tiles (no stream-K: v1 found split-K slower
// for fp8 at M = 70 and 952).
extern "C" __global__ void __launch_bounds__(gemm_ws::THREADS, 1)
    gemm_fp8_x2(const __grid_constant__ TmaMap tm_a, const __grid_constant__ TmaMap tm_b,
                u16* __restrict__ c, const float* __restrict__ scale_a,
                const float* __restrict__ scale_b, u32 m, u32 n, u32 k) {
  gemm_ws::run_sk<E4m3x2>(&tm_a, &tm_b, c, nullptr, m, n, k, 1, *scale_a * *scale_b);
}
