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

// What softmax_step needs of the rows a consumer thread owns: rows row0 and row0 + 8 of the
// 128-query block starting at q_first, sequence length seq, the causal flag, and the logits'
// scale in base-2 units.
struct Rows {
  u32 row0, lane, seq, causal, q_first;
  float scale_log2;
};

// One step of the online softmax on a 64 x BKV score tile in registers: the mask, the new
// running max m and sum l, and the factor alpha that rescales O. sc becomes P (unnormalised).
template <u32 D>
__device__ __forceinline__ void softmax_step(float (&sc)[BKV / 2], float (&m)[2], float (&l)[2],
                                             float (&alpha)[2], u32 kv0, const Rows& rows) {
  const float scale_log2 = rows.scale_log2;
  mask_tile(sc, kv0, rows.row0, rows.lane, rows.seq, rows.causal, rows.q_first);
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

// The barriers of the overlapped forwards' two rings: K tiles, and the operand of P V (the V
// tiles, or the fp8 forward's V^T tiles), each with a full and an empty barrier per stage.
struct Rings {
  u64 *k_full, *k_empty, *pv_full, *pv_empty;
};

// The overlapped forwards' loader (one thread): K tile n+1 goes in before V tile n, since the
// consumers need K n+1 (for S n+1) while P n V n runs. load_k(n, s) and load_v(n, s) issue the
// TMA copies of `bytes` bytes into stage s, completing on k_full[s] and v_full[s].
template <u32 STAGES, class LoadK, class LoadV>
__device__ __forceinline__ void load_k_ahead_of_v(u32 n_kv, u64* k_full, u64* k_empty,
                                                  u64* v_full, u64* v_empty, u32 bytes,
                                                  LoadK load_k, LoadV load_v) {
  const auto k = [&](u32 n) {
    const u32 s = n % STAGES;
    mbar_wait(&k_empty[s], ((n / STAGES) & 1) ^ 1);
    mbar_expect_tx(&k_full[s], bytes);
    load_k(n, s);
  };
  k(0);
  for (u32 n = 0; n < n_kv; ++n) {
    if (n + 1 < n_kv) k(n + 1);
    const u32 s = n % STAGES;
    mbar_wait(&v_empty[s], ((n / STAGES) & 1) ^ 1);
    mbar_expect_tx(&v_full[s], bytes);
    load_v(n, s);
  }
}

// The overlapped forwards' consumer schedule (one warpgroup, n_kv key tiles). Per key tile n it
// issues S n+1 = Q K n+1^T (qk(sc, s)), then O += P n V n (pv(s)), and waits for S n+1 alone:
// the softmax of tile n+1 runs on the CUDA cores while P n V n runs on the tensor cores (FA3's
// intra-warpgroup overlap). to_p(sc) turns the scores into P's A fragments, which stay in
// registers until P n V n completes; O is then rescaled by tile n+1's factor (the first tile's
// is 0 on an O of zeros). my_turn() and your_turn(last) bracket each issue (the ping-pong
// between warpgroups; nothing without it). Each tile's scores live in a register set declared
// where they are issued and consumed: no copy of them may sit between a wgmma and its wait, or
// ptxas serialises every wgmma of the kernel.
template <u32 D, u32 STAGES, class Qk, class Pv, class ToP, class MyTurn, class YourTurn>
__device__ __forceinline__ void consume_tiles(u32 n_kv, u32 tid, const Rings& r, const Rows& rows,
                                              float (&o)[D / 2], float (&m)[2], float (&l)[2],
                                              Qk qk, Pv pv, ToP to_p, MyTurn my_turn,
                                              YourTurn your_turn) {
  float alpha[2];
  {
    float sc[BKV / 2];
    my_turn();
    mbar_wait(&r.k_full[0], 0);
    qk(sc, 0u);
    your_turn(false);
    wgmma_wait<0>();
    reg_fence(sc);
    if (tid == 0) mbar_arrive(&r.k_empty[0]);
    softmax_step<D>(sc, m, l, alpha, 0, rows);
    to_p(sc);
  }
  for (u32 n = 0; n + 1 < n_kv; ++n) {
    const u32 s = n % STAGES, s1 = (n + 1) % STAGES;
    float sc[BKV / 2];
    my_turn();
    mbar_wait(&r.k_full[s1], ((n + 1) / STAGES) & 1);
    qk(sc, s1);
    mbar_wait(&r.pv_full[s], (n / STAGES) & 1);
    pv(s);
    your_turn(false);
    wgmma_wait<1>();  // S n+1 (P n V n may still run)
    reg_fence(sc);
    if (tid == 0) mbar_arrive(&r.k_empty[s1]);
    softmax_step<D>(sc, m, l, alpha, (n + 1) * BKV, rows);
    wgmma_wait<0>();  // P n V n: its operand's tile goes back, and P may be rewritten
    reg_fence(o);
    if (tid == 0) mbar_arrive(&r.pv_empty[s]);
    to_p(sc);
#pragma unroll
    for (u32 i = 0; i < 2; ++i) {
#pragma unroll
      for (u32 j = 0; j < D / 8; ++j) {
        o[4 * j + 2 * i] *= alpha[i];
        o[4 * j + 2 * i + 1] *= alpha[i];
      }
    }
    reg_fence(o);
  }
  const u32 s = (n_kv - 1) % STAGES;
  my_turn();
  mbar_wait(&r.pv_full[s], ((n_kv - 1) / STAGES) & 1);
  pv(s);
  your_turn(true);
  wgmma_wait<0>();
  reg_fence(o);
  if (tid == 0) mbar_arrive(&r.pv_empty[s]);
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
