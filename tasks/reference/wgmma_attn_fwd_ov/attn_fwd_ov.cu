// Attention forward with log-sum-exp for Hopper (sm_90a), FlashAttention-3 style, with the
// softmax and the tensor cores overlapped inside each warpgroup: the suite's second hand-written
// entry for mha_with_lse_d{64,128}[_causal] (the first, wgmma_attn_fwd/attn_fwd.cu, runs each
// warpgroup's two products and its softmax one after the other).
//
// Q, K, V, O are bf16 [B, H, S, D] (D contiguous), LSE is f32 [B, H, S] (natural log);
// scale = 1/sqrt(D); causal masks key j for query i when j > i.
// - One CTA per (128-query block, batch*head); causal grids run the longest blocks first.
// - Warpgroup 0 is the producer: one thread loads the Q tile once and K and V tiles into
//   2-stage rings with barriers of their own, K one tile ahead of V, with TMA (common/
//   attn_fwd.cuh's 3-D tensor maps and 64-column boxes).
// - Warpgroups 1 and 2 each own 64 query rows. Per key tile n a warpgroup issues
//   S n+1 = Q K n+1^T (wgmma m64n128k16 from shared memory), then O += P n V n (register-A
//   wgmma, V the MN-major operand), and waits for S n+1 alone: the online softmax of tile n+1
//   (fp32 registers, exp2 with the scale folded in) runs on the CUDA cores while P n V n runs on
//   the tensor cores (FA3's intra-warpgroup overlap). P n stays in registers as bf16 until
//   P n V n completes; O is then rescaled by tile n+1's factor. With `pingpong` set (the
//   plans), the two warpgroups also take turns issuing their products (named barriers), so one
//   warpgroup's softmax overlaps the other's tensor-core work (FA3's inter-warpgroup overlap).
// - The loader's and the consumers' schedules are common/attn_fwd.cuh's load_k_ahead_of_v and
//   consume_tiles (shared with the fp8 forward). Each tile's scores live in a register set
//   declared where they are issued and consumed, and the accumulators are fenced around every
//   issue: ptxas serialises all wgmmas of a kernel (C7514/C7515) if any other instruction reads
//   or writes their registers mid-flight.
// - Epilogue: O / l rounded to bf16 and LSE = (m + log2 l) ln 2 stored from registers.
#include "attn_fwd.cuh"

