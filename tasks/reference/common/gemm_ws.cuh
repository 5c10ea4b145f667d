// The warp-specialised, persistent TMA + wgmma GEMM skeleton shared by the bf16 and fp8
// reference GEMMs: C[M, N] (bf16, row-major) = scale * A[M, K] @ B[N, K]^T, A and B K-major.
//
// - Persistent grid (at most one CTA per SM); tiles of 128 x Cfg::BN, taken in groups of 16
//   tile-rows so that the CTAs running at once share their A and B tiles in L2.
// - Warpgroup 0 is the producer: one thread issues the TMA loads into a Cfg::STAGES-deep ring of
//   128 x BK_BYTES (A) and BN x BK_BYTES (B) tiles with 128-byte swizzle, each stage completing
//   on an mbarrier; setmaxnreg gives its registers to the consumers.
// - Warpgroups 1 and 2 are consumers, 64 rows of the tile each: wgmma m64nBN from shared memory,
//   fp32 accumulators in registers (setmaxnreg 232). A stage goes back to the producer (an
//   "empty" mbarrier) as soon as the wgmma group that read it has completed.
// - Cfg::PROMOTE (fp8; 0 for bf16): the tensor core accumulates fp8 products with reduced
//   precision, so every PROMOTE wgmmas (32 bytes of K each) their sum, accumulated from zero in
//   a scratch set of registers, is added to the fp32 accumulators with ordinary FADDs (as
//   DeepGEMM and cuBLAS do; PROMOTE = 4 is once per 128-byte k-block).
// - Epilogue: accumulators times `scale`, rounded to bf16 and stored from registers; rows >= M
//   and columns >= N are skipped (TMA zero-fills the out-of-range part of the loads), so any M,
//   N and K work.
// - Split-K (splits > 1, for shapes with fewer tiles than SMs): each tile's k-blocks are cut
//   into `splits` ranges, each a work unit of its own; the units add their fp32 partial sums
//   into a zeroed workspace (red.global.add.v2.f32) and a second launch rounds it to bf16.
#pragma once
#include "hopper.cuh"
#include "wgmma.cuh"

// Dynamic shared memory; the ring is aligned to 1024 bytes inside it (128-byte swizzle atoms).
extern __shared__ unsigned char smem_raw[];

