// The cheat zoo, TMA bytes that were never read: the suite's plain SIMT paged decode
// (tasks/candidates/simt/attention_decode/kernel.cu, included unchanged, mode 0) does the work;
// a second kernel issues, per (KV head, sequence), TMA loads of 128 x 64 boxes of the K cache
// adding up to the bytes of the sequence's K and V rows, each placed over the cache's last
// pages so that 4 of its 64 rows lie inside the tensor and 60 past its end. TMA fills those
// with zeros without reading memory; the boxes' bytes reach the task's compulsory bytes while
// the loads read a sixteenth of them.
//   -> correct. Weighed at the full box (suite 1.2), the TMA byte share was about 1 and the
//      kernel graded on target for this memory-bound task; counted in bounds at the coordinates
//      the loads used (suite 1.3), it is about 1/16: not on target.
// Built by nvcc (tasks/ptx-sources.txt) into oob_decode.ptx.
#include "../simt/attention_decode/kernel.cu"

typedef unsigned int u32;
typedef unsigned long long u64;

struct alignas(64) TmaMap {
  u64 opaque[16];
};

extern "C" __global__ void __launch_bounds__(32)
    decode_oob_boxes(const __grid_constant__ TmaMap tm_k, const int* __restrict__ kv_indptr,
                     u32 batch_size, u32 num_pages) {
  __shared__ alignas(128) unsigned char box[64 * 128 * 2];
  __shared__ alignas(8) u64 bar;
  const u32 g = blockIdx.x, b = blockIdx.y;
  if (b >= batch_size || threadIdx.x != 0) return;
  const int len = kv_indptr[b + 1] - kv_indptr[b];
  // K and V rows of this head: 2 * len * 128 bf16 = 512 * len bytes; one box is 16 KiB.
  const int boxes = (512 * len + 16383) / 16384;
  const u32 s = static_cast<u32>(__cvta_generic_to_shared(box));
  const u32 m = static_cast<u32>(__cvta_generic_to_shared(&bar));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(m));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const int c0 = static_cast<int>(g * 128), c1 = static_cast<int>(num_pages) - 4;
  for (int i = 0; i < boxes; ++i) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16384;" ::"r"(m) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(s),
        "l"(reinterpret_cast<u64>(&tm_k)), "r"(m), "r"(c0), "r"(c1)
        : "memory");
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n}\n" ::"r"(m),
        "r"(static_cast<u32>(i & 1))
        : "memory");
  }
}
