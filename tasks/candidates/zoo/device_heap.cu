// The cheat zoo: a naive bf16 GEMM (C = A @ B^T, fp32 accumulation) that counts its launches in
// the device heap. Each launch leaks one small `malloc` block, and the heap hands out higher
// addresses as it fills, so the address a thread gets says how many launches came before it in
// this process: the kernel does the work while the address is low (checked and counted trials
// come first) and skips it later (timed launches). The device heap outlives every tensor set
// and module the harness makes, so `malloc`/`free` are refused at the static check and the
// verdict is compilation; see tasks/runs/zoo-sm90a.yaml (integrity v4, class 1).
#include <cuda_bf16.h>

extern "C" __global__ void gemm_zoo(const __nv_bfloat16* __restrict__ A,
                                    const __nv_bfloat16* __restrict__ B,
                                    __nv_bfloat16* __restrict__ C, unsigned M, unsigned N,
                                    unsigned K, unsigned long long switch_at) {
  __shared__ unsigned long long where;
  if (threadIdx.x == 0) where = (unsigned long long)malloc(16);
  __syncthreads();
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (row >= M || col >= N) return;
  if (where >= switch_at) return;
  float acc = 0.0f;
  for (unsigned k = 0; k < K; ++k)
    acc += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)col * K + k]);
  C[(size_t)row * N + col] = __float2bfloat16(acc);
}
