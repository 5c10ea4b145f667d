// What the attention-backward reference kernels share (wgmma_attn_bwd/attn_bwd.cu and
// wgmma_attn_bwd_tr/attn_bwd_tr.cu): the Delta and dQ-conversion launches, and the main kernel's
// body (see attn_bwd.cu's comment); TMA_DQ chooses how dQ's partial sums reach the workspace.
#pragma once
#include "hopper.cuh"
#include "wgmma.cuh"

extern __shared__ unsigned char smem_raw[];

namespace attn_bwd {

constexpr u32 THREADS = 256;
constexpr u32 BKEYS = 128;     // keys per CTA (two warpgroups of 64)
constexpr u32 BQ = 64;         // queries per step
constexpr u32 BOX = 64 * 128;  // one 64-row x 64-column bf16 TMA box, 128-byte rows: 8 KB

// Shared memory: K and V tiles [key group 2][d block NDB] boxes, Q and dO [stage 2][NDB] boxes,
// dS^T [key group 2] (64 keys x 64 queries), barriers, LSE * log2 e and Delta of the query
// block [stage 2][64] each; plus 1024 for alignment.
template <u32 D>
constexpr u32 shared_bytes() {
  constexpr u32 NDB = D / 64;
  return (8 * NDB + 2) * BOX + 64 + 1024 + 1024;
}

// With TMA_DQ: after v1's layout (rounded up to 1024 bytes), two dQ buffers per warpgroup
// (64 queries x 64 fp32 columns, as two 32-column boxes with the 128-byte swizzle).
constexpr u32 DQ_BUF = 64 * 64 * 4;
template <u32 D>
constexpr u32 shared_bytes_tr() {
  constexpr u32 NDB = D / 64;
  return (8 * NDB + 2) * BOX + 2048 + 4 * DQ_BUF + 1024;
}

__device__ __forceinline__ void st_shared_b32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

__device__ __forceinline__ void st_shared_v2_f32(u32 addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

// TMA_DQ = false: each thread adds its dQ partial sums to the fp32 workspace with
// red.global.add (v1). TMA_DQ = true: the warpgroup writes them to shared memory and one thread
// adds them with a TMA reduce-add through tm_dq, a map over the workspace.
template <u32 D, bool TMA_DQ = false>
__device__ __forceinline__ void run(const TmaMap* tm_q, const TmaMap* tm_k, const TmaMap* tm_v,
                                    const TmaMap* tm_do, const float* __restrict__ lse,
                                    const float* __restrict__ delta, float* __restrict__ dq_acc,
                                    u16* __restrict__ dk, u16* __restrict__ dv, u32 S, int causal,
                                    const TmaMap* tm_dq = nullptr) {
  constexpr u32 NDB = D / 64;  // 64-column blocks of the head dimension
  constexpr u32 TILE = NDB * BOX;  // one 64-row tile of all D columns
  const float scale = 1.f / sqrtf(static_cast<float>(D));
  const float LOG2E = 1.4426950408889634f;
  const float scale_log2 = scale * LOG2E;

  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  unsigned char* s_k = smem;                       // [kg][db]
  unsigned char* s_v = s_k + 2 * TILE;             // [kg][db]
  unsigned char* s_q = s_v + 2 * TILE;             // [stage][db]
  unsigned char* s_do = s_q + 2 * TILE;            // [stage][db]
  unsigned char* s_ds = s_do + 2 * TILE;           // [kg] 64 keys x 64 queries
  u64* bars = reinterpret_cast<u64*>(s_ds + 2 * BOX);
  u64* kv_bar = bars;
  u64* full = bars + 1;  // [2]
  float* s_lse = reinterpret_cast<float*>(s_ds + 2 * BOX + 64);  // [2][64]
  float* s_dl = s_lse + 2 * 64;                                  // [2][64]

  const u32 kb = blockIdx.x;  // key block
  const u32 bh = blockIdx.y;
  const u32 tid = threadIdx.x;
  const u32 wg = tid / 128;
  const u32 t = tid % 128;
  const u32 warp = t / 32, lane = t % 32;
  const u32 key0 = kb * BKEYS;

  const u32 q_begin = causal ? key0 / BQ : 0;
  const u32 q_end = (S + BQ - 1) / BQ;
  const u32 n_iter = q_end > q_begin ? q_end - q_begin : 0;

  if (tid == 0) {
    mbar_init(kv_bar, 1);
    mbar_init(&full[0], 1);
    mbar_init(&full[1], 1);
    mbar_init_fence();
  }
  __syncthreads();

  if (tid == 0) {
    tma_prefetch_map(tm_q);
    tma_prefetch_map(tm_k);
    tma_prefetch_map(tm_v);
    tma_prefetch_map(tm_do);
    mbar_expect_tx(kv_bar, 4 * TILE);
#pragma unroll
    for (u32 g = 0; g < 2; ++g) {
#pragma unroll
      for (u32 db = 0; db < NDB; ++db) {
        tma_load_3d(s_k + g * TILE + db * BOX, tm_k, kv_bar, db * 64, key0 + g * 64, bh);
        tma_load_3d(s_v + g * TILE + db * BOX, tm_v, kv_bar, db * 64, key0 + g * 64, bh);
      }
    }
    if (n_iter > 0) {
      mbar_expect_tx(&full[0], 2 * TILE);
#pragma unroll
      for (u32 db = 0; db < NDB; ++db) {
        tma_load_3d(s_q + db * BOX, tm_q, &full[0], db * 64, q_begin * BQ, bh);
        tma_load_3d(s_do + db * BOX, tm_do, &full[0], db * 64, q_begin * BQ, bh);
      }
    }
  }

  // Accumulators: dV and dK, 64 keys x D per warpgroup, as NDB m64n64 fragments.
  float acc_dv[NDB][32], acc_dk[NDB][32];
#pragma unroll
  for (u32 db = 0; db < NDB; ++db) {
#pragma unroll
    for (u32 i = 0; i < 32; ++i) acc_dv[db][i] = acc_dk[db][i] = 0.f;
  }

  // Fragment coordinates: rows (keys, within the warpgroup's 64) r0 and r0 + 8; columns
  // (queries) 8j + c0 + {0, 1}.
  const u32 r0 = warp * 16 + lane / 4;
  const u32 c0 = 2 * (lane % 4);
  const u32 my_key0 = key0 + wg * 64;

  const float* lse_h = lse + static_cast<u64>(bh) * S;
  const float* delta_h = delta + static_cast<u64>(bh) * S;
  float* dq_h = dq_acc + static_cast<u64>(bh) * S * D;

  // LSE and Delta of a query block into shared memory (threads 0..63; the stage buffers follow
  // the TMA ring: published by the barrier in the middle of the previous iteration).
  auto load_stats = [&](u32 qb, u32 buf) {
    if (tid < BQ) {
      const u32 q = qb * BQ + tid;
      s_lse[buf * 64 + tid] = q < S ? __ldg(lse_h + q) * LOG2E : 0.f;
      s_dl[buf * 64 + tid] = q < S ? __ldg(delta_h + q) : 0.f;
    }
  };
  if (n_iter > 0) load_stats(q_begin, 0);
  __syncthreads();

  mbar_wait(kv_bar, 0);
  const unsigned char* my_k = s_k + wg * TILE;
  const unsigned char* my_v = s_v + wg * TILE;

  for (u32 it = 0; it < n_iter; ++it) {
    const u32 qb = q_begin + it;
    const u32 st = it & 1;
    if (tid == 0 && it + 1 < n_iter) {
      // The other stage was last read in iteration it - 1, finished before its final barrier.
      const u32 ns = st ^ 1;
      mbar_expect_tx(&full[ns], 2 * TILE);
#pragma unroll
      for (u32 db = 0; db < NDB; ++db) {
        tma_load_3d(s_q + ns * TILE + db * BOX, tm_q, &full[ns], db * 64, (qb + 1) * BQ, bh);
        tma_load_3d(s_do + ns * TILE + db * BOX, tm_do, &full[ns], db * 64, (qb + 1) * BQ, bh);
      }
    }
    if (it + 1 < n_iter) load_stats(qb + 1, st ^ 1);
    const float* lse_c = s_lse + st * 64;
    const float* dl_c = s_dl + st * 64;
    mbar_wait(&full[st], (it >> 1) & 1);
    const unsigned char* sq = s_q + st * TILE;
    const unsigned char* sdo = s_do + st * TILE;

    // S^T = K Q^T and dP^T = V dO^T (64 keys x 64 queries each).
    float s_acc[32], dp_acc[32];
    wgmma_fence();
#pragma unroll
    for (u32 kk = 0; kk < D / 16; ++kk) {
      const u32 db = kk / 4, off = 2 * (kk % 4);
      wgmma_ss_bf16_m64n64k16(s_acc, desc_sw128(my_k + db * BOX) + off,
                              desc_sw128(sq + db * BOX) + off, kk != 0);
    }
#pragma unroll
    for (u32 kk = 0; kk < D / 16; ++kk) {
      const u32 db = kk / 4, off = 2 * (kk % 4);
      wgmma_ss_bf16_m64n64k16(dp_acc, desc_sw128(my_v + db * BOX) + off,
                              desc_sw128(sdo + db * BOX) + off, kk != 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(s_acc);
    reg_fence(dp_acc);

    // P^T and dS^T in fp32, with the masks.
    const bool need_mask = (qb * BQ < my_key0 + 64 && causal) || (qb + 1) * BQ > S ||
                           my_key0 + 64 > S;
#pragma unroll
    for (u32 j = 0; j < 8; ++j) {
#pragma unroll
      for (u32 h = 0; h < 2; ++h) {
#pragma unroll
        for (u32 e = 0; e < 2; ++e) {
          const u32 idx = 4 * j + 2 * h + e;
          float p = exp2f(s_acc[idx] * scale_log2 - lse_c[8 * j + c0 + e]);
          if (need_mask) {
            const u32 key = my_key0 + r0 + 8 * h;
            const u32 q = qb * BQ + 8 * j + c0 + e;
            if (q >= S || key >= S || (causal && key > q)) p = 0.f;
          }
          s_acc[idx] = p;
          dp_acc[idx] = p * (dp_acc[idx] - dl_c[8 * j + c0 + e]);
        }
      }
    }

    // bf16 A fragments of P^T and dS^T (k16 steps over the query columns).
    u32 a_p[4][4], a_ds[4][4];
#pragma unroll
    for (u32 k = 0; k < 4; ++k) {
#pragma unroll
      for (u32 i = 0; i < 4; ++i) {
        a_p[k][i] = pack_bf16(s_acc[8 * k + 2 * i], s_acc[8 * k + 2 * i + 1]);
        a_ds[k][i] = pack_bf16(dp_acc[8 * k + 2 * i], dp_acc[8 * k + 2 * i + 1]);
      }
    }

    // dS^T into shared memory, 128-byte rows (64 queries) with the 128-byte swizzle.
    {
      const u32 base = smem_u32(s_ds + wg * BOX);
#pragma unroll
      for (u32 j = 0; j < 8; ++j) {
#pragma unroll
        for (u32 h = 0; h < 2; ++h) {
          const u32 row = r0 + 8 * h;
          const u32 byte = (8 * j + c0) * 2;
          const u32 addr = base + row * 128 + ((((byte >> 4) ^ (row & 7))) << 4) + (byte & 15);
          st_shared_b32(addr, a_ds[j / 2][(j & 1) * 2 + h]);
        }
      }
    }

    // dV += P^T dO, dK += dS^T Q (B operands MN-major: rows are queries, 64 columns of D).
    wgmma_fence();
#pragma unroll
    for (u32 k = 0; k < 4; ++k) {
#pragma unroll
      for (u32 db = 0; db < NDB; ++db) {
        wgmma_rs_bf16_m64n64k16<1>(acc_dv[db], a_p[k], desc_sw128_mn(sdo + db * BOX + k * 2048, 1024), 1);
      }
    }
#pragma unroll
    for (u32 k = 0; k < 4; ++k) {
#pragma unroll
      for (u32 db = 0; db < NDB; ++db) {
        wgmma_rs_bf16_m64n64k16<1>(acc_dk[db], a_ds[k], desc_sw128_mn(sq + db * BOX + k * 2048, 1024), 1);
      }
    }
    wgmma_commit();

    fence_proxy_async();
    __syncthreads();  // both warpgroups' dS^T tiles written

    // dQ partial (64 queries x 64 columns): A = dS (MN-major: dS^T rows are keys), B = K rows.
    float dq[32];
    wgmma_fence();
    {
      // D = 128: warpgroup w takes d block w over both key groups; D = 64: its own key group.
      const u32 db = NDB == 2 ? wg : 0;
      constexpr u32 KSTEPS = NDB == 2 ? 8 : 4;
#pragma unroll
      for (u32 k = 0; k < KSTEPS; ++k) {
        const u32 g = NDB == 2 ? k / 4 : wg;
        const u32 kr = k % 4;
        wgmma_ss_bf16_m64n64k16<1, 1>(dq, desc_sw128_mn(s_ds + g * BOX + kr * 2048, 1024),
                                      desc_sw128_mn(s_k + g * TILE + db * BOX + kr * 2048, 1024), k != 0);
      }
    }
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(dq);
#pragma unroll
    for (u32 db = 0; db < NDB; ++db) {
      reg_fence(acc_dv[db]);
      reg_fence(acc_dk[db]);
    }

    if constexpr (TMA_DQ) {
      // Buffer (warpgroup, it % 2): rewritten only once the reduce issued from it two query
      // blocks ago has read it. Rows past S are clipped by the TMA.
      unsigned char* buf = s_ds + 2 * BOX + 2048 + (wg * 2 + (it & 1)) * DQ_BUF;
      if (t == 0) bulk_wait_read<1>();
      named_bar_sync(1 + wg, 128);
#pragma unroll
      for (u32 h = 0; h < 2; ++h) {
        const u32 row = r0 + 8 * h;
#pragma unroll
        for (u32 j = 0; j < 8; ++j) {
          const u32 col = 8 * j + c0;  // of this warpgroup's 64 columns
          const u32 byte = (col % 32) * 4;
          const u32 addr = smem_u32(buf + (col / 32) * (DQ_BUF / 2)) + row * 128 +
                           (((byte >> 4) ^ (row & 7)) << 4) + (byte & 15);
          st_shared_v2_f32(addr, dq[4 * j + 2 * h], dq[4 * j + 2 * h + 1]);
        }
      }
      fence_proxy_async();
      named_bar_sync(1 + wg, 128);
      if (t == 0) {
        const int d0 = NDB == 2 ? static_cast<int>(wg * 64) : 0;
        const int q0 = static_cast<int>(qb * BQ);
        tma_reduce_add_3d(tm_dq, buf, d0, q0, static_cast<int>(bh));
        tma_reduce_add_3d(tm_dq, buf + DQ_BUF / 2, d0 + 32, q0, static_cast<int>(bh));
        bulk_commit();
      }
    } else {
      const u32 dcol0 = (NDB == 2 ? wg * 64 : 0) + c0;
#pragma unroll
      for (u32 h = 0; h < 2; ++h) {
        const u32 q = qb * BQ + r0 + 8 * h;
        if (q < S) {
          float* rowp = dq_h + static_cast<u64>(q) * D + dcol0;
#pragma unroll
          for (u32 j = 0; j < 8; ++j) red_add_v2_f32(rowp + 8 * j, dq[4 * j + 2 * h], dq[4 * j + 2 * h + 1]);
        }
      }
    }
    __syncthreads();  // stage st and the dS^T tiles may be overwritten
  }
  // The reduces must have finished with shared memory before the CTA leaves.
  if constexpr (TMA_DQ) {
    if (t == 0) bulk_wait<0>();
  }

  // dK (times scale) and dV to global memory, bf16, rows < S.
#pragma unroll
  for (u32 h = 0; h < 2; ++h) {
    const u32 key = my_key0 + r0 + 8 * h;
    if (key < S) {
      const u64 row = (static_cast<u64>(bh) * S + key) * D;
#pragma unroll
      for (u32 db = 0; db < NDB; ++db) {
#pragma unroll
        for (u32 j = 0; j < 8; ++j) {
          const u32 col = db * 64 + 8 * j + c0;
          st_global_b32(dk + row + col,
                        pack_bf16(scale * acc_dk[db][4 * j + 2 * h], scale * acc_dk[db][4 * j + 2 * h + 1]));
          st_global_b32(dv + row + col, pack_bf16(acc_dv[db][4 * j + 2 * h], acc_dv[db][4 * j + 2 * h + 1]));
        }
      }
    }
  }
}

}  // namespace attn_bwd

__device__ __forceinline__ float bf16_lo(u32 v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16_hi(u32 v) { return __uint_as_float(v & 0xFFFF0000u); }

// Delta[row] = sum_d dO[row, d] * O[row, d]; one warp per row (D a multiple of 64).
extern "C" __global__ void __launch_bounds__(256) attn_bwd_delta(const u16* __restrict__ o,
                                                                 const u16* __restrict__ d_o,
                                                                 float* __restrict__ delta,
                                                                 u32 rows, u32 d) {
  const u32 row = blockIdx.x * 8 + threadIdx.x / 32;
  const u32 lane = threadIdx.x % 32;
  if (row >= rows) return;
  const u16* op = o + static_cast<u64>(row) * d;
  const u16* dp = d_o + static_cast<u64>(row) * d;
  float s = 0.f;
  for (u32 c = lane * 2; c < d; c += 64) {
    const u32 a = *reinterpret_cast<const u32*>(op + c);
    const u32 b = *reinterpret_cast<const u32*>(dp + c);
    s += bf16_lo(a) * bf16_lo(b) + bf16_hi(a) * bf16_hi(b);
  }
#pragma unroll
  for (u32 m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, m);
  if (lane == 0) delta[row] = s;
}

// dQ = bf16(scale * acc), four elements per thread (n a multiple of 4).
extern "C" __global__ void __launch_bounds__(256) attn_bwd_dq_convert(const float* __restrict__ acc,
                                                                      u16* __restrict__ dq, u32 n,
                                                                      u32 d) {
  const u32 i = (blockIdx.x * 256 + threadIdx.x) * 4;
  if (i >= n) return;
  const float scale = 1.f / sqrtf(static_cast<float>(d));
  const float4 a = *reinterpret_cast<const float4*>(acc + i);
  uint2 r;
  r.x = pack_bf16(scale * a.x, scale * a.y);
  r.y = pack_bf16(scale * a.z, scale * a.w);
  *reinterpret_cast<uint2*>(dq + i) = r;
}

