"""Triton attention forward with log-sum-exp (bf16 Q, K, V, O; fp32 LSE) whose PTX PTXBench uses.

The kernels answer the mha_with_lse_d{64,128,256}[_causal] tasks: Q, K, V, O are [B, H, S, D]
row-major, LSE is [B, H, S] (natural log), scale = 1/sqrt(D), causal masks key j for query i when
j > i. One program owns BM queries of one (batch, head); it streams BN-key tiles of K and V,
keeps a running max and sum in fp32 (base 2, the scale folded into one multiplier) and rescales
its fp32 accumulator, so P is rounded to bf16 only for the P V product.

Every tensor is seen through a rank-3 TMA descriptor over [B*H, S, D] with a [1, rows, D] box:
TMA clips each box at S inside its own head, so a ragged S (77, 200) needs no padding: rows past S
load as zeros and are never stored, and only the last key tile (and the diagonal one, causal)
needs a mask. S is a run-time argument that Triton must not specialise (`do_not_specialize`),
and descriptors are specialised only on dtype and box, so one PTX serves every S; the script
checks that each configuration compiled exactly once over all the shapes it ran.

Run on an H200 (Triton 3.6, PyTorch): `python3 attention.py OUT_DIR` compiles one kernel per
(D, causal), checks it against an fp32 torch reference on several shapes, and writes per kernel
the PTX exactly as Triton emitted it (`<name>.ptx`), its launch facts (`<name>.json`) and a
PTXBench launch plan derived from Triton's own launch metadata (`<name>.plan.yaml`): each host
descriptor becomes the 128-byte CUtensorMap that Triton's launcher encodes (box, swizzle and L2
promotion as it encodes them) followed by the descriptor's shape (u32 each) and strides (u64
each, in elements). Nothing is hand-edited afterwards. The PTX's debug information records this
script's absolute path: the committed files are made from a copy at /src/attention.py
(`tasks/rebuild-ptx.sh --triton` does that), so that they name no machine's folders.
"""

import json
import math
import os
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

LOG2E = 1.4426950408889634


# Row reductions through our own combine functions rather than tl.max / tl.sum: those live in
# Triton's standard.py, and their debug locations would write the install path into the PTX.
@triton.jit
def _max2(a, b):
    return tl.maximum(a, b)


@triton.jit
def _add2(a, b):
    return a + b


