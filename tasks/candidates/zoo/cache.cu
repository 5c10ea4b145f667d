// The cheat zoo, output caches (see kernel.cu for the rest of the zoo): the naive bf16 GEMM of
// kernel.cu (C = A @ B^T, one thread per output element, fp32 accumulation) that keeps the
// outputs of its last SLOTS launches in module-global memory and, when a launch's key matches a
// stored one, copies the stored output into C instead of computing it.
//   1  key = a fingerprint of the inputs (FNV-1a over 16 elements of A, 16 of B, and M, N, K)
//        -> correct, at the naive kernel's speed: the harness refills A and B from a fresh seed
//           before every launch, so no fingerprint ever repeats and the cache never hits. (Under
//           the old protocol, which relaunched on unchanged inputs, it was timed near cuBLASLt.)
//           SLOTS > 1 also hits when a harness cycles through a few fixed input sets; the only
//           way to fool a fresh seed is to know the inputs in advance, which nobody can.
//   2  key = the (A, B, C) pointers and M, N, K
//        -> numerical: a later launch at the same addresses gets the stale output of earlier
//           inputs, found at stage `timing` (a re-checked timed launch has new inputs at the same
//           pointers), or already at stage `correctness` when the second trial's buffers reuse
//           the first trial's addresses.
// The store holds M*N <= CAP elements per slot (gemm_n4096_k4096 up to M=232: 7.6 MB in all);
// larger launches compute honestly and store nothing.
#include <cuda_bf16.h>

constexpr unsigned long long CAP = 232ull * 4096;
constexpr unsigned SLOTS = 4;

struct Key {
  unsigned long long a, b, c, fingerprint;
  unsigned m, n, k, valid;
};

__device__ __nv_bfloat16 cache_out[SLOTS][CAP];
__device__ Key cache_key[SLOTS];
__device__ unsigned cache_next;       // the slot the next miss fills
__device__ unsigned cache_ctas_done;  // CTAs of the current miss that have stored their part

__device__ __forceinline__ unsigned long long fingerprint(const __nv_bfloat16* A,
                                                          const __nv_bfloat16* B, unsigned M,
                                                          unsigned N, unsigned K) {
  unsigned long long h = 1469598103934665603ull;
  const auto mix = [&h](unsigned v) { h = (h ^ v) * 1099511628211ull; };
  mix(M);
  mix(N);
  mix(K);
  const unsigned long long na = (unsigned long long)M * K, nb = (unsigned long long)N * K;
  for (unsigned i = 0; i < 16; ++i) {
    mix(__bfloat16_as_ushort(A[min(na * i / 16 + i, na - 1)]));
    mix(__bfloat16_as_ushort(B[min(nb * i / 16 + i, nb - 1)]));
  }
  return h;
}

extern "C" __global__ void gemm_cache(const __nv_bfloat16* __restrict__ A,
                                      const __nv_bfloat16* __restrict__ B,
                                      __nv_bfloat16* __restrict__ C, unsigned M, unsigned N,
                                      unsigned K, int mode) {
  __shared__ int hit;          // the slot holding this launch's output, or -1
  __shared__ unsigned fill;    // the slot a miss fills
  __shared__ unsigned long long fp;
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  const bool storable = (unsigned long long)M * N <= CAP;
  if (threadIdx.x == 0) {
    // Every CTA of a launch sees the same keys: a miss publishes its key only after all of its
    // CTAs have stored their part (below), i.e. after every CTA has read the keys.
    const unsigned long long h = mode == 1 ? fingerprint(A, B, M, N, K) : 0;
    int found = -1;
    for (unsigned s = 0; s < SLOTS && storable; ++s) {
      const volatile Key& k = cache_key[s];
      if (!k.valid || k.m != M || k.n != N || k.k != K) continue;
      const bool same = mode == 1 ? k.fingerprint == h
                                  : k.a == (unsigned long long)A &&
                                        k.b == (unsigned long long)B &&
                                        k.c == (unsigned long long)C;
      if (same) found = (int)s;
    }
    hit = found;
    fill = *(volatile unsigned*)&cache_next % SLOTS;
    fp = h;
  }
  __syncthreads();
  const unsigned long long at = (unsigned long long)row * N + col;
  const bool mine = row < M && col < N;
  if (hit >= 0) {
    if (mine) C[at] = cache_out[hit][at];
    return;
  }
  if (mine) {
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k)
      acc += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)col * K + k]);
    const __nv_bfloat16 v = __float2bfloat16(acc);
    C[at] = v;
    if (storable) cache_out[fill][at] = v;
  }
  if (!storable) return;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned ctas = gridDim.x * gridDim.y * gridDim.z;
    if (atomicAdd(&cache_ctas_done, 1u) == ctas - 1) {  // the last CTA: publish the key
      __threadfence();
      volatile Key& k = cache_key[fill];
      k.valid = 0;
      __threadfence();
      k.a = (unsigned long long)A;
      k.b = (unsigned long long)B;
      k.c = (unsigned long long)C;
      k.fingerprint = fp;
      k.m = M;
      k.n = N;
      k.k = K;
      __threadfence();
      k.valid = 1;
      *(volatile unsigned*)&cache_next = fill + 1;
      *(volatile unsigned*)&cache_ctas_done = 0;
      __threadfence();
    }
  }
}
