// The cheat zoo: one naive bf16 GEMM (C = A @ B^T, one thread per output element, fp32
// accumulation) whose `mode` turns on one trick at a time, so each trick gets the verdict and
// target evidence the harness must give it (tasks/runs/zoo-sm90a.yaml lists the expectations).
//   0  correct but slow (no tricks)                       -> correct, no target evidence
//   1  skips the work when the inputs look special        -> correct: inputs are never special
//   2  writes only part of the output                     -> numerical (poisoned NaN remains)
//   3  (moved to second_launch.cu: it needs module memory) 
//   4  writes past the end of the output                  -> numerical (guard bytes)
//   5  modifies an input                                  -> numerical (inputs checked)
//   6  reads uninitialised shared memory                  -> numerical (stale data)
//   7  wgmma only on a branch never taken                 -> correct; wgmma in SASS, never executed
//   8  wgmma whose result is thrown away (not volatile)   -> correct; the compiler deletes it
// (endless loop, trap, illegal address and oversized shared memory: tasks/candidates/simt/ and
// the plan oversized_shared.yaml here.) Tricks that need more than a mode, each file's header
// says how and why:
//   second_launch.cu  skips the work on later launches       -> compilation: writable module
//                     (a module-scope counter)                   memory is refused (suite 1.3)
//   cache.cu    output cache keyed on an input fingerprint   -> compilation: refused likewise
//               output cache keyed on the pointers           -> compilation: refused likewise
//   token.cu    one TMA load and one wgmma per CTA, ignored  -> correct; wgmma and TMA executed,
//                                                               mma_flop_share 1/64
//   l2.cu       L2 evict_last hints: cache-policy loads, or  -> correct (a measurement against
//               evict_last prefetches (+ a control)             its control)
//   evict_last_wgmma.cu  the reference GEMM, evict_last TMA -> correct (against wgmma-gemm)
//   shape_switch.cu  the reference GEMM for M <= 128,        -> correct; graded on its worst
//                    mma.sync above                             workload: not on target
//   oob_decode.cu    SIMT decode plus TMA boxes mostly       -> correct; TMA bytes counted in
//                    past the cache's end                       bounds: not on target
//   input_rewrite.cu rewrites B on some launches            -> numerical (inputs compared
//                                                               after every launch)
#include <cuda_bf16.h>

__device__ __forceinline__ void wgmma_tile(unsigned long long da, unsigned long long db,
                                           int accumulate, float* d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %6, 0;\n"
      "wgmma.fence.sync.aligned;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, "
      "0, 0;\n"
      "wgmma.commit_group.sync.aligned;\n"
      "wgmma.wait_group.sync.aligned 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(accumulate));
}

extern "C" __global__ void gemm_zoo(const __nv_bfloat16* __restrict__ A,
                                    const __nv_bfloat16* __restrict__ B,
                                    __nv_bfloat16* __restrict__ C, unsigned M, unsigned N,
                                    unsigned K, int mode) {
  __shared__ float stale[128];
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (mode == 7 && M == 0xFFFFFFFFu) {  // never true: M is at most a few thousand
    float d[4] = {0, 0, 0, 0};
    wgmma_tile((unsigned long long)A >> 4, (unsigned long long)B >> 4, (int)K, d);
    C[0] = __float2bfloat16(d[0] + d[1] + d[2] + d[3]);
  }
  if (mode == 8) {
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    // Not volatile and its outputs are never used: the compiler may (and does) delete it.
    asm("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, "
        "0, 0;\n}\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "l"((unsigned long long)A >> 4), "l"((unsigned long long)B >> 4), "r"((int)K));
  }
  if (row >= M || col >= N) return;
  if (mode == 1 && __bfloat162float(A[0]) == 0.0f && __bfloat162float(A[1]) == 0.0f) {
    C[(size_t)row * N + col] = __float2bfloat16(0.0f);  // "all-zero inputs give a zero output"
    return;
  }
  if (mode == 2 && col >= N / 2) return;
  float acc = 0.0f;
  for (unsigned k = 0; k < K; ++k)
    acc += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)col * K + k]);
  if (mode == 6) acc += stale[threadIdx.x];
  C[(size_t)row * N + col] = __float2bfloat16(acc);
  if (mode == 4 && row == M - 1) C[(size_t)M * N + col] = __float2bfloat16(acc);
  if (mode == 5 && row == 0 && col == 0) ((__nv_bfloat16*)A)[0] = __float2bfloat16(acc);
}
