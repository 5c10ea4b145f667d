// The reference GEMMs' second skeleton (v2): gemm_ws.cuh's persistent, warp-specialised TMA +
// wgmma GEMM (its tiles, ring, consumers and epilogue; see there), with two changes in how work
// is cut and shared. gemm_ws.cuh's run() stays as it was: published records name the PTX it
// builds (the v1 reference GEMMs and the zoo members that include them).
//
// - Stream-K (splits = 0): the tiles that fill whole waves of the workers (CTAs, or clusters)
//   are taken one per worker in turn (data-parallel); the rest, `tiles % workers` tiles, are one
//   stream of k-blocks cut into equal contiguous ranges, one per worker (at least
//   MIN_STREAM_ITERS k-blocks each), so no worker waits on a partly empty last wave. A range
//   crosses tiles where it must; its pieces add their fp32 partial sums into a zeroed workspace
//   of one slot per stream tile, and a second launch rounds those tiles into C and zeroes the
//   slots again (finish_stream_k), so a launch leaves the workspace as it found it.
//   splits >= 1 keeps v1's units (whole tiles, or split-K).
// - Clusters (Cfg::CLUSTER = 2; launched with cluster dims 2 x 1 x 1): the two CTAs of a
//   cluster take the two 128-row halves of a 256-row tile of one tile column. Each loads its own
//   A and one half of the shared B tile, multicast into both CTAs' rings (TMA .multicast::
//   cluster), so B's L2 traffic is halved. A stage goes back to the producers only when the
//   consumers of both CTAs are done with it (the empty barriers count 2 * CLUSTER arrivals, made
//   across the cluster), and no CTA leaves before its peer (a cluster barrier at the end).
#pragma once
#include "gemm_ws.cuh"

namespace gemm_ws {

// Fewest k-blocks a stream-K range may have (a piece's partial sums cost a tile of atomics).
constexpr u32 MIN_STREAM_ITERS = 4;

// Tiles that stream-K leaves to the stream: those past the last whole wave of `ctas` CTAs.
__host__ __device__ __forceinline__ u32 stream_tiles(u32 tiles, u32 ctas) { return tiles % ctas; }

// A CTA's work: one unit at a time, the same sequence for the producer and the consumers.
struct Unit {
  u32 tile, kb0, kb1;  // tile index (tile_coords order) and its k-blocks [kb0, kb1)
  bool partial;        // the sums go to the workspace, not C
};

// `ctas` workers (CTAs, or clusters that take a tile of cluster rows together) over `tiles`
// tiles; worker `me` walks its units with step().
struct Cursor {
  u32 tiles, k_iters, ctas, splits, dp_tiles, next;
  u32 a, b;  // stream-K: this worker's k-block range over the stream tiles

  __host__ __device__ __forceinline__ Cursor(u32 tiles_, u32 k_iters_, u32 splits_, u32 me, u32 workers)
      : tiles(tiles_), k_iters(k_iters_), ctas(workers), splits(splits_), next(me) {
    dp_tiles = tiles;
    a = b = 0;
    if (splits == 0) {
      dp_tiles = tiles - stream_tiles(tiles, ctas);
      const u32 total = (tiles - dp_tiles) * k_iters;  // < ctas * k_iters
      const u32 parts = total / MIN_STREAM_ITERS < 1 ? 1 : (total / MIN_STREAM_ITERS > ctas ? ctas : total / MIN_STREAM_ITERS);
      if (me < parts) {
        a = static_cast<u32>(static_cast<u64>(total) * me / parts);
        b = static_cast<u32>(static_cast<u64>(total) * (me + 1) / parts);
      }
    }
  }