namespace gemm_ws {

constexpr u32 BM = 128, GROUP_M = 16, THREADS = 384;

// Shared-memory bytes a plan must ask for.
template <class Cfg>
constexpr u32 shared_bytes() {
  return Cfg::STAGES * (BM + Cfg::BN) * Cfg::BK_BYTES + 2 * Cfg::STAGES * 8 + 1024;
}

// Tile-row and tile-column of tile `t`: column-major inside groups of GROUP_M tile-rows.
__host__ __device__ __forceinline__ void tile_coords(u32 t, u32 tiles_m, u32 tiles_n, u32& tm, u32& tn) {
  const u32 per_group = GROUP_M * tiles_n;
  const u32 first = (t / per_group) * GROUP_M;
  const u32 rows = tiles_m - first < GROUP_M ? tiles_m - first : GROUP_M;
  const u32 in_group = t % per_group;
  tm = first + in_group % rows;
  tn = in_group / rows;
}

template <class Cfg>
__device__ __forceinline__ void run(const TmaMap* tm_a, const TmaMap* tm_b, u16* __restrict__ c,
                                    float* __restrict__ ws, u32 m, u32 n, u32 k, u32 splits,
                                    float scale) {
  constexpr u32 BN = Cfg::BN, BK = Cfg::BK_BYTES, STAGES = Cfg::STAGES;
  constexpr u32 A_TILE = BM * BK, B_TILE = BN * BK;
  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  unsigned char* s_a = smem;
  unsigned char* s_b = smem + STAGES * A_TILE;
  u64* full = reinterpret_cast<u64*>(s_b + STAGES * B_TILE);
  u64* empty = full + STAGES;

  const u32 wg = threadIdx.x / 128;
  const u32 tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    for (u32 s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 2);  // one arrival per consumer warpgroup
    }
    mbar_init_fence();
  }
  __syncthreads();

  const u32 tiles_m = (m + BM - 1) / BM;
  const u32 tiles_n = (n + BN - 1) / BN;
  const u32 tiles = tiles_m * tiles_n;
  const u32 k_iters = (k * Cfg::ELEM_BYTES + BK - 1) / BK;
  // Work unit u: tile u / splits, k-blocks [kb0, kb1) of split u % splits.
  const u32 units = tiles * splits;
  const u32 per_split = (k_iters + splits - 1) / splits;

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      tma_prefetch_map(tm_a);
      tma_prefetch_map(tm_b);
      u32 it = 0;
      for (u32 u = blockIdx.x; u < units; u += gridDim.x) {
        u32 tm, tn;
        tile_coords(u / splits, tiles_m, tiles_n, tm, tn);
        const int row_a = static_cast<int>(tm * BM);
        const u32 kb0 = (u % splits) * per_split, kb1 = min(k_iters, kb0 + per_split);
        for (u32 kb = kb0; kb < kb1; ++kb, ++it) {
          const u32 s = it % STAGES;
          mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
          mbar_expect_tx(&full[s], A_TILE + B_TILE);
          const int kc = static_cast<int>(kb * (BK / Cfg::ELEM_BYTES));
          tma_load_2d(s_a + s * A_TILE, tm_a, &full[s], kc, row_a);
          tma_load_2d(s_b + s * B_TILE, tm_b, &full[s], kc, static_cast<int>(tn * BN));
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const u32 half = wg - 1;  // which 64 rows of the tile
    const u32 warp = tid / 32, lane = tid % 32;
    float acc[BN / 2];
    float part[Cfg::PROMOTE ? BN / 2 : 1];
#pragma unroll
    for (u32 i = 0; i < BN / 2; ++i) acc[i] = 0.f;
    u32 it = 0;
    for (u32 u = blockIdx.x; u < units; u += gridDim.x) {
      u32 tm, tn;
      tile_coords(u / splits, tiles_m, tiles_n, tm, tn);
      const u32 kb0 = (u % splits) * per_split, kb1 = min(k_iters, kb0 + per_split);
      if (kb0 >= kb1) continue;  // a split past the end of K (the producer loads nothing)
      u32 prev = 0;
      for (u32 kb = kb0; kb < kb1; ++kb, ++it) {
        const u32 s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const u64 da = desc_sw128(s_a + s * A_TILE + half * (64 * BK));
        const u64 db = desc_sw128(s_b + s * B_TILE);
        wgmma_fence();
        if constexpr (Cfg::PROMOTE > 0) {
          // PROMOTE k-steps accumulate on the tensor core, then are added to the fp32 sums.
#pragma unroll
          for (u32 g = 0; g < BK / 32; g += Cfg::PROMOTE) {
            if (g != 0) wgmma_fence();
#pragma unroll
            for (u32 kk = g; kk < g + Cfg::PROMOTE; ++kk) {
              Cfg::mma(part, da + 2 * kk, db + 2 * kk, kk != g);
            }
            wgmma_commit();
            wgmma_wait<0>();
            if (g + Cfg::PROMOTE == BK / 32 && tid == 0) mbar_arrive(&empty[s]);
            reg_fence(part);
#pragma unroll
            for (u32 i = 0; i < BN / 2; ++i) acc[i] += part[i];
          }
          prev = s;
        } else {
#pragma unroll
          for (u32 kk = 0; kk < BK / 32; ++kk) {
            Cfg::mma(acc, da + 2 * kk, db + 2 * kk, kb != kb0 || kk != 0);
          }
          wgmma_commit();
          if (kb > kb0) {
            // The previous stage's wgmma group is complete: hand its buffers back.
            wgmma_wait<1>();
            if (tid == 0) mbar_arrive(&empty[prev]);
          }
          prev = s;
        }
      }
      if constexpr (Cfg::PROMOTE == 0) {
        wgmma_wait<0>();
        if (tid == 0) mbar_arrive(&empty[prev]);
      }
      reg_fence(acc);

      // Fragment layout of m64nN: register 4j+{0,1} holds row warp*16 + lane/4, columns
      // 8j + 2*(lane%4) + {0,1}; 4j+{2,3} the same columns 8 rows further down.
      const u32 row = tm * BM + half * 64 + warp * 16 + lane / 4;
      const u32 col0 = tn * BN + 2 * (lane % 4);
#pragma unroll
      for (u32 j = 0; j < BN / 8; ++j) {
        const u32 col = col0 + 8 * j;
        if (col < n) {
#pragma unroll
          for (u32 h = 0; h < 2; ++h) {  // rows `row` and `row + 8`
            const u32 r = row + 8 * h;
            if (r >= m) continue;
            const float lo = scale * acc[4 * j + 2 * h], hi = scale * acc[4 * j + 2 * h + 1];
            const u64 at = static_cast<u64>(r) * n + col;
            if (splits == 1) {
              st_global_b32(c + at, pack_bf16(lo, hi));
            } else {
              red_add_v2_f32(ws + at, lo, hi);  // split-K partial sums, finished below
            }
          }
        }
        if constexpr (Cfg::PROMOTE) {
          acc[4 * j] = acc[4 * j + 1] = acc[4 * j + 2] = acc[4 * j + 3] = 0.f;
        }
      }
    }
  }
}

// Split-K's second launch: C = bf16(ws), the fp32 sums of every split (nothing when splits = 1,
// where the first launch stored C itself).
__device__ __forceinline__ void finish_splits(const float* __restrict__ ws, u16* __restrict__ c,
                                              u32 m, u32 n, u32 splits) {
  if (splits <= 1) return;
  const u64 total = static_cast<u64>(m) * n;  // n is even: pairs never straddle a row
  const u64 step = 2ull * gridDim.x * blockDim.x;
  for (u64 i = 2ull * (blockIdx.x * blockDim.x + threadIdx.x); i < total; i += step) {
    st_global_b32(c + i, pack_bf16(ws[i], ws[i + 1]));
  }
}

}  // namespace gemm_ws
