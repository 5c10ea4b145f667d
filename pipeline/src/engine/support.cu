// PTXBench's own device code: seeded input generation, fp32 references, and comparisons.
// Compiled at run time with NVRTC for the device in hand. Everything is deterministic for a
// given seed; references accumulate in fp32 with one thread (or warp) per output element or
// row, trading speed for obviously-correct code.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

typedef unsigned long long u64;

// ---------------------------------------------------------------- random numbers
__device__ __forceinline__ u64 splitmix(u64 x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// Uniform in (0, 1], from the top 24 bits.
__device__ __forceinline__ float unit(u64 h) { return ((float)(h >> 40) + 1.0f) * (1.0f / 16777216.0f); }

// kind 0: N(0, p0^2); 1: N(0, p0^2) + Bernoulli(p2) * N(0, p1^2); 2: U(p0, p1).
__device__ float sample(u64 seed, u64 i, int kind, float p0, float p1, float p2) {
  u64 h1 = splitmix(seed ^ splitmix(2 * i));
  u64 h2 = splitmix(seed ^ splitmix(2 * i + 1));
  if (kind == 2) return p0 + (p1 - p0) * (unit(h1) - 1.0f / 16777216.0f);
  float r = sqrtf(-2.0f * logf(unit(h1)));
  float z = r * cospif(2.0f * unit(h2));
  float v = p0 * z;
  if (kind == 1) {
    u64 h3 = splitmix(seed ^ splitmix(3 * i + 0x5151));
    if (unit(h3) <= p2) {
      u64 h4 = splitmix(seed ^ splitmix(5 * i + 0x7373));
      float r2 = sqrtf(-2.0f * logf(unit(h4)));
      v += p1 * r2 * sinpif(2.0f * unit(h2));
    }
  }
  return v;
}

#define FILL(NAME, T, CONV)                                                                   \
  extern "C" __global__ void NAME(T* out, u64 n, u64 seed, int kind, float p0, float p1,     \
                                  float p2) {                                                \
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;                         \
         i += (u64)gridDim.x * blockDim.x)                                                   \
      out[i] = CONV(sample(seed, i, kind, p0, p1, p2));                                      \
  }
__device__ __forceinline__ float id(float x) { return x; }
__device__ __forceinline__ __nv_fp8_e4m3 to_e4m3(float x) { return __nv_fp8_e4m3(x); }
__device__ __forceinline__ __nv_fp8_e5m2 to_e5m2(float x) { return __nv_fp8_e5m2(x); }
FILL(fill_bf16, __nv_bfloat16, __float2bfloat16)
FILL(fill_f16, __half, __float2half)
FILL(fill_f32, float, id)
FILL(fill_e4m3, __nv_fp8_e4m3, to_e4m3)
FILL(fill_e5m2, __nv_fp8_e5m2, to_e5m2)

// ---------------------------------------------------------------- conversions
#define TO_F32(NAME, T, CONV)                                                                 \
  extern "C" __global__ void NAME(const T* in, float* out, u64 n) {                          \
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;                         \
         i += (u64)gridDim.x * blockDim.x)                                                   \
      out[i] = CONV(in[i]);                                                                  \
  }
__device__ __forceinline__ float e4m3f(__nv_fp8_e4m3 x) { return (float)x; }
__device__ __forceinline__ float e5m2f(__nv_fp8_e5m2 x) { return (float)x; }
TO_F32(bf16_to_f32, __nv_bfloat16, __bfloat162float)
TO_F32(f16_to_f32, __half, __half2float)
TO_F32(f32_to_f32, float, id)
TO_F32(e4m3_to_f32, __nv_fp8_e4m3, e4m3f)
TO_F32(e5m2_to_f32, __nv_fp8_e5m2, e5m2f)

extern "C" __global__ void f32_to_bf16(const float* in, __nv_bfloat16* out, u64 n) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    out[i] = __float2bfloat16(in[i]);
}

// ---------------------------------------------------------------- fp8 quantization per tensor
// The FA3-style recipe: x rounded to bf16, amax = max |x|, X = e4m3(x * 448 / amax) (saturating),
// descale = amax / 448. amax_bits must start at 0: non-negative floats order as their bits.
extern "C" __global__ void amax_bf16_rounded(const float* x, u64 n, unsigned* amax_bits) {
  float m = 0.0f;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    m = fmaxf(m, fabsf(__bfloat162float(__float2bfloat16(x[i]))));
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(m));
}

extern "C" __global__ void quantize_e4m3(const float* x, u64 n, const unsigned* amax_bits,
                                         __nv_fp8_e4m3* out, float* descale) {
  float amax = fmaxf(__uint_as_float(*amax_bits), 1e-6f);
  float scale = 448.0f / amax;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    out[i] = __nv_fp8_e4m3(__bfloat162float(__float2bfloat16(x[i])) * scale);
  if (blockIdx.x == 0 && threadIdx.x == 0) *descale = amax / 448.0f;
}

// x[i] *= *s (a device scalar: the descales live on the device).
extern "C" __global__ void scale_by(float* x, u64 n, const float* s) {
  float v = *s;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    x[i] *= v;
}

// ---------------------------------------------------------------- paged KV cache
// CSR page table (kv_indptr [B+1], kv_indices) to the dense table cuDNN reads: table [B, maxp]
// (unused slots 0) and seq_len [B]. Page size 1: a sequence's length is its page count.
extern "C" __global__ void csr_to_table(const int* indptr, const int* indices, int B, int maxp,
                                        int* table, int* seq_len) {
  u64 total = (u64)B * maxp;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total;
       i += (u64)gridDim.x * blockDim.x) {
    int b = (int)(i / maxp), s = (int)(i % maxp);
    int start = indptr[b], len = indptr[b + 1] - start;
    table[i] = s < len ? indices[start + s] : 0;
    if (s == 0) seq_len[b] = len;
  }
}

// ---------------------------------------------------------------- GEMM reference
// C[m, n] = scale * sum_k A[m, k] * B[n, k], all fp32 (inputs already converted).
extern "C" __global__ void ref_gemm_abt(const float* A, const float* B, float* C, int M, int N,
                                        int K, float scale) {
  __shared__ float As[16][17];
  __shared__ float Bs[16][17];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx, brow = blockIdx.x * 16 + ty;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    int k = k0 + tx;
    As[ty][tx] = (row < M && k < K) ? A[(u64)row * K + k] : 0.0f;
    Bs[ty][tx] = (brow < N && k < K) ? B[(u64)brow * K + k] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk) acc = fmaf(As[ty][kk], Bs[tx][kk], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[(u64)row * N + col] = scale * acc;
}

