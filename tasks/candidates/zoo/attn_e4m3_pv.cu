// The cheat zoo, a precision downgrade: tasks/candidates/simt/attention_fwd/kernel.cu (one warp
// per query row, online softmax in fp32) with the probabilities rounded to e4m3 (3 mantissa
// bits) for the P V product, as an fp8 P V on the tensor cores would (half the bytes, twice the
// rate); the running sum and the LSE keep fp32 P, so the LSE is exact. Its O stays inside the
// elementwise rule (about 0.4 of it), which is as large as O itself; suite 1.3.0's bound on the
// relative L2 error (8e-3; honest bf16 kernels 2.3e-3, this one about 2.4e-2) fails it.
//   -> numerical. Only mode 0 and causal 0/1 are used here.
#include <cuda_bf16.h>

#define PER 8  // D / 32, rounded up, for D <= 256

// Round-to-nearest-even to e4m3 for 0 <= x <= 1 (normals from 2^-6, subnormals in steps of 2^-9).
__device__ __forceinline__ float round_e4m3(float x) {
  if (x < 0.015625f) return rintf(x * 512.0f) * (1.0f / 512.0f);
  const unsigned b = __float_as_uint(x);
  return __uint_as_float((b + 0x7FFFFu + ((b >> 20) & 1u)) & 0xFFF00000u);
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void attn_fwd_e4m3_pv(const __nv_bfloat16* __restrict__ Q,
                                         const __nv_bfloat16* __restrict__ K,
                                         const __nv_bfloat16* __restrict__ V,
                                         __nv_bfloat16* __restrict__ O, float* __restrict__ LSE,
                                         unsigned BH, unsigned S, unsigned D, int causal,
                                         int mode) {
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (mode == 2) {
    // Wait for a flag nobody sets: the harness poisons O with 0xFF bytes before the launch.
    // (An empty `while (1)` is not enough: ptxas deletes side-effect-free infinite loops.)
    while (*(volatile unsigned short*)O == (unsigned short)~0u) __nanosleep(1000);
  }
  if (mode == 3) ((volatile float*)0x10)[threadIdx.x] = 1.0f;
  if (mode == 4) asm volatile("trap;");
  if (warp >= BH * S) return;
  const unsigned bh = warp / S, i = warp % S;
  const float scale = rsqrtf((float)D);
  const size_t base = (size_t)bh * S * D;
  float q[PER], acc[PER];
  for (int p = 0; p < PER; ++p) {
    unsigned d = lane + 32 * p;
    q[p] = d < D ? __bfloat162float(Q[base + (size_t)i * D + d]) : 0.0f;
    acc[p] = 0.0f;
  }
  float m = __int_as_float(0xff800000), l = 0.0f;  // -inf (NVRTC has no INFINITY)
  unsigned jend = causal ? i + 1 : S;
  if (mode == 1 && jend > 1) jend -= 1;
  for (unsigned j = 0; j < jend; ++j) {
    float s = 0.0f;
    for (int p = 0; p < PER; ++p) {
      unsigned d = lane + 32 * p;
      if (d < D) s += q[p] * __bfloat162float(K[base + (size_t)j * D + d]);
    }
    s = warp_sum(s) * scale;
    const float mn = fmaxf(m, s), corr = __expf(m - mn), e = __expf(s - mn);
    l = l * corr + e;
    for (int p = 0; p < PER; ++p) {
      unsigned d = lane + 32 * p;
      if (d < D)
        acc[p] = acc[p] * corr + round_e4m3(e) * __bfloat162float(V[base + (size_t)j * D + d]);
    }
    m = mn;
  }
  for (int p = 0; p < PER; ++p) {
    unsigned d = lane + 32 * p;
    if (d < D) O[base + (size_t)i * D + d] = __float2bfloat16(acc[p] / l);
  }
  if (lane == 0) LSE[(size_t)bh * S + i] = m + logf(l);
}
