// Paged GQA decode for Hopper (sm_90a) with TMA: the suite's hand-written reference entry for
// gqa_paged_decode_h32_kv8_d128_ps1 (not yet run on a GPU). Memory-bound: the K and V rows of
// every cached token are read once, by the copy engine.
//   q [B, 32, 128] bf16; k_cache, v_cache [num_pages, 1, 8, 128] bf16; kv_indptr [B+1] i32;
//   kv_indices i32 (a page is one token); output [B, 32, 128] bf16; lse [B, 32] f32 (natural
//   log); scale = 1/sqrt(128); query head h reads KV head h / 4.
// - Split-KV (flash-decoding): CTA (c, b) takes the c-th of `splits` equal chunks of sequence b's
//   tokens, for all 8 KV heads, so a single long sequence still fills the GPU.
// - Warp 8 is the producer: its lanes read the chunk's page numbers 32 at a time, and lane 0,
//   per token, issues one TMA load of its K row and one of its V row (2-D maps over the caches
//   as [pages * 8, 128]: a box of 8 rows x 128 is one token's 8 heads, 2 KB) into a 3-stage ring
//   of 8 tokens, each stage completing on an mbarrier with the bytes it carries.
// - Warps 0..7 are consumers, warp g for KV head g and its 4 query heads; lane l holds dims
//   4l..4l+3: per token 4 dot products (a warp sum each), an fp32 online softmax and the
//   accumulators, in natural-log units as the task's lse. A stage goes back to the producer when
//   all 8 warps have arrived on its empty barrier.
// - Each CTA writes its partial state per query head (128 sums, the max m and the sum l) to the
//   workspace; decode_combine merges a sequence's chunks into output and lse.
#include "hopper.cuh"

namespace decode {

constexpr u32 HQ = 32, HKV = 8, GROUP = HQ / HKV, D = 128, WARPS = 8, THREADS = 32 * (WARPS + 1);
constexpr u32 TOK = 8, STAGES = 3;
constexpr u32 ROW = HKV * D * 2;            // one token's K (or V) rows, all heads: 2 KB
constexpr u32 STAGE = 2 * TOK * ROW;        // K rows, then V rows
constexpr u32 PARTIAL = D + 2;              // per query head: sums, m, l
constexpr u32 SHARED = STAGES * STAGE + 2 * STAGES * 8 + 1024;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Four consecutive bf16 (8 bytes) as floats.
__device__ __forceinline__ void bf16x4(uint2 raw, float (&out)[4]) {
  out[0] = __uint_as_float(raw.x << 16);
  out[1] = __uint_as_float(raw.x & 0xffff0000u);
  out[2] = __uint_as_float(raw.y << 16);
  out[3] = __uint_as_float(raw.y & 0xffff0000u);
}

__device__ __forceinline__ void split(const TmaMap* map_k, const TmaMap* map_v,
                                      const u16* __restrict__ q, const int* __restrict__ kv_indptr,
                                      const int* __restrict__ kv_indices, float* __restrict__ ws,
                                      u32 splits) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* ring = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  u64* full = reinterpret_cast<u64*>(ring + STAGES * STAGE);
  u64* empty = full + STAGES;
  const u32 c = blockIdx.x, b = blockIdx.y;
  const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const u64 begin = static_cast<u32>(kv_indptr[b]), len = static_cast<u32>(kv_indptr[b + 1]) - begin;
  const u32 t0 = static_cast<u32>(begin + len * c / splits);
  const u32 n = static_cast<u32>(begin + len * (c + 1) / splits) - t0;
  const u32 blocks = (n + TOK - 1) / TOK;

  if (threadIdx.x == 0) {
    for (u32 s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], WARPS);  // one arrival per consumer warp
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warp == WARPS) {
    if (lane == 0) {
      tma_prefetch_map(map_k);
      tma_prefetch_map(map_v);
    }
    // The page numbers arrive 32 at a time, one per lane in one coalesced load (read one by
    // one between the TMA issues, each would wait a full memory latency); lane 0 issues the
    // loads, taking each page number from its lane.
    for (u32 base = 0; base < n; base += 32) {
      const int mine = base + lane < n ? kv_indices[t0 + base + lane] : 0;
      const u32 here = min(32u, n - base);
      for (u32 j = 0; j < here; ++j) {
        const int row = __shfl_sync(0xffffffffu, mine, j) * static_cast<int>(HKV);
        const u32 tok = base + j, it = tok / TOK, jj = tok % TOK, s = it % STAGES;
        if (lane == 0) {
          if (jj == 0) {
            mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
            mbar_expect_tx(&full[s], 2 * min(TOK, n - it * TOK) * ROW);
          }
          tma_load_2d(ring + s * STAGE + jj * ROW, map_k, &full[s], 0, row);
          tma_load_2d(ring + s * STAGE + (TOK + jj) * ROW, map_v, &full[s], 0, row);
        }
      }
    }
    return;
  }

  const float scale = 0.08838834764831845f;  // 1/sqrt(128)
  const u32 g = warp;
  float qr[GROUP][4], acc[GROUP][4], m[GROUP], l[GROUP];