namespace attn {

// Shared-memory bytes a plan must ask for: Q, the K ring, the V ring, their barriers, alignment.
template <u32 D>
__host__ __device__ constexpr u32 shared_bytes_ov() {
  return tile_bytes<D>() * (1 + 2 * STAGES) + 8 * (1 + 4 * STAGES) + 1024;
}

// S = Q K^T for this warpgroup's 64 query rows against the K tile at s_k (issued, not waited).
template <u32 D>
__device__ __forceinline__ void issue_qk(float (&sc)[BKV / 2], const unsigned char* s_q,
                                         const unsigned char* s_k, u32 half) {
  // The fences keep the compiler from moving reads or writes of sc across the issue.
  reg_fence(sc);
  wgmma_fence();
#pragma unroll
  for (u32 kk = 0; kk < D / 16; ++kk) {
    const u32 c = kk / 4, step = 2 * (kk % 4);  // 64-column box, 32 bytes per k-step
    const u64 da = desc_sw128(s_q + c * (BQ * 128) + half * (64 * 128)) + step;
    const u64 db = desc_sw128(s_k + c * (BKV * 128)) + step;
    wgmma_ss_bf16_m64n128k16(sc, da, db, kk != 0);
  }
  wgmma_commit();
  reg_fence(sc);
}

template <u32 D>
__device__ __forceinline__ void forward_ov(const TmaMap* tm_q, const TmaMap* tm_k, const TmaMap* tm_v,
                                           u16* __restrict__ out, float* __restrict__ lse,
                                           u32 seq, u32 causal, u32 pingpong) {
  constexpr u32 TILE = tile_bytes<D>();
  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  unsigned char* s_q = smem;
  unsigned char* s_k = smem + TILE;
  unsigned char* s_v = smem + TILE * (1 + STAGES);
  u64* q_full = reinterpret_cast<u64*>(smem + TILE * (1 + 2 * STAGES));
  u64* k_full = q_full + 1;
  u64* k_empty = k_full + STAGES;
  u64* v_full = k_empty + STAGES;
  u64* v_empty = v_full + STAGES;

  const u32 wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const u32 bh = blockIdx.y;
  const u32 qb = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  u32 n_kv = (seq + BKV - 1) / BKV;
  if (causal) n_kv = min(n_kv, qb + 1);  // BQ == BKV: blocks past the diagonal are all masked

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (u32 s = 0; s < STAGES; ++s) {
      mbar_init(&k_full[s], 1);
      mbar_init(&v_full[s], 1);
      mbar_init(&k_empty[s], 2);  // one arrival per consumer warpgroup
      mbar_init(&v_empty[s], 2);
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
      const auto load = [&](const TmaMap* map, unsigned char* ring, u64* full) {
        return [=](u32 n, u32 s) {
          load_tile<D>(ring + s * TILE, map, &full[s], static_cast<int>(n * BKV),
                       static_cast<int>(bh));
        };
      };
      load_k_ahead_of_v<STAGES>(n_kv, k_full, k_empty, v_full, v_empty, TILE,
                                load(tm_k, s_k, k_full), load(tm_v, s_v, v_full));
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
  reg_fence(o);

  u32 pa[BKV / 16][4];
  // P as bf16 A fragments: accumulator columns 16kk..16kk+15 are k-step kk's operand.
  const auto to_pa = [&](const float (&sc)[BKV / 2]) {
#pragma unroll
    for (u32 kk = 0; kk < BKV / 16; ++kk) {
#pragma unroll
      for (u32 r = 0; r < 4; ++r) pa[kk][r] = pack_bf16(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);
    }
  };
  // O += P V for the V tile of stage s (issued and committed, not waited).
  const auto issue_pv = [&](u32 s) {
    reg_fence(o);
#pragma unroll
    for (u32 kk = 0; kk < BKV / 16; ++kk) reg_fence(pa[kk]);
    wgmma_fence();
#pragma unroll
    for (u32 kk = 0; kk < BKV / 16; ++kk) {
      // V is [kv, D]: the MN-major B operand; 16 kv rows (2048 bytes) per k-step, the next 64
      // columns one box (BKV * 128 bytes) further.
      const u64 db = desc_sw128_mn(s_v + s * TILE, BKV * 128) + kk * (2048 >> 4);
      mma_pv<D>(o, pa[kk], db);
    }
    wgmma_commit();
    reg_fence(o);
#pragma unroll
    for (u32 kk = 0; kk < BKV / 16; ++kk) reg_fence(pa[kk]);
  };
  // Ping-pong (pingpong != 0, FA3's warp-scheduler barriers): the two consumer warpgroups take
  // turns issuing their wgmmas (named barrier 1 + half is this one's turn), so that one's
  // softmax runs while the other's products are on the tensor cores. Both take n_kv + 1 turns;
  // the second warpgroup lets the first start and makes no arrival after its last turn.
  const auto my_turn = [&]() {
    if (pingpong) named_bar_sync(1 + half, 256);
  };
  const auto your_turn = [&](bool last) {
    if (pingpong && !(last && half == 1)) named_bar_arrive(2 - half, 256);
  };
  if (pingpong && half == 1) named_bar_arrive(1, 256);
  mbar_wait(q_full, 0);
  consume_tiles<D, STAGES>(
      n_kv, tid, Rings{k_full, k_empty, v_full, v_empty},
      Rows{row0, lane, seq, causal, qb * BQ, scale_log2}, o, m, l,
      [&](float (&sc)[BKV / 2], u32 s) { issue_qk<D>(sc, s_q, s_k + s * TILE, half); }, issue_pv,
      to_pa, my_turn, your_turn);

  store_rows<D>(o, m, l, out, lse, bh, seq, row0, lane);
}

}  // namespace attn

static_assert(attn::shared_bytes_ov<128>() == 164936, "the d128 plans' shared_mem");
static_assert(attn::shared_bytes_ov<64>() == 83016, "the d64 plans' shared_mem");

extern "C" __global__ void __launch_bounds__(attn::THREADS, 1)
    attn_fwd_ov_d128(const __grid_constant__ TmaMap tm_q, const __grid_constant__ TmaMap tm_k,
                     const __grid_constant__ TmaMap tm_v, u16* __restrict__ o,
                     float* __restrict__ lse, u32 seq, u32 causal, u32 pingpong) {
  attn::forward_ov<128>(&tm_q, &tm_k, &tm_v, o, lse, seq, causal, pingpong);
}

extern "C" __global__ void __launch_bounds__(attn::THREADS, 1)
    attn_fwd_ov_d64(const __grid_constant__ TmaMap tm_q, const __grid_constant__ TmaMap tm_k,
                    const __grid_constant__ TmaMap tm_v, u16* __restrict__ o,
                    float* __restrict__ lse, u32 seq, u32 causal, u32 pingpong) {
  attn::forward_ov<64>(&tm_q, &tm_k, &tm_v, o, lse, seq, causal, pingpong);
}
