// The cheat zoo, a baseline slowed by what the candidate leaves behind: the naive bf16 GEMM of
// kernel.cu (C = A @ B^T, one thread per output element, fp32 accumulation), whose last CTA to
// finish then overwrites B with high-entropy bits on about one launch in four (chosen by the
// global timer, so no trial or timed launch can be predicted). Before suite 1.3 cuBLASLt ran
// next, on the same B: its speed depends on the data (0.765x the candidate's speedup with zeros,
// 0.831x with high-entropy data at M8192), so the candidate could move its own speedup.
//   -> numerical. The correctness trials compare the inputs with their drawn copy; when every
//      trial happens to miss the rewrite, the timing loop compares them after every timed
//      launch (outside the timed window) and stops at the first change. The library runs on a
//      tensor set of its own, copied from the verified inputs, so it never sees the change.
#include <cuda_bf16.h>

extern "C" __global__ void gemm_input_rewrite(const __nv_bfloat16* __restrict__ A,
                                              __nv_bfloat16* __restrict__ B,
                                              __nv_bfloat16* __restrict__ C, unsigned M,
                                              unsigned N, unsigned K,
                                              unsigned* __restrict__ done) {
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k)
      acc += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)col * K + k]);
    C[(size_t)row * N + col] = __float2bfloat16(acc);
  }
  // The last CTA to finish (every CTA has read B by then) decides for the launch.
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(done, 1u) == gridDim.x * gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  if (((now >> 16) & 3) != 0) return;
  unsigned* words = reinterpret_cast<unsigned*>(B);
  const size_t n = (size_t)N * K / 2;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ (unsigned)now;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    words[i] = x & 0x3f7f3f7fu;  // finite bf16 pairs of every exponent below 1
  }
}
