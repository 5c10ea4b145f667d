// A plain SIMT attention backward: three launches (Delta = rowsum(dO * O); dQ with one warp
// per query row; dK and dV with one warp per key row), fp32 accumulation, no
// architecture-specific instructions. Tensors are [B*H, S, D] bf16, LSE [B*H, S] fp32,
// workspace Delta [B*H, S] fp32; scale 1/sqrt(D); D <= 256.
// `mode` (first launch) selects the engine's known-bad variants: 0 correct; 1 numerically
// wrong (Delta doubled); 2 never finishes (waits on a flag); 3 writes through an unmapped address; 4 `trap`.
#include <cuda_bf16.h>

#define PER 8

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float ld(const __nv_bfloat16* p) { return __bfloat162float(*p); }

extern "C" __global__ void attn_bwd_delta(const __nv_bfloat16* __restrict__ O,
                                          const __nv_bfloat16* __restrict__ dO,
                                          float* __restrict__ Delta, unsigned rows, unsigned D,
                                          int mode) {
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (mode == 2) {
    // Wait for a flag nobody sets: the harness poisons Delta with 0xFF bytes before the launch.
    // (An empty `while (1)` is not enough: ptxas deletes side-effect-free infinite loops.)
    while (*(volatile unsigned*)Delta == (unsigned)~0u) __nanosleep(1000);
  }
  if (mode == 3) ((volatile float*)0x10)[threadIdx.x] = 1.0f;
  if (mode == 4) asm volatile("trap;");
  if (warp >= rows) return;
  float s = 0.0f;
  for (unsigned d = lane; d < D; d += 32) s += ld(O + (size_t)warp * D + d) * ld(dO + (size_t)warp * D + d);
  s = warp_sum(s);
  if (lane == 0) Delta[warp] = mode == 1 ? 2.0f * s : s;
}

extern "C" __global__ void attn_bwd_dq(const __nv_bfloat16* __restrict__ Q,
                                       const __nv_bfloat16* __restrict__ K,
                                       const __nv_bfloat16* __restrict__ V,
                                       const __nv_bfloat16* __restrict__ dO,
                                       const float* __restrict__ LSE,
                                       const float* __restrict__ Delta,
                                       __nv_bfloat16* __restrict__ dQ, unsigned BH, unsigned S,
                                       unsigned D, int causal) {
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= BH * S) return;
  const unsigned bh = warp / S, i = warp % S;
  const size_t base = (size_t)bh * S * D, row = (size_t)bh * S + i;
  const float scale = rsqrtf((float)D), lse = LSE[row], delta = Delta[row];
  float q[PER], g[PER], acc[PER];
  for (int p = 0; p < PER; ++p) {
    unsigned d = lane + 32 * p;
    q[p] = d < D ? ld(Q + base + (size_t)i * D + d) : 0.0f;
    g[p] = d < D ? ld(dO + base + (size_t)i * D + d) : 0.0f;
    acc[p] = 0.0f;
  }
  const unsigned jend = causal ? i + 1 : S;
  for (unsigned j = 0; j < jend; ++j) {
    float s = 0.0f, dp = 0.0f;
    for (int p = 0; p < PER; ++p) {
      unsigned d = lane + 32 * p;
      if (d < D) {
        s += q[p] * ld(K + base + (size_t)j * D + d);
        dp += g[p] * ld(V + base + (size_t)j * D + d);
      }
    }
    s = warp_sum(s);
    dp = warp_sum(dp);
    const float ds = __expf(s * scale - lse) * (dp - delta);
    for (int p = 0; p < PER; ++p) {
      unsigned d = lane + 32 * p;
      if (d < D) acc[p] += ds * ld(K + base + (size_t)j * D + d);
    }
  }
  for (int p = 0; p < PER; ++p) {
    unsigned d = lane + 32 * p;
    if (d < D) dQ[base + (size_t)i * D + d] = __float2bfloat16(acc[p] * scale);
  }
}

extern "C" __global__ void attn_bwd_dkdv(const __nv_bfloat16* __restrict__ Q,
                                         const __nv_bfloat16* __restrict__ K,
                                         const __nv_bfloat16* __restrict__ V,
                                         const __nv_bfloat16* __restrict__ dO,
                                         const float* __restrict__ LSE,
                                         const float* __restrict__ Delta,
                                         __nv_bfloat16* __restrict__ dK,
                                         __nv_bfloat16* __restrict__ dV, unsigned BH, unsigned S,
                                         unsigned D, int causal) {
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= BH * S) return;
  const unsigned bh = warp / S, j = warp % S;
  const size_t base = (size_t)bh * S * D;
  const float scale = rsqrtf((float)D);
  float k[PER], v[PER], dk[PER], dv[PER];
  for (int p = 0; p < PER; ++p) {
    unsigned d = lane + 32 * p;
    k[p] = d < D ? ld(K + base + (size_t)j * D + d) : 0.0f;
    v[p] = d < D ? ld(V + base + (size_t)j * D + d) : 0.0f;
    dk[p] = 0.0f;
    dv[p] = 0.0f;
  }
  for (unsigned i = causal ? j : 0; i < S; ++i) {
    const size_t row = (size_t)bh * S + i;
    float s = 0.0f, dp = 0.0f;
    for (int p = 0; p < PER; ++p) {
      unsigned d = lane + 32 * p;
      if (d < D) {
        s += ld(Q + base + (size_t)i * D + d) * k[p];
        dp += ld(dO + base + (size_t)i * D + d) * v[p];
      }
    }
    s = warp_sum(s);
    dp = warp_sum(dp);
    const float pij = __expf(s * scale - LSE[row]);
    const float ds = pij * (dp - Delta[row]);
    for (int p = 0; p < PER; ++p) {
      unsigned d = lane + 32 * p;
      if (d < D) {
        dv[p] += pij * ld(dO + base + (size_t)i * D + d);
        dk[p] += ds * ld(Q + base + (size_t)i * D + d);
      }
    }
  }
  for (int p = 0; p < PER; ++p) {
    unsigned d = lane + 32 * p;
    if (d < D) {
      dK[base + (size_t)j * D + d] = __float2bfloat16(dk[p] * scale);
      dV[base + (size_t)j * D + d] = __float2bfloat16(dv[p]);
    }
  }
}
