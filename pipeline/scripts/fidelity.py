"""Timing fidelity on the GPU machine: PyTorch's cuBLAS and cuDNN next to PTXBench's numbers.

Usage: python3 fidelity.py PTXBENCH_BINARY OUT_DIR
1. torch.matmul (cuBLAS) for gemm_n7168_k5120 at M=8192, bf16, timed like PTXBench does
   (CUDA events around each launch, L2 flushed before each, median of 50), next to
   `ptxbench eval` of the same shape, whose baseline is cuBLASLt in process;
2. the same candidate evaluated twice (its medians must agree within 1%);
3. the wall time of one full `ptxbench eval` of a GEMM candidate over all its workloads, and
   the part of it that is harness work rather than kernels (from the outcome's stage clock).
"""

import json
import os
import subprocess
import sys
import time

import torch


def torch_gemm_ms(m=8192, n=7168, k=5120, iters=50):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    for _ in range(5):
        a @ b.T
    times = []
    for i in range(iters):
        flush.fill_(i & 0xFF)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b.T
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def evaluate(binary, candidate, task, workloads, out):
    args = [binary, "eval", candidate, "--task", task, "--json"]
    for w in workloads:
        args += ["--workload", w]
    t0 = time.time()
    p = subprocess.run(args, capture_output=True, text=True)
    wall = time.time() - t0
    with open(out, "w") as f:
        f.write(p.stdout)
    return json.loads(p.stdout), wall


def main(binary, out):
    os.makedirs(out, exist_ok=True)
    torch_ms = torch_gemm_ms()
    o1, _ = evaluate(binary, "tasks/candidates/triton_gemm_tma", "gemm_n7168_k5120", ["M8192"], f"{out}/tma-1.json")
    o2, _ = evaluate(binary, "tasks/candidates/triton_gemm_tma", "gemm_n7168_k5120", ["M8192"], f"{out}/tma-2.json")
    t1, t2 = o1["workloads"][-1]["timing"], o2["workloads"][-1]["timing"]
    lt_ms = t1["baseline"]["median_ms"]
    print(f"cuBLASLt in ptxbench   {lt_ms:.4f} ms   torch.matmul {torch_ms:.4f} ms   ratio {lt_ms / torch_ms:.4f}")
    c1, c2 = t1["candidate"]["median_ms"], t2["candidate"]["median_ms"]
    print(f"same kernel twice      {c1:.4f} ms vs {c2:.4f} ms   difference {abs(c1 - c2) / c1 * 100:.2f}%")
    b1, b2 = lt_ms, t2["baseline"]["median_ms"]
    print(f"cuBLASLt twice         {b1:.4f} ms vs {b2:.4f} ms   difference {abs(b1 - b2) / b1 * 100:.2f}%")
    full, wall = evaluate(binary, "tasks/candidates/triton_gemm_tma", "gemm_n7168_k5120", [], f"{out}/tma-full.json")
    kernel_s = 0.0
    for w in full["workloads"]:
        t = w["timing"]
        if t:
            kernel_s += t["candidate"]["median_ms"] * t["candidate"]["n"] / 1e3
            kernel_s += t["baseline"]["median_ms"] * t["baseline"]["n"] / 1e3
    stages = {k: v for k, v in full["seconds"]}
    print(f"full eval wall {wall:.2f} s (verdict {full['verdict']}); timed kernel launches {kernel_s:.3f} s; stages {json.dumps(stages)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
