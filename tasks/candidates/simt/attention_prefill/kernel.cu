// A plain SIMT causal GQA prefill (gqa_{ragged,paged}_prefill_causal_h*_kv*_d128[_ps1]): one warp
// per (query token, query head), fp32 online softmax, no architecture-specific instructions.
//   q [total_q, H, 128] bf16; keys ragged (k, v [total_kv, HKV, 128]) or paged (k_cache, v_cache
//   [num_pages, 1, HKV, 128] through kv_indices); qo_indptr, kv_indptr [B + 1] i32;
//   output [total_q, H, 128] bf16; lse [total_q, H] f32, natural log, scale = 1/sqrt(128).
// Token t belongs to the sequence b with qo_indptr[b] <= t < qo_indptr[b + 1] (binary search);
// as its i-th query it sees keys j <= i + kv_len - q_len. Query head h reads KV head
// h / (H / HKV). Lane l holds dims 4l..4l+3.
// `mode` selects the engine's known-bad variant: 0 correct; 1 numerically wrong: the causal mask
// aligned to the first key (j <= i) instead of the last, the mistake of a kernel that ignores the
// cached prefix; it differs only on sequences with fewer queries than keys.
#include <cuda_bf16.h>

#define HEAD_DIM 128

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

extern "C" __global__ void gqa_prefill_simt(const __nv_bfloat16* __restrict__ q,
                                            const __nv_bfloat16* __restrict__ k,
                                            const __nv_bfloat16* __restrict__ v,
                                            const int* __restrict__ qo_indptr,
                                            const int* __restrict__ kv_indptr,
                                            const int* __restrict__ kv_indices,
                                            __nv_bfloat16* __restrict__ output,
                                            float* __restrict__ lse, unsigned total_q,
                                            unsigned heads, unsigned kv_heads,
                                            unsigned len_indptr, int paged, int mode) {
  const unsigned long long warp =
      ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned lane = threadIdx.x & 31;
  if (warp >= (unsigned long long)total_q * heads) return;
  const int t = (int)(warp / heads), h = (int)(warp % heads);
  const int g = h / (int)(heads / kv_heads);
  const float NEG_INF = __int_as_float(0xff800000);  // NVRTC has no INFINITY
  const float scale = 0.08838834764831845f;          // 1/sqrt(128)

  int lo = 0, hi = (int)len_indptr - 1;  // qo_indptr[lo] <= t < qo_indptr[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (qo_indptr[mid] <= t) lo = mid; else hi = mid;
  }
  const int b = lo, i = t - qo_indptr[b];
  const int q_len = qo_indptr[b + 1] - qo_indptr[b];
  const int kv_begin = kv_indptr[b], kv_len = kv_indptr[b + 1] - kv_begin;
  const int last = mode == 1 ? i : i + kv_len - q_len;  // the last key this query sees

  float qr[4], acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  load4(q + warp * HEAD_DIM + 4 * lane, qr);
  for (int e = 0; e < 4; ++e) qr[e] *= scale;
  float m = NEG_INF, l = 0.0f;
  for (int j = 0; j <= last && j < kv_len; ++j) {
    const int row = paged ? kv_indices[kv_begin + j] : kv_begin + j;
    const size_t off = ((size_t)row * kv_heads + g) * HEAD_DIM + 4 * lane;
    float kr[4], vr[4];
    load4(k + off, kr);
    load4(v + off, vr);
    const float s = warp_sum(qr[0] * kr[0] + qr[1] * kr[1] + qr[2] * kr[2] + qr[3] * kr[3]);
    const float mn = fmaxf(m, s);
    const float corr = expf(m - mn), p = expf(s - mn);  // m = -inf first: corr = 0
    l = l * corr + p;
    for (int e = 0; e < 4; ++e) acc[e] = acc[e] * corr + p * vr[e];
    m = mn;
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  __nv_bfloat162 o0, o1;
  o0.x = __float2bfloat16(acc[0] * inv);
  o0.y = __float2bfloat16(acc[1] * inv);
  o1.x = __float2bfloat16(acc[2] * inv);
  o1.y = __float2bfloat16(acc[3] * inv);
  __nv_bfloat162* out = reinterpret_cast<__nv_bfloat162*>(output + warp * HEAD_DIM + 4 * lane);
  out[0] = o0;
  out[1] = o1;
  if (lane == 0) lse[warp] = l > 0.0f ? m + logf(l) : NEG_INF;
}