// ---------------------------------------------------------------- attention references
// Q, K, V, O, dO: [BH, S, D] fp32; LSE: [BH, S]. One warp per query row (forward, dQ) or key
// row (dK, dV); each lane holds D/32 (rounded up) elements. scale = 1/sqrt(D).
#define MAXD 256
#define PER (MAXD / 32)

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void ref_attn_fwd(const float* Q, const float* K, const float* V, float* O,
                                        float* LSE, int BH, int S, int D, int causal, float scale) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= BH * S) return;
  int bh = warp / S, i = warp % S;
  const float* q = Q + ((u64)bh * S + i) * D;
  float qr[PER], acc[PER];
  for (int p = 0; p < PER; ++p) {
    int d = lane + 32 * p;
    qr[p] = d < D ? q[d] : 0.0f;
    acc[p] = 0.0f;
  }
  float m = __int_as_float(0xff800000), l = 0.0f;  // -inf (NVRTC has no INFINITY)
  int jend = causal ? i + 1 : S;
  for (int j = 0; j < jend; ++j) {
    const float* k = K + ((u64)bh * S + j) * D;
    float s = 0.0f;
    for (int p = 0; p < PER; ++p) {
      int d = lane + 32 * p;
      if (d < D) s = fmaf(qr[p], k[d], s);
    }
    s = warp_sum(s) * scale;
    float mn = fmaxf(m, s);
    float corr = expf(m - mn), e = expf(s - mn);
    l = l * corr + e;
    const float* v = V + ((u64)bh * S + j) * D;
    for (int p = 0; p < PER; ++p) {
      int d = lane + 32 * p;
      if (d < D) acc[p] = acc[p] * corr + e * v[d];
    }
    m = mn;
  }
  float* o = O + ((u64)bh * S + i) * D;
  for (int p = 0; p < PER; ++p) {
    int d = lane + 32 * p;
    if (d < D) o[d] = acc[p] / l;
  }
  if (lane == 0) LSE[(u64)bh * S + i] = m + logf(l);
}

// Paged GQA decode: q [B, H, D]; caches [pages, HKV, D] (page size 1); one warp per (b, h).
// Query head h reads KV head h / (H / HKV). out [B, H, D]; lse [B, H] (natural log).
extern "C" __global__ void ref_paged_decode(const float* Q, const float* Kc, const float* Vc,
                                            const int* indptr, const int* indices, float* O,
                                            float* LSE, int B, int H, int HKV, int D,
                                            float scale) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= B * H) return;
  int b = warp / H, h = warp % H, g = h / (H / HKV);
  const float* q = Q + ((u64)b * H + h) * D;
  float qr[PER], acc[PER];
  for (int p = 0; p < PER; ++p) {
    int d = lane + 32 * p;
    qr[p] = d < D ? q[d] : 0.0f;
    acc[p] = 0.0f;
  }
  float m = __int_as_float(0xff800000), l = 0.0f;
  for (int j = indptr[b]; j < indptr[b + 1]; ++j) {
    u64 row = ((u64)indices[j] * HKV + g) * D;
    float s = 0.0f;
    for (int p = 0; p < PER; ++p) {
      int d = lane + 32 * p;
      if (d < D) s = fmaf(qr[p], Kc[row + d], s);
    }
    s = warp_sum(s) * scale;
    float mn = fmaxf(m, s);
    float corr = expf(m - mn), e = expf(s - mn);
    l = l * corr + e;
    for (int p = 0; p < PER; ++p) {
      int d = lane + 32 * p;
      if (d < D) acc[p] = acc[p] * corr + e * Vc[row + d];
    }
    m = mn;
  }
  float* o = O + ((u64)b * H + h) * D;
  for (int p = 0; p < PER; ++p) {
    int d = lane + 32 * p;
    if (d < D) o[d] = acc[p] / l;
  }
  if (lane == 0) LSE[(u64)b * H + h] = m + logf(l);
}

// Causal GQA prefill over sequences packed along the token axes, keys ragged or paged (page
// size 1). Q, O [TQ, H, D]; LSE [TQ, H]; K, V [rows, HKV, D]: key t of sequence b is row
// kv_indptr[b] + t (ragged) or kv_indices[kv_indptr[b] + t] (paged). Query token t belongs to
// the sequence b with qo_indptr[b] <= t < qo_indptr[b + 1]; as its i-th query it sees keys
// j <= i + kv_len - q_len when causal (the mask aligned to the last key), all keys otherwise.
// Query head h reads KV head h / (H / HKV). One (token, head) row per warp on the GPU; the
// same row function runs on the host with one lane in the tests, against an independent CPU
// implementation, so what the GPU computes is checked without a GPU.
struct PrefillArgs {
  const float *Q, *K, *V;
  const int *qo_indptr, *kv_indptr, *kv_indices;
  float *O, *LSE;
  int B, H, HKV, D, paged, causal;
  float scale;
};

__host__ __device__ inline float minus_infinity() {
  union {
    unsigned u;
    float f;
  } x;
  x.u = 0xff800000u;
  return x.f;
}

template <int LANES>
__host__ __device__ inline float lanes_sum(float v) {
#ifdef __CUDA_ARCH__
  if (LANES == 32) return warp_sum(v);
#endif
  return v;
}

