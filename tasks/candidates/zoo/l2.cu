// The cheat zoo, L2 persistence hints (see kernel.cu for the rest of the zoo): the naive bf16
// GEMM of kernel.cu (C = A @ B^T, one thread per output element, fp32 accumulation) with
// eviction-priority hints that try to keep A and B resident in L2 across the harness's L2 flush,
// so that the next launch reads them from L2 instead of DRAM.
//   0  no hints: the control for modes 1 and 2 (non-coherent loads, as mode 1 makes)
//   1  every load of A and B is ld.global.nc.L2::cache_hint with a
//      createpolicy.fractional.L2::evict_last policy (fraction 1.0)
//   2  mode 0's loads, then at the end of every launch prefetch.global.L2::evict_last over all
//      of A and B (each 128-byte line once, by the last CTAs to run), for the next launch
//   -> correct, all three: the hints change what stays in L2, never the result. Whether they
//      pay shows in modes 1 and 2's times against mode 0's on the same workloads. For this
//      kernel the gain is bounded by reading A and B from DRAM once (about 35 MB at M=232, under
//      10 us against the naive kernel's milliseconds), so it shows the mechanism at work, not
//      a speedup; evict_last_wgmma.cu asks the same of a kernel near the bandwidth floor.
// On sm_90a ptxas carries the L2 policy in the 64-bit memory descriptor of an ordinary load
// (LDG ... desc[URx] with URx built from the policy, not the default descriptor read from
// c[0x0][0x208]), so mode 1 adds no opcode of its own; mode 2's prefetches are CCTL.E.PML2.
#include <cuda_bf16.h>

__device__ __forceinline__ float ld_hint(const __nv_bfloat16* p, unsigned long long policy) {
  unsigned short v;
  asm("ld.global.nc.L2::cache_hint.b16 %0, [%1], %2;" : "=h"(v) : "l"(p), "l"(policy));
  return __bfloat162float(__ushort_as_bfloat16(v));
}

__device__ __forceinline__ void prefetch_evict_last(const void* p) {
  asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p));
}

extern "C" __global__ void gemm_l2(const __nv_bfloat16* __restrict__ A,
                                   const __nv_bfloat16* __restrict__ B,
                                   __nv_bfloat16* __restrict__ C, unsigned M, unsigned N,
                                   unsigned K, int mode) {
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (row < M && col < N) {
    const __nv_bfloat16* a = A + (size_t)row * K;
    const __nv_bfloat16* b = B + (size_t)col * K;
    float acc = 0.0f;
    if (mode == 1) {
      unsigned long long policy;
      asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
      for (unsigned k = 0; k < K; ++k) acc += ld_hint(a + k, policy) * ld_hint(b + k, policy);
    } else {
      for (unsigned k = 0; k < K; ++k) acc += __bfloat162float(__ldg(a + k)) * __bfloat162float(__ldg(b + k));
    }
    C[(size_t)row * N + col] = __float2bfloat16(acc);
  }
  if (mode == 2) {
    // Row `row` of A by the last column of CTAs, row `col` of B by the last row of CTAs (the
    // last to be scheduled): every line of A and B once per launch.
    const size_t row_bytes = (size_t)K * sizeof(__nv_bfloat16);
    if (blockIdx.x == gridDim.x - 1 && row < M)
      for (size_t o = threadIdx.x * 128; o < row_bytes; o += blockDim.x * 128)
        prefetch_evict_last((const char*)(A + (size_t)row * K) + o);
    if (blockIdx.y == gridDim.y - 1 && col < N)
      for (size_t o = 0; o < row_bytes; o += 128)
        prefetch_evict_last((const char*)(B + (size_t)col * K) + o);
  }
}
