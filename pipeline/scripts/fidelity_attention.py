"""Attention baseline fidelity on the GPU machine: PTXBench's native cuDNN SDPA next to PyTorch's
cuDNN backend.

Usage: python3 fidelity_attention.py PTXBENCH_BINARY OUT_DIR

For d128, B=4, H=48, S=4096, non-causal and causal, forward (with LSE) and backward:
- PyTorch's cuDNN backend, timed like PTXBench times (CUDA events around each launch, L2 flushed
  before each, median of 40 after 5 warm-ups): the forward through
  torch.ops.aten._scaled_dot_product_cudnn_attention (compute_log_sumexp=True, so it returns the
  LSE as our baseline does), the backward through
  torch.ops.aten._scaled_dot_product_cudnn_attention_backward on that forward's outputs (or, if
  that op's signature differs, torch.autograd.grad under
  sdpa_kernel(SDPBackend.CUDNN_ATTENTION));
- `ptxbench baseline` (the engine's native cuDNN graph, same protocol) with the cuDNN the
  library search finds, and again with PTXBENCH_CUDA_LIB_PATH pointing at PyTorch's own cuDNN,
  so that the same cuDNN version is compared too.
Prints one table; the issue's target is native time within 5% of PyTorch's cuDNN backend.
"""

import json
import os
import subprocess
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, S, D = 4, 48, 4096, 128
ITERS, WARMUP = 40, 5


def timed(fn, iters=ITERS, warmup=WARMUP):
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for i in range(iters):
        flush.fill_(i & 0xFF)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def torch_cudnn(causal):
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    d_o = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
    fwd_op = torch.ops.aten._scaled_dot_product_cudnn_attention
    res = fwd_op(q, k, v, None, True, 0.0, causal, False)
    out, lse = res[0], res[1]
    fwd_ms = timed(lambda: fwd_op(q, k, v, None, True, 0.0, causal, False))
    how = "aten._scaled_dot_product_cudnn_attention_backward"
    try:
        bwd_op = torch.ops.aten._scaled_dot_product_cudnn_attention_backward
        _, _, cum_q, cum_k, max_q, max_k, seed, offset = res[:8]

        def bwd():
            return bwd_op(d_o, q, k, v, out, lse, seed, offset, None, cum_q, cum_k, max_q, max_k, 0.0, causal)

        bwd()
        bwd_ms = timed(bwd)
    except Exception as e:  # the private op's signature moves between releases
        how = f"autograd.grad under sdpa_kernel(CUDNN_ATTENTION) ({type(e).__name__}: {str(e)[:120]})"
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            o = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
        bwd_ms = timed(lambda: torch.autograd.grad(o, (qg, kg, vg), d_o, retain_graph=True))
    return fwd_ms, bwd_ms, how


def torch_cudnn_dir():
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "libcudnn.so.9" in os.path.basename(path) or os.path.basename(path).startswith("libcudnn_graph"):
                return os.path.dirname(path)
    return None


def ours(binary, task, env_extra, out, tag):
    env = dict(os.environ, **env_extra)
    p = subprocess.run(
        [binary, "baseline", "--task", task, "--workload", f"B{B}_H{H}_S{S}", "--json"],
        capture_output=True, text=True, env=env,
    )
    with open(f"{out}/baseline-{task}-{tag}.txt", "w") as f:
        f.write(p.stdout + "\n--- stderr\n" + p.stderr)
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)["run"]
            checks = ", ".join(f"{c['output']} {c['comparison']['relative_l2']:.2e}" for c in r["check"])
            info = r["info"] or {}
            return r["stats"]["median_ms"] if r["stats"] else None, checks, info.get("version", "?"), info.get("engine", "")
    return None, (p.stderr.strip().splitlines() or ["no output"])[-1][:200], "?", ""


def main(binary, out):
    os.makedirs(out, exist_ok=True)
    print(f"torch {torch.__version__}, torch cuDNN {torch.backends.cudnn.version()}")
    rows = []
    torch_dir = None
    for causal in (False, True):
        tf, tb, how = torch_cudnn(causal)
        torch_dir = torch_dir or torch_cudnn_dir()
        print(f"causal={causal}: torch backward via {how}")
        suffix = "_causal" if causal else ""
        for pass_, task, t_ms in (("fwd+LSE", f"mha_with_lse_d128{suffix}", tf), ("bwd", f"mha_bwd_d128{suffix}", tb)):
            sys_ms, sys_chk, sys_ver, sys_eng = ours(binary, task, {}, out, "system")
            row = [pass_, causal, t_ms, sys_ver, sys_ms, sys_chk]
            if torch_dir:
                tv_ms, tv_chk, tv_ver, _ = ours(binary, task, {"PTXBENCH_CUDA_LIB_PATH": torch_dir}, out, "torchlib")
                row += [tv_ver, tv_ms, tv_chk]
            rows.append(row)
            print(f"  {task}: engine {sys_eng[:300]}")
    print(f"torch's cuDNN folder: {torch_dir}")
    print()
    print(f"{'pass':8} {'causal':6} {'torch cuDNN ms':>14} | {'ours (system cuDNN)':>24} {'ratio':>6} | {'ours (torch cuDNN)':>24} {'ratio':>6} | baseline relnorm vs fp32 reference")
    for r in rows:
        def cell(ver, ms):
            return f"{ver:>9} {ms:8.4f} ms" if ms else f"{ver:>9} {'failed':>11}"
        line = f"{r[0]:8} {str(r[1]):6} {r[2]:11.4f} ms | {cell(r[3], r[4]):>24} {(r[4] / r[2] if r[4] else float('nan')):6.3f}"
        if len(r) > 6:
            line += f" | {cell(r[6], r[7]):>24} {(r[7] / r[2] if r[7] else float('nan')):6.3f}"
        line += f" | {r[5]}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
