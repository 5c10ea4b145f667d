// A plain SIMT GDN prefill (gdn_prefill_qk{4,8}_v{8,16}_d128_k_last): one block of 128 threads per
// (sequence, value head), the token loop sequential, fp32 state in registers, no
// architecture-specific instructions.
//   q, k [T, HQK, 128], v [T, HV, 128], a, b [T, HV] bf16; A_log, dt_bias [HV] f32; state,
//   new_state [N, HV, 128, 128] f32, k-last (state[n,h,v,k] = S[k,v]); cu_seqlens [N + 1] i32;
//   output [T, HV, 128] bf16.
// Per token: g = exp(-exp(A_log) * softplus(a + dt_bias)), beta = sigmoid(b), S = g S,
// S += k (beta (v - S^T k))^T, o = S^T q / sqrt(128). Column v of S changes only through k, v[v]
// and itself, so thread v keeps column v (128 floats) for the whole sequence; k and q of the
// token are staged in shared memory.
// `mode` selects the engine's known-bad variant: 0 correct; 1 numerically wrong: the output is
// read from the state before the token's own update (o = (g S_old)^T q), the mistake of a kernel
// that computes the output and the update from the same stale state. new_state stays right.
#include <cuda_bf16.h>

#define D 128

__device__ __forceinline__ float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

extern "C" __global__ void __launch_bounds__(D)
    gdn_prefill_simt(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                     const __nv_bfloat16* __restrict__ v, const float* __restrict__ state,
                     const float* __restrict__ A_log, const __nv_bfloat16* __restrict__ a,
                     const float* __restrict__ dt_bias, const __nv_bfloat16* __restrict__ b,
                     const int* __restrict__ cu_seqlens, __nv_bfloat16* __restrict__ output,
                     float* __restrict__ new_state, unsigned num_seqs, unsigned hqk, unsigned hv,
                     int mode) {
  __shared__ float ks[D], qs[D];
  const unsigned n = blockIdx.x / hv, h = blockIdx.x % hv, col = threadIdx.x;
  if (n >= num_seqs) return;
  const unsigned hk = h / (hv / hqk);
  const float scale = rsqrtf((float)D);
  const unsigned long long st = (((unsigned long long)n * hv + h) * D + col) * D;
  float s[D];
#pragma unroll
  for (int i = 0; i < D; ++i) s[i] = state[st + i];
  const float decay = expf(A_log[h]), bias = dt_bias[h];
  for (int t = cu_seqlens[n]; t < cu_seqlens[n + 1]; ++t) {
    const unsigned long long qk_row = ((unsigned long long)t * hqk + hk) * D;
    const unsigned long long th = (unsigned long long)t * hv + h;
    __syncthreads();  // the previous token's k and q are no longer read
    ks[col] = __bfloat162float(k[qk_row + col]);
    qs[col] = __bfloat162float(q[qk_row + col]);
    __syncthreads();
    const float g = expf(-decay * softplus(__bfloat162float(a[th]) + bias));
    const float beta = 1.0f / (1.0f + expf(-__bfloat162float(b[th])));
    float kv = 0.0f, stale = 0.0f;
#pragma unroll
    for (int i = 0; i < D; ++i) {
      s[i] *= g;
      kv = fmaf(s[i], ks[i], kv);
      stale = fmaf(s[i], qs[i], stale);
    }
    const float delta = beta * (__bfloat162float(v[th * D + col]) - kv);
    float o = 0.0f;
#pragma unroll
    for (int i = 0; i < D; ++i) {
      s[i] = fmaf(ks[i], delta, s[i]);
      o = fmaf(s[i], qs[i], o);
    }
    output[th * D + col] = __float2bfloat16(scale * (mode == 1 ? stale : o));
  }
#pragma unroll
  for (int i = 0; i < D; ++i) new_state[st + i] = s[i];
}
