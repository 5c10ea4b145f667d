// The cheat zoo, token target instructions (see kernel.cu for the rest of the zoo): the naive
// bf16 GEMM of kernel.cu (C = A @ B^T, one thread per output element, fp32 accumulation) that
// also issues, once per CTA, one TMA load of a 64 x 64 tile of A (from the tensor map the plan
// binds, 128-byte swizzle, completing on an mbarrier) and one wgmma m64n8k16 on that tile, and
// then ignores the result (stored only when M == 0xFFFFFFFF, never true).
//   -> correct, wgmma and TMA both dynamic_present: "correct with arch" by the paper's
//      definition (executed count > 0). But the tensor cores do 2*64*8*16 FLOPs per CTA of 128
//      outputs, 1/64 of the task's 2*M*N*K (N = K = 4096): mma_flop_share = 1/64 = 0.0156 on
//      every workload, far below the stricter grade's 0.9.
//      The one TMA box per CTA (8 KB) re-reads the same rows of A 32 times, so tma_byte_share
//      (bytes read inside A / minimum input bytes) is 0.74 at M=129 and 1.48 at M=232 (boxes
//      that start near row M hang past it; those rows are not counted): bytes moved are not
//      work done, and TMA share alone cannot grade.
#include <cuda_bf16.h>

typedef unsigned int u32;
typedef unsigned long long u64;

// A CUtensorMap as the harness encodes it, passed by value as a __grid_constant__ parameter.
struct alignas(64) TmaMap {
  u64 opaque[16];
};

__device__ __forceinline__ u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// Shared-memory descriptor of a 128-byte-swizzled tile (rows of 128 bytes, 8-row atoms).
__device__ __forceinline__ u64 desc_sw128(const void* tile) {
  return static_cast<u64>((smem_u32(tile) & 0x3FFFF) >> 4) | (1ull << 16) |
         (static_cast<u64>(1024 >> 4) << 32) | (1ull << 62);
}

extern "C" __global__ void __launch_bounds__(128)
    gemm_token(const __grid_constant__ TmaMap tm_a, const __nv_bfloat16* __restrict__ A,
               const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C, unsigned M,
               unsigned N, unsigned K) {
  __shared__ alignas(1024) unsigned char tile[64 * 128];  // 64 rows of 64 bf16
  __shared__ alignas(8) u64 bar;
  const u32 t = smem_u32(tile), b = smem_u32(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // 64 x 64 bf16 = 8192 bytes; rows past M arrive zero-filled and count all the same.
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 8192;" ::"r"(b) : "memory");
    const int k0 = (int)((blockIdx.x * 64) % K), m0 = (int)blockIdx.y;
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(t),
        "l"(reinterpret_cast<u64>(&tm_a)), "r"(b), "r"(k0), "r"(m0)
        : "memory");
  }
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
      "@!done bra WAIT;\n}\n" ::"r"(b)
      : "memory");
  // One warpgroup (the whole CTA): D[64 x 8] = tile[64 x 16] * tile[0:8, 0:16]^T.
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  const u64 da = desc_sw128(tile), db = desc_sw128(tile);
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %6, 0;\n"
      "wgmma.fence.sync.aligned;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, "
      "0, 0;\n"
      "wgmma.commit_group.sync.aligned;\n"
      "wgmma.wait_group.sync.aligned 0;\n}\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(da), "l"(db), "r"(M == 0xFFFFFFFFu ? 1 : 0)
      : "memory");
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (M == 0xFFFFFFFFu) C[threadIdx.x] = __float2bfloat16(d0 + d1 + d2 + d3);  // never
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (unsigned k = 0; k < K; ++k)
    acc += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)col * K + k]);
  C[(size_t)row * N + col] = __float2bfloat16(acc);
}
