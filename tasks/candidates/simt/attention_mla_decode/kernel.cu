// A plain SIMT MLA decode (mla_paged_decode_h16_ckv512_kpe64_ps1): one warp per (sequence, query
// head), fp32 online softmax, no architecture-specific instructions.
//   q_nope [B, H, 512], q_pe [B, H, 64] bf16; ckv_cache [num_pages, 1, 512], kpe_cache
//   [num_pages, 1, 64] bf16, read through the CSR page table kv_indptr [B + 1], kv_indices i32;
//   output [B, H, 512] bf16; lse [B, H] f32, natural log.
// Every head reads the one latent KV head: s_j = scale * (q_nope . ckv_j + q_pe . kpe_j) and the
// values are the ckv rows. Lane l holds latent dims 16l..16l+15 and rotary dims 2l, 2l+1.
// `mode` selects the engine's known-bad variant: 0 correct, scale = 1/sqrt(128 + 64) (DeepSeek's
// query-key head dim before the weights are absorbed); 1 numerically wrong: scale = 1/sqrt(576),
// the width the kernel multiplies over, the mistake of a kernel that takes the scale from the
// shapes it sees. The logits grow by sqrt(3), which moves lse and output on every workload.
#include <cuda_bf16.h>

#define CKV 512
#define KPE 64

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Eight consecutive bf16 (16 bytes, 16-byte aligned) as floats.
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float* out) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 h = *reinterpret_cast<const __nv_bfloat162*>(&w[i]);
    out[2 * i] = __low2float(h);
    out[2 * i + 1] = __high2float(h);
  }
}

// Two consecutive bf16 (4 bytes, 4-byte aligned) as floats.
__device__ __forceinline__ void load2(const __nv_bfloat16* p, float* out) {
  const __nv_bfloat162 h = *reinterpret_cast<const __nv_bfloat162*>(p);
  out[0] = __low2float(h);
  out[1] = __high2float(h);
}

extern "C" __global__ void mla_decode_simt(const __nv_bfloat16* __restrict__ q_nope,
                                           const __nv_bfloat16* __restrict__ q_pe,
                                           const __nv_bfloat16* __restrict__ ckv_cache,
                                           const __nv_bfloat16* __restrict__ kpe_cache,
                                           const int* __restrict__ kv_indptr,
                                           const int* __restrict__ kv_indices,
                                           __nv_bfloat16* __restrict__ output,
                                           float* __restrict__ lse, unsigned batch,
                                           unsigned heads, int mode) {
  const unsigned long long warp =
      ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned lane = threadIdx.x & 31;
  if (warp >= (unsigned long long)batch * heads) return;
  const int b = (int)(warp / heads);
  const float NEG_INF = __int_as_float(0xff800000);  // NVRTC has no INFINITY
  // 1/sqrt(192), or (mode 1, wrong) 1/sqrt(576).
  const float scale = mode == 1 ? 0.041666666666666664f : 0.07216878364870323f;

  float qc[16], qr[2], acc[16];
  load8(q_nope + warp * CKV + 16 * lane, qc);
  load8(q_nope + warp * CKV + 16 * lane + 8, qc + 8);
  load2(q_pe + warp * KPE + 2 * lane, qr);
  for (int e = 0; e < 16; ++e) {
    qc[e] *= scale;
    acc[e] = 0.0f;
  }
  qr[0] *= scale;
  qr[1] *= scale;
  float m = NEG_INF, l = 0.0f;
  const int begin = kv_indptr[b], end = kv_indptr[b + 1];
  for (int at = begin; at < end; ++at) {
    const size_t page = (size_t)kv_indices[at];
    float c[16], r[2];
    load8(ckv_cache + page * CKV + 16 * lane, c);
    load8(ckv_cache + page * CKV + 16 * lane + 8, c + 8);
    load2(kpe_cache + page * KPE + 2 * lane, r);
    float part = qr[0] * r[0] + qr[1] * r[1];
    for (int e = 0; e < 16; ++e) part += qc[e] * c[e];
    const float s = warp_sum(part);
    const float mn = fmaxf(m, s);
    const float corr = expf(m - mn), p = expf(s - mn);  // m = -inf first: corr = 0
    l = l * corr + p;
    for (int e = 0; e < 16; ++e) acc[e] = acc[e] * corr + p * c[e];
    m = mn;
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  __nv_bfloat162* out = reinterpret_cast<__nv_bfloat162*>(output + warp * CKV + 16 * lane);
  for (int e = 0; e < 8; ++e) {
    __nv_bfloat162 o;
    o.x = __float2bfloat16(acc[2 * e] * inv);
    o.y = __float2bfloat16(acc[2 * e + 1] * inv);
    out[e] = o;
  }
  if (lane == 0) lse[warp] = l > 0.0f ? m + logf(l) : NEG_INF;
}