template <int LANES>
__host__ __device__ void prefill_row(const PrefillArgs& a, u64 row, int lane) {
  const int t = (int)(row / a.H), h = (int)(row % a.H), g = h / (a.H / a.HKV);
  int lo = 0, hi = a.B;  // qo_indptr[lo] <= t < qo_indptr[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (a.qo_indptr[mid] <= t) lo = mid; else hi = mid;
  }
  const int b = lo, i = t - a.qo_indptr[b];
  const int qlen = a.qo_indptr[b + 1] - a.qo_indptr[b];
  const int kvlen = a.kv_indptr[b + 1] - a.kv_indptr[b];
  int jend = a.causal ? i + 1 + kvlen - qlen : kvlen;
  jend = jend < 0 ? 0 : (jend > kvlen ? kvlen : jend);
  const float* q = a.Q + row * a.D;
  float qr[MAXD / LANES], acc[MAXD / LANES];
  for (int p = 0; p < MAXD / LANES; ++p) {
    const int d = lane + LANES * p;
    qr[p] = d < a.D ? q[d] : 0.0f;
    acc[p] = 0.0f;
  }
  float m = minus_infinity(), l = 0.0f;
  for (int j = 0; j < jend; ++j) {
    const int at = a.kv_indptr[b] + j;
    const u64 krow = ((u64)(a.paged ? a.kv_indices[at] : at) * a.HKV + g) * a.D;
    float s = 0.0f;
    for (int p = 0; p < MAXD / LANES; ++p) {
      const int d = lane + LANES * p;
      if (d < a.D) s = fmaf(qr[p], a.K[krow + d], s);
    }
    s = lanes_sum<LANES>(s) * a.scale;
    const float mn = fmaxf(m, s);
    const float corr = expf(m - mn), e = expf(s - mn);
    l = l * corr + e;
    for (int p = 0; p < MAXD / LANES; ++p) {
      const int d = lane + LANES * p;
      if (d < a.D) acc[p] = acc[p] * corr + e * a.V[krow + d];
    }
    m = mn;
  }
  float* o = a.O + row * a.D;
  for (int p = 0; p < MAXD / LANES; ++p) {
    const int d = lane + LANES * p;
    if (d < a.D) o[d] = acc[p] / l;
  }
  if (lane == 0) a.LSE[row] = m + logf(l);
}

extern "C" __global__ void ref_prefill(const float* Q, const float* K, const float* V,
                                       const int* qo_indptr, const int* kv_indptr,
                                       const int* kv_indices, float* O, float* LSE, int B,
                                       int TQ, int H, int HKV, int D, int paged, int causal,
                                       float scale) {
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (warp >= (u64)TQ * H) return;
  const PrefillArgs a = {Q, K, V, qo_indptr, kv_indptr, kv_indices, O, LSE,
                         B, H, HKV, D, paged, causal, scale};
  prefill_row<32>(a, warp, (int)(threadIdx.x & 31));
}

// Multi-head latent attention decode (DeepSeek's MLA with the weights absorbed, FlashInfer's
// mla_paged_decode), page size 1. QN, O [B, H, DC]; QP [B, H, DP]; LSE [B, H]; CKV [pages, DC]
// and KPE [pages, DP]: key j of sequence b is page kv_indices[kv_indptr[b] + j]. Every query
// head reads the one latent KV head: s_j = scale * (qn . CKV[p_j] + qp . KPE[p_j]), and the
// values are the CKV rows. One (sequence, head) row per warp on the GPU; the row function runs
// on the host with one lane in the tests, against an independent CPU implementation.
#define MLA_MAXC 512
#define MLA_MAXP 64
struct MlaArgs {
  const float *QN, *QP, *CKV, *KPE;
  const int *kv_indptr, *kv_indices;
  float *O, *LSE;
  int B, H, DC, DP;
  float scale;
};

template <int LANES>
__host__ __device__ void mla_decode_row(const MlaArgs& a, u64 row, int lane) {
  const int b = (int)(row / a.H);
  const float* qn = a.QN + row * a.DC;
  const float* qp = a.QP + row * a.DP;
  float qc[MLA_MAXC / LANES], qr[MLA_MAXP / LANES], acc[MLA_MAXC / LANES];
  for (int p = 0; p < MLA_MAXC / LANES; ++p) {
    const int d = lane + LANES * p;
    qc[p] = d < a.DC ? qn[d] : 0.0f;
    acc[p] = 0.0f;
  }
  for (int p = 0; p < MLA_MAXP / LANES; ++p) {
    const int d = lane + LANES * p;
    qr[p] = d < a.DP ? qp[d] : 0.0f;
  }
  float m = minus_infinity(), l = 0.0f;
  for (int at = a.kv_indptr[b]; at < a.kv_indptr[b + 1]; ++at) {
    const u64 page = (u64)a.kv_indices[at];
    const float* c = a.CKV + page * a.DC;
    const float* r = a.KPE + page * a.DP;
    float s = 0.0f;
    for (int p = 0; p < MLA_MAXC / LANES; ++p) {
      const int d = lane + LANES * p;
      if (d < a.DC) s = fmaf(qc[p], c[d], s);
    }
    for (int p = 0; p < MLA_MAXP / LANES; ++p) {
      const int d = lane + LANES * p;
      if (d < a.DP) s = fmaf(qr[p], r[d], s);
    }
    s = lanes_sum<LANES>(s) * a.scale;
    const float mn = fmaxf(m, s);
    const float corr = expf(m - mn), e = expf(s - mn);
    l = l * corr + e;
    for (int p = 0; p < MLA_MAXC / LANES; ++p) {
      const int d = lane + LANES * p;
      if (d < a.DC) acc[p] = acc[p] * corr + e * c[d];
    }
    m = mn;
  }
  float* o = a.O + row * a.DC;
  for (int p = 0; p < MLA_MAXC / LANES; ++p) {
    const int d = lane + LANES * p;
    if (d < a.DC) o[d] = acc[p] / l;
  }
  if (lane == 0) a.LSE[row] = m + logf(l);
}

extern "C" __global__ void ref_mla_decode(const float* QN, const float* QP, const float* CKV,
                                          const float* KPE, const int* kv_indptr,
                                          const int* kv_indices, float* O, float* LSE, int B,
                                          int H, int DC, int DP, float scale) {
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (warp >= (u64)B * H) return;
  const MlaArgs a = {QN, QP, CKV, KPE, kv_indptr, kv_indices, O, LSE, B, H, DC, DP, scale};
  mla_decode_row<32>(a, warp, (int)(threadIdx.x & 31));
}

// Gated delta net prefill (FlashInfer's gdn_prefill, k-last state), sequences packed along the
// token axis: sequence n owns tokens cu_seqlens[n] .. cu_seqlens[n+1]. Q, K [T, HQK, D]; V, O
// [T, HV, D]; A, B [T, HV]; ALOG, DTB [HV]; STATE, NEW_STATE [N, HV, D, D] k-last
// (STATE[n,h,v,k] = S[k][v]). Value head h reads query/key head h / (HV / HQK). Per token:
//   g = exp(-exp(ALOG[h]) * softplus(A[t,h] + DTB[h])), beta = sigmoid(B[t,h]),
//   S = g * S; S += k (beta * (v - S^T k))^T; o = scale * S^T q.
// Column v of S evolves on its own (its update reads only k, v[v] and the column), so one
// thread owns one column for the whole sequence: a (sequence, head) per block of D threads on
// the GPU; the column function runs on the host in the tests, against an independent CPU
// implementation.
#define GDN_MAXD 128
struct GdnArgs {
  const float *Q, *K, *V, *STATE, *ALOG, *A, *DTB, *B;
  const int* cu_seqlens;
  float *O, *NEW_STATE;
  int N, HQK, HV, D;
  float scale;
};