  __host__ __device__ __forceinline__ bool step(Unit& w) {
    if (splits > 0) {  // one tile per unit (splits = 1) or split-K
      if (next >= tiles * splits) return false;
      const u32 per_split = (k_iters + splits - 1) / splits;
      w.tile = next / splits;
      w.kb0 = (next % splits) * per_split;
      w.kb1 = k_iters < w.kb0 + per_split ? k_iters : w.kb0 + per_split;
      w.partial = splits > 1;
      next += ctas;
      return true;
    }
    if (next < dp_tiles) {
      w = Unit{next, 0, k_iters, false};
      next += ctas;
      return true;
    }
    if (a >= b) return false;
    w.tile = dp_tiles + a / k_iters;
    w.kb0 = a % k_iters;
    w.kb1 = k_iters < w.kb0 + (b - a) ? k_iters : w.kb0 + (b - a);
    w.partial = true;
    a += w.kb1 - w.kb0;
    return true;
  }
};

template <class Cfg>
__device__ __forceinline__ void run_sk(const TmaMap* tm_a, const TmaMap* tm_b, u16* __restrict__ c,
                                    float* __restrict__ ws, u32 m, u32 n, u32 k, u32 splits,
                                    float scale) {
  constexpr u32 BN = Cfg::BN, BK = Cfg::BK_BYTES, STAGES = Cfg::STAGES, CL = Cfg::CLUSTER;
  constexpr u32 A_TILE = BM * BK, B_TILE = BN * BK;
  // With clusters of CL CTAs (CL tile-rows of one tile column), each CTA loads its own A and
  // 1/CL of the shared B tile, multicast to every CTA of the cluster.
  static_assert(CL == 1 || CL == 2, "clusters of 1 or 2 CTAs");
  const u32 rank = CL == 1 ? 0 : cluster_ctarank();
  static_assert(CL == 1 || Cfg::BN / CL % 8 == 0, "B splits into whole swizzle atoms");
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
      mbar_init(&empty[s], 2 * CL);  // one arrival per consumer warpgroup of the cluster
    }
    mbar_init_fence();
  }
  if constexpr (CL > 1) {
    cluster_sync();  // no CTA multicasts into a peer's barriers before they exist
  } else {
    __syncthreads();
  }

  // Tiles of CL x 128 rows (one per cluster) in tile_coords order; this CTA computes rows
  // [rank * 128, rank * 128 + 128) of each.
  const u32 tiles_m = (m + CL * BM - 1) / (CL * BM);
  const u32 tiles_n = (n + BN - 1) / BN;
  const u32 tiles = tiles_m * tiles_n;
  const u32 me = blockIdx.x / CL, workers = gridDim.x / CL;
  const u32 k_iters = (k * Cfg::ELEM_BYTES + BK - 1) / BK;

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      tma_prefetch_map(tm_a);
      tma_prefetch_map(tm_b);
      u32 it = 0;
      Cursor cur(tiles, k_iters, splits, me, workers);
      for (Unit w; cur.step(w);) {
        u32 tm, tn;
        tile_coords(w.tile, tiles_m, tiles_n, tm, tn);
        const int row_a = static_cast<int>((tm * CL + rank) * BM);
        for (u32 kb = w.kb0; kb < w.kb1; ++kb, ++it) {
          const u32 s = it % STAGES;
          mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
          mbar_expect_tx(&full[s], A_TILE + B_TILE);
          const int kc = static_cast<int>(kb * (BK / Cfg::ELEM_BYTES));
          tma_load_2d(s_a + s * A_TILE, tm_a, &full[s], kc, row_a);
          if constexpr (CL == 1) {
            tma_load_2d(s_b + s * B_TILE, tm_b, &full[s], kc, static_cast<int>(tn * BN));
          } else {
            tma_load_2d_multicast(s_b + s * B_TILE + rank * (B_TILE / CL), tm_b, &full[s], kc,
                                  static_cast<int>(tn * BN + rank * (BN / CL)),
                                  static_cast<u16>((1u << CL) - 1));
          }
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
    // A stage goes back to the producers once every consumer of the cluster is done with it.
    const auto release = [&](u32 s) {
      if (tid != 0) return;
      if constexpr (CL == 1) {
        mbar_arrive(&empty[s]);
      } else {
#pragma unroll
        for (u32 r = 0; r < CL; ++r) mbar_arrive_cluster(&empty[s], r);
      }
    };
    Cursor cur(tiles, k_iters, splits, me, workers);
    for (Unit w; cur.step(w);) {
      u32 tm, tn;
      tile_coords(w.tile, tiles_m, tiles_n, tm, tn);
      tm = tm * CL + rank;  // this CTA's 128-row tile
      const u32 kb0 = w.kb0, kb1 = w.kb1;
      if (kb0 >= kb1) continue;  // a split past the end of K (the producer loads nothing)
      // Stream-K pieces add into their tile's slot of the workspace (row-major 128 x BN per
      // CTA of the cluster).
      float* slot =
          splits == 0 ? ws + (static_cast<u64>(w.tile - cur.dp_tiles) * CL + rank) * (BM * BN)
                      : nullptr;
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
            if (g + Cfg::PROMOTE == BK / 32) release(s);
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
            release(prev);
          }
          prev = s;
        }
      }
      if constexpr (Cfg::PROMOTE == 0) {
        wgmma_wait<0>();
        release(prev);
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
            if (!w.partial) {
              st_global_b32(c + at, pack_bf16(lo, hi));
            } else if (slot != nullptr) {  // stream-K: the tile's slot, finished below
              red_add_v2_f32(slot + (r - tm * BM) * BN + (col - tn * BN), lo, hi);
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
  // A peer may still arrive on this CTA's barriers: no CTA of a cluster leaves before all are done.
  if constexpr (CL > 1) cluster_sync();
}

// Stream-K's second launch: each stream tile's slot rounded into C, then zeroed for the next
// launch (nothing when the tiles fill whole waves of the first launch's `workers`: CTAs, or
// clusters of CL CTAs whose tiles are CL x 128 rows).
template <u32 BN, u32 CL>
__device__ __forceinline__ void finish_stream_k(float* __restrict__ ws, u16* __restrict__ c,
                                                u32 m, u32 n, u32 workers) {
  constexpr u32 ROWS = CL * BM, PAIRS = ROWS * BN / 2;
  const u32 tiles_m = (m + ROWS - 1) / ROWS, tiles_n = (n + BN - 1) / BN;
  const u32 tiles = tiles_m * tiles_n;
  const u32 streamed = stream_tiles(tiles, workers), dp_tiles = tiles - streamed;
  const u64 pairs = static_cast<u64>(streamed) * PAIRS;
  const u64 step = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs; i += step) {
    const u32 s = static_cast<u32>(i / PAIRS), e = 2 * static_cast<u32>(i % PAIRS);
    u32 tm, tn;
    tile_coords(dp_tiles + s, tiles_m, tiles_n, tm, tn);
    const u32 r = tm * ROWS + e / BN, col = tn * BN + e % BN;
    float2* p = reinterpret_cast<float2*>(ws + static_cast<u64>(s) * (ROWS * BN) + e);
    const float2 v = *p;
    *p = make_float2(0.f, 0.f);
    if (r < m && col < n) st_global_b32(c + static_cast<u64>(r) * n + col, pack_bf16(v.x, v.y));
  }
}

}  // namespace gemm_ws
