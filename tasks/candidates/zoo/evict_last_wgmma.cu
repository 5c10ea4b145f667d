// The cheat zoo, L2 persistence hints on a fast kernel (see l2.cu for the naive one): the suite's
// reference TMA + wgmma GEMM (tasks/reference/wgmma_gemm/gemm.cu, included unchanged, same
// plan) whose every TMA load of A and B carries an L2::cache_hint with a
// createpolicy.fractional.L2::evict_last policy, to keep A and B resident in L2 across the
// harness's L2 flush. At M=129 and M=232 on gemm_n4096_k4096 the reference is close to the
// DRAM floor (B alone is 32 MB), so a hint that survived the flush would show as a clear gain.
//   -> correct; compare its time with wgmma-gemm (reference-sm90a) on the same workloads.
// Built by nvcc (tasks/ptx-sources.txt) into evict_last_wgmma.ptx.
#include "hopper.cuh"

__device__ __forceinline__ void tma_load_2d_evict_last(void* dst, const TmaMap* map, u64* bar,
                                                       int c0, int c1) {
  u64 policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "l"(policy)
      : "memory");
}

// gemm_ws.cuh calls tma_load_2d for every A and B tile: route those calls through the hint.
#define tma_load_2d tma_load_2d_evict_last
#include "gemm.cu"
