// A plain SIMT paged GQA decode (gqa_paged_decode_h32_kv8_d128_ps1): one block of 8 warps per
// (sequence b, KV head g), fp32 online softmax, no architecture-specific instructions.
//   q [B, 32, 128] bf16; k_cache, v_cache [num_pages, 1, 8, 128] bf16; kv_indptr [B+1] i32;
//   kv_indices [kv_indptr[B]] i32 (page = token numbers); output [B, 32, 128] bf16;
//   lse [B, 32] f32, natural log of the sum of exp(scale * q.k), scale = 1/sqrt(128).
// The 4 query heads 4g..4g+3 share KV head g, so each K/V row is read once for all four. Warp w
// takes the tokens t = w, w+8, w+16, ... of the sequence (any length: 0 writes zeros and
// lse = -inf); lane l holds dims 4l..4l+3 of the 4 query rows and of their 4 accumulators. Each
// warp keeps its own running max m, sum s and accumulator; the 8 partial states are merged
// through shared memory at the end.
// `mode` selects the engine's known-bad variant: 0 correct; 1 numerically wrong: ignores
// kv_indices and reads page kv_indptr[b] + t for token t, i.e. assumes the sequence's pages are
// laid out contiguously in the order of the CSR table (the cheat a kernel that skips the
// indirection makes). The pages it reads then hold other sequences' keys or random data, so
// the output and the lse are wrong by far more than the tolerance.
#include <cuda_bf16.h>

#define QO_HEADS 32
#define KV_HEADS 8
#define GROUP 4  // QO_HEADS / KV_HEADS
#define HEAD_DIM 128
#define WARPS 8

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Four consecutive bf16 (8 bytes, 8-byte aligned) as floats.
__device__ __forceinline__ void load4(const __nv_bfloat16* p, float* out) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const __nv_bfloat162 a = *reinterpret_cast<const __nv_bfloat162*>(&raw.x);
  const __nv_bfloat162 b = *reinterpret_cast<const __nv_bfloat162*>(&raw.y);
  out[0] = __low2float(a);
  out[1] = __high2float(a);
  out[2] = __low2float(b);
  out[3] = __high2float(b);
}

extern "C" __global__ void gqa_decode_simt(const __nv_bfloat16* __restrict__ q,
                                           const __nv_bfloat16* __restrict__ k_cache,
                                           const __nv_bfloat16* __restrict__ v_cache,
                                           const int* __restrict__ kv_indptr,
                                           const int* __restrict__ kv_indices,
                                           __nv_bfloat16* __restrict__ output,
                                           float* __restrict__ lse, unsigned batch_size,
                                           int mode) {
  __shared__ float s_m[WARPS][GROUP], s_l[WARPS][GROUP];
  __shared__ float s_acc[WARPS][GROUP][HEAD_DIM];
  const unsigned g = blockIdx.x, b = blockIdx.y;
  if (b >= batch_size || g >= KV_HEADS) return;
  const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const float NEG_INF = __int_as_float(0xff800000);  // NVRTC has no INFINITY
  const float scale = 0.08838834764831845f;          // 1/sqrt(128)

  const int begin = kv_indptr[b], end = kv_indptr[b + 1];
  float qr[GROUP][4], acc[GROUP][4], m[GROUP], l[GROUP];
#pragma unroll
  for (int h = 0; h < GROUP; ++h) {
    const size_t row = ((size_t)b * QO_HEADS + g * GROUP + h) * HEAD_DIM;
    load4(q + row + 4 * lane, qr[h]);
    for (int e = 0; e < 4; ++e) {
      qr[h][e] *= scale;
      acc[h][e] = 0.0f;
    }
    m[h] = NEG_INF;
    l[h] = 0.0f;
  }

  for (int t = begin + (int)warp; t < end; t += WARPS) {
    const int page = mode == 1 ? t : kv_indices[t];
    const size_t off = ((size_t)page * KV_HEADS + g) * HEAD_DIM + 4 * lane;
    float kr[4], vr[4];
    load4(k_cache + off, kr);
    load4(v_cache + off, vr);
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
      float s = qr[h][0] * kr[0] + qr[h][1] * kr[1] + qr[h][2] * kr[2] + qr[h][3] * kr[3];
      s = warp_sum(s);
      const float mn = fmaxf(m[h], s);
      const float corr = expf(m[h] - mn), p = expf(s - mn);  // m = -inf first: corr = 0
      l[h] = l[h] * corr + p;
      for (int e = 0; e < 4; ++e) acc[h][e] = acc[h][e] * corr + p * vr[e];
      m[h] = mn;
    }
  }

  // Merge the 8 warps' partial states (a warp that saw no token has m = -inf, l = 0).
#pragma unroll
  for (int h = 0; h < GROUP; ++h) {
    if (lane == 0) {
      s_m[warp][h] = m[h];
      s_l[warp][h] = l[h];
    }
    for (int e = 0; e < 4; ++e) s_acc[warp][h][4 * lane + e] = acc[h][e];
  }
  __syncthreads();
  // 256 threads, 4 heads x 128 dims: thread i owns head i / 64 and dims 2 (i % 64), +1.
  const unsigned h = threadIdx.x / 64, d = 2 * (threadIdx.x % 64);
  float M = NEG_INF;
  for (int w = 0; w < WARPS; ++w) M = fmaxf(M, s_m[w][h]);
  float L = 0.0f, o0 = 0.0f, o1 = 0.0f;
  for (int w = 0; w < WARPS; ++w) {
    if (s_l[w][h] == 0.0f) continue;  // no tokens in this warp
    const float f = expf(s_m[w][h] - M);
    L += f * s_l[w][h];
    o0 += f * s_acc[w][h][d];
    o1 += f * s_acc[w][h][d + 1];
  }
  const unsigned head = g * GROUP + h;
  const size_t orow = ((size_t)b * QO_HEADS + head) * HEAD_DIM;
  const float inv = L > 0.0f ? 1.0f / L : 0.0f;
  __nv_bfloat162 o;
  o.x = __float2bfloat16(o0 * inv);
  o.y = __float2bfloat16(o1 * inv);
  *reinterpret_cast<__nv_bfloat162*>(output + orow + d) = o;
  if (d == 0) lse[(size_t)b * QO_HEADS + head] = L > 0.0f ? M + logf(L) : NEG_INF;
}