__host__ __device__ inline float gdn_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

__host__ __device__ inline void gdn_column(const GdnArgs& a, int n, int h, int v) {
  const int D = a.D, hk = h / (a.HV / a.HQK);
  float s[GDN_MAXD];
  const u64 st = (((u64)n * a.HV + h) * D + v) * D;
  for (int k = 0; k < D; ++k) s[k] = a.STATE[st + k];
  const float decay = expf(a.ALOG[h]), bias = a.DTB[h];
  for (int t = a.cu_seqlens[n]; t < a.cu_seqlens[n + 1]; ++t) {
    const u64 th = (u64)t * a.HV + h;
    const float g = expf(-decay * gdn_softplus(a.A[th] + bias));
    const float beta = 1.0f / (1.0f + expf(-a.B[th]));
    const float* k = a.K + ((u64)t * a.HQK + hk) * D;
    const float* q = a.Q + ((u64)t * a.HQK + hk) * D;
    float kv = 0.0f;
    for (int i = 0; i < D; ++i) {
      s[i] *= g;
      kv = fmaf(s[i], k[i], kv);
    }
    const float delta = beta * (a.V[th * D + v] - kv);
    float o = 0.0f;
    for (int i = 0; i < D; ++i) {
      s[i] = fmaf(k[i], delta, s[i]);
      o = fmaf(s[i], q[i], o);
    }
    a.O[th * D + v] = a.scale * o;
  }
  for (int k = 0; k < D; ++k) a.NEW_STATE[st + k] = s[k];
}

extern "C" __global__ void ref_gdn_prefill(const float* Q, const float* K, const float* V,
                                           const float* STATE, const float* ALOG,
                                           const float* A, const float* DTB, const float* B,
                                           const int* cu_seqlens, float* O, float* NEW_STATE,
                                           int N, int HQK, int HV, int D, float scale) {
  const int n = (int)(blockIdx.x / HV), h = (int)(blockIdx.x % HV), v = (int)threadIdx.x;
  if (n >= N || v >= D) return;
  const GdnArgs a = {Q, K, V, STATE, ALOG, A, DTB, B, cu_seqlens, O, NEW_STATE, N, HQK, HV, D, scale};
  gdn_column(a, n, h, v);
}

// ---------------------------------------------------------------- composed baselines
// Where no library has the op, the baseline is composed from cuBLASLt products and these
// kernels (pipeline/src/engine/composed/). Like the references, each kernel is a __global__
// wrapper around __host__ __device__ functions that the tests run on the host, with the
// products emulated there, against an independent CPU implementation.

template <int LANES>
__host__ __device__ inline float lanes_max(float v) {
#ifdef __CUDA_ARCH__
  if (LANES == 32)
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
#endif
  return v;
}

// The sequence b of a CSR row pointer with indptr[b] <= t < indptr[b + 1] (B sequences).
__host__ __device__ inline int sequence_of(const int* indptr, int B, long long t) {
  int lo = 0, hi = B;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (indptr[mid] <= t) lo = mid; else hi = mid;
  }
  return lo;
}

// MLA decode, composed (engine/composed/mla.rs). The sequences are sorted into buckets of
// similar length; a bucket's queries and keys are laid out for one strided-batched product
// each way: Q [position, H, DK] and KV rows of DK = DC + DP (ckv then kpe; the first DC
// columns are the values), the scores S (fp32) and probabilities P (bf16) of a slot's H rows
// at S[s_off + h * pad + j]. The slot table (engine/composed/mla.rs, `MlaPlan::slots`) holds
// MLA_SLOT longs per slot, slots in bucket order: the sequence, its length, its padded length,
// the first row of its keys in KV, the offset of its scores in S and P, and its position in Q
// and O; then, for each sequence, its slot.
#define MLA_SLOT 6
struct MlaComposedArgs {
  const __nv_bfloat16 *q_nope, *q_pe, *ckv, *kpe;
  const int *kv_indptr, *kv_indices;
  const long long* slots;
  __nv_bfloat16 *Q, *KV, *P, *out;
  const float* S;
  const __nv_bfloat16* O;
  float* lse;
  int B, H, DC, DP;
};

// Q[position, h, :] = [q_nope[b, h, :] | q_pe[b, h, :]], element i of the slots' queries.
__host__ __device__ inline void mla_pack_q_element(const MlaComposedArgs& a, u64 i) {
  const int DK = a.DC + a.DP;
  const u64 per = (u64)a.H * DK;
  const long long* sl = a.slots + (i / per) * MLA_SLOT;
  const int h = (int)(i % per / DK), d = (int)(i % DK);
  const u64 row = (u64)sl[0] * a.H + h;
  a.Q[(u64)sl[5] * per + i % per] =
      d < a.DC ? a.q_nope[row * a.DC + d] : a.q_pe[row * a.DP + (d - a.DC)];
}

// KV row of token t (t over kv_indices): [ckv | kpe] of its page, at its slot's rows. Rows
// past a sequence's length are never written (the buffer is zeroed once, so the padding
// stays zero: finite, and weighed by P = 0). With DC and DP multiples of 8, 16 bytes a copy.
__host__ __device__ inline void mla_gather_row(const MlaComposedArgs& a, long long t, int lane,
                                               int lanes) {
  const int b = sequence_of(a.kv_indptr, a.B, t);
  const long long j = t - a.kv_indptr[b];
  const long long* sl = a.slots + a.slots[(u64)a.B * MLA_SLOT + b] * MLA_SLOT;
  if (j >= sl[2]) return;  // a longer sequence than planned: refused by the check, not written
  const int DK = a.DC + a.DP;
  const u64 page = (u64)a.kv_indices[t];
  __nv_bfloat16* dst = a.KV + ((u64)sl[3] + j) * DK;
  const __nv_bfloat16* c = a.ckv + page * a.DC;
  const __nv_bfloat16* r = a.kpe + page * a.DP;
  if (a.DC % 8 == 0 && a.DP % 8 == 0) {
    const int cu = a.DC / 8, units = DK / 8;
    for (int u = lane; u < units; u += lanes)
      reinterpret_cast<uint4*>(dst)[u] = u < cu ? reinterpret_cast<const uint4*>(c)[u]
                                                : reinterpret_cast<const uint4*>(r)[u - cu];
  } else {
    for (int d = lane; d < DK; d += lanes) dst[d] = d < a.DC ? c[d] : r[d - a.DC];
  }
}

