"""Attention baseline fidelity on the GPU machine: PTXBench's native cuDNN SDPA next to PyTorch's
cuDNN backend.

Usage: python3 fidelity_attention.py PTXBENCH_BINARY OUT_DIR [ROUNDS]

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
Both are timed in ROUNDS rounds that take turns (torch, ours with the system's cuDNN, ours with
torch's), so a drift of the GPU's state over the run falls on both; each round gives a ratio,
and the table prints every round's times and the median ratio. Prints one table.
"""

import json
import os
import subprocess
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, S, D = 4, 48, 4096, 128
ITERS, WARMUP = 40, 5
ROUNDS = 3


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


def median(xs):
    xs = sorted(x for x in xs if x)
    return xs[len(xs) // 2] if xs else None


def ratios(ours_ms, torch_ms):
    return [o / t for o, t in zip(ours_ms, torch_ms) if o and t]


def main(binary, out, rounds=ROUNDS):
    os.makedirs(out, exist_ok=True)
    print(f"torch {torch.__version__}, torch cuDNN {torch.backends.cudnn.version()}, {rounds} rounds")
    rows = []
    torch_dir = None
    for causal in (False, True):
        suffix = "_causal" if causal else ""
        tasks = (("fwd+LSE", f"mha_with_lse_d128{suffix}"), ("bwd", f"mha_bwd_d128{suffix}"))
        # Rounds take turns (torch, then ours with each cuDNN), so a drift of the GPU's state
        # over the minutes this takes falls on both sides; each round gives a ratio.
        per = {t: {"torch": [], "sys": [], "tv": [], "ver": ("?", "?"), "chk": "", "eng": ""} for _, t in tasks}
        for r in range(rounds):
            tf, tb, how = torch_cudnn(causal)
            torch_dir = torch_dir or torch_cudnn_dir()
            if r == 0:
                print(f"causal={causal}: torch backward via {how}")
            for (_, task), t_ms in zip(tasks, (tf, tb)):
                e = per[task]
                e["torch"].append(t_ms)
                sys_ms, e["chk"], sys_ver, e["eng"] = ours(binary, task, {}, out, f"system-{r + 1}")
                e["sys"].append(sys_ms)
                tv_ver = "?"
                if torch_dir:
                    tv_ms, _, tv_ver, _ = ours(binary, task, {"PTXBENCH_CUDA_LIB_PATH": torch_dir}, out, f"torchlib-{r + 1}")
                    e["tv"].append(tv_ms)
                e["ver"] = (sys_ver, tv_ver)
        for pass_, task in tasks:
            e = per[task]
            print(f"  {task}: engine {e['eng'][:300]}")
            rows.append((pass_, causal, e, ratios(e["sys"], e["torch"]), ratios(e["tv"], e["torch"])))
    print(f"torch's cuDNN folder: {torch_dir}")
    print()
    print("Per round: torch ms / ours ms (system cuDNN) / ours ms (torch's cuDNN); ratio = ours / torch, its median over rounds")
    print(f"{'pass':8} {'causal':6} | {'rounds':60} | {'system':>7} {'ratio':>6} | {'torch':>7} {'ratio':>6} | baseline relnorm vs fp32 reference")
    for pass_, causal, e, rs, rt in rows:
        cells = " ".join(f"{t:.3f}/{s or float('nan'):.3f}/{v or float('nan'):.3f}" for t, s, v in zip(e["torch"], e["sys"], e["tv"] or [None] * len(e["torch"])))
        rsm, rtm = median(rs), median(rt)
        print(f"{pass_:8} {str(causal):6} | {cells:60} | {e['ver'][0]:>7} {rsm or float('nan'):6.3f} | {e['ver'][1]:>7} {rtm or float('nan'):6.3f} | {e['chk']}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else ROUNDS)
