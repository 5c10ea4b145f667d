// Hopper (sm_90a) building blocks for the reference kernels, as inline PTX: mbarriers, TMA
// (cp.async.bulk.tensor), wgmma descriptors and fences, setmaxnreg.
// No CUDA headers: the kernels compile with a bare nvcc (-ptx) and with NVRTC alike.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned short u16;

// A CUtensorMap as the harness encodes it (128 bytes, 64-byte aligned), passed by value as a
// __grid_constant__ kernel parameter so that TMA can read it from the parameter space.
struct alignas(64) TmaMap {
  u64 opaque[16];
};

__device__ __forceinline__ u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -----------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}

// Makes the initialised barriers visible to the async proxy and to the other CTAs of a cluster.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrive and announce `bytes` of asynchronous (TMA) traffic completing on this barrier.
__device__ __forceinline__ void mbar_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// Arrive on the barrier at the same shared-memory offset in CTA `rank` of this cluster (this
// CTA's own rank included).
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, u32 rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}" ::"r"(smem_u32(bar)),
      "r"(rank)
      : "memory");
}

// ---- named barriers ------------------------------------------------------------------------

// Wait at barrier `id` (1..15; 0 is __syncthreads) until `count` threads have arrived or synced.
__device__ __forceinline__ void named_bar_sync(u32 id, u32 count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// Arrive at barrier `id` without waiting.
__device__ __forceinline__ void named_bar_arrive(u32 id, u32 count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// ---- clusters -----------------------------------------------------------------------------

__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster arrives, then waits for all of them.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

// Wait until the barrier's phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

// ---- TMA ----------------------------------------------------------------------------------

__device__ __forceinline__ void tma_prefetch_map(const TmaMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(map)) : "memory");
}

// Load a box at coordinates (c0 innermost, c1) into shared memory; completes on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const TmaMap* map, u64* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

// The same box written to the same offset of `dst` and completing on the same offset of `bar` in
// every CTA of the cluster named in `mask` (bit r: rank r).
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const TmaMap* map, u64* bar,
                                                      int c0, int c1, u16 mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}

__device__ __forceinline__ void tma_load_3d(void* dst, const TmaMap* map, u64* bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Adds a box of shared memory (laid out as the map's box, swizzle included) into global memory
// through a tensor map (TMA reduce-add), in this thread's current bulk group.
__device__ __forceinline__ void tma_reduce_add_3d(const TmaMap* map, const void* src, int c0,
                                                  int c1, int c2) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group"
      " [%0, {%2, %3, %4}], [%1];" ::"l"(reinterpret_cast<u64>(map)),
      "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Closes this thread's current bulk group.
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until at most N of this thread's bulk groups are still reading shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Waits until at most N of this thread's bulk groups are unfinished.
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// Ordinary shared-memory writes become visible to the async proxy (TMA, wgmma) after this.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---- wgmma --------------------------------------------------------------------------------

// Shared-memory matrix descriptor for a tile written by TMA with 128-byte swizzle: rows of 128
// bytes, 8-row (1024-byte) swizzle atoms stacked along the strided dimension. The tile must be
// 1024-byte aligned; advance along the 128-byte row by adding (bytes >> 4) to the descriptor.
__device__ __forceinline__ u64 desc_sw128(const void* tile) {
  u64 d = 0;
  d |= static_cast<u64>((smem_u32(tile) & 0x3FFFF) >> 4);  // start address
  d |= static_cast<u64>(1) << 16;                          // leading byte offset (unused here)
  d |= static_cast<u64>(1024 >> 4) << 32;                  // stride byte offset: 8 rows
  d |= static_cast<u64>(1) << 62;                          // 128-byte swizzle
  return d;
}

// The same for an MN-major operand (e.g. V in P V): 64-element (128-byte) columns of `rows`
// K-rows; the leading byte offset steps between 64-wide MN blocks.
__device__ __forceinline__ u64 desc_sw128_mn(const void* tile, u32 mn_block_bytes) {
  // As desc_sw128, with the leading byte offset (bits 16-29) stepping between 64-wide MN blocks.
  return (desc_sw128(tile) & ~(static_cast<u64>(0x3FFF) << 16)) |
         (static_cast<u64>(mn_block_bytes >> 4) << 16);
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Keep the compiler from moving accumulator reads/writes across an asynchronous wgmma.
template <int R>
__device__ __forceinline__ void reg_fence(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

template <int R>
__device__ __forceinline__ void reg_fence(u32 (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// ---- registers, conversions, stores -------------------------------------------------------

template <u32 N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

template <u32 N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

// Two floats to a bf16x2 register, `lo` in the low half (round to nearest even).
__device__ __forceinline__ u32 pack_bf16(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Atomically adds two floats to p[0] and p[1] (8-byte aligned), without returning the old values.
__device__ __forceinline__ void red_add_v2_f32(float* p, float a, float b) {
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory");
}

__device__ __forceinline__ void st_global_b32(void* p, u32 v) {
  asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