// One (slot, head) row of the scores (already scaled by the product's alpha): the natural-log
// LSE, and P = exp(s - lse) in bf16 over the sequence's keys, 0 over the padding.
template <int LANES>
__host__ __device__ void mla_softmax_row(const MlaComposedArgs& a, u64 row, int lane) {
  const long long* sl = a.slots + (row / a.H) * MLA_SLOT;
  const int h = (int)(row % a.H);
  const long long len = sl[1], pad = sl[2];
  const u64 at = (u64)sl[4] + (u64)h * pad;
  const float* s = a.S + at;
  float m = minus_infinity();
  for (long long j = lane; j < len; j += LANES) m = fmaxf(m, s[j]);
  m = lanes_max<LANES>(m);
  float l = 0.0f;
  for (long long j = lane; j < len; j += LANES) l += expf(s[j] - m);
  l = lanes_sum<LANES>(l);
  const float lse = m + logf(l);
  for (long long j = lane; j < pad; j += LANES)
    a.P[at + j] = __float2bfloat16(j < len ? expf(s[j] - lse) : 0.0f);
  if (lane == 0) a.lse[(u64)sl[0] * a.H + h] = lse;
}

// out[b, h, :] = O[position of b's slot, h, :], element i of out.
__host__ __device__ inline void mla_unpack_element(const MlaComposedArgs& a, u64 i) {
  const u64 per = (u64)a.H * a.DC;
  const long long* sl = a.slots + a.slots[(u64)a.B * MLA_SLOT + i / per] * MLA_SLOT;
  a.out[i] = a.O[(u64)sl[5] * per + i % per];
}

extern "C" __global__ void mla_pack_q(const __nv_bfloat16* q_nope, const __nv_bfloat16* q_pe,
                                      const long long* slots, __nv_bfloat16* Q, int B, int H,
                                      int DC, int DP) {
  MlaComposedArgs a = {};
  a.q_nope = q_nope; a.q_pe = q_pe; a.slots = slots; a.Q = Q;
  a.B = B; a.H = H; a.DC = DC; a.DP = DP;
  const u64 n = (u64)B * H * (DC + DP);
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    mla_pack_q_element(a, i);
}

extern "C" __global__ void mla_gather_kv(const __nv_bfloat16* ckv, const __nv_bfloat16* kpe,
                                         const int* kv_indptr, const int* kv_indices,
                                         const long long* slots, __nv_bfloat16* KV, int B, int DC,
                                         int DP, u64 T) {
  MlaComposedArgs a = {};
  a.ckv = ckv; a.kpe = kpe; a.kv_indptr = kv_indptr; a.kv_indices = kv_indices;
  a.slots = slots; a.KV = KV; a.B = B; a.DC = DC; a.DP = DP;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  for (u64 t = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < T; t += warps)
    mla_gather_row(a, (long long)t, (int)(threadIdx.x & 31), 32);
}

extern "C" __global__ void mla_softmax(const float* S, const long long* slots,
                                       __nv_bfloat16* P, float* lse, int B, int H) {
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (warp >= (u64)B * H) return;
  MlaComposedArgs a = {};
  a.S = S; a.slots = slots; a.P = P; a.lse = lse; a.B = B; a.H = H;
  mla_softmax_row<32>(a, warp, (int)(threadIdx.x & 31));
}

extern "C" __global__ void mla_unpack(const __nv_bfloat16* O, const long long* slots,
                                      __nv_bfloat16* out, int B, int H, int DC) {
  MlaComposedArgs a = {};
  a.O = O; a.slots = slots; a.out = out; a.B = B; a.H = H; a.DC = DC;
  const u64 n = (u64)B * H * DC;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    mla_unpack_element(a, i);
}

// GDN prefill, composed (engine/composed/gdn.rs): the chunked gated delta rule. Each
// sequence's tokens are cut into chunks of GDN_CHUNK (its last one partial): chunk c starts at
// token chunks[c] and holds chunks[NC + c] tokens, and sequence n owns the chunks
// chunks[2 NC + n] .. chunks[2 NC + n + 1]. Per (chunk, value head), over its tokens, with G
// the cumulative log gate and beta the update strengths:
//   KK = K K^T, QK = Q K^T (cuBLASLt);
//   L = beta_i exp(G_i - G_j) KK_ij below the diagonal, T = (I + L)^-1,
//   Tv = T diag(beta), Tk = T diag(beta exp(G)), M = exp(G_i - G_j) QK_ij on and below it;
//   Wv = Tv V, Wk = Tk K (cuBLASLt);
// across a sequence's chunks, per value head, from the state S at the chunk's start:
//   U = Wv - Wk S, S = exp(G_last) S + K^T diag(exp(G_last - G)) U (gdn_recurrence);
// then A = Q S, B = M U (cuBLASLt) and output = scale (exp(G) A + B). Padding rows (past a
// partial chunk's tokens) are zero with beta 0 and no decay, so they change nothing. Chunk
// buffers are [NC, HV, GDN_CHUNK, D] (Q and K per value head), G and beta [NC, HV,
// GDN_CHUNK], the C x C matrices [NC, HV, GDN_CHUNK, GDN_CHUNK], the chunks' starting states
// [NC, HV, D, D] (S[k][v], row-major).
#define GDN_CHUNK 64
#define GDN_PARTS 4
struct GdnComposedArgs {
  const __nv_bfloat16 *q, *k, *v, *a, *b;
  const float *A_log, *dt_bias, *state;
  const int *cu_seqlens, *chunks;
  __nv_bfloat16 *Qc, *Kc, *Vc, *Tv, *Tk, *M, *Sc, *U, *out;
  float *G, *Beta, *new_state;
  const float *KK, *QK, *Wv, *Wk, *QS, *MU;
  int N, NC, HQK, HV, D;
  float scale;
};

