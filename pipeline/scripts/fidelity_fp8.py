"""fp8 GEMM baseline fidelity on the GPU machine (issue 46, item 4): PyTorch's fp8 GEMM
(torch._scaled_mm, cuBLASLt) next to PTXBench's cuBLASLt fp8 baseline on gemm_fp8_n7168_k5120
at M=8192, timed alike (CUDA events around each launch, L2 flushed before each, median of 50),
in three rounds that take turns; each round gives a ratio, and their median is printed.

Usage: python3 fidelity_fp8.py PTXBENCH_BINARY OUT_DIR [ROUNDS]
"""

import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fidelity_attention import timed  # noqa: E402  (L2 flushed, events, the median)


def torch_fp8_ms(m=8192, n=7168, k=5120):
    a = torch.randn(m, k, device="cuda").clamp(-4, 4).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").clamp(-4, 4).to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    # B is [N, K] row-major, so B^T is [K, N] column-major, as _scaled_mm wants it.
    return timed(lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16), iters=50)


def ours_ms(binary, out, i):
    args = [binary, "eval", "tasks/reference/wgmma_gemm_fp8", "--task", "gemm_fp8_n7168_k5120", "--workload", "M8192", "--json"]
    p = subprocess.run(args, capture_output=True, text=True)
    with open(os.path.join(out, f"fp8-{i}.json"), "w") as f:
        f.write(p.stdout)
    o = json.loads(p.stdout)
    t = o["workloads"][-1]["timing"]
    return t["baseline"]["median_ms"], o.get("baseline", {})


def main(binary, out, rounds=3):
    os.makedirs(out, exist_ok=True)
    # Rounds take turns (torch, then ours), so a drift of the GPU's state falls on both.
    ratios = []
    for r in range(1, rounds + 1):
        torch_ms = torch_fp8_ms()
        ms, info = ours_ms(binary, out, r)
        ratios.append(ms / torch_ms)
        print(f"round {r}: cuBLASLt fp8 in ptxbench {ms:.4f} ms   torch._scaled_mm {torch_ms:.4f} ms   ratio {ms / torch_ms:.4f}   ({json.dumps(info)[:200]})")
    ratios.sort()
    print(f"median ratio over {rounds} rounds: {ratios[len(ratios) // 2]:.4f}")
    print(f"torch {torch.__version__}, cuBLASLt as PyTorch loads it")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3)
