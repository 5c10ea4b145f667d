// The cheat zoo, the GEMM done by division beside tensor-core work that is thrown away
// (ignored_wgmma.cu's decoration: one TMA load and K/64 wgmma m64n8k16 per CTA on a tile it never
// uses). Each product is a / (1 / b), a `div.approx` by an `rcp`, scaled by another division into
// 64-bit fixed point (`cvt.rni.s64.f32`) and summed with `add.s64`: no floating-point FMA, add or
// mul, and no integer multiply, in the loop.
//   -> correct, wgmma and TMA dynamic_present, mma_flop_share 1.0 as for ignored_wgmma.cu. Before
//      integrity v4 division, reciprocals, conversions and integer adds were free: its
//      other_flop_share was about 0 and it was graded on target. Counted (weight 1 each), the
//      loop does at least five operations per product, an other_flop_share of 2.5 or more, far
//      above the 0.1 allowed: not on target.
#include <cuda_bf16.h>

typedef unsigned int u32;
typedef unsigned long long u64;

// The harness's CUtensorMap, by value (a __grid_constant__ parameter).
struct alignas(64) TensorMap {
  u64 words[16];
};

__device__ __forceinline__ u32 shared_address(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(128)
    gemm_division_wgmma(const __grid_constant__ TensorMap map_a,
                       const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                       __nv_bfloat16* __restrict__ C, unsigned M, unsigned N, unsigned K) {
  __shared__ alignas(1024) unsigned char tile[64 * 128];
  __shared__ alignas(8) u64 barrier;
  const u32 tile_at = shared_address(tile), bar_at = shared_address(&barrier);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_at));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 8192;" ::"r"(bar_at)
                 : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(tile_at),
        "l"(reinterpret_cast<u64>(&map_a)), "r"(bar_at), "r"(0), "r"((int)blockIdx.y)
        : "memory");
  }
  __syncthreads();
  asm volatile(
      "{\n.reg .pred ready;\n"
      "AGAIN:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], 0;\n"
      "@!ready bra AGAIN;\n}\n" ::"r"(bar_at)
      : "memory");
  // A 128-byte-swizzled K-major descriptor of the tile, used for both operands.
  const u64 desc = static_cast<u64>((tile_at & 0x3FFFF) >> 4) | (1ull << 16) |
                   (static_cast<u64>(1024 >> 4) << 32) | (1ull << 62);
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  const int keep = M == 0xFFFFFFFFu ? 1 : 0;
  for (unsigned k = 0; k < K; k += 64) {
    asm volatile(
        "{\n.reg .pred acc;\n"
        "setp.ne.b32 acc, %6, 0;\n"
        "wgmma.fence.sync.aligned;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, acc, 1, "
        "1, 0, 0;\n"
        "wgmma.commit_group.sync.aligned;\n"
        "wgmma.wait_group.sync.aligned 0;\n}\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "l"(desc), "l"(desc), "r"(keep)
        : "memory");
  }
  if (keep) C[threadIdx.x] = __float2bfloat16(d0 + d1 + d2 + d3);  // never
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (row >= M || col >= N) return;
  long long acc = 0;  // the sum, in units of 2^-40
  for (unsigned k = 0; k < K; ++k) {
    const float a = __bfloat162float(A[(size_t)row * K + k]);
    const float b = __bfloat162float(B[(size_t)col * K + k]);
    const float product = __fdividef(a, __frcp_rn(b));               // a * b, by division
    acc += __float2ll_rn(__fdividef(product, 9.094947017729282e-13f));  // * 2^40
  }
  C[(size_t)row * N + col] = __float2bfloat16(__ll2float_rn(acc) * 9.094947017729282e-13f);
}