// Element i of Qc, Kc and Vc: a token of the chunk, or zero past its tokens.
__host__ __device__ inline void gdn_pack_element(const GdnComposedArgs& a, u64 i) {
  const int D = a.D, HV = a.HV;
  const int d = (int)(i % D), ii = (int)(i / D % GDN_CHUNK);
  const u64 bh = i / D / GDN_CHUNK;
  const int hv = (int)(bh % HV), c = (int)(bh / HV), hk = hv / (HV / a.HQK);
  if (ii < a.chunks[a.NC + c]) {
    const u64 t = (u64)a.chunks[c] + ii;
    a.Qc[i] = a.q[(t * a.HQK + hk) * D + d];
    a.Kc[i] = a.k[(t * a.HQK + hk) * D + d];
    a.Vc[i] = a.v[(t * HV + hv) * D + d];
  } else {
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    a.Qc[i] = zero;
    a.Kc[i] = zero;
    a.Vc[i] = zero;
  }
}

// Token ii of chunk c, value head hv: its log gate into logg[ii] (0 past the chunk's tokens)
// and its beta (0 there), as the reference computes them.
__host__ __device__ inline void gdn_gate_token(const GdnComposedArgs& a, int c, int hv, int ii,
                                               float* logg) {
  const u64 r = ((u64)c * a.HV + hv) * GDN_CHUNK + ii;
  if (ii < a.chunks[a.NC + c]) {
    const u64 th = ((u64)a.chunks[c] + ii) * a.HV + hv;
    logg[ii] = -expf(a.A_log[hv]) * gdn_softplus(__bfloat162float(a.a[th]) + a.dt_bias[hv]);
    a.Beta[r] = 1.0f / (1.0f + expf(-__bfloat162float(a.b[th])));
  } else {
    logg[ii] = 0.0f;
    a.Beta[r] = 0.0f;
  }
}

// G of chunk c, value head hv: the running sums of its log gates.
__host__ __device__ inline void gdn_gate_scan(const GdnComposedArgs& a, int c, int hv,
                                              const float* logg) {
  float* G = a.G + ((u64)c * a.HV + hv) * GDN_CHUNK;
  float acc = 0.0f;
  for (int i = 0; i < GDN_CHUNK; ++i) G[i] = acc += logg[i];
}

// Column m of L (GDN_CHUNK x GDN_CHUNK, row-major) for chunk c, value head hv.
__host__ __device__ inline void gdn_l_column(const GdnComposedArgs& a, int c, int hv, int m,
                                             float* L) {
  const u64 r = ((u64)c * a.HV + hv) * GDN_CHUNK;
  for (int i = 0; i < GDN_CHUNK; ++i)
    L[i * GDN_CHUNK + m] =
        i > m ? a.Beta[r + i] * expf(a.G[r + i] - a.G[r + m]) * a.KK[(r + i) * GDN_CHUNK + m]
              : 0.0f;
}

// Column m of T = (I + L)^-1 by forward substitution (T is unit lower triangular), then
// column m of Tv, Tk and M.
__host__ __device__ inline void gdn_wy_column(const GdnComposedArgs& a, int c, int hv, int m,
                                              const float* L) {
  const u64 r = ((u64)c * a.HV + hv) * GDN_CHUNK;
  float t[GDN_CHUNK];
  for (int i = 0; i < GDN_CHUNK; ++i) {
    float acc = i == m ? 1.0f : 0.0f;
    for (int j = m; j < i; ++j) acc -= L[i * GDN_CHUNK + j] * t[j];
    t[i] = i < m ? 0.0f : acc;
  }
  const float bm = a.Beta[r + m], gm = expf(a.G[r + m]);
  for (int i = 0; i < GDN_CHUNK; ++i) {
    const u64 at = (r + i) * GDN_CHUNK + m;
    a.Tv[at] = __float2bfloat16(t[i] * bm);
    a.Tk[at] = __float2bfloat16(t[i] * bm * gm);
    a.M[at] = __float2bfloat16(i >= m ? expf(a.G[r + i] - a.G[r + m]) * a.QK[at] : 0.0f);
  }
}

