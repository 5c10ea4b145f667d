// Attention forward with log-sum-exp for Hopper (sm_90a), FlashAttention-3 style: the suite's
// hand-written reference entry for mha_with_lse_d{64,128}[_causal].
//
// Q, K, V, O are bf16 [B, H, S, D] (D contiguous), LSE is f32 [B, H, S] (natural log);
// scale = 1/sqrt(D); causal masks key j for query i when j > i.
// - One CTA per (128-query block, batch*head); causal grids run the longest blocks first.
// - Warpgroup 0 is the producer: one thread loads the Q tile once and K and V tiles into a
//   2-stage ring with TMA (3-D tensor maps over [B*H, S, D], so a tile never crosses into the
//   next head and rows past S arrive as zeros), in 64-column (128-byte, 128B-swizzled) boxes.
// - Warpgroups 1 and 2 each own 64 query rows: S = Q K^T with wgmma m64n128k16 from shared
//   memory, the online softmax in fp32 registers (exp2 with the scale folded in), P rounded to
//   bf16 in registers and O += P V with the register-A form of wgmma (V is the MN-major operand).
// - Epilogue: O / l rounded to bf16 and LSE = (m + log2 l) ln 2 stored from registers.
#include "attn_fwd.cuh"

namespace attn {

template <u32 D>
__device__ __forceinline__ void forward(const TmaMap* tm_q, const TmaMap* tm_k, const TmaMap* tm_v,
                                        u16* __restrict__ out, float* __restrict__ lse, u32 seq,
                                        u32 causal) {
  constexpr u32 TILE = tile_bytes<D>();
  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  unsigned char* s_q = smem;
  unsigned char* s_k = smem + TILE;
  unsigned char* s_v = smem + TILE * (1 + STAGES);
  u64* q_full = reinterpret_cast<u64*>(smem + TILE * (1 + 2 * STAGES));
  u64* full = q_full + 1;
  u64* empty = full + STAGES;

  const u32 wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const u32 bh = blockIdx.y;
  const u32 qb = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  u32 n_kv = (seq + BKV - 1) / BKV;
  if (causal) n_kv = min(n_kv, qb + 1);  // BQ == BKV: blocks past the diagonal are all masked

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (u32 s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 2);  // one arrival per consumer warpgroup
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<24>();
    if (tid == 0) {
      tma_prefetch_map(tm_q);
      tma_prefetch_map(tm_k);
      tma_prefetch_map(tm_v);
      mbar_expect_tx(q_full, TILE);
      load_tile<D>(s_q, tm_q, q_full, static_cast<int>(qb * BQ), static_cast<int>(bh));
      for (u32 n = 0; n < n_kv; ++n) {
        const u32 s = n % STAGES;
        mbar_wait(&empty[s], ((n / STAGES) & 1) ^ 1);
        mbar_expect_tx(&full[s], 2 * TILE);
        load_tile<D>(s_k + s * TILE, tm_k, &full[s], static_cast<int>(n * BKV), static_cast<int>(bh));
        load_tile<D>(s_v + s * TILE, tm_v, &full[s], static_cast<int>(n * BKV), static_cast<int>(bh));
      }
    }
    return;
  }

  setmaxnreg_inc<240>();
  const u32 half = wg - 1, warp = tid / 32, lane = tid % 32;
  const u32 row0 = qb * BQ + half * 64 + warp * 16 + lane / 4;  // and row0 + 8
  const float scale_log2 = rsqrtf(static_cast<float>(D)) * 1.4426950408889634f;
  float o[D / 2];
#pragma unroll
  for (u32 i = 0; i < D / 2; ++i) o[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

  mbar_wait(q_full, 0);
  for (u32 n = 0; n < n_kv; ++n) {
    const u32 s = n % STAGES;
    mbar_wait(&full[s], (n / STAGES) & 1);
    float sc[BKV / 2];
    wgmma_fence();
#pragma unroll
    for (u32 kk = 0; kk < D / 16; ++kk) {
      const u32 c = kk / 4, step = 2 * (kk % 4);  // 64-column box, 32 bytes per k-step
      const u64 da = desc_sw128(s_q + c * (BQ * 128) + half * (64 * 128)) + step;
      const u64 db = desc_sw128(s_k + s * TILE + c * (BKV * 128)) + step;
      wgmma_ss_bf16_m64n128k16(sc, da, db, kk != 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(sc);

    mask_tile(sc, n * BKV, row0, lane, seq, causal, qb * BQ);

#pragma unroll
    for (u32 i = 0; i < 2; ++i) {
      float mx = -INFINITY;
#pragma unroll
      for (u32 j = 0; j < BKV / 8; ++j) mx = fmaxf(mx, fmaxf(sc[4 * j + 2 * i], sc[4 * j + 2 * i + 1]));
      const float m_new = fmaxf(m[i], quad_max(mx) * scale_log2);
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      const float alpha = exp2f(m[i] - m_use);
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
      l[i] = l[i] * alpha + sum;  // this thread's share of the row; summed over the quad at the end
      m[i] = m_new;
#pragma unroll
      for (u32 j = 0; j < D / 8; ++j) {
        o[4 * j + 2 * i] *= alpha;
        o[4 * j + 2 * i + 1] *= alpha;
      }
    }

    // P as bf16 A fragments: accumulator columns 16kk..16kk+15 are k-step kk's operand.
    u32 pa[BKV / 16][4];
#pragma unroll
    for (u32 kk = 0; kk < BKV / 16; ++kk) {
#pragma unroll
      for (u32 r = 0; r < 4; ++r) pa[kk][r] = pack_bf16(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);
    }
    wgmma_fence();
#pragma unroll
    for (u32 kk = 0; kk < BKV / 16; ++kk) {
      // V is [kv, D]: the MN-major B operand; 16 kv rows (2048 bytes) per k-step, the next 64
      // columns one box (BKV * 128 bytes) further.
      const u64 db = desc_sw128_mn(s_v + s * TILE, BKV * 128) + kk * (2048 >> 4);
      mma_pv<D>(o, pa[kk], db);
    }
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(o);
    if (tid == 0) mbar_arrive(&empty[s]);
  }

  store_rows<D>(o, m, l, out, lse, bh, seq, row0, lane);
}

}  // namespace attn

static_assert(attn::shared_bytes<128>() == 164904, "the d128 plans' shared_mem");
static_assert(attn::shared_bytes<64>() == 82984, "the d64 plans' shared_mem");

extern "C" __global__ void __launch_bounds__(attn::THREADS, 1)
    attn_fwd_d128(const __grid_constant__ TmaMap tm_q, const __grid_constant__ TmaMap tm_k,
                  const __grid_constant__ TmaMap tm_v, u16* __restrict__ o, float* __restrict__ lse,
                  u32 seq, u32 causal) {
  attn::forward<128>(&tm_q, &tm_k, &tm_v, o, lse, seq, causal);
}

extern "C" __global__ void __launch_bounds__(attn::THREADS, 1)
    attn_fwd_d64(const __grid_constant__ TmaMap tm_q, const __grid_constant__ TmaMap tm_k,
                 const __grid_constant__ TmaMap tm_v, u16* __restrict__ o, float* __restrict__ lse,
                 u32 seq, u32 causal) {
  attn::forward<64>(&tm_q, &tm_k, &tm_v, o, lse, seq, causal);
}
