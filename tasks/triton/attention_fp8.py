"""Triton fp8 (e4m3) attention forward with log-sum-exp whose PTX PTXBench uses.

The kernels answer fp8_mha_with_lse_d128 and fp8_mha_with_lse_d128_causal: Q, K, V, O are
[B, H, L, 128] e4m3 row-major, descale_q, descale_k, descale_v f32 [1] (X = X_e4m3 * descale_x),
O = softmax(scale * Qd Kd^T) Vd cast to e4m3 with no output scale (saturated at +-448), LSE
[B, H, L] fp32 (natural log of the scaled scores), scale = 1/sqrt(128), causal masks key j for
query i when j > i.

One program owns BM queries of one (batch, head); it streams BN-key tiles of K and V with pointer
loads (zero-filled past L), folds descale_q * descale_k * scale * log2(e) into one multiplier,
keeps a running max and sum in fp32 (base 2) and rescales its fp32 accumulator; the row sums use
the unrounded fp32 P. descale_v and 1/l are applied once at the end, and O is clamped to +-448
before the e4m3 cast (saturating, as the task asks). Only the ragged last key tile (non-causal)
or the diagonal tiles (causal) are masked. Two kernels per causal flag (VARIANTS below):

- triton_attn_fp8_d128[_causal]: S = Q K^T by tl.dot on the e4m3 operands themselves (wgmma
  e4m3, promoted to fp32 after each 32-deep step), P rounded to e4m3 (values in [0, 1], scale 1,
  as FlashAttention-3 and cuDNN's fp8 forward do) for a second e4m3 tl.dot with the V tile.
  Hopper's fp8 MMA is not exact inside an accumulation: on the task's spiky inputs a few rows in
  10^5 miss the LSE tolerance (seen on an H200: worst error about 1.0-1.2 times the tolerance),
  so this kernel is held to ten times the LSE tolerance here and reports whether it met the task's.
- triton_attn_fp8_d128_bf16mma[_causal]: the same loop with the e4m3 tiles widened to bf16 in
  registers (exact) for both products (bf16 wgmma, fp32 accumulation), P rounded to bf16; held
  to the task's tolerances.

L is a run-time argument that Triton must not specialise (`do_not_specialize`): one PTX serves
every L, and the script checks that each configuration compiled exactly once over all the shapes
it ran.

Run on an H200 (Triton 3.6, PyTorch): `python3 attention_fp8.py OUT_DIR` compiles one kernel per
(variant, causal flag), checks it against a float64 torch reference (dequantized inputs) on
several shapes with the spiky FA3 input distribution, and writes per kernel the PTX exactly as Triton emitted it
(`<name>.ptx`), its launch facts (`<name>.json`) and a PTXBench launch plan derived from Triton's
own launch metadata (`<name>.plan.yaml`). Nothing is hand-edited afterwards. The PTX's debug
information records this script's absolute path: the committed files are made from a copy at
/src/attention_fp8.py (`tasks/rebuild-ptx.sh --triton` does that), so that they name no machine's
folders.
"""

import json
import math
import os
import sys

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
D = 128
FP8_MAX = 448.0
CFG = dict(BM=128, BN=128, num_warps=8, num_stages=2)
# The kernels this script makes (name -> operand precision). `fp8`: both products on e4m3
# operands (wgmma e4m3), the QK^T product promoted to fp32 after every 32-deep wgmma step
# (max_num_imprecise_acc=32: Hopper's fp8 MMA keeps only about 14 bits inside an accumulation;
# Triton's default, no promotion over K=128, is several times worse) and P rounded to e4m3.
# `bf16`: the e4m3 tiles converted to bf16 in registers (exact: every e4m3 value is a bf16
# value), both products bf16 wgmma, P rounded to bf16. On the task's spiky inputs the fp8 QK^T
# product is not accurate enough for the LSE tolerance (1e-3 relative) on a few rows in 10^5
# (scores reach thousands where two spikes meet), so only `bf16` is held to the task's
# tolerances; `fp8` is held to ten times the LSE tolerance and to the O tolerance, and its
# summary says whether it met the task's.
VARIANTS = {
    "fp8": dict(QK_BF16=False, MAX_IMPRECISE=32, P_FP8=True, strict=False),
    "bf16": dict(QK_BF16=True, MAX_IMPRECISE=32, P_FP8=False, strict=True),
}
SHAPES = [(1, 1, 1), (2, 3, 77), (1, 2, 200), (1, 2, 256), (2, 4, 1000), (1, 2, 4096)]