// The sum over the PARTS threads of one state column (adjacent lanes on the GPU).
template <int PARTS>
__host__ __device__ inline float parts_sum(float v) {
#ifdef __CUDA_ARCH__
  for (int o = 1; o < PARTS; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
#endif
  return v;
}

__host__ __device__ inline void parts_sync() {
#ifdef __CUDA_ARCH__
  __syncwarp();
#endif
}

// Column v of sequence n's state for value head hv across its chunks; part q of PARTS holds
// the rows k = q + PARTS j. Writes each chunk's starting state (bf16) and U (bf16; fp32 in
// ush [GDN_CHUNK, D] for the update), and new_state after the last chunk.
template <int PARTS>
__host__ __device__ void gdn_recur_column(const GdnComposedArgs& a, int n, int hv, int v, int q,
                                          float* ush) {
  const int D = a.D, HV = a.HV;
  float s[GDN_MAXD / PARTS];
  const u64 st = (((u64)n * HV + hv) * D + v) * D;
  for (int j = 0; j < GDN_MAXD / PARTS; ++j) {
    const int k = q + PARTS * j;
    s[j] = k < D ? a.state[st + k] : 0.0f;
  }
  const int* first = a.chunks + 2 * a.NC;
  for (int c = first[n]; c < first[n + 1]; ++c) {
    const u64 bh = (u64)c * HV + hv;
    for (int j = 0; j < GDN_MAXD / PARTS; ++j) {
      const int k = q + PARTS * j;
      if (k < D) a.Sc[(bh * D + k) * D + v] = __float2bfloat16(s[j]);
    }
    const float* wk = a.Wk + bh * GDN_CHUNK * D;
    const float* wv = a.Wv + bh * GDN_CHUNK * D;
    parts_sync();
    for (int i = 0; i < GDN_CHUNK; ++i) {
      float p = 0.0f;
      for (int j = 0; j < GDN_MAXD / PARTS; ++j) {
        const int k = q + PARTS * j;
        if (k < D) p = fmaf(wk[i * D + k], s[j], p);
      }
      const float u = wv[i * D + v] - parts_sum<PARTS>(p);
      if (q == 0) {
        ush[i * D + v] = u;
        a.U[(bh * GDN_CHUNK + i) * D + v] = __float2bfloat16(u);
      }
    }
    parts_sync();
    const float* g = a.G + bh * GDN_CHUNK;
    const float last = g[GDN_CHUNK - 1], decay = expf(last);
    for (int j = 0; j < GDN_MAXD / PARTS; ++j) s[j] *= decay;
    const __nv_bfloat16* kc = a.Kc + bh * GDN_CHUNK * D;
    for (int i = 0; i < GDN_CHUNK; ++i) {
      const float w = expf(last - g[i]) * ush[i * D + v];
      for (int j = 0; j < GDN_MAXD / PARTS; ++j) {
        const int k = q + PARTS * j;
        if (k < D) s[j] = fmaf(__bfloat162float(kc[i * D + k]), w, s[j]);
      }
    }
  }
  for (int j = 0; j < GDN_MAXD / PARTS; ++j) {
    const int k = q + PARTS * j;
    if (k < D) a.new_state[st + k] = s[j];
  }
}

// Element i of output [T, HV, D]: scale (exp(G) (Q S) + M U) at its chunk's row.
__host__ __device__ inline void gdn_output_element(const GdnComposedArgs& a, u64 i) {
  const int D = a.D, HV = a.HV;
  const u64 th = i / D;
  const int d = (int)(i % D), hv = (int)(th % HV);
  const long long t = (long long)(th / HV);
  const int n = sequence_of(a.cu_seqlens, a.N, t);
  const long long local = t - a.cu_seqlens[n];
  const u64 c = (u64)a.chunks[2 * a.NC + n] + (u64)(local / GDN_CHUNK);
  const u64 r = (c * HV + hv) * GDN_CHUNK + (u64)(local % GDN_CHUNK);
  a.out[i] = __float2bfloat16(a.scale * (expf(a.G[r]) * a.QS[r * D + d] + a.MU[r * D + d]));
}

extern "C" __global__ void gdn_pack(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                    const __nv_bfloat16* v, const int* chunks, __nv_bfloat16* Qc,
                                    __nv_bfloat16* Kc, __nv_bfloat16* Vc, int NC, int HQK, int HV,
                                    int D) {
  GdnComposedArgs a = {};
  a.q = q; a.k = k; a.v = v; a.chunks = chunks; a.Qc = Qc; a.Kc = Kc; a.Vc = Vc;
  a.NC = NC; a.HQK = HQK; a.HV = HV; a.D = D;
  const u64 n = (u64)NC * HV * GDN_CHUNK * D;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    gdn_pack_element(a, i);
}

// One block of GDN_CHUNK threads per (chunk, value head), a thread per column.
extern "C" __global__ void gdn_wy(const __nv_bfloat16* a_in, const __nv_bfloat16* b_in,
                                  const float* A_log, const float* dt_bias, const int* chunks,
                                  const float* KK, const float* QK, float* G, float* Beta,
                                  __nv_bfloat16* Tv, __nv_bfloat16* Tk, __nv_bfloat16* M, int NC,
                                  int HV) {
  __shared__ float L[GDN_CHUNK * GDN_CHUNK];
  __shared__ float logg[GDN_CHUNK];
  const int c = (int)(blockIdx.x / HV), hv = (int)(blockIdx.x % HV), m = (int)threadIdx.x;
  if (c >= NC || m >= GDN_CHUNK) return;
  GdnComposedArgs a = {};
  a.a = a_in; a.b = b_in; a.A_log = A_log; a.dt_bias = dt_bias; a.chunks = chunks;
  a.KK = KK; a.QK = QK; a.G = G; a.Beta = Beta; a.Tv = Tv; a.Tk = Tk; a.M = M;
  a.NC = NC; a.HV = HV;
  gdn_gate_token(a, c, hv, m, logg);
  __syncthreads();
  if (m == 0) gdn_gate_scan(a, c, hv, logg);
  __syncthreads();
  gdn_l_column(a, c, hv, m, L);
  __syncthreads();
  gdn_wy_column(a, c, hv, m, L);
}

// One block of D * GDN_PARTS threads per (sequence, value head); D a multiple of 8, so a
// column's parts share a warp and every warp is whole.
extern "C" __global__ void gdn_recurrence(const float* state, const int* chunks, const float* G,
                                          const float* Wv, const float* Wk,
                                          const __nv_bfloat16* Kc, __nv_bfloat16* Sc,
                                          __nv_bfloat16* U, float* new_state, int N, int NC,
                                          int HV, int D) {
  __shared__ float ush[GDN_CHUNK * GDN_MAXD];
  const int n = (int)(blockIdx.x / HV), hv = (int)(blockIdx.x % HV);
  const int v = (int)(threadIdx.x / GDN_PARTS), q = (int)(threadIdx.x % GDN_PARTS);
  if (n >= N || v >= D) return;
  GdnComposedArgs a = {};
  // The struct's pointers serve every kernel; this one only reads G and Kc.
  a.state = state; a.chunks = chunks; a.G = const_cast<float*>(G); a.Wv = Wv; a.Wk = Wk;
  a.Kc = const_cast<__nv_bfloat16*>(Kc); a.Sc = Sc;
  a.U = U; a.new_state = new_state; a.N = N; a.NC = NC; a.HV = HV; a.D = D;
  gdn_recur_column<GDN_PARTS>(a, n, hv, v, q, ush);
}

extern "C" __global__ void gdn_output(const int* cu_seqlens, const int* chunks, const float* G,
                                      const float* QS, const float* MU, __nv_bfloat16* out, int N,
                                      int NC, int HV, int D, u64 T, float scale) {
  GdnComposedArgs a = {};
  a.cu_seqlens = cu_seqlens; a.chunks = chunks; a.G = const_cast<float*>(G); a.QS = QS;
  a.MU = MU; a.out = out;
  a.N = N; a.NC = NC; a.HV = HV; a.D = D; a.scale = scale;
  const u64 n = T * HV * D;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    gdn_output_element(a, i);
}

// Delta[i] = sum_d dO[i, d] * O[i, d].
extern "C" __global__ void ref_attn_delta(const float* O, const float* dO, float* Delta, int rows,
                                          int D) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= rows) return;
  float s = 0.0f;
  for (int d = lane; d < D; d += 32) s = fmaf(O[(u64)warp * D + d], dO[(u64)warp * D + d], s);
  s = warp_sum(s);
  if (lane == 0) Delta[warp] = s;
}

