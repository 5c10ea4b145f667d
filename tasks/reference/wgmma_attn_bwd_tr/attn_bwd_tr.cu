// Attention backward (bf16, D = 64 or 128) for Hopper (sm_90a), second version: v1
// (wgmma_attn_bwd/attn_bwd.cu, whose comment describes the three launches and the main kernel)
// with dQ's partial sums added by the TMA instead of by every thread. v1's threads each issue 16
// red.global.add.v2.f32 per query block (64 x 64 fp32 per warpgroup, in 8-byte pieces); here
// the warpgroup writes its partial sums to shared memory (two 32-column boxes with the 128-byte
// swizzle, two buffers so that one is written while the TMA reads the other) and one thread adds
// each box to the workspace with cp.reduce.async.bulk.tensor (full 128-byte lines; rows past S
// clipped by the TMA), as FlashAttention-3 does. The map over the fp32 workspace is the plan's
// fifth tensor map.
#include "attn_bwd.cuh"

static_assert(attn_bwd::shared_bytes_tr<128>() == 216064, "the d128 plans' shared_mem");
static_assert(attn_bwd::shared_bytes_tr<64>() == 150528, "the d64 plans' shared_mem");

extern "C" __global__ void __launch_bounds__(attn_bwd::THREADS, 1)
    attn_bwd_main_tr_d128(const __grid_constant__ TmaMap tm_q, const __grid_constant__ TmaMap tm_k,
                          const __grid_constant__ TmaMap tm_v, const __grid_constant__ TmaMap tm_do,
                          const __grid_constant__ TmaMap tm_dq, const float* __restrict__ lse,
                          const float* __restrict__ delta, u16* __restrict__ dk,
                          u16* __restrict__ dv, u32 s, int causal) {
  attn_bwd::run<128, true>(&tm_q, &tm_k, &tm_v, &tm_do, lse, delta, nullptr, dk, dv, s, causal,
                           &tm_dq);
}

extern "C" __global__ void __launch_bounds__(attn_bwd::THREADS, 1)
    attn_bwd_main_tr_d64(const __grid_constant__ TmaMap tm_q, const __grid_constant__ TmaMap tm_k,
                         const __grid_constant__ TmaMap tm_v, const __grid_constant__ TmaMap tm_do,
                         const __grid_constant__ TmaMap tm_dq, const float* __restrict__ lse,
                         const float* __restrict__ delta, u16* __restrict__ dk,
                         u16* __restrict__ dv, u32 s, int causal) {
  attn_bwd::run<64, true>(&tm_q, &tm_k, &tm_v, &tm_do, lse, delta, nullptr, dk, dv, s, causal,
                          &tm_dq);
}
