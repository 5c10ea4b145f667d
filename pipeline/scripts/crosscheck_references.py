"""Cross-check PTXBench's GPU references against PyTorch in float64 (run on the GPU machine).

Usage: python3 crosscheck_references.py PTXBENCH_BINARY OUT_DIR
For a few workloads per family it asks `ptxbench reference` for the inputs and the fp32
reference outputs, recomputes the outputs with PyTorch in float64 from the very same inputs,
and prints ||ours - torch|| / ||torch|| and max |ours - torch| per output. A reference that
disagrees beyond fp32 rounding (1e-5 relative) fails the script.
"""

import json
import os
import subprocess
import sys

import numpy as np
import torch

CASES = [
    ("gemm_n7168_k5120", "M129"),
    ("gemm_n7168_k5120", "M70"),
    ("gemm_fp8_n7168_k5120", "M77"),
    ("mha_with_lse_d128", "B1_H2_S200"),
    ("mha_with_lse_d64_causal", "B2_H3_S77"),
    ("mha_with_lse_d256", "B1_H2_S200"),
    ("mha_bwd_d128", "B1_H2_S200"),
    ("mha_bwd_d96_causal", "B2_H3_S77"),
]


def load(d, meta, name):
    t = meta["tensors"][name]
    a = np.fromfile(os.path.join(d, t["file"]), dtype=np.float32).reshape(t["shape"])
    return torch.from_numpy(a).double().cuda()


def attention(q, k, v, causal):
    d = q.shape[-1]
    s = (q @ k.transpose(-1, -2)) / d**0.5
    if causal:
        n = q.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return torch.softmax(s, dim=-1) @ v, lse


def expected(meta, d):
    op = meta["op"]
    kind = op["kind"]
    if kind == "gemm":
        return {"C": load(d, meta, "A") @ load(d, meta, "B").T}
    if kind == "gemm_fp8":
        scale = load(d, meta, "scale_a").flatten()[0] * load(d, meta, "scale_b").flatten()[0]
        return {"C": scale * (load(d, meta, "A") @ load(d, meta, "B").T)}
    q, k, v = (load(d, meta, n) for n in "QKV")
    if kind == "attention_fwd":
        o, lse = attention(q, k, v, op["causal"])
        return {"O": o, "LSE": lse}
    q.requires_grad_(True), k.requires_grad_(True), v.requires_grad_(True)
    o, _ = attention(q, k, v, op["causal"])
    o.backward(load(d, meta, "dO"))
    return {"dQ": q.grad, "dK": k.grad, "dV": v.grad}


def main(binary, out):
    worst = 0.0
    print(f"{'task':28} {'workload':12} {'output':6} {'rel L2':>10} {'max abs':>10}")
    for task, workload in CASES:
        d = os.path.join(out, f"{task}.{workload}")
        subprocess.run([binary, "reference", "--task", task, "--workload", workload,
                        "--seed", "7", "--out", d], check=True, stdout=subprocess.DEVNULL)
        meta = json.load(open(os.path.join(d, "index.json")))
        for name, want in expected(meta, d).items():
            got = load(d, meta, name)
            rel = ((got - want).norm() / want.norm()).item()
            mx = (got - want).abs().max().item()
            worst = max(worst, rel)
            print(f"{task:28} {workload:12} {name:6} {rel:10.2e} {mx:10.2e}")
    print(f"worst relative L2 difference: {worst:.2e}")
    sys.exit(0 if worst < 1e-5 else 1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
