"""Triton paged GQA decode (bf16 q, K/V cache and output; fp32 LSE) whose PTX PTXBench uses.

The kernel answers gqa_paged_decode_h32_kv8_d128_ps1: q [B, 32, 128], k_cache and v_cache
[num_pages, 1, 8, 128] (page size 1: a page is one token), kv_indptr [B+1] and kv_indices
[kv_indptr[B]] int32 (sequence b's tokens are the pages kv_indices[kv_indptr[b] .. kv_indptr[b+1]],
in any order), output [B, 32, 128] bf16 and lse [B, 32] fp32 (natural log of the sum of
exp(scale * q.k)), scale = 1/sqrt(128), query head h reads KV head h / 4.

One program owns one (KV head g, sequence b) and the 4 query heads 4g..4g+3 that share it, padded
to 16 rows (tl.dot's smallest M; the padding rows are zeros and are never stored). It walks the
sequence's CSR range BN tokens at a time: it loads BN page numbers from kv_indices and gathers
the K and V rows they name with pointer loads (no TMA: the rows are scattered), keeps a running
max and sum in fp32 (base 2, the scale folded into one multiplier) and rescales its fp32
accumulator, so P is rounded to bf16 only for the P V product. Every tile holds at least one of
the sequence's tokens (each sequence has at least one), so the running max is finite from the
first tile on. The kernel takes no integer arguments (the batch is the grid's second dimension,
the lengths come from kv_indptr), so nothing is specialised on a shape: the script checks that it
compiled exactly once over all the shapes it ran.

Run on an H200 (Triton 3.6, PyTorch): `python3 attention_decode.py OUT_DIR` compiles the kernel,
checks it against an fp32 torch reference on several batches (lengths 1 to a few thousand, pages
drawn at random from a larger pool) and writes the PTX exactly as Triton emitted it
(`<name>.ptx`), its launch facts (`<name>.json`) and a PTXBench launch plan derived from Triton's
own launch metadata (`<name>.plan.yaml`): the seven tensors in the kernel's parameter order, then
Triton's global and profile scratch pointers. Nothing is hand-edited afterwards. The PTX's debug
information records this script's absolute path: the committed files are made from a copy at
/src/attention_decode.py (`tasks/rebuild-ptx.sh --triton` does that), so that they name no
machine's folders.
"""

import json
import math
import os
import sys

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
QO_HEADS, KV_HEADS, D = 32, 8, 128
GROUP = QO_HEADS // KV_HEADS
NAME = "triton_attn_decode"
CFG = dict(BLOCK_H=16, BN=64, num_warps=4, num_stages=2)


# Row reductions through our own combine functions rather than tl.max / tl.sum: those live in
# Triton's standard.py, and their debug locations would write the install path into the PTX.
@triton.jit
def _max2(a, b):
    return tl.maximum(a, b)


@triton.jit
def _add2(a, b):
    return a + b