@triton.jit
def _online_softmax_step(q, k_desc, v_desc, bh, n, acc, m_i, l_i, rows, S,
                         BN: tl.constexpr, D: tl.constexpr, QK_SCALE: tl.constexpr,
                         MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    # Scores in base-2 units: t = log2(e) * scale * q.k, so exp(scale * q.k) = 2^t.
    k = k_desc.load([bh, n, 0]).reshape(BN, D)
    t = tl.dot(q, k.T) * QK_SCALE
    if MASKED:
        cols = n + tl.arange(0, BN)
        keep = cols[None, :] < S
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        t = tl.where(keep, t, float("-inf"))
    # Every row keeps at least one key in its first tile (key 0, or the diagonal one), so
    # m_new is finite and no -inf - -inf appears; the first alpha is exp2(-inf) = 0.
    m_new = tl.maximum(m_i, tl.reduce(t, 1, _max2))
    p = tl.math.exp2(t - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.reduce(p, 1, _add2)
    v = v_desc.load([bh, n, 0]).reshape(BN, D)
    acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
    return acc, m_new, l_i


@triton.jit(do_not_specialize=["S"])
def attn_fwd(q_desc, k_desc, v_desc, o_desc, lse_ptr, S,
             D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
             CAUSAL: tl.constexpr, QK_SCALE: tl.constexpr):
    start_m = tl.program_id(0) * BM
    bh = tl.program_id(1)
    rows = start_m + tl.arange(0, BM)
    q = q_desc.load([bh, start_m, 0]).reshape(BM, D)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    m_i = tl.full([BM], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    # Key tiles that need no mask: below this block's diagonal (causal; BM is a multiple of
    # BN), or every whole tile inside S. The rest (the diagonal tiles, or the ragged last tile)
    # are masked.
    if CAUSAL:
        unmasked_end = start_m
        end = tl.minimum(start_m + BM, S)
    else:
        unmasked_end = (S // BN) * BN
        end = S
    for n in range(0, unmasked_end, BN):
        acc, m_i, l_i = _online_softmax_step(q, k_desc, v_desc, bh, n, acc, m_i, l_i, rows, S,
                                             BN, D, QK_SCALE, False, CAUSAL)
    for n in range(unmasked_end, end, BN):
        acc, m_i, l_i = _online_softmax_step(q, k_desc, v_desc, bh, n, acc, m_i, l_i, rows, S,
                                             BN, D, QK_SCALE, True, CAUSAL)
    # LSE = ln(sum_j exp(scale * s_ij)) = ln 2 * (m + log2 l), m and l in base 2.
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    tl.store(lse_ptr + bh * S + rows, lse, mask=rows < S)
    o = acc / l_i[:, None]
    o_desc.store([bh, start_m, 0], o.to(tl.bfloat16).reshape(1, BM, D))


# (D, causal) -> tile and launch configuration.
CONFIGS = {
    64: dict(BM=128, BN=128, num_warps=8, num_stages=3),
    128: dict(BM=128, BN=128, num_warps=8, num_stages=2),
    256: dict(BM=64, BN=64, num_warps=4, num_stages=2),
}
SHAPES = [(1, 1, 1), (2, 3, 77), (1, 2, 200), (1, 2, 256), (2, 4, 1000)]


def kernel_name(d, causal):
    return f"triton_attn_fwd_d{d}" + ("_causal" if causal else "")


def descriptors(q, k, v, o, bm, bn):
    b, h, s, d = q.shape

    def desc(t, rows):
        return TensorDescriptor(t, shape=[b * h, s, d], strides=[s * d, d, 1], block_shape=[1, rows, d])

    return desc(q, bm), desc(k, bn), desc(v, bn), desc(o, bm)


def attention(q, k, v, causal):
    b, h, s, d = q.shape
    cfg = CONFIGS[d]
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, s), float("nan"), device=q.device, dtype=torch.float32)
    grid = (triton.cdiv(s, cfg["BM"]), b * h)
    kern = attn_fwd[grid](*descriptors(q, k, v, o, cfg["BM"], cfg["BN"]), lse, s,
                          D=d, BM=cfg["BM"], BN=cfg["BN"], CAUSAL=causal,
                          QK_SCALE=LOG2E / math.sqrt(d),
                          num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return o, lse, kern


def reference(q, k, v, causal):
    s = q.shape[2]
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[3])
    if causal:
        j = torch.arange(s, device=q.device)
        scores = scores.masked_fill(j[None, :] > j[:, None], float("-inf"))
    lse = torch.logsumexp(scores, -1)
    return torch.softmax(scores, -1) @ v.float(), lse


# The task's tolerances (allclose): O rtol = atol = 2e-2, LSE rtol = atol = 1e-3.
def within(got, ref, tol):
    return bool(((got.float() - ref).abs() <= tol + tol * ref.abs()).all())


# ---------------------------------------------------------------- the PTXBench launch plan
SWIZZLE = {0: "none", 1: "32B", 2: "64B", 3: "128B"}


def ptx_params(ptx, entry):
    head = ptx[ptx.index(f".entry {entry}("):]
    head = head[:head.index(")")]
    return [line.strip().rstrip(",").split()[-1].split("[")[0] for line in head.splitlines()[1:] if line.strip()]


def plan_yaml(name, kern, d, causal, cfg):
    """The plan that launches `kern` as Triton's own launcher does (see its driver.py:
    make_tensordesc_arg and fill_tma_descriptor: CUtensorMap from the metadata's box and swizzle,
    L2 promotion 128B, zero fill; then the host shape and strides; then the non-constexpr
    scalars; then the global and profile scratch pointers)."""
    meta = kern.metadata
    params = ptx_params(kern.asm["ptx"], kern.name)
    descs = list(meta.tensordesc_meta)
    assert len(descs) == 4, descs
    lines = []
    i = 0

    def add(text, named=False):
        nonlocal i
        if named:
            text = text.replace("{", "{name: %s, " % params[i], 1)
        lines.append(f"      - {text}")
        i += 1

    for tensor, m in zip(["Q", "K", "V", "O"], descs):
        box = list(reversed(m["block_size"]))  # innermost first
        assert m["elem_size"] == 2 and not m.get("fp4_padded"), m
        add("{tensor_map: {tensor: %s, dims: [D, S, \"B*H\"], strides: [\"D*2\", \"S*D*2\"], "
            "box: [%s], swizzle: %s, l2_promotion: 128B}}"
            % (tensor, ", ".join(str(x) for x in box), SWIZZLE[m["swizzle"]]), named=True)
        for e in ["B*H", "S", "D"]:
            add('{scalar: "%s", type: u32}' % e)
        for e in ["S*D", "D", "1"]:
            add('{scalar: "%s", type: u64}' % e)
    add("{tensor: LSE}", named=True)
    add("{scalar: S, type: u32}", named=True)
    scratch = len(params) - i
    assert scratch == 2, (params, i)
    assert meta.global_scratch_size == 0 and meta.profile_scratch_size == 0, meta
    lines += ["      - null", "      - null"]
    block = 32 * meta.num_warps
    task = f"mha_with_lse_d{d}" + ("_causal" if causal else "")
    head = [
        f"# Written by tasks/triton/attention.py for {task}: Triton {triton.__version__}'s PTX for",
        f"# attn_fwd (D={d}, BM={cfg['BM']}, BN={cfg['BN']}, causal={int(causal)}, "
        f"{meta.num_warps} warps, {cfg['num_stages']} stages), bound as Triton's launcher binds it.",
        "# Each descriptor is a rank-3 map over [B*H, S, D] (innermost first here) and its shape",
        "# (3 x u32) and strides (3 x u64, elements); then LSE, S; then Triton's global and profile",
        "# scratch pointers (unused: null).",
        "launches:",
        f"  - entry: {kern.name}",
        f"    grid: [\"ceil_div(S, {cfg['BM']})\", \"B*H\"]",
        f"    block: [{block}]",
        f"    shared_mem: {meta.shared}",
        "    params:",
    ]
    return "\n".join(head + lines) + "\n"


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    ok = True
    summary = {}
    for d in sorted(CONFIGS):
        for causal in (False, True):
            name = kernel_name(d, causal)
            checks = []
            kern = None
            for (b, h, s) in SHAPES:
                q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
                o, lse, kern = attention(q, k, v, causal)
                torch.cuda.synchronize()
                ro, rlse = reference(q, k, v, causal)
                good = within(o, ro, 2e-2) and within(lse, rlse, 1e-3)
                checks.append({"B": b, "H": h, "S": s, "ok": good,
                               "o_max_abs_err": (o.float() - ro).abs().max().item(),
                               "lse_max_abs_err": (lse - rlse).abs().max().item()})
                ok &= good
            # One compiled kernel for every shape: nothing was specialised on S.
            compiled = sum(len(c[0]) for c in attn_fwd.device_caches.values())
            attn_fwd.device_caches.clear()
            single = compiled == 1
            ok &= single
            cfg = CONFIGS[d]
            ptx = kern.asm["ptx"]
            with open(os.path.join(out, f"{name}.ptx"), "w") as f:
                f.write(ptx)
            with open(os.path.join(out, f"{name}.plan.yaml"), "w") as f:
                f.write(plan_yaml(name, kern, d, causal, cfg))
            meta = {
                "kernel": kern.name,
                "triton": triton.__version__,
                "torch": torch.__version__,
                "config": cfg,
                "num_warps": kern.metadata.num_warps,
                "shared_bytes": kern.metadata.shared,
                "tensordesc_meta": list(kern.metadata.tensordesc_meta),
                "ptx_params": ptx_params(ptx, kern.name),
                "grid": f"[ceil_div(S,{cfg['BM']}), B*H, 1]",
                "compiled_once_for_all_shapes": single,
                "checks": checks,
                "device": torch.cuda.get_device_name(),
            }
            with open(os.path.join(out, f"{name}.json"), "w") as f:
                json.dump(meta, f, indent=2, sort_keys=True)
            summary[name] = {"ok": all(c["ok"] for c in checks) and single, "shared": kern.metadata.shared}
            print(name, json.dumps(meta), flush=True)
    print("summary", json.dumps(summary))
    if not ok:
        sys.exit("attention.py: a check failed (see above)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out")
