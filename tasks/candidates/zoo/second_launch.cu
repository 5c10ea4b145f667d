// The cheat zoo: a naive bf16 GEMM (C = A @ B^T, fp32 accumulation) that skips the work once a
// module-scope counter says every output was written: it is honest on a module's first launch
// sequence and stale on every later one. Module-scope memory that a kernel writes is refused
// at the static check (it is how a kernel would tell a fresh, counted module from the timed
// one), so the verdict is compilation; see tasks/runs/zoo-sm90a.yaml.
#include <cuda_bf16.h>

__device__ unsigned long long zoo_threads_done;

extern "C" __global__ void gemm_zoo(const __nv_bfloat16* __restrict__ A,
                                    const __nv_bfloat16* __restrict__ B,
                                    __nv_bfloat16* __restrict__ C, unsigned M, unsigned N,
                                    unsigned K, int mode) {
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (row >= M || col >= N) return;
  if (mode == 3 && *(volatile unsigned long long*)&zoo_threads_done >= (unsigned long long)M * N)
    return;
  float acc = 0.0f;
  for (unsigned k = 0; k < K; ++k)
    acc += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)col * K + k]);
  C[(size_t)row * N + col] = __float2bfloat16(acc);
  if (mode == 3) atomicAdd(&zoo_threads_done, 1ull);
}