extern "C" __global__ void ref_attn_bwd_dq(const float* Q, const float* K, const float* V,
                                           const float* dO, const float* LSE, const float* Delta,
                                           float* dQ, int BH, int S, int D, int causal,
                                           float scale) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= BH * S) return;
  int bh = warp / S, i = warp % S;
  u64 row = (u64)bh * S + i;
  float qr[PER], dor[PER], acc[PER];
  for (int p = 0; p < PER; ++p) {
    int d = lane + 32 * p;
    qr[p] = d < D ? Q[row * D + d] : 0.0f;
    dor[p] = d < D ? dO[row * D + d] : 0.0f;
    acc[p] = 0.0f;
  }
  float lse = LSE[row], delta = Delta[row];
  int jend = causal ? i + 1 : S;
  for (int j = 0; j < jend; ++j) {
    const float* k = K + ((u64)bh * S + j) * D;
    const float* v = V + ((u64)bh * S + j) * D;
    float s = 0.0f, dp = 0.0f;
    for (int p = 0; p < PER; ++p) {
      int d = lane + 32 * p;
      if (d < D) {
        s = fmaf(qr[p], k[d], s);
        dp = fmaf(dor[p], v[d], dp);
      }
    }
    s = warp_sum(s);
    dp = warp_sum(dp);
    float pij = expf(s * scale - lse);
    float ds = pij * (dp - delta);
    for (int p = 0; p < PER; ++p) {
      int d = lane + 32 * p;
      if (d < D) acc[p] = fmaf(ds, k[d], acc[p]);
    }
  }
  for (int p = 0; p < PER; ++p) {
    int d = lane + 32 * p;
    if (d < D) dQ[row * D + d] = acc[p] * scale;
  }
}

extern "C" __global__ void ref_attn_bwd_dkdv(const float* Q, const float* K, const float* V,
                                             const float* dO, const float* LSE,
                                             const float* Delta, float* dK, float* dV, int BH,
                                             int S, int D, int causal, float scale) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= BH * S) return;
  int bh = warp / S, j = warp % S;
  u64 row = (u64)bh * S + j;
  float kr[PER], vr[PER], dk[PER], dv[PER];
  for (int p = 0; p < PER; ++p) {
    int d = lane + 32 * p;
    kr[p] = d < D ? K[row * D + d] : 0.0f;
    vr[p] = d < D ? V[row * D + d] : 0.0f;
    dk[p] = 0.0f;
    dv[p] = 0.0f;
  }
  for (int i = causal ? j : 0; i < S; ++i) {
    u64 qrow = (u64)bh * S + i;
    const float* q = Q + qrow * D;
    const float* g = dO + qrow * D;
    float s = 0.0f, dp = 0.0f;
    for (int p = 0; p < PER; ++p) {
      int d = lane + 32 * p;
      if (d < D) {
        s = fmaf(q[d], kr[p], s);
        dp = fmaf(g[d], vr[p], dp);
      }
    }
    s = warp_sum(s);
    dp = warp_sum(dp);
    float pij = expf(s * scale - LSE[qrow]);
    float ds = pij * (dp - Delta[qrow]);
    for (int p = 0; p < PER; ++p) {
      int d = lane + 32 * p;
      if (d < D) {
        dv[p] = fmaf(pij, g[d], dv[p]);
        dk[p] = fmaf(ds, q[d], dk[p]);
      }
    }
  }
  for (int p = 0; p < PER; ++p) {
    int d = lane + 32 * p;
    if (d < D) {
      dK[row * D + d] = dk[p] * scale;
      dV[row * D + d] = dv[p];
    }
  }
}

// ---------------------------------------------------------------- comparison
// stats: [0] sum err^2, [1] sum ref^2, [2] max |err|, as doubles (max via atomicMax on bits of a
// non-negative double); counts: [0] allclose violations, [1] non-finite outputs, [2] non-zero
// outputs, [3] first violating index + 1 (min), [4] non-zero reference values.
__device__ void atomic_max_nonneg(double* addr, double v) {
  atomicMax((unsigned long long*)addr, (unsigned long long)__double_as_longlong(v));
}

extern "C" __global__ void compare(const float* out, const float* ref, u64 n, float rtol,
                                   float atol, double* stats, u64* counts) {
  double se = 0.0, sr = 0.0, mx = 0.0;
  u64 viol = 0, nonfinite = 0, nonzero = 0, refnz = 0, first = ~0ull;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    float o = out[i], r = ref[i];
    if (!isfinite(o)) {
      nonfinite++;
      viol++;
      if (i < first) first = i;
      continue;
    }
    if (o != 0.0f) nonzero++;
    if (r != 0.0f) refnz++;
    double e = (double)o - (double)r;
    se += e * e;
    sr += (double)r * (double)r;
    double ae = fabs(e);
    if (ae > mx) mx = ae;
    if (ae > (double)atol + (double)rtol * fabs((double)r)) {
      viol++;
      if (i < first) first = i;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    se += __shfl_xor_sync(0xffffffffu, se, o);
    sr += __shfl_xor_sync(0xffffffffu, sr, o);
    mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    viol += __shfl_xor_sync(0xffffffffu, viol, o);
    nonfinite += __shfl_xor_sync(0xffffffffu, nonfinite, o);
    nonzero += __shfl_xor_sync(0xffffffffu, nonzero, o);
    refnz += __shfl_xor_sync(0xffffffffu, refnz, o);
    u64 f = __shfl_xor_sync(0xffffffffu, first, o);
    first = f < first ? f : first;
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&stats[0], se);
    atomicAdd(&stats[1], sr);
    atomic_max_nonneg(&stats[2], mx);
    atomicAdd(&counts[0], viol);
    atomicAdd(&counts[1], nonfinite);
    atomicAdd(&counts[2], nonzero);
    if (first != ~0ull) atomicMin(&counts[3], first + 1);
    atomicAdd(&counts[4], refnz);
  }
}

// Number of bytes in [a, a + n) that differ from [b, b + n).
extern "C" __global__ void count_diff(const unsigned char* a, const unsigned char* b, u64 n,
                                      u64* count) {
  u64 c = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    c += a[i] != b[i];
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

// Number of bytes in [a, a + n) that are not `v`.
extern "C" __global__ void count_not(const unsigned char* a, u64 n, unsigned v, u64* count) {
  u64 c = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    c += a[i] != (unsigned char)v;
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}
