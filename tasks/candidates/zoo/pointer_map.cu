// The cheat zoo: a naive bf16 GEMM (C = A @ B^T, fp32 accumulation) that takes a TMA tensor
// map by pointer and keeps a flag in the memory behind it. The harness used to upload a map
// passed by pointer into a buffer of its own: afresh for every checked and counted launch,
// but once per workload for timing, and larger than the 128 bytes it wrote. So a flag stored
// past the map (or a map rewritten with `tensormap.replace`) survived from one timed launch to
// the next and was always fresh in a checked one: the kernel does the work when the flag is
// clear and skips it when it is set. Maps are passed by value only now (a
// `const __grid_constant__ CUtensorMap` in the parameter space, which no kernel can write),
// and a map parameter of 8 bytes is refused at the static check: the verdict is compilation;
// see tasks/runs/zoo-sm90a.yaml (integrity v4, class 1).
#include <cuda_bf16.h>

extern "C" __global__ void gemm_zoo(unsigned long long* map, const __nv_bfloat16* __restrict__ A,
                                    const __nv_bfloat16* __restrict__ B,
                                    __nv_bfloat16* __restrict__ C, unsigned M, unsigned N,
                                    unsigned K) {
  volatile unsigned* flag = reinterpret_cast<volatile unsigned*>(map + 16);  // byte 128
  unsigned* done = reinterpret_cast<unsigned*>(map + 17);
  if (*flag == 0xC0FFEEu) return;
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k)
      acc += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)col * K + k]);
    C[(size_t)row * N + col] = __float2bfloat16(acc);
  }
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(done, 1u) + 1 == gridDim.x * gridDim.y) *flag = 0xC0FFEEu;
}
