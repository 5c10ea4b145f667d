"""Cross-check PTXBench's GPU references against PyTorch in float64 (run on the GPU machine).

Usage: python3 crosscheck_references.py PTXBENCH_BINARY OUT_DIR [--device cuda]
For a few workloads per family it asks `ptxbench reference` for the inputs and the fp32
reference outputs, recomputes the outputs with PyTorch in float64 from the very same inputs,
and prints ||ours - torch|| / ||torch|| and max |ours - torch| per output. A reference that
disagrees beyond fp32 rounding (1e-5 relative) fails the script. The float64 implementations
are written here from the task definitions' text (paged and ragged attention, MLA decode and the
gated delta rule walk their page tables and sequences in plain loops), independent of the
harness's code; they run on the CPU (`--device cuda` for the GPU).
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
    ("fp8_mha_with_lse_d128", "B2_H3_L77"),
    ("fp8_mha_with_lse_d128_causal", "B1_H2_L200"),
    ("gqa_paged_decode_h32_kv8_d128_ps1", "B7_T237"),
    ("gqa_ragged_prefill_causal_h32_kv4_d128", "B5_Q150_K244"),
    ("gqa_ragged_prefill_causal_h32_kv8_d128", "B3_Q148_K171"),
    ("gqa_paged_prefill_causal_h24_kv8_d128_ps1", "B5_Q150_K244"),
    ("gqa_paged_prefill_causal_h32_kv4_d128_ps1", "B3_Q148_K171"),
    ("gqa_paged_prefill_causal_h32_kv8_d128_ps1", "B5_Q150_K244"),
    ("mla_paged_decode_h16_ckv512_kpe64_ps1", "B6_T237"),
    ("gdn_prefill_qk4_v8_d128_k_last", "B6_T237"),
    ("gdn_prefill_qk8_v16_d128_k_last", "B2_T387"),
]

DEVICE = "cpu"


def load(d, meta, name):
    t = meta["tensors"][name]
    path = os.path.join(d, t["file"])
    if t.get("dtype") == "i32":
        return np.fromfile(path, dtype=np.int32).reshape(t["shape"]).tolist()
    a = np.fromfile(path, dtype=np.float32).reshape(t["shape"])
    return torch.from_numpy(a).double().to(DEVICE)


def softmax_rows(s, v):
    """exp(s - lse) @ v and lse, over the last axis of s (float64)."""
    lse = torch.logsumexp(s, dim=-1)
    return torch.exp(s - lse.unsqueeze(-1)) @ v, lse


def paged_decode(meta, d):
    q, kc, vc = (load(d, meta, n) for n in ("q", "k_cache", "v_cache"))
    indptr, pages = load(d, meta, "kv_indptr"), load(d, meta, "kv_indices")
    heads, kv_heads, dim = q.shape[1], kc.shape[2], q.shape[2]
    out = torch.zeros_like(q)
    lse = torch.zeros(q.shape[:2], dtype=q.dtype, device=q.device)
    for b in range(q.shape[0]):
        p = pages[indptr[b]:indptr[b + 1]]
        for h in range(heads):
            g = h // (heads // kv_heads)
            k, v = kc[p, 0, g, :], vc[p, 0, g, :]
            out[b, h], lse[b, h] = softmax_rows((k @ q[b, h]) / dim**0.5, v)
    return {"output": out, "lse": lse}


def prefill(meta, d, paged):
    q = load(d, meta, "q")
    qo, kvp = load(d, meta, "qo_indptr"), load(d, meta, "kv_indptr")
    if paged:
        kc, vc, pages = load(d, meta, "k_cache"), load(d, meta, "v_cache"), load(d, meta, "kv_indices")
    else:
        kr, vr = load(d, meta, "k"), load(d, meta, "v")
    heads, dim = q.shape[1], q.shape[2]
    out = torch.zeros_like(q)
    lse = torch.zeros(q.shape[:2], dtype=q.dtype, device=q.device)
    for b in range(len(qo) - 1):
        if paged:
            p = pages[kvp[b]:kvp[b + 1]]
            k, v = kc[p, 0], vc[p, 0]  # [kv_len, kv_heads, dim]
        else:
            k, v = kr[kvp[b]:kvp[b + 1]], vr[kvp[b]:kvp[b + 1]]
        q_len, kv_len = qo[b + 1] - qo[b], kvp[b + 1] - kvp[b]
        group = heads // k.shape[1]
        for i in range(q_len):
            t = qo[b] + i
            keep = i + kv_len - q_len + 1  # keys j <= i + kv_len - q_len
            for h in range(heads):
                kk, vv = k[:keep, h // group], v[:keep, h // group]
                out[t, h], lse[t, h] = softmax_rows((kk @ q[t, h]) / dim**0.5, vv)
    return {"output": out, "lse": lse}


def mla_decode(meta, d):
    qn, qp = load(d, meta, "q_nope"), load(d, meta, "q_pe")
    ckv, kpe = load(d, meta, "ckv_cache"), load(d, meta, "kpe_cache")
    indptr, pages = load(d, meta, "kv_indptr"), load(d, meta, "kv_indices")
    scale = 1 / (128 + 64) ** 0.5  # the definition's sm_scale: DeepSeek's qk_nope 128 + rope 64
    out = torch.zeros_like(qn)
    lse = torch.zeros(qn.shape[:2], dtype=qn.dtype, device=qn.device)
    for b in range(qn.shape[0]):
        p = pages[indptr[b]:indptr[b + 1]]
        c, r = ckv[p, 0], kpe[p, 0]
        s = scale * (qn[b] @ c.T + qp[b] @ r.T)  # [heads, kv_len]
        out[b], lse[b] = softmax_rows(s, c)
    return {"output": out, "lse": lse}


def gdn_prefill(meta, d):
    q, k, v = load(d, meta, "q"), load(d, meta, "k"), load(d, meta, "v")
    a, bb = load(d, meta, "a"), load(d, meta, "b")
    a_log, dt_bias = load(d, meta, "A_log"), load(d, meta, "dt_bias")
    state, cu = load(d, meta, "state"), load(d, meta, "cu_seqlens")
    v_heads, dim = v.shape[1], v.shape[2]
    group = v_heads // q.shape[1]
    scale = 1 / dim**0.5
    out = torch.zeros_like(v)
    new_state = torch.zeros_like(state)
    for n in range(len(cu) - 1):
        for h in range(v_heads):
            s = state[n, h].T.clone()  # k-last: state[n,h,v,k] = S[k,v]
            for t in range(cu[n], cu[n + 1]):
                x = a[t, h] + dt_bias[h]
                softplus = x if x > 20 else torch.log1p(torch.exp(x))
                g = torch.exp(-torch.exp(a_log[h]) * softplus)
                beta = torch.sigmoid(bb[t, h])
                kt, qt = k[t, h // group], q[t, h // group]
                s = g * s
                s = s + torch.outer(kt, beta * (v[t, h] - s.T @ kt))
                out[t, h] = scale * (s.T @ qt)
            new_state[n, h] = s.T
    return {"output": out, "new_state": new_state}


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
    if kind == "attention_decode":
        return paged_decode(meta, d)
    if kind == "attention_prefill":
        return prefill(meta, d, op["paged"])
    if kind == "attention_mla_decode":
        return mla_decode(meta, d)
    if kind == "gdn_prefill":
        return gdn_prefill(meta, d)
    if kind == "attention_fwd_fp8":
        q, k, v = (load(d, meta, n) * load(d, meta, f"descale_{n.lower()}").flatten()[0]
                   for n in "QKV")
        o, lse = attention(q, k, v, op["causal"])
        return {"O": o, "LSE": lse}
    q, k, v = (load(d, meta, n) for n in "QKV")
    if kind == "attention_fwd":
        o, lse = attention(q, k, v, op["causal"])
        return {"O": o, "LSE": lse}
    q.requires_grad_(True), k.requires_grad_(True), v.requires_grad_(True)
    o, _ = attention(q, k, v, op["causal"])
    o.backward(load(d, meta, "dO"))
    return {"dQ": q.grad, "dK": k.grad, "dV": v.grad}


def main(binary, out):
    global DEVICE
    if "--device" in sys.argv:
        DEVICE = sys.argv[sys.argv.index("--device") + 1]
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