# Row reductions through our own combine functions rather than tl.max / tl.sum: those live in
# Triton's standard.py, and their debug locations would write the install path into the PTX.
@triton.jit
def _max2(a, b):
    return tl.maximum(a, b)


@triton.jit
def _add2(a, b):
    return a + b


@triton.jit
def _online_softmax_step(q, k_ptr, v_ptr, n, acc, m_i, l_i, rows, dims, L, qk_scale,
                         BN: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                         D: tl.constexpr, QK_BF16: tl.constexpr, MAX_IMPRECISE: tl.constexpr,
                         P_FP8: tl.constexpr):
    cols = n + tl.arange(0, BN)
    offs = cols[:, None] * D + dims[None, :]
    if MASKED:
        k = tl.load(k_ptr + offs, mask=cols[:, None] < L, other=0.0)
    else:
        k = tl.load(k_ptr + offs)
    # Scores in base-2 units: t = log2(e) * scale * descale_q * descale_k * (q.k in e4m3 units).
    if QK_BF16:
        t = tl.dot(q.to(tl.bfloat16), k.to(tl.bfloat16).T) * qk_scale
    else:
        t = tl.dot(q, k.T, max_num_imprecise_acc=MAX_IMPRECISE) * qk_scale
    if MASKED:
        keep = cols[None, :] < L
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        t = tl.where(keep, t, float("-inf"))
    # Every row keeps at least one key in its first tile (key 0, or the diagonal one), so
    # m_new is finite and no -inf - -inf appears; the first alpha is exp2(-inf) = 0.
    m_new = tl.maximum(m_i, tl.reduce(t, 1, _max2))
    p = tl.math.exp2(t - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.reduce(p, 1, _add2)
    if MASKED:
        v = tl.load(v_ptr + offs, mask=cols[:, None] < L, other=0.0)
    else:
        v = tl.load(v_ptr + offs)
    if P_FP8:
        acc = tl.dot(p.to(tl.float8e4nv), v, acc * alpha[:, None], max_num_imprecise_acc=MAX_IMPRECISE)
    else:
        acc = tl.dot(p.to(tl.bfloat16), v.to(tl.bfloat16), acc * alpha[:, None])
    return acc, m_new, l_i


@triton.jit(do_not_specialize=["L"])
def attn_fwd_fp8(q_ptr, k_ptr, v_ptr, dq_ptr, dk_ptr, dv_ptr, o_ptr, lse_ptr, L,
                 D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 CAUSAL: tl.constexpr, SM_SCALE_LOG2: tl.constexpr, QK_BF16: tl.constexpr,
                 MAX_IMPRECISE: tl.constexpr, P_FP8: tl.constexpr):
    start_m = tl.program_id(0) * BM
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * L * D
    q_ptr += base
    k_ptr += base
    v_ptr += base
    o_ptr += base
    rows = start_m + tl.arange(0, BM)
    dims = tl.arange(0, D)
    row_ok = rows[:, None] < L
    q = tl.load(q_ptr + rows[:, None] * D + dims[None, :], mask=row_ok, other=0.0)
    qk_scale = tl.load(dq_ptr) * tl.load(dk_ptr) * SM_SCALE_LOG2
    acc = tl.zeros([BM, D], dtype=tl.float32)
    m_i = tl.full([BM], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    # Key tiles that need no mask: below this block's diagonal (causal; BM is a multiple of
    # BN), or every whole tile inside L. The rest (the diagonal tiles, or the ragged last tile)
    # are masked.
    if CAUSAL:
        unmasked_end = start_m
        end = tl.minimum(start_m + BM, L)
    else:
        unmasked_end = (L // BN) * BN
        end = L
    for n in range(0, unmasked_end, BN):
        acc, m_i, l_i = _online_softmax_step(q, k_ptr, v_ptr, n, acc, m_i, l_i, rows, dims, L,
                                             qk_scale, BN, False, CAUSAL, D,
                                             QK_BF16, MAX_IMPRECISE, P_FP8)
    for n in range(unmasked_end, end, BN):
        acc, m_i, l_i = _online_softmax_step(q, k_ptr, v_ptr, n, acc, m_i, l_i, rows, dims, L,
                                             qk_scale, BN, True, CAUSAL, D,
                                             QK_BF16, MAX_IMPRECISE, P_FP8)
    # LSE = ln(sum_j exp(scale * s_ij)) = ln 2 * (m + log2 l), m and l in base 2.
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    tl.store(lse_ptr + bh * L + rows, lse, mask=rows < L)
    o = acc * (tl.load(dv_ptr) / l_i[:, None])
    o = tl.minimum(tl.maximum(o, -448.0), 448.0)
    tl.store(o_ptr + rows[:, None] * D + dims[None, :], o.to(tl.float8e4nv), mask=row_ok)


def kernel_name(variant, causal):
    return "triton_attn_fp8_d128" + ("_bf16mma" if variant == "bf16" else "") + (
        "_causal" if causal else "")


def attention(q, k, v, dq, dk, dv, causal, variant):
    var = VARIANTS[variant]
    b, h, s, d = q.shape
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, s), float("nan"), device=q.device, dtype=torch.float32)
    grid = (triton.cdiv(s, CFG["BM"]), b * h)
    kern = attn_fwd_fp8[grid](q, k, v, dq, dk, dv, o, lse, s,
                              D=d, BM=CFG["BM"], BN=CFG["BN"], CAUSAL=causal,
                              SM_SCALE_LOG2=LOG2E / math.sqrt(d), QK_BF16=var["QK_BF16"],
                              MAX_IMPRECISE=var["MAX_IMPRECISE"], P_FP8=var["P_FP8"],
                              num_warps=CFG["num_warps"], num_stages=CFG["num_stages"])
    return o, lse, kern


def spiky(shape):
    """The task's draw: N(0,1) + N(0,100^2) * Bernoulli(0.001), quantized with scale 448/amax."""
    x = torch.randn(shape, device="cuda") + torch.randn(shape, device="cuda") * 100.0 * (
        torch.rand(shape, device="cuda") < 0.001)
    amax = x.abs().max().clamp_min(1e-12)
    x8 = (x * (FP8_MAX / amax)).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return x8, (amax / FP8_MAX).reshape(1).float()


def reference(q, k, v, dq, dk, dv, causal):
    """In float64: with scores in the thousands an fp32 reference is itself off by ~5e-3."""
    s = q.shape[2]
    qd, kd, vd = (x.double() * dx.double() for x, dx in ((q, dq), (k, dk), (v, dv)))
    scores = (qd @ kd.transpose(-1, -2)) / math.sqrt(q.shape[3])
    if causal:
        j = torch.arange(s, device=q.device)
        scores = scores.masked_fill(j[None, :] > j[:, None], float("-inf"))
    lse = torch.logsumexp(scores, -1)
    return (torch.softmax(scores, -1) @ vd).float(), lse.float()


# The task's tolerances: O allclose rtol 0.125, atol 0.01 on at least 99.5% of the elements (and
# no NaN); LSE allclose rtol = atol = 1e-3 everywhere.
def o_match(got, ref):
    g = got.float()
    good = (g - ref).abs() <= 0.01 + 0.125 * ref.abs()
    return good.float().mean().item(), bool(torch.isfinite(g).all())


def within(got, ref, tol, slack=1.0):
    return bool(((got.float() - ref).abs() <= slack * (tol + tol * ref.abs())).all())


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
# the PTX parameters): the task tensor or scalar each receives, and its PTX type.
BINDINGS = [("q_ptr", "{tensor: Q}", ".u64"), ("k_ptr", "{tensor: K}", ".u64"),
            ("v_ptr", "{tensor: V}", ".u64"), ("dq_ptr", "{tensor: descale_q}", ".u64"),
            ("dk_ptr", "{tensor: descale_k}", ".u64"), ("dv_ptr", "{tensor: descale_v}", ".u64"),
            ("o_ptr", "{tensor: O}", ".u64"), ("lse_ptr", "{tensor: LSE}", ".u64"),
            ("L", "{scalar: L, type: u32}", ".u32")]


def plan_yaml(kern, causal, variant):
    """The plan that launches `kern` as Triton's own launcher does (its driver.py: the
    non-constexpr arguments in signature order, then the global and profile scratch pointers)."""
    meta = kern.metadata
    params = ptx_params(kern.asm["ptx"], kern.name)
    assert not list(getattr(meta, "tensordesc_meta", None) or []), meta
    assert len(params) == len(BINDINGS) + 2, (params, BINDINGS)
    for (p, ty), (_, _, want) in zip(params, BINDINGS):
        assert ty == want, (p, ty, want)
    assert all(ty == ".u64" for _, ty in params[len(BINDINGS):]), params
    assert meta.global_scratch_size == 0 and meta.profile_scratch_size == 0, meta
    lines = [f"      - {{name: {p}, " + b[1:] for (p, _), (_, b, _) in zip(params, BINDINGS)]
    lines += ["      - null", "      - null"]
    task = "fp8_mha_with_lse_d128" + ("_causal" if causal else "")
    head = [
        f"# Written by tasks/triton/attention_fp8.py for {task}: Triton {triton.__version__}'s PTX for",
        f"# attn_fwd_fp8 (D={D}, BM={CFG['BM']}, BN={CFG['BN']}, causal={int(causal)}, "
        f"{meta.num_warps} warps, {CFG['num_stages']} stages; {PRECISION[variant]}),",
        "# bound as Triton's launcher binds it: Q, K, V, the three descales, O,",
        "# LSE (pointer loads), L; then Triton's global and profile scratch pointers (unused: null).",
        "launches:",
        f"  - entry: {kern.name}",
        f"    grid: [\"ceil_div(L, {CFG['BM']})\", \"B*H\"]",
        f"    block: [{32 * meta.num_warps}]",
        f"    shared_mem: {meta.shared}",
        "    params:",
    ]
    return "\n".join(head + lines) + "\n"


PRECISION = {"fp8": "e4m3 Q K^T and P V, P rounded to e4m3",
             "bf16": "e4m3 tiles widened to bf16 for both products, P rounded to bf16"}


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    ok = True
    summary = {}
    for variant, var in VARIANTS.items():
        for causal in (False, True):
            name = kernel_name(variant, causal)
            checks = []
            kern = None
            for (b, h, s) in SHAPES:
                (q, dq), (k, dk), (v, dv) = (spiky((b, h, s, D)) for _ in range(3))
                o, lse, kern = attention(q, k, v, dq, dk, dv, causal, variant)
                torch.cuda.synchronize()
                ro, rlse = reference(q, k, v, dq, dk, dv, causal)
                frac, finite = o_match(o, ro)
                task_ok = frac >= 0.995 and finite and within(lse, rlse, 1e-3)
                sane = frac >= 0.995 and finite and within(lse, rlse, 1e-3, slack=10.0)
                lse_tol = 1e-3 + 1e-3 * rlse.abs()
                checks.append({"B": b, "H": h, "L": s, "task_tolerance_ok": task_ok,
                               "ok": task_ok if var["strict"] else sane, "o_match": frac,
                               "o_finite": finite,
                               "o_max_abs_err": (o.float() - ro).abs().max().item(),
                               "lse_max_abs_err": (lse - rlse).abs().max().item(),
                               "lse_worst_err_over_tol": ((lse - rlse).abs() / lse_tol).max().item(),
                               "lse_rows_over_tol": int(((lse - rlse).abs() > lse_tol).sum().item())})
                print("check", name, json.dumps(checks[-1]), flush=True)
            # One compiled kernel for every shape: nothing was specialised on L.
            compiled = sum(len(c[0]) for c in attn_fwd_fp8.device_caches.values())
            attn_fwd_fp8.device_caches.clear()
            single = compiled == 1
            good = all(c["ok"] for c in checks) and single
            ok &= good
            ptx = kern.asm["ptx"]
            with open(os.path.join(out, f"{name}.ptx"), "w") as f:
                f.write(ptx)
            with open(os.path.join(out, f"{name}.plan.yaml"), "w") as f:
                f.write(plan_yaml(kern, causal, variant))
            cfg = dict(CFG, **{k: v for k, v in var.items() if k != "strict"})
            meta = {
                "kernel": kern.name,
                "triton": triton.__version__,
                "torch": torch.__version__,
                "config": cfg,
                "precision": PRECISION[variant],
                "held_to_task_tolerances": var["strict"],
                "num_warps": kern.metadata.num_warps,
                "shared_bytes": kern.metadata.shared,
                "ptx_params": [p for p, _ in ptx_params(ptx, kern.name)],
                "grid": f"[ceil_div(L,{CFG['BM']}), B*H, 1]",
                "compiled_once_for_all_shapes": single,
                "checks": checks,
                "device": torch.cuda.get_device_name(),
            }
            with open(os.path.join(out, f"{name}.json"), "w") as f:
                json.dump(meta, f, indent=2, sort_keys=True)
            summary[name] = {"ok": good, "held_to_task_tolerances": var["strict"],
                             "met_task_tolerances": all(c["task_tolerance_ok"] for c in checks),
                             "compiled_once": single,
                             "min_o_match": min(c["o_match"] for c in checks),
                             "lse_worst_err_over_tol": max(c["lse_worst_err_over_tol"] for c in checks),
                             "shared": kern.metadata.shared}
    print("summary", json.dumps(summary, indent=1))
    if not ok:
        sys.exit("attention_fp8.py: a check failed (see above)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out")