@triton.jit
def gqa_decode(q_ptr, k_ptr, v_ptr, indptr_ptr, indices_ptr, o_ptr, lse_ptr,
               QO_HEADS: tl.constexpr, KV_HEADS: tl.constexpr, GROUP: tl.constexpr,
               D: tl.constexpr, BLOCK_H: tl.constexpr, BN: tl.constexpr,
               QK_SCALE: tl.constexpr):
    g = tl.program_id(0)
    b = tl.program_id(1)
    heads = tl.arange(0, BLOCK_H)
    live = heads < GROUP
    dims = tl.arange(0, D)
    q_rows = b * QO_HEADS + g * GROUP + heads
    q = tl.load(q_ptr + q_rows[:, None] * D + dims[None, :], mask=live[:, None], other=0.0)
    start = tl.load(indptr_ptr + b)
    end = tl.load(indptr_ptr + b + 1)
    acc = tl.zeros([BLOCK_H, D], dtype=tl.float32)
    m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    for n in range(start, end, BN):
        offs = n + tl.arange(0, BN)
        valid = offs < end
        pages = tl.load(indices_ptr + offs, mask=valid, other=0)
        # Row of (page, 0, g, :) in [num_pages, 1, KV_HEADS, D]; 64-bit, the cache may be large.
        rows = (pages.to(tl.int64) * KV_HEADS + g) * D
        k = tl.load(k_ptr + rows[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        # Scores in base-2 units: t = log2(e) * scale * q.k, so exp(scale * q.k) = 2^t.
        t = tl.dot(q, k.T) * QK_SCALE
        t = tl.where(valid[None, :], t, float("-inf"))
        m_new = tl.maximum(m_i, tl.reduce(t, 1, _max2))
        p = tl.math.exp2(t - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.reduce(p, 1, _add2)
        v = tl.load(v_ptr + rows[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m_i = m_new
    # LSE = ln(sum_j exp(scale * s_j)) = ln 2 * (m + log2 l), m and l in base 2.
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    tl.store(lse_ptr + q_rows, lse, mask=live)
    o = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] * D + dims[None, :], o.to(tl.bfloat16), mask=live[:, None])


# (batch lengths, extra pages in the pool): lengths 1 .. a few thousand, batches 1 .. 64.
def cases():
    g = torch.Generator().manual_seed(1)
    yield [1], 5
    yield [1, 2, 3], 0
    yield [77, 1, 300], 100
    yield [int(x) for x in torch.randint(1, 600, (16,), generator=g)], 1000
    yield [int(x) for x in torch.randint(1, 100, (64,), generator=g)], 777
    yield [4096], 3
    yield [3000, 1, 64, 65, 127, 129, 2049], 5000


def make_inputs(lens, extra):
    b = len(lens)
    total = sum(lens)
    pages = total + extra
    q = torch.randn(b, QO_HEADS, D, device="cuda", dtype=torch.bfloat16)
    k_cache = torch.randn(pages, 1, KV_HEADS, D, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn(pages, 1, KV_HEADS, D, device="cuda", dtype=torch.bfloat16)
    indptr = torch.zeros(b + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(torch.tensor(lens, dtype=torch.int32), 0)
    indices = torch.randperm(pages)[:total].to(torch.int32)  # distinct, random order
    return q, k_cache, v_cache, indptr.cuda(), indices.cuda()


def decode(q, k_cache, v_cache, indptr, indices):
    b = q.shape[0]
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, QO_HEADS), float("nan"), device=q.device, dtype=torch.float32)
    kern = gqa_decode[(KV_HEADS, b)](q, k_cache, v_cache, indptr, indices, o, lse,
                                     QO_HEADS=QO_HEADS, KV_HEADS=KV_HEADS, GROUP=GROUP, D=D,
                                     BLOCK_H=CFG["BLOCK_H"], BN=CFG["BN"],
                                     QK_SCALE=LOG2E / math.sqrt(D),
                                     num_warps=CFG["num_warps"], num_stages=CFG["num_stages"])
    return o, lse, kern


def reference(q, k_cache, v_cache, indptr, indices):
    b = q.shape[0]
    outs, lses = [], []
    ptr = indptr.tolist()
    for i in range(b):
        idx = indices[ptr[i]:ptr[i + 1]].long()
        k = k_cache[idx, 0].float()  # [n, KV_HEADS, D]
        v = v_cache[idx, 0].float()
        k = k.repeat_interleave(GROUP, dim=1)  # query head h reads KV head h / GROUP
        v = v.repeat_interleave(GROUP, dim=1)
        s = torch.einsum("hd,nhd->hn", q[i].float(), k) / math.sqrt(D)
        lses.append(torch.logsumexp(s, -1))
        outs.append(torch.einsum("hn,nhd->hd", torch.softmax(s, -1), v))
    return torch.stack(outs), torch.stack(lses)


# The task's tolerances (allclose): output rtol = atol = 2e-2, lse rtol = atol = 1e-3.
def within(got, ref, tol):
    return bool(((got.float() - ref).abs() <= tol + tol * ref.abs()).all())


# ---------------------------------------------------------------- the PTXBench launch plan
def ptx_params(ptx, entry):
    """(name, PTX type) of each parameter of `entry`, in order."""
    head = ptx[ptx.index(f".entry {entry}("):]
    head = head[:head.index(")")]
    out = []
    for line in head.splitlines()[1:]:
        words = line.strip().rstrip(",").split()
        if words:
            out.append((words[-1].split("[")[0], words[1]))
    return out


# The kernel's non-constexpr arguments in signature order (the order of Triton's launcher and of
# the PTX parameters), each bound to the task tensor it receives.
BINDINGS = [("q_ptr", "q"), ("k_ptr", "k_cache"), ("v_ptr", "v_cache"), ("indptr_ptr", "kv_indptr"),
            ("indices_ptr", "kv_indices"), ("o_ptr", "output"), ("lse_ptr", "lse")]


def plan_yaml(kern):
    """The plan that launches `kern` as Triton's own launcher does (its driver.py: the
    non-constexpr arguments in signature order, then the global and profile scratch pointers)."""
    meta = kern.metadata
    params = ptx_params(kern.asm["ptx"], kern.name)
    assert not list(getattr(meta, "tensordesc_meta", None) or []), meta
    assert len(params) == len(BINDINGS) + 2, (params, BINDINGS)
    assert all(ty == ".u64" for _, ty in params), params
    assert meta.global_scratch_size == 0 and meta.profile_scratch_size == 0, meta
    lines = [f"      - {{name: {p}, tensor: {t}}}" for (p, _), (_, t) in zip(params, BINDINGS)]
    lines += ["      - null", "      - null"]
    head = [
        f"# Written by tasks/triton/attention_decode.py for gqa_paged_decode_h32_kv8_d128_ps1: Triton",
        f"# {triton.__version__}'s PTX for gqa_decode (one program per (KV head, sequence), "
        f"{CFG['BLOCK_H']} padded query rows, BN={CFG['BN']},",
        f"# {meta.num_warps} warps, {CFG['num_stages']} stages), bound as Triton's launcher binds it: "
        "the seven tensors (pointer",
        "# loads; K and V rows gathered through kv_indices), then Triton's global and profile scratch",
        "# pointers (unused: null).",
        "launches:",
        f"  - entry: {kern.name}",
        "    grid: [num_kv_heads, batch_size]",
        f"    block: [{32 * meta.num_warps}]",
        f"    shared_mem: {meta.shared}",
        "    params:",
    ]
    return "\n".join(head + lines) + "\n"


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    checks = []
    kern = None
    for lens, extra in cases():
        inputs = make_inputs(lens, extra)
        o, lse, kern = decode(*inputs)
        torch.cuda.synchronize()
        ro, rlse = reference(*inputs)
        good = within(o, ro, 2e-2) and within(lse, rlse, 1e-3)
        checks.append({"batch": len(lens), "max_len": max(lens), "tokens": sum(lens),
                       "pages": sum(lens) + extra, "ok": good,
                       "o_max_abs_err": (o.float() - ro).abs().max().item(),
                       "lse_max_abs_err": (lse - rlse).abs().max().item()})
        print("check", json.dumps(checks[-1]), flush=True)
    # One compiled kernel for every shape: nothing was specialised on a shape.
    compiled = sum(len(c[0]) for c in gqa_decode.device_caches.values())
    single = compiled == 1
    ptx = kern.asm["ptx"]
    with open(os.path.join(out, f"{NAME}.ptx"), "w") as f:
        f.write(ptx)
    with open(os.path.join(out, f"{NAME}.plan.yaml"), "w") as f:
        f.write(plan_yaml(kern))
    meta = {
        "kernel": kern.name,
        "triton": triton.__version__,
        "torch": torch.__version__,
        "config": CFG,
        "num_warps": kern.metadata.num_warps,
        "shared_bytes": kern.metadata.shared,
        "ptx_params": [p for p, _ in ptx_params(ptx, kern.name)],
        "grid": "[num_kv_heads, batch_size, 1]",
        "compiled_once_for_all_shapes": single,
        "checks": checks,
        "device": torch.cuda.get_device_name(),
    }
    with open(os.path.join(out, f"{NAME}.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
    ok = all(c["ok"] for c in checks) and single
    print("summary", json.dumps({NAME: {"ok": ok, "checks": len(checks),
                                        "failed": [c for c in checks if not c["ok"]],
                                        "compiled_once": single,
                                        "shared": kern.metadata.shared}}))
    if not ok:
        sys.exit("attention_decode.py: a check failed (see above)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out")
