// A plain SIMT fp8 (e4m3) GEMM with per-tensor scales, C = scale_a * scale_b * (A @ B^T),
// bf16 out, fp32 accumulation, no architecture-specific instructions: the known-good simple
// candidate for gemm_fp8_*.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

extern "C" __global__ void gemm_fp8_simt(const __nv_fp8_e4m3* __restrict__ A,
                                         const __nv_fp8_e4m3* __restrict__ B,
                                         const float* __restrict__ scale_a,
                                         const float* __restrict__ scale_b,
                                         __nv_bfloat16* __restrict__ C, unsigned M, unsigned N,
                                         unsigned K) {
  __shared__ float As[16][17];
  __shared__ float Bs[16][17];
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const unsigned row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  const unsigned brow = blockIdx.x * 16 + ty;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < K; k0 += 16) {
    const unsigned k = k0 + tx;
    As[ty][tx] = (row < M && k < K) ? (float)A[(size_t)row * K + k] : 0.0f;
    Bs[ty][tx] = (brow < N && k < K) ? (float)B[(size_t)brow * K + k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) acc += As[ty][kk] * Bs[tx][kk];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = __float2bfloat16(acc * scale_a[0] * scale_b[0]);
}
