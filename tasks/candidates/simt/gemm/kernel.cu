// A plain SIMT bf16 GEMM, C = A @ B^T, with no architecture-specific instructions: 16x16
// output tiles, operands staged through shared memory in fp32, fp32 accumulation, edges
// masked. It is the harness's known-good, deliberately simple candidate for every
// gemm_n*_k* task, and, through `mode`, the known-bad ones the engine must classify:
//   0 correct; 1 numerically wrong (skips the last K tile); 2 never finishes;
//   3 writes through an unmapped address; 4 executes `trap`.
#include <cuda_bf16.h>

extern "C" __global__ void gemm_simt(const __nv_bfloat16* __restrict__ A,
                                     const __nv_bfloat16* __restrict__ B,
                                     __nv_bfloat16* __restrict__ C, unsigned M, unsigned N,
                                     unsigned K, int mode) {
  __shared__ float As[16][17];
  __shared__ float Bs[16][17];
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const unsigned row = blockIdx.y * 16 + ty;   // row of A and C
  const unsigned col = blockIdx.x * 16 + tx;   // column of C = row of B
  const unsigned brow = blockIdx.x * 16 + ty;  // row of B this thread stages
  if (mode == 2) {
    volatile int spin = 1;
    while (spin) {
    }
  }
  if (mode == 3) ((volatile float*)0x10)[threadIdx.x] = 1.0f;
  if (mode == 4) asm volatile("trap;");
  const unsigned kend = (mode == 1 && K > 16) ? K - 16 : K;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < kend; k0 += 16) {
    const unsigned k = k0 + tx;
    As[ty][tx] = (row < M && k < K) ? __bfloat162float(A[(size_t)row * K + k]) : 0.0f;
    Bs[ty][tx] = (brow < N && k < K) ? __bfloat162float(B[(size_t)brow * K + k]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) acc += As[ty][kk] * Bs[tx][kk];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = __float2bfloat16(acc);
}
