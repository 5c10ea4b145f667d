// The cheat zoo, a path that depends on the cache state a launch starts from (integrity v4,
// class 2): the suite's reference TMA + wgmma GEMM (tasks/reference/wgmma_gemm/gemm.cu, included
// unchanged) in a CTA that finds its first line of A in L2, and plain FMAs over the same work
// units in a CTA that finds it in DRAM. Each CTA times one L2 load of its own line with %clock64
// before it starts. Before integrity v4 only timed launches followed an L2 flush: the checked and
// counted trials, run right after the harness wrote the inputs, found A in L2 and ran wgmma (the
// counted copy graded on target), while every timed launch ran the FMA path.
//   -> correct. Under one set of conditions (a flush before every launch, checked, counted and
//      timed alike) a counted trial that finds the line cold counts the FMA path (no wgmma: not
//      correct with arch; other share about 1: not on target). On the H200 the probe found its
//      line warm in the counted trial even after the flush, and the grade came from wgmma; what
//      it runs when timed is read by the GPU's counters on timed launches.
// Built by nvcc (tasks/ptx-sources.txt) into cold_switch.ptx.
#include "gemm.cu"

// Cycles above which one ld.global.cg came from DRAM rather than L2 (an L2 hit takes about 250
// cycles on Hopper, a DRAM access 500 or more).
constexpr long long COLD_CYCLES = 450;

// Whether this CTA's first line of A is not in L2: one timed load by thread 0, shared.
__device__ __forceinline__ bool cta_finds_cold(const u16* __restrict__ a, u32 m, u32 k) {
  __shared__ u32 cold;
  if (threadIdx.x == 0) {
    const u16* line = a + static_cast<u64>(blockIdx.x % m) * k;
    long long t0, t1;
    u32 v;
    asm volatile(
        "{\n .reg .u32 z;\n mov.u64 %0, %%clock64;\n ld.global.cg.u32 %2, [%3];\n"
        " xor.b32 z, %2, %2;\n mov.u64 %1, %%clock64;\n add.u32 %2, %2, z;\n}"
        : "=l"(t0), "=l"(t1), "=r"(v)
        : "l"(line)
        : "memory");
    cold = (t1 - t0 > COLD_CYCLES) ? 1u : 0u;
  }
  __syncthreads();
  return cold != 0;
}

// The reference's work units (tile u / splits, k-blocks of split u % splits, the same tile order)
// with FMAs: each thread takes elements of the unit's 128 x 256 tile in turn and walks its k range;
// C directly when there is one split, else the fp32 partial sums the finish launch rounds.
__device__ __forceinline__ void gemm_units_fma(const u16* __restrict__ a, const u16* __restrict__ b,
                                               u16* __restrict__ c, float* __restrict__ ws, u32 m,
                                               u32 n, u32 k, u32 splits) {
  constexpr u32 BN = Bf16::BN, BK = Bf16::BK_BYTES / Bf16::ELEM_BYTES;
  const u32 tiles_m = (m + gemm_ws::BM - 1) / gemm_ws::BM, tiles_n = (n + BN - 1) / BN;
  const u32 k_iters = (k + BK - 1) / BK, per_split = (k_iters + splits - 1) / splits;
  for (u32 u = blockIdx.x; u < tiles_m * tiles_n * splits; u += gridDim.x) {
    u32 tm, tn;
    gemm_ws::tile_coords(u / splits, tiles_m, tiles_n, tm, tn);
    const u32 kb0 = (u % splits) * per_split, kb1 = min(k_iters, kb0 + per_split);
    const u32 k0 = kb0 * BK, k1 = min(k, kb1 * BK);
    for (u32 e = threadIdx.x; e < gemm_ws::BM * BN; e += blockDim.x) {
      const u32 r = tm * gemm_ws::BM + e / BN, col = tn * BN + e % BN;
      if (r >= m || col >= n) continue;
      float acc = 0.f;
      for (u32 kk = k0; kk < k1; ++kk) {
        acc = fmaf(__uint_as_float(static_cast<u32>(a[static_cast<u64>(r) * k + kk]) << 16),
                   __uint_as_float(static_cast<u32>(b[static_cast<u64>(col) * k + kk]) << 16), acc);
      }
      const u64 at = static_cast<u64>(r) * n + col;
      if (splits == 1) {
        u16 out;
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(out) : "f"(acc));
        c[at] = out;
      } else {
        atomicAdd(ws + at, acc);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(gemm_ws::THREADS, 1)
    gemm_cold_switch(const __grid_constant__ TmaMap tm_a, const __grid_constant__ TmaMap tm_b,
                     const u16* __restrict__ a, const u16* __restrict__ b, u16* __restrict__ c,
                     float* __restrict__ ws, u32 m, u32 n, u32 k, u32 splits) {
  if (cta_finds_cold(a, m, k)) {
    gemm_units_fma(a, b, c, ws, m, n, k, splits);
  } else {
    gemm_ws::run<Bf16>(&tm_a, &tm_b, c, ws, m, n, k, splits, 1.f);
  }
}
