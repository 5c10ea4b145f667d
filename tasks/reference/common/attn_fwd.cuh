// What the attention-forward reference kernels share (wgmma_attn_fwd/attn_fwd.cu,
// wgmma_attn_fwd_ov/attn_fwd_ov.cu, wgmma_attn_fwd_fp8/attn_fwd_fp8.cu): tile sizes, TMA tile
// loads, the P V product, quad reductions, the mask, the online-softmax step and the bf16
// epilogue. In the bf16 kernels Q, K, V, O are bf16 [B, H, S, D] (D contiguous), loaded through
// 3-D tensor maps over [B*H, S, D] in 64-column (128-byte, 128B-swizzled) boxes.
#pragma once
#include "hopper.cuh"
#include "wgmma.cuh"

extern __shared__ unsigned char smem_raw[];

namespace attn {

constexpr u32 BQ = 128, BKV = 128, STAGES = 2, THREADS = 384;

template <u32 D>
__host__ __device__ constexpr u32 tile_bytes() {
  return BKV * D * 2;
}

// Shared-memory bytes attn_fwd.cu's plans ask for: Q, the K and V ring, barriers, alignment slack.
template <u32 D>
__host__ __device__ constexpr u32 shared_bytes() {
  return tile_bytes<D>() * (1 + 2 * STAGES) + 8 * (1 + 2 * STAGES) + 1024;
}

// Loads a [rows, D] tile as D/64 boxes of 64 columns, each rows x 128 bytes.
template <u32 D>
__device__ __forceinline__ void load_tile(unsigned char* dst, const TmaMap* map, u64* bar, int row,
                                          int bh) {
#pragma unroll
  for (u32 c = 0; c < D / 64; ++c) {
    tma_load_3d(dst + c * (BKV * 128), map, bar, static_cast<int>(c * 64), row, bh);
  }
}

template <u32 D>
__device__ __forceinline__ void mma_pv(float (&o)[D / 2], const u32 (&a)[4], u64 db) {
  if constexpr (D == 128) {
    wgmma_rs_bf16_m64n128k16<1>(o, a, db, 1);
  } else {
    wgmma_rs_bf16_m64n64k16<1>(o, a, db, 1);
  }
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffff, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffff, v, 1);
  return v + __shfl_xor_sync(0xffffffff, v, 2);
}

// Masks a 64 x BKV score tile in registers (fragment layout of m64nBKV: register 4j+e holds
// row row0 + 8 * (e >> 1), column kv0 + 8j + 2 * (lane % 4) + (e & 1)): keys past S, and with
// `causal` keys after the query. Only tiles that reach past S or past the diagonal of the
// 128-query block starting at q_first are touched.
__device__ __forceinline__ void mask_tile(float (&sc)[BKV / 2], u32 kv0, u32 row0, u32 lane,
                                          u32 seq, u32 causal, u32 q_first) {
  if (kv0 + BKV > seq || (causal && kv0 + BKV > q_first)) {
#pragma unroll
    for (u32 j = 0; j < BKV / 8; ++j) {
#pragma unroll
      for (u32 e = 0; e < 4; ++e) {
        const u32 col = kv0 + 8 * j + 2 * (lane % 4) + (e & 1);
        const u32 row = row0 + 8 * (e >> 1);
        if (col >= seq || (causal && col > row)) sc[4 * j + e] = -INFINITY;
      }
    }
  }
}

// One step of the online softmax on a 64 x BKV score tile in registers: the mask, the new
// running max m and sum l, and the factor alpha that rescales O. sc becomes P (unnormalised).
template <u32 D>
__device__ __forceinline__ void softmax_step(float (&sc)[BKV / 2], float (&m)[2], float (&l)[2],
                                             float (&alpha)[2], u32 kv0, u32 row0, u32 lane,
                                             u32 seq, u32 causal, u32 q_first,
                                             float scale_log2) {
  mask_tile(sc, kv0, row0, lane, seq, causal, q_first);
#pragma unroll
  for (u32 i = 0; i < 2; ++i) {
    float mx = -INFINITY;
#pragma unroll
    for (u32 j = 0; j < BKV / 8; ++j) mx = fmaxf(mx, fmaxf(sc[4 * j + 2 * i], sc[4 * j + 2 * i + 1]));
    const float m_new = fmaxf(m[i], quad_max(mx) * scale_log2);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    alpha[i] = exp2f(m[i] - m_use);
    float sum = 0.f;
#pragma unroll
    for (u32 j = 0; j < BKV / 8; ++j) {
#pragma unroll
      for (u32 e = 0; e < 2; ++e) {
        float& v = sc[4 * j + 2 * i + e];
        v = exp2f(v * scale_log2 - m_use);
        sum += v;
      }
    }
    l[i] = l[i] * alpha[i] + sum;  // this thread's share of the row; summed over the quad at the end
    m[i] = m_new;
  }
}

// Epilogue: this thread's rows of O / l rounded to bf16, and LSE = (m + log2 l) ln 2 (m in
// base-2 units, l summed over the quad here).
template <u32 D>
__device__ __forceinline__ void store_rows(const float (&o)[D / 2], const float (&m)[2],
                                           const float (&l)[2], u16* __restrict__ out,
                                           float* __restrict__ lse, u32 bh, u32 seq, u32 row0,
                                           u32 lane) {
  const u64 head = static_cast<u64>(bh) * seq;
#pragma unroll
  for (u32 i = 0; i < 2; ++i) {
    const u32 row = row0 + 8 * i;
    const float total = quad_sum(l[i]);
    const float inv = 1.f / total;
    if (row < seq) {
      u16* dst = out + (head + row) * D + 2 * (lane % 4);
#pragma unroll
      for (u32 j = 0; j < D / 8; ++j) {
        st_global_b32(dst + 8 * j, pack_bf16(o[4 * j + 2 * i] * inv, o[4 * j + 2 * i + 1] * inv));
      }
      if (lane % 4 == 0) lse[head + row] = (m[i] + log2f(total)) * 0.6931471805599453f;
    }
  }
}

}  // namespace attn