#pragma unroll
  for (u32 h = 0; h < GROUP; ++h) {
    const u64 row = (static_cast<u64>(b) * HQ + g * GROUP + h) * D;
    bf16x4(*reinterpret_cast<const uint2*>(q + row + 4 * lane), qr[h]);
#pragma unroll
    for (u32 e = 0; e < 4; ++e) {
      qr[h][e] *= scale;
      acc[h][e] = 0.f;
    }
    m[h] = -INFINITY;
    l[h] = 0.f;
  }
  for (u32 it = 0; it < blocks; ++it) {
    const u32 s = it % STAGES, cnt = min(TOK, n - it * TOK);
    mbar_wait(&full[s], (it / STAGES) & 1);
    const unsigned char* base = ring + s * STAGE + g * (D * 2) + lane * 8;
    for (u32 j = 0; j < cnt; ++j) {
      float kr[4], vr[4];
      bf16x4(*reinterpret_cast<const uint2*>(base + j * ROW), kr);
      bf16x4(*reinterpret_cast<const uint2*>(base + (TOK + j) * ROW), vr);
#pragma unroll
      for (u32 h = 0; h < GROUP; ++h) {
        const float sc = warp_sum(qr[h][0] * kr[0] + qr[h][1] * kr[1] + qr[h][2] * kr[2] +
                                  qr[h][3] * kr[3]);
        const float mn = fmaxf(m[h], sc);
        const float corr = __expf(m[h] - mn), p = __expf(sc - mn);  // m = -inf first: corr = 0
        l[h] = l[h] * corr + p;
#pragma unroll
        for (u32 e = 0; e < 4; ++e) acc[h][e] = acc[h][e] * corr + p * vr[e];
        m[h] = mn;
      }
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[s]);
  }
  // The partial state of this chunk (an empty chunk: m = -inf, l = 0).
#pragma unroll
  for (u32 h = 0; h < GROUP; ++h) {
    float* p = ws + ((static_cast<u64>(b) * splits + c) * HQ + g * GROUP + h) * PARTIAL;
#pragma unroll
    for (u32 e = 0; e < 4; ++e) p[4 * lane + e] = acc[h][e];
    if (lane == 0) {
      p[D] = m[h];
      p[D + 1] = l[h];
    }
  }
}

// One block of 128 threads (one per dim) per (sequence, query head): the chunks merged.
__device__ __forceinline__ void combine(const float* __restrict__ ws, u16* __restrict__ out,
                                        float* __restrict__ lse, u32 splits) {
  const u32 row = blockIdx.x, b = row / HQ, h = row % HQ, d = threadIdx.x;
  const float* p = ws + static_cast<u64>(b) * splits * HQ * PARTIAL + h * PARTIAL;
  float mx = -INFINITY;
  for (u32 c = 0; c < splits; ++c) mx = fmaxf(mx, p[c * HQ * PARTIAL + D]);
  float total = 0.f, o = 0.f;
  for (u32 c = 0; c < splits; ++c) {
    const float* part = p + c * HQ * PARTIAL;
    if (part[D + 1] == 0.f) continue;  // an empty chunk
    const float f = __expf(part[D] - mx);
    total += f * part[D + 1];
    o += f * part[d];
  }
  const float value = total > 0.f ? o / total : 0.f;
  u16 bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  out[static_cast<u64>(row) * D + d] = bits;
  if (d == 0) lse[row] = total > 0.f ? mx + __logf(total) : -INFINITY;
}

}  // namespace decode

static_assert(decode::SHARED == 99376, "the plan's shared_mem");

extern "C" __global__ void __launch_bounds__(decode::THREADS)
    decode_tma_split(const __grid_constant__ TmaMap map_k, const __grid_constant__ TmaMap map_v,
                     const u16* __restrict__ q, const int* __restrict__ kv_indptr,
                     const int* __restrict__ kv_indices, float* __restrict__ ws, u32 splits) {
  decode::split(&map_k, &map_v, q, kv_indptr, kv_indices, ws, splits);
}

extern "C" __global__ void __launch_bounds__(decode::D)
    decode_combine(const float* __restrict__ ws, u16* __restrict__ out, float* __restrict__ lse,
                   u32 splits) {
  decode::combine(ws, out, lse, splits);
}
