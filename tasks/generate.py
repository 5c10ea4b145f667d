#!/usr/bin/env python3
"""Writes the PTXBench v1 task files (tasks/<family>/<id>.yaml).

The YAML files are the source of truth; this script records how they were made, so that a
systematic change (a new target note, a new correctness size) is made the same way everywhere.
It reproduces the committed files byte for byte, and `.ci/run` checks that it does (`--check`):
a change to a task file is made here first, or the check fails.

The paper's definitions, workload uuids and sizes come from the public PTXBench release
(GitHub zhang677/PTXBench, commit 491860b, packages/mini-ptx-agent/fib_runtime/multiturn/
*-problems): gemm_problems.csv, mha_with_lse_problems.csv and mha_bwd_problems.csv, which are
also files of the paper's import object in the store:

    python3 tasks/generate.py --store artifacts            # the CSVs from the store
    python3 tasks/generate.py --upstream ../upstream-ptxbench
    python3 tasks/generate.py --store artifacts --check    # write nothing, compare

Then run `ptxbench tasks check` (or `cargo test -p ptxbench --lib task::`).
"""

import argparse
import csv
import json
import textwrap
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADER = "# Written by tasks/generate.py (PTXBench task suite v1); the YAML is the source of truth.\n"

TMA = '{family: tma, sass: [UTMALDG, UTMASTG, UTMAREDG]}'
TARGETS = """targets:
  sm_90a:
    required:
      - {family: wgmma, sass: ["*GMMA*"]}
      - %(tma)s
    notes: >-
      Hopper: %(h)s
  sm_100a:
    required:
      - {family: tcgen05, sass: ["UTC*", LDTM, STTM]}
      - %(tma)s
    notes: >-
      Blackwell: %(b)s
"""

GEMM_H = (
    "the products run on the warpgroup MMA unit (wgmma.mma_async, SASS HGMMA/QGMMA) and the "
    "A and B tiles arrive by TMA (cp.async.bulk.tensor, SASS UTMALDG; UTMASTG/UTMAREDG for "
    "stores). mma.sync (HMMA) alone does not count."
)
GEMM_B = (
    "the products run on the fifth-generation tensor core (tcgen05.mma, SASS UTC*MMA) with the "
    "accumulator in tensor memory (tcgen05.ld/st, SASS LDTM/STTM), tiles moved by TMA "
    "(SASS UTMALDG)."
)
ATT_H = (
    "both matrix products (Q K^T and P V; in the backward pass also dP, dV, dQ, dK) run on the "
    "warpgroup MMA unit (wgmma.mma_async, SASS HGMMA) and the Q, K, V tiles arrive by TMA "
    "(cp.async.bulk.tensor, SASS UTMALDG). mma.sync (HMMA) alone does not count."
)
ATT_B = (
    "the matrix products run on tcgen05.mma (SASS UTC*MMA) with accumulators in tensor memory "
    "(tcgen05.ld/st, SASS LDTM/STTM), tiles moved by TMA (SASS UTMALDG)."
)


def q(s):
    """A YAML double-quoted scalar (JSON strings are valid YAML 1.2)."""
    return json.dumps(s, ensure_ascii=True)


AS_WRITTEN = "= "


def rewrap(text, width=96):
    """Re-flows prose lines; lines indented by two spaces (formulas) stay as written, and so does
    a paragraph whose first line starts with AS_WRITTEN (wrapped by hand; the marker is dropped)."""
    out, prose = [], []
    verbatim = False

    def flush():
        if prose:
            out.extend(textwrap.wrap(" ".join(prose), width=width, break_on_hyphens=False))
            prose.clear()

    for line in text.strip("\n").split("\n"):
        if not line.strip():
            flush()
            verbatim = False
            out.append("")
        elif line.startswith(AS_WRITTEN) and not prose:
            verbatim = True
            out.append(line[len(AS_WRITTEN):])
        elif verbatim:
            out.append(line)
        elif line.startswith("  "):
            flush()
            out.append(line)
        else:
            prose.append(line.strip())
    flush()
    return "\n".join(out)


def block(text, indent=2):
    pad = " " * indent
    return "|\n" + "".join(pad + line + "\n" if line else "\n" for line in rewrap(text).split("\n"))


def workload(name, kind, axes, uuid=None):
    ax = ", ".join(f"{k}: {v}" for k, v in axes.items())
    u = f", uuid: {q(uuid)}" if uuid else ""
    return f"  - {{name: {name}, kind: {kind}, axes: {{{ax}}}{u}}}\n"


def targets(h, b):
    return TARGETS % {"tma": TMA, "h": h, "b": b}


# The paper's published data in the store (ptxbench.import/1; manifests/leaderboard.yaml names it).
PAPER_IMPORT = "edae624ef713a0423f520e8e5049df2ef1fab1a6c6edeb8c23ef9ae7d373fac4"


def blob_path(store, digest):
    return store / "v1" / "blake3" / digest[:2] / digest[2:4] / digest


def store_files(store):
    """The paper import's files by name, as paths into the store (`ptxbench verify` checks
    their hashes)."""
    with open(blob_path(store, PAPER_IMPORT)) as f:
        files = json.load(f)["files"]
    return {x["name"]: blob_path(store, x["content_digest"]) for x in files}


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- GEMM

GEMM_DESC = """\
C = A @ B^T in bf16 with fp32 accumulation: the paper's gemm_n{N}_k{K}, with N and K fixed and
M (the number of tokens) varying per workload. A is [M, K] and B is [N, K], both row-major with
K contiguous (a "TN" GEMM, B holds the weights as nn.Linear does); C is [M, N], row-major.
Most M values are not multiples of any tile size, so partial tiles must be handled.

FLOPs: 2*M*N*K (one multiply and one add per term). Bytes: A and B read once, C written once.

{tolerance}

Performance workloads are the paper's (with its workload uuids); correctness workloads are small
and odd-sized."""


TOL_FIXED = """\
Tolerance: allclose, rtol 1e-2 and atol 1e-2, against an fp32 reference. Rounding C to bf16
costs at most 2^-9 (0.2%) relative and fp32 summation order far less, so a correct kernel passes
with margin; a wrong tile, a skipped K block or a bf16 accumulator does not."""

TOL_K = """\
Tolerance: allclose, rtol 1e-2 and atol {atol}, against an fp32 reference. Rounding C to bf16
costs at most 2^-9 (0.2%) relative. The atol grows with K as 2e-8 * K^1.5 (suite 1.2.0; 1e-2
where that is smaller): tensor-core accumulation (wgmma) carries errors before rounding that
grow with the partial sums and the number of k-steps, about 0.02 at K = 21504 on the H200 (every
wgmma kernel's largest error there is 2.01-2.02 where fp32 SIMT's is at most the 2.0 of bf16
rounding), so an output near zero broke atol 1e-2 about once per evaluation of two different
Triton kernels (artifacts/evidence/engine-h200). A wrong tile, a skipped K block or a bf16
accumulator is still off by 0.5 or more."""


def gemm_atol(k):
    """atol 1e-2, or 2e-8 * K^1.5 rounded up to 3 decimals where that is larger."""
    import math
    return max(0.01, math.ceil(2e-8 * k ** 1.5 * 1000) / 1000)


def gemm_task(n, k, rows):
    tid = f"gemm_n{n}_k{k}"
    atol = gemm_atol(k)
    tolerance = TOL_FIXED if atol == 0.01 else TOL_K.format(atol=atol)
    perf = sorted((int(r["M"]), r["workload_uuid"]) for r in rows)
    perf_m = [m for m, _ in perf]
    corr = [1, 129] + ([70] if 70 not in perf_m else [333])
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: gemm\n")
    out.append(f"title: {q(f'bf16 GEMM C = A @ B^T, N={n}, K={k}')}\n")
    out.append("description: " + block(GEMM_DESC.format(N=n, K=k, tolerance=tolerance)))
    out.append(
        "axes:\n"
        '  M: {type: var, description: "rows of A and C (tokens)"}\n'
        f'  N: {{type: const, value: {n}, description: "rows of B, columns of C (output features)"}}\n'
        f'  K: {{type: const, value: {k}, description: "reduction dimension (input features)"}}\n'
        "inputs:\n"
        '  A: {dtype: bf16, shape: [M, K], description: "activations, row-major, K contiguous"}\n'
        '  B: {dtype: bf16, shape: [N, K], description: "weights, row-major, K contiguous"}\n'
        "outputs:\n"
        "  C:\n"
        "    dtype: bf16\n"
        "    shape: [M, N]\n"
        '    description: "row-major, N contiguous"\n'
        f"    tolerance: {{metric: allclose, rtol: 0.01, atol: {atol}}}\n"
        "op: {kind: gemm, transpose_b: true}\n"
        'reference: "C[m, n] = sum_k A[m, k] * B[n, k]: exact products accumulated in fp32; the'
        ' reference keeps fp32, the kernel writes C rounded to bf16"\n'
        "distribution: {kind: randn, std: 1.0}\n"
        'baseline: {library: cublaslt, operation: "bf16 TN matmul, fp32 accumulate, bf16 output"}\n'
        'flops: "2*M*N*K"\n'
        'bytes: "2*(M*K + N*K + M*N)"\n'
        "workloads:\n"
    )
    for m in sorted(corr):
        out.append(workload(f"M{m}", "correctness", {"M": m}))
    for m, u in perf:
        out.append(workload(f"M{m}", "performance", {"M": m}, u))
    out.append(targets(GEMM_H, GEMM_B))
    return tid, "".join(out)


FP8_DESC = """\
C = scale_a * scale_b * (A @ B^T) with fp8 (e4m3) inputs, fp32 accumulation and bf16 output, at
the shape of the headline bf16 task (N=7168, K=5120). Beyond the paper, which has bf16 GEMM only:
it asks for the fp8 tensor-core path (wgmma with e4m3 operands on Hopper, tcgen05.mma kind::f8f6f4
on Blackwell). A is [M, K] and B is [N, K], row-major with K contiguous (fp8 MMA takes K-major
operands only); C is [M, N] row-major. scale_a and scale_b are single f32 values in device memory
(shape [1]), drawn from U(0.5, 2); A and B are N(0, 1) samples rounded to e4m3.

FLOPs: 2*M*N*K. Bytes: A and B read once (1 byte per element), the two scales, C written once.

= Tolerance: relnorm, max 5e-3 (||C - ref||_2 / ||ref||_2), against an fp32 reference computed
from the same e4m3 values (exact products, fp32 accumulation, then the scales). Rounding C to
bf16 alone costs about 1.1e-3. Hopper's fp8 MMA accumulates with reduced internal precision,
so even a kernel that promotes partial sums to fp32 registers every 128-element k-block (as
DeepGEMM and cuBLAS do) has errors that scale with the partial sums, not with each output: on
the H200, cuBLASLt's own fp8 GEMM (torch._scaled_mm) broke an elementwise rule
|got - ref| <= 2e-2 + 2e-2*|ref| on up to 21,159 of 58.7M outputs (max |error| 2.08), at a
relative L2 error of 1.66e-3 (2.26e-3 with fast accumulation), measured by
pipeline/scripts/fp8_tolerance.py. Suite 1.0.0 had that elementwise rule; 1.1.0 replaced it
with this norm, which a wrong scale, layout, tile or k-block still fails by orders of magnitude."""


def fp8_task():
    tid = "gemm_fp8_n7168_k5120"
    n, k = 7168, 5120
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: gemm_fp8\n")
    out.append(f"title: {q(f'fp8 e4m3 GEMM C = scale_a*scale_b*(A @ B^T), N={n}, K={k}')}\n")
    out.append("description: " + block(FP8_DESC))
    out.append(
        "axes:\n"
        '  M: {type: var, description: "rows of A and C (tokens)"}\n'
        f'  N: {{type: const, value: {n}, description: "rows of B, columns of C"}}\n'
        f'  K: {{type: const, value: {k}, description: "reduction dimension"}}\n'
        "inputs:\n"
        '  A: {dtype: e4m3, shape: [M, K], description: "row-major, K contiguous"}\n'
        '  B: {dtype: e4m3, shape: [N, K], description: "row-major, K contiguous"}\n'
        "  scale_a:\n"
        "    dtype: f32\n"
        "    shape: [1]\n"
        '    description: "per-tensor dequantization scale of A"\n'
        "    distribution: {kind: uniform, lo: 0.5, hi: 2.0}\n"
        "  scale_b:\n"
        "    dtype: f32\n"
        "    shape: [1]\n"
        '    description: "per-tensor dequantization scale of B"\n'
        "    distribution: {kind: uniform, lo: 0.5, hi: 2.0}\n"
        "outputs:\n"
        "  C:\n"
        "    dtype: bf16\n"
        "    shape: [M, N]\n"
        '    description: "row-major, N contiguous"\n'
        "    tolerance: {metric: relnorm, max: 0.005}\n"
        "op: {kind: gemm_fp8, per_tensor_scales: true}\n"
        'reference: "C[m, n] = scale_a[0] * scale_b[0] * sum_k A[m, k] * B[n, k], with A and B'
        ' the e4m3 values as given: exact products accumulated in fp32; the reference keeps fp32,'
        ' the kernel writes C rounded to bf16"\n'
        "distribution: {kind: randn, std: 1.0}\n"
        "baseline: {library: cublaslt, operation: \"fp8 e4m3 TN matmul with per-tensor scales"
        ' (A/B scale pointers), fp32 accumulate, bf16 output"}\n'
        'flops: "2*M*N*K"\n'
        'bytes: "M*K + N*K + 8 + 2*M*N"\n'
        "workloads:\n"
    )
    for m in (1, 77, 129):
        out.append(workload(f"M{m}", "correctness", {"M": m}))
    for m in (70, 952, 8192):
        out.append(workload(f"M{m}", "performance", {"M": m}))
    out.append(
        targets(
            GEMM_H.replace("HGMMA/QGMMA", "QGMMA for fp8"),
            GEMM_B.replace("tcgen05.mma,", "tcgen05.mma kind::f8f6f4,"),
        )
    )
    return tid, "".join(out)


# ---------------------------------------------------------------- attention

ATT_LAYOUT = """\
Q, K, V are bf16 [B, H, S, D], row-major (D contiguous); queries and keys share the sequence
length S. The paper fixes B=4 and H=48; here B and H are var axes so that correctness workloads
can be small, and every performance workload uses B=4, H=48."""

CAUSAL = """\
Causal: key j is masked for query i when j > i (top-left aligned, S_q = S_k), so every query
attends to at least itself."""

FWD_DESC = """\
Multi-head attention forward that also returns the log-sum-exp of the scores: the paper's
{id}. With scale = 1/sqrt(D):
  O[b,h,i,:] = sum_j P[i,j] * V[b,h,j,:],  P[i,:] = softmax_j(scale * Q[b,h,i,:] . K[b,h,j,:])
  LSE[b,h,i] = log(sum_j exp(scale * Q[b,h,i,:] . K[b,h,j,:]))  (natural log, f32)

{layout}

{causal}

FLOPs: {flops} (Q K^T and P V, two FLOPs per multiply-add{halved}). Bytes: Q, K, V read once,
O and LSE written once.

Tolerances. O: allclose, rtol 2e-2 and atol 2e-2, and relative L2 error at most 8e-3. O is a
convex combination of rows of V (|O| <= max |V|), a flash-style kernel rounds P to bf16 before
the P V product (2^-9 relative per term) and O to bf16 at the end; 2e-2 leaves margin for both
and still fails a wrong mask, scale or row. But 2e-2 is about the size of |O| itself, so the
norm bound is what holds the precision: honest bf16 kernels (SIMT, Triton, wgmma; 1,244 checked
outputs on the H200) reach at most 2.3e-3, a kernel that rounds P to e4m3 for the P V product
about 2.4e-2 (simulated in fp64), so 8e-3 passes the first with 3.5x margin and fails the second
by 3x. LSE: allclose, rtol 1e-3 and atol 1e-3. LSE comes from fp32 scores with an fp32 running
max and sum, so a correct kernel is within about 1e-5; 1e-3 still fails a base-2 logarithm (off
by a factor ln 2), a missing softmax scale or a dropped max term."""

BWD_DESC = """\
Multi-head attention backward: the paper's {id}. For O = softmax(scale * Q K^T{mask}) V with
scale = 1/sqrt(D), given the upstream gradient dO, compute dQ, dK, dV:
  P = exp(scale * Q K^T - LSE)  (masked entries 0),  Delta[i] = sum_d dO[i,d] * O[i,d]
  dV = P^T dO,  dP = dO V^T,  dS = P * (dP - Delta),  dQ = scale * dS K,  dK = scale * dS^T Q

{layout} O and dO have the same shape; LSE is f32 [B, H, S]
(natural log of the row sums of exp(scale * Q K^T)).

O and LSE are not drawn: the harness computes them from the drawn Q, K, V with the fp32
reference forward (O then rounded to bf16), so they are consistent as in training. Q, K, V and dO
are drawn "spiky" as in the paper: N(0, 1) plus, with probability 0.001 per element, an extra
N(0, 10^2); these rare large values make an elementwise check fail even for cuDNN.

{causal}

FLOPs: {flops}, 2.5 times the forward's {fwd} (five S x S x D matmuls: the recomputed
Q K^T, dV, dP, dQ and dK{halved}). Bytes: Q, K, V, O, dO and LSE read once; dQ, dK, dV written
once.

= The smallest correctness workload has S=2, not 1: with a single key P = 1 and O = V, so
dP - Delta, and with it dQ and dK, are exactly zero in the reference, and the relative norm
of any kernel that rounds dO.V and dO.O differently is infinite (suite 1.0.0 had S=1).

Tolerance: relnorm, max 0.02 on each of dQ, dK, dV: ||got - ref||_2 / ||ref||_2, the measure
the paper found meaningful under spiky inputs."""


def att_axes(d):
    return (
        "axes:\n"
        '  B: {type: var, description: "batch"}\n'
        '  H: {type: var, description: "heads"}\n'
        '  S: {type: var, description: "sequence length, queries and keys"}\n'
        f'  D: {{type: const, value: {d}, description: "head dimension"}}\n'
    )


def att_workloads(perf, smallest_s=1):
    out = []
    for b, h, s in ((1, 1, smallest_s), (2, 3, 77), (1, 2, 200)):
        out.append(workload(f"B{b}_H{h}_S{s}", "correctness", {"B": b, "H": h, "S": s}))
    for s, u in sorted(perf):
        out.append(workload(f"B4_H48_S{s}", "performance", {"B": 4, "H": 48, "S": s}, u))
    return "".join(out)


def fwd_task(d, causal, perf):
    tid = f"mha_with_lse_d{d}" + ("_causal" if causal else "")
    flops = ("2" if causal else "4") + "*B*H*S*S*D"
    desc = FWD_DESC.format(
        id=tid,
        layout=ATT_LAYOUT,
        causal=CAUSAL if causal else "Not causal: every query attends to every key.",
        flops=flops,
        halved=(", halved for the causal mask as FlashAttention and cuDNN count it" if causal else ""),
    )
    kind = "(causal) " if causal else ""
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: attention_fwd\n")
    out.append(f"title: {q(f'Attention forward with LSE, bf16, D={d}' + (', causal' if causal else ''))}\n")
    out.append("description: " + block(desc))
    out.append(att_axes(d))
    out.append(
        "inputs:\n"
        '  Q: {dtype: bf16, shape: [B, H, S, D], description: "queries"}\n'
        '  K: {dtype: bf16, shape: [B, H, S, D], description: "keys"}\n'
        '  V: {dtype: bf16, shape: [B, H, S, D], description: "values"}\n'
        "outputs:\n"
        "  O:\n"
        "    dtype: bf16\n"
        "    shape: [B, H, S, D]\n"
        '    description: "attention output"\n'
        "    tolerance: {metric: allclose, rtol: 0.02, atol: 0.02, relnorm_max: 0.008}\n"
        "  LSE:\n"
        "    dtype: f32\n"
        "    shape: [B, H, S]\n"
        '    description: "natural-log log-sum-exp of the scaled scores of each query"\n'
        "    tolerance: {metric: allclose, rtol: 0.001, atol: 0.001}\n"
        f"op: {{kind: attention_fwd, causal: {'true' if causal else 'false'}}}\n"
        "reference: "
        + q(
            f"scale = 1/sqrt(D); S_ij = scale * Q[b,h,i,:] . K[b,h,j,:]"
            + ("; S_ij = -inf for j > i" if causal else "")
            + "; LSE[b,h,i] = log(sum_j exp(S_ij)); O[b,h,i,:] = sum_j exp(S_ij - LSE[b,h,i]) * V[b,h,j,:];"
            " all in fp32 from the bf16 inputs"
        )
        + "\n"
        "distribution: {kind: randn, std: 1.0}\n"
        f'baseline: {{library: cudnn, operation: "SDPA forward {kind}in bf16, with softmax stats (LSE)"}}\n'
        f"flops: {q(flops)}\n"
        'bytes: "8*B*H*S*D + 4*B*H*S"\n'
        "workloads:\n"
    )
    out.append(att_workloads(perf))
    out.append(targets(ATT_H, ATT_B))
    return tid, "".join(out)


def bwd_task(d, causal, perf):
    tid = f"mha_bwd_d{d}" + ("_causal" if causal else "")
    flops = ("5" if causal else "10") + "*B*H*S*S*D"
    desc = BWD_DESC.format(
        id=tid,
        mask=" + causal mask" if causal else "",
        layout=ATT_LAYOUT,
        causal=CAUSAL if causal else "Not causal: every query attends to every key.",
        flops=flops,
        fwd="4*B*H*S*S*D",
        halved=("; halved for the causal mask" if causal else ""),
    )
    kind = "(causal) " if causal else ""
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: attention_bwd\n")
    out.append(f"title: {q(f'Attention backward, bf16, D={d}' + (', causal' if causal else ''))}\n")
    out.append("description: " + block(desc))
    out.append(att_axes(d))
    rel = "    tolerance: {metric: relnorm, max: 0.02}\n"
    out.append(
        "inputs:\n"
        '  Q: {dtype: bf16, shape: [B, H, S, D], description: "queries"}\n'
        '  K: {dtype: bf16, shape: [B, H, S, D], description: "keys"}\n'
        '  V: {dtype: bf16, shape: [B, H, S, D], description: "values"}\n'
        '  O: {dtype: bf16, shape: [B, H, S, D], description: "forward output (computed by the harness)"}\n'
        '  dO: {dtype: bf16, shape: [B, H, S, D], description: "gradient of the loss with respect to O"}\n'
        '  LSE: {dtype: f32, shape: [B, H, S], description: "forward log-sum-exp, natural log (computed by the harness)"}\n'
        "outputs:\n"
        "  dQ:\n    dtype: bf16\n    shape: [B, H, S, D]\n" + rel +
        "  dK:\n    dtype: bf16\n    shape: [B, H, S, D]\n" + rel +
        "  dV:\n    dtype: bf16\n    shape: [B, H, S, D]\n" + rel +
        f"op: {{kind: attention_bwd, causal: {'true' if causal else 'false'}}}\n"
        "reference: "
        + q(
            "scale = 1/sqrt(D); P_ij = exp(scale * Q_i . K_j - LSE_i)"
            + (" for j <= i, 0 for j > i" if causal else "")
            + "; Delta_i = dO_i . O_i; dV_j = sum_i P_ij dO_i; dS_ij = P_ij * (dO_i . V_j - Delta_i);"
            " dQ_i = scale * sum_j dS_ij K_j; dK_j = scale * sum_i dS_ij Q_i; all in fp32 from the bf16 inputs"
        )
        + "\n"
        "distribution: {kind: spiky, std: 1.0, spike_std: 10.0, spike_prob: 0.001}\n"
        f'baseline: {{library: cudnn, operation: "SDPA backward {kind}in bf16"}}\n'
        f"flops: {q(flops)}\n"
        'bytes: "16*B*H*S*D + 4*B*H*S"\n'
        "workloads:\n"
    )
    out.append(att_workloads(perf, smallest_s=2))
    out.append(targets(ATT_H, ATT_B))
    return tid, "".join(out)


# ---------------------------------------------------------------- suite 1.2.0: fp8 attention, decode

FP8_ATT_DESC = """\
fp8 (e4m3) multi-head attention forward that also returns the log-sum-exp: the paper's code
release's {id} (zhang677/PTXBench, fp8-mha-with-lse-problems; upstream has D = 64 to 256 and
L = 512 to 16384, here D = 128 and L = 2048 and 4096). With the dequantized inputs
Qd = Q * descale_q, Kd = K * descale_k, Vd = V * descale_v and scale = 1/sqrt(D):
  LSE[b,h,i] = log(sum_j exp(scale * Qd[b,h,i,:] . Kd[b,h,j,:]))  (natural log, f32)
  O[b,h,i,:] = e4m3(sum_j exp(scale * Qd_i . Kd_j - LSE[b,h,i]) * Vd[b,h,j,:])

Q, K, V, O are e4m3 [B, H, L, D], row-major (D contiguous); queries and keys share L. The
descales are single f32 values in device memory (shape [1]). O is cast to e4m3 as it is, with no
output scale (upstream pins cuDNN's scale_o, scale_s and descale_s to 1). {causal}

Inputs, as upstream makes them (FA3's benchmark): each of Q, K, V is drawn from the spiky
distribution N(0,1) + N(0,100^2) * Bernoulli(0.001), rounded to bf16 and quantized per tensor:
X = e4m3(x * 448 / amax) (saturating), descale_x = amax / 448. The harness redraws them (and so
their descales) before every timed launch. The matrix products should take fp8 operands (wgmma
with e4m3 A and B on Hopper, SASS QGMMA); how P is rounded for the P V product is the kernel's
choice.

FLOPs: {flops} (two L x L x D matmuls, 2 FLOPs per term{halved}). Bytes: Q, K, V read and O
written at one byte per element, LSE written, three descales.

Tolerances. LSE: allclose, rtol 1e-2 and atol 1e-2, upstream's. Hopper's fp8 MMA accumulates
with reduced internal precision, and where two spikes meet a score reaches about 8000: on the
H200, Triton's e4m3 Q K^T broke a 1e-3 rule on about 0.5% of the rows even when promoting its
partial sums to fp32 every 32 elements (worst error 1.03-2.2x that bound). 1e-2 still fails a
base-2 logarithm (a factor ln 2), a missing scale or descale, or a dropped max term. O: allclose, rtol 0.125 and atol 0.01 on at least 99.5% of the elements,
and none NaN or infinite. Upstream's rule is rtol = atol = 1e-2 on 99.5% of the elements, but
against cuDNN's own fp8 output; here the reference is fp32 attention on the dequantized inputs,
and rounding O to e4m3 alone moves an element by up to 2^-4 (6.25%) of its value: rtol 0.125 is
one e4m3 ulp, leaving room for an fp8 P. A wrong descale, mask, scale or row is off by far more."""

DECODE_DESC = """\
Batched grouped-query attention decode over a paged KV cache: the paper's code release's
gqa_paged_decode_h32_kv8_d128_ps1 (FlashInfer-Trace, captured from Llama-3.1-8B serving). Each of
batch_size sequences has one new query token with 32 query heads; its keys and values sit in a
shared cache of num_pages pages of one token each, 8 KV heads of 128. Query head h reads KV head
h / 4. Sequence b owns the pages kv_indices[kv_indptr[b] .. kv_indptr[b+1]) (a CSR page table),
in that order. With scale = 1/sqrt(128) (a constant here; upstream passes sm_scale):
  s_j = scale * q[b,h,:] . k_cache[p_j, 0, h/4, :]  over the pages p_j of sequence b
  lse[b,h] = log(sum_j exp(s_j))  (natural log; upstream's lse is base 2: lse2 = lse / ln 2)
  output[b,h,:] = sum_j exp(s_j - lse[b,h]) * v_cache[p_j, 0, h/4, :]

q and output are bf16 [batch_size, 32, 128]; k_cache and v_cache are bf16 [num_pages, 1, 8, 128]
(token-major within a page); kv_indptr is int32 [batch_size + 1] and kv_indices int32
[num_kv_indices]. The harness draws a fresh page table per trial: distinct pages in random order,
with spare pages no sequence owns, so a kernel cannot assume consecutive pages. Every sequence
has at least one token, and the cache has twice as many pages as tokens, half of them owned
by no sequence (with few spare pages, reading pages in CSR order instead of through kv_indices
reads nearly the same keys in another order, and softmax does not notice). KV lengths are ragged (each workload lists them): a log-normal spread
(median about 600 tokens) at upstream's batch sizes 1, 16 and 64, the largest about 59k tokens in
all as upstream's; upstream's real traces are not public, so these lengths are drawn once
(tasks/generate.py, fixed seed) and kept.

Decode is memory-bound: each KV element is read once for 4 query heads (8 FLOPs per 4 bytes of
K and V), far below the H200's ridge point, so the speed of light is bytes / bandwidth. Hopper
target: the K and V rows arrive by TMA (cp.async.bulk.tensor, SASS UTMALDG), the copy engine that
keeps the bandwidth busy; no MMA is required, since a 4-row GQA group fills 1/16 of a 64-row
wgmma and CUDA cores are not the bottleneck. Blackwell: the same (TMA).

FLOPs: 4*num_kv_indices*32*128. Bytes: K and V rows of every token read once, q read, output and
lse written, the page table read.

Tolerances: output allclose, rtol 2e-2 and atol 2e-2 (a convex combination of V rows rounded to
bf16) and relative L2 error at most 8e-3 (honest kernels: 2.3e-3; as for attention forward, the
norm is what fails a lower-precision P V product); lse allclose, rtol 1e-3 and atol 1e-3 (fp32 scores; a base-2 lse fails by a factor ln 2).
Baseline: cuDNN SDPA with paged K/V and one query (cuDNN reads a dense page table; the harness
converts the CSR table once per input set, outside the timed launch)."""

TMA_ONLY = """targets:
  sm_90a:
    required:
      - %(tma)s
    notes: >-
      Hopper: %(h)s
  sm_100a:
    required:
      - %(tma)s
    notes: >-
      Blackwell: %(b)s
"""


def fp8_att_task(causal):
    d = 128
    tid = "fp8_mha_with_lse_d128" + ("_causal" if causal else "")
    flops = ("2" if causal else "4") + "*B*H*L*L*D"
    desc = FP8_ATT_DESC.format(
        id=tid,
        causal=("Causal: key j is masked for query i when j > i." if causal
                else "Not causal: every query attends to every key."),
        flops=flops,
        halved=", halved for the causal mask" if causal else "",
    )
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: attention_fwd_fp8\n")
    out.append(f"title: {q('fp8 e4m3 attention forward with LSE, D=128' + (', causal' if causal else ''))}\n")
    out.append("description: " + block(desc))
    scale = lambda n, x: (  # noqa: E731
        f"  {n}:\n    dtype: f32\n    shape: [1]\n"
        f'    description: "dequantization scale of {x} (amax/448, computed by the harness)"\n'
    )
    out.append(
        "axes:\n"
        '  B: {type: var, description: "batch"}\n'
        '  H: {type: var, description: "heads"}\n'
        '  L: {type: var, description: "sequence length, queries and keys"}\n'
        f'  D: {{type: const, value: {d}, description: "head dimension"}}\n'
        "inputs:\n"
        '  Q: {dtype: e4m3, shape: [B, H, L, D], description: "queries, quantized per tensor"}\n'
        '  K: {dtype: e4m3, shape: [B, H, L, D], description: "keys, quantized per tensor"}\n'
        '  V: {dtype: e4m3, shape: [B, H, L, D], description: "values, quantized per tensor"}\n'
        + scale("descale_q", "Q") + scale("descale_k", "K") + scale("descale_v", "V") +
        "outputs:\n"
        "  O:\n"
        "    dtype: e4m3\n"
        "    shape: [B, H, L, D]\n"
        '    description: "attention output, cast to e4m3 with no output scale"\n'
        "    tolerance: {metric: allclose, rtol: 0.125, atol: 0.01, min_match: 0.995}\n"
        "  LSE:\n"
        "    dtype: f32\n"
        "    shape: [B, H, L]\n"
        '    description: "natural-log log-sum-exp of the scaled scores of each query"\n'
        "    tolerance: {metric: allclose, rtol: 0.01, atol: 0.01}\n"
        f"op: {{kind: attention_fwd_fp8, causal: {'true' if causal else 'false'}}}\n"
        "reference: "
        + q("Qd, Kd, Vd = X * descale_x in fp32 from the e4m3 inputs; scale = 1/sqrt(D); S_ij = scale * Qd_i . Kd_j"
            + ("; S_ij = -inf for j > i" if causal else "")
            + "; LSE_i = log(sum_j exp(S_ij)); O_i = sum_j exp(S_ij - LSE_i) * Vd_j; all in fp32, O kept in fp32")
        + "\n"
        "distribution: {kind: spiky, std: 1.0, spike_std: 100.0, spike_prob: 0.001}\n"
        f'baseline: {{library: cudnn, operation: "fp8 SDPA forward {"(causal) " if causal else ""}with softmax stats (LSE), e4m3 in and out"}}\n'
        f"flops: {q(flops)}\n"
        'bytes: "4*B*H*L*D + 4*B*H*L + 12"\n'
        "workloads:\n"
    )
    for b, h, l in ((1, 1, 1), (2, 3, 77), (1, 2, 200)):
        out.append(workload(f"B{b}_H{h}_L{l}", "correctness", {"B": b, "H": h, "L": l}))
    uuid = {False: "8f46ada6-1617-49dc-b425-c6165e67e466", True: "504c5595-5bf7-4234-98a4-ee6254af8c8f"}[causal]
    out.append(workload("B4_H48_L2048", "performance", {"B": 4, "H": 48, "L": 2048}))
    out.append(workload("B4_H48_L4096", "performance", {"B": 4, "H": 48, "L": 4096}, uuid))
    h = ("both matrix products (Q K^T and P V) run on the warpgroup MMA unit with fp8 operands "
         "(wgmma.mma_async e4m3, SASS QGMMA) and the Q, K, V tiles arrive by TMA (cp.async.bulk.tensor, "
         "SASS UTMALDG). mma.sync (HMMA) alone does not count.")
    bl = ("the matrix products run on tcgen05.mma kind::f8f6f4 (SASS UTC*MMA) with accumulators in "
          "tensor memory (tcgen05.ld/st, SASS LDTM/STTM), tiles moved by TMA (SASS UTMALDG).")
    out.append(targets(h, bl))
    return tid, "".join(out)


def decode_lens(rng, batch, median):
    import math
    return [max(1, min(8192, int(round(median * math.exp(rng.gauss(0.0, 1.0)))))) for _ in range(batch)]


def decode_workload(name, kind, lens, uuid=None):
    tokens = sum(lens)
    # Twice the pages in use: reading a sequence's pages in CSR order instead of through
    # kv_indices then reads mostly pages of no sequence, even at batch 1.
    pages = 2 * tokens + 3
    axes = {"batch_size": len(lens), "num_pages": pages, "len_kv_indptr": len(lens) + 1,
            "num_kv_indices": tokens}
    ax = ", ".join(f"{k}: {v}" for k, v in axes.items())
    u = f", uuid: {q(uuid)}" if uuid else ""
    return f"  - {{name: {name}, kind: {kind}, axes: {{{ax}}}, kv_lens: [{', '.join(map(str, lens))}]{u}}}\n"


def decode_task():
    import random
    tid = "gqa_paged_decode_h32_kv8_d128_ps1"
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: attention_decode\n")
    out.append(f"title: {q('Paged GQA decode, bf16, 32 query heads, 8 KV heads, D=128, page size 1')}\n")
    out.append("description: " + block(DECODE_DESC))
    cache = "[num_pages, page_size, num_kv_heads, head_dim]"
    out.append(
        "axes:\n"
        '  batch_size: {type: var, description: "sequences, one query token each"}\n'
        '  num_qo_heads: {type: const, value: 32, description: "query heads"}\n'
        '  num_kv_heads: {type: const, value: 8, description: "KV heads (4 query heads each)"}\n'
        '  head_dim: {type: const, value: 128, description: "head dimension"}\n'
        '  num_pages: {type: var, description: "pages of the KV cache"}\n'
        '  page_size: {type: const, value: 1, description: "tokens per page"}\n'
        '  len_kv_indptr: {type: var, description: "batch_size + 1"}\n'
        '  num_kv_indices: {type: var, description: "KV tokens over the batch (= kv_indptr[batch_size])"}\n'
        "inputs:\n"
        '  q: {dtype: bf16, shape: [batch_size, num_qo_heads, head_dim], description: "the new query of each sequence"}\n'
        f'  k_cache: {{dtype: bf16, shape: {cache}, description: "keys by page"}}\n'
        f'  v_cache: {{dtype: bf16, shape: {cache}, description: "values by page"}}\n'
        '  kv_indptr: {dtype: i32, shape: [len_kv_indptr], description: "CSR row pointers into kv_indices (computed by the harness)"}\n'
        '  kv_indices: {dtype: i32, shape: [num_kv_indices], description: "the pages of each sequence, in order (drawn by the harness)"}\n'
        "outputs:\n"
        "  output:\n"
        "    dtype: bf16\n"
        "    shape: [batch_size, num_qo_heads, head_dim]\n"
        '    description: "attention output per query head"\n'
        "    tolerance: {metric: allclose, rtol: 0.02, atol: 0.02, relnorm_max: 0.008}\n"
        "  lse:\n"
        "    dtype: f32\n"
        "    shape: [batch_size, num_qo_heads]\n"
        '    description: "natural-log log-sum-exp of the scaled logits"\n'
        "    tolerance: {metric: allclose, rtol: 0.001, atol: 0.001}\n"
        "op: {kind: attention_decode, paged: true}\n"
        "reference: "
        + q("scale = 1/sqrt(128); for sequence b and query head h, over its pages p_j: s_j = scale * q[b,h,:] . k_cache[p_j,0,h/4,:];"
            " lse[b,h] = log(sum_j exp(s_j)); output[b,h,:] = sum_j exp(s_j - lse[b,h]) * v_cache[p_j,0,h/4,:]; all in fp32 from the bf16 inputs")
        + "\n"
        "distribution: {kind: randn, std: 1.0}\n"
        'baseline: {library: cudnn, operation: "SDPA forward in bf16 with paged K/V (page table) and one query, with softmax stats (LSE)"}\n'
        'flops: "4*num_kv_indices*num_qo_heads*head_dim"\n'
        'bytes: "4*num_kv_indices*num_kv_heads*head_dim + 4*batch_size*num_qo_heads*head_dim + 4*batch_size*num_qo_heads + 4*len_kv_indptr + 4*num_kv_indices"\n'
        "workloads:\n"
    )
    out.append(decode_workload("B1_T1", "correctness", [1]))
    out.append(decode_workload("B3_T212", "correctness", [5, 130, 77]))
    out.append(decode_workload("B7_T237", "correctness", [1, 33, 97, 2, 64, 29, 11]))
    rng = random.Random(20261201)
    for batch, median in ((1, 4096), (16, 600), (64, 600)):
        lens = decode_lens(rng, batch, median)
        out.append(decode_workload(f"B{batch}_T{sum(lens)}", "performance", lens))
    out.append(TMA_ONLY % {
        "tma": TMA,
        "h": ("the K and V rows of each page arrive by TMA (cp.async.bulk.tensor, SASS UTMALDG): decode is "
              "memory-bound, so the copy engine, not the MMA unit, is the Hopper instruction that matters."),
        "b": "the K and V rows arrive by TMA (cp.async.bulk.tensor, SASS UTMALDG).",
    })
    return tid, "".join(out)


# ---------------------------------------------------------------- GQA prefill (suite 1.4)
PREFILL_DESC = """\
Causal grouped-query attention prefill over {layout_short}: the paper's code release's {id}
(FlashInfer-Trace{origin}). A batch of sequences is packed along the token axes: sequence b owns
the query tokens qo_indptr[b] .. qo_indptr[b+1] of q and {keys_where}. Each sequence's queries are
the last of its keys (a chunk of new tokens after a cached prefix, or the whole prompt when the
lengths are equal), so with the causal mask aligned to the last key, query i of a sequence with
q_len queries and kv_len keys sees keys j <= i + kv_len - q_len. There are {h} query heads and {hkv}
KV heads of 128; query head h reads KV head h / {group}. With scale = 1/sqrt(128) (a constant
here; upstream passes sm_scale):
  s_j = scale * q[t,h,:] . K_b[j, h/{group}, :]  over the keys j the mask keeps
  lse[t,h] = log(sum_j exp(s_j))  (natural log; upstream's lse is base 2: lse2 = lse / ln 2)
  output[t,h,:] = sum_j exp(s_j - lse[t,h]) * V_b[j, h/{group}, :]

q and output are bf16 [total_q, {h}, 128]; {layout_long} qo_indptr and kv_indptr are int32
[len_indptr] (len_indptr = sequences + 1). The harness derives the indptrs from each workload's
qo_lens and kv_lens{paged_draw}. The correctness workloads hold sequences of length 1, lengths
that are not multiples of any tile (17, 65, 130), and queries after a cached prefix (1 query
after 89 keys); the performance workloads are {perf_words}. Headline: {headline} (the most FLOPs).

FLOPs: 4 * attended_pairs * {h} * 128, where attended_pairs is the number of (query, key) pairs
the mask keeps, summed over sequences (q_len * (kv_len - q_len) + q_len * (q_len + 1) / 2 per
sequence; the harness binds it from the workload's lengths). Bytes: q read and output written,
the K and V rows of every KV token read once, lse written, the indptrs{idx_bytes} read. Prefill is
compute-bound at the headline (a 128-row query tile reuses each K and V row 128 times), so the
Hopper target is the attention forward's: wgmma for both products, TMA for the tiles; {tma_words}

Tolerances: output allclose, rtol 2e-2 and atol 2e-2, and relative L2 error at most 8e-3 (as
attention forward's O: the norm is what fails a lower-precision P V product); lse allclose, rtol
1e-3 and atol 1e-3 (fp32 scores; a base-2 lse fails by a factor ln 2). Baseline: cuDNN SDPA
forward {baseline_words}, through the native graph API: queries, output and lse read and written
packed through ragged offsets, the padding and causal masks from each sequence's lengths, the
fastest of the heuristic's engine configurations (cuDNN 9.6 or newer).
"""


def lens_summing(rng, n, total, sigma=0.8):
    """n positive lengths, log-normally spread, summing to total exactly."""
    import math
    w = [math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]
    lens = [max(1, int(round(total * x / sum(w)))) for x in w]
    lens[lens.index(max(lens))] += total - sum(lens)
    return lens


def prefill_workload(name, kind, qo, kv, paged, uuid=None):
    tq, tk = sum(qo), sum(kv)
    if paged:
        pages = 2 * tk + 3 if kind == "correctness" or uuid is None else None
        axes = {"len_indptr": len(qo) + 1, "total_q": tq, "num_kv_indices": tk,
                "num_pages": pages}
    else:
        axes = {"len_indptr": len(qo) + 1, "total_q": tq, "total_kv": tk}
    return axes


def prefill_line(name, kind, axes, qo, kv, uuid=None):
    ax = ", ".join(f"{k}: {v}" for k, v in axes.items())
    u = f", uuid: {q(uuid)}" if uuid else ""
    return (f"  - {{name: {name}, kind: {kind}, axes: {{{ax}}}, kv_lens: [{', '.join(map(str, kv))}], "
            f"qo_lens: [{', '.join(map(str, qo))}]{u}}}\n")


# The paper's Qwen runs on prefill (experiments.csv): their workloads, by definition.
PREFILL_PAPER = {
    "gqa_paged_prefill_causal_h24_kv8_d128_ps1": ("2bcc7cdd-53db-4da4-844f-07ff4f3439b6", 1, 892, 43676),
    "gqa_ragged_prefill_causal_h32_kv4_d128": ("007ddabb-3c8c-48a1-a693-c0618d32243c", 33, 16294, None),
}


def prefill_task(paged, h, hkv):
    import random
    group = h // hkv
    tid = (f"gqa_paged_prefill_causal_h{h}_kv{hkv}_d128_ps1" if paged
           else f"gqa_ragged_prefill_causal_h{h}_kv{hkv}_d128")
    paper = PREFILL_PAPER.get(tid)
    rng = random.Random(20261215 + 1000 * paged + h + hkv)
    # Correctness: length 1, lengths off any tile, a query after a long prefix.
    correctness = [([1], [1]), ([1, 17, 130], [1, 40, 130]), ([64, 1, 3, 65, 17], [64, 90, 3, 70, 17])]
    perf = []
    if paper:
        uuid, batch, tokens, pages = paper
        lens = [tokens] if batch == 1 else lens_summing(random.Random(20261215), batch, tokens)
        perf.append((lens, lens, uuid, pages))
    if paged:
        # Chunked prefill: 16 sequences, a new chunk after a cached prefix each.
        qo = [max(1, int(x)) for x in lens_summing(rng, 16, 4096)]
        kv = [x + p for x, p in zip(qo, lens_summing(rng, 16, 16384))]
        perf.append((qo, kv, None, None))
        if not paper:
            perf.append(([892], [892], None, None))
    else:
        if not paper:
            lens = lens_summing(rng, 33, 16294)
            perf.append((lens, lens, None, None))
        qo = lens_summing(rng, 8, 2048)
        kv = [x + p for x, p in zip(qo, lens_summing(rng, 8, 8192))]
        perf.append((qo, kv, None, None))
    lines = []
    for qo, kv in correctness:
        ax = prefill_workload("", "correctness", qo, kv, paged)
        lines.append(("correctness", qo, kv, ax, None))
    for qo, kv, uuid, pages in perf:
        ax = prefill_workload("", "performance", qo, kv, paged, uuid)
        if paged and ax["num_pages"] is None:
            ax["num_pages"] = pages
        lines.append(("performance", qo, kv, ax, uuid))

    def pairs(qo, kv):
        return sum(x * (k - x) + x * (x + 1) // 2 for x, k in zip(qo, kv))
    head = max((x for x in lines if x[0] == "performance"), key=lambda x: pairs(x[1], x[2]))
    name = lambda qo, kv: f"B{len(qo)}_Q{sum(qo)}_K{sum(kv)}"  # noqa: E731
    perf_words = "; ".join(
        f"{name(qo, kv)}" + (" (the paper's workload of its Qwen run, uuid kept)" if uuid else
                             (" (chunked prefill: a new chunk after a cached prefix per sequence)"
                              if sum(qo) != sum(kv) else " (whole prompts, lengths drawn once with a fixed seed)"))
        for kind, qo, kv, ax, uuid in lines if kind == "performance")
    origin = (", a definition of the Qwen run the paper reports" if paper else "")
    cache = "[num_pages, page_size, num_kv_heads, head_dim]"
    desc = PREFILL_DESC.format(
        id=tid, origin=origin, h=h, hkv=hkv, group=group,
        layout_short="a paged KV cache (page size 1)" if paged else "ragged (packed, variable-length) sequences",
        keys_where=("the pages kv_indices[kv_indptr[b] .. kv_indptr[b+1]) of k_cache and v_cache, in that "
                    "order (a CSR page table; page size 1, so a page is one token)") if paged else
                   "the key and value rows kv_indptr[b] .. kv_indptr[b+1] of k and v",
        layout_long=(f"k_cache and v_cache are bf16 {cache} = [num_pages, 1, {hkv}, 128]; kv_indices is int32 "
                     "[num_kv_indices].") if paged else f"k and v are bf16 [total_kv, {hkv}, 128].",
        paged_draw=(", and draws a fresh page table per trial: distinct pages in random order among "
                    "spare pages (about twice as many pages as tokens, or the paper's cache size), so "
                    "a kernel cannot assume a sequence's pages are consecutive") if paged else "",
        perf_words=perf_words, headline=name(head[1], head[2]),
        idx_bytes=" and kv_indices" if paged else "",
        tma_words=("the K and V rows of a page-size-1 cache are gathered one token at a time, so a TMA "
                   "load per page row (or a 2D tiled map over the cache with one box row per token) "
                   "is the Hopper way to bring them in.") if paged else
                  "the packed K and V rows of a sequence are contiguous, so one tiled TMA map over "
                  "[total_kv * heads, 128] serves every sequence (mask the rows past its end).",
        baseline_words=("with paged K/V (cuDNN reads a dense page table; the harness converts the "
                        "CSR table once per input set, outside the timed launch)") if paged else
                       "with ragged offsets (THD layout: sequence offsets for Q, K, V, O and lse)",
    )
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: attention_prefill\n")
    title = (f"{'Paged' if paged else 'Ragged'} GQA prefill, causal, bf16, {h} query heads, {hkv} KV heads, D=128"
             + (", page size 1" if paged else ""))
    out.append(f"title: {q(title)}\n")
    out.append("description: " + block(desc))
    out.append(
        "axes:\n"
        f'  num_qo_heads: {{type: const, value: {h}, description: "query heads"}}\n'
        f'  num_kv_heads: {{type: const, value: {hkv}, description: "KV heads ({group} query heads each)"}}\n'
        '  head_dim: {type: const, value: 128, description: "head dimension"}\n'
        + ('  page_size: {type: const, value: 1, description: "tokens per page"}\n' if paged else "")
        + '  len_indptr: {type: var, description: "sequences + 1"}\n'
        '  total_q: {type: var, description: "query tokens over the batch (= qo_indptr[-1])"}\n'
        + ('  num_kv_indices: {type: var, description: "KV tokens over the batch (= kv_indptr[-1])"}\n'
           '  num_pages: {type: var, description: "pages of the KV cache"}\n' if paged else
           '  total_kv: {type: var, description: "KV tokens over the batch (= kv_indptr[-1])"}\n')
        + "inputs:\n"
        '  q: {dtype: bf16, shape: [total_q, num_qo_heads, head_dim], description: "queries, sequences packed in order"}\n'
        + (f'  k_cache: {{dtype: bf16, shape: {cache}, description: "keys by page"}}\n'
           f'  v_cache: {{dtype: bf16, shape: {cache}, description: "values by page"}}\n' if paged else
           '  k: {dtype: bf16, shape: [total_kv, num_kv_heads, head_dim], description: "keys, sequences packed in order"}\n'
           '  v: {dtype: bf16, shape: [total_kv, num_kv_heads, head_dim], description: "values, sequences packed in order"}\n')
        + '  qo_indptr: {dtype: i32, shape: [len_indptr], description: "row pointers of the sequences into q (computed by the harness)"}\n'
        + ('  kv_indptr: {dtype: i32, shape: [len_indptr], description: "CSR row pointers into kv_indices (computed by the harness)"}\n'
           '  kv_indices: {dtype: i32, shape: [num_kv_indices], description: "the pages of each sequence, in order (drawn by the harness)"}\n'
           if paged else
           '  kv_indptr: {dtype: i32, shape: [len_indptr], description: "row pointers of the sequences into k and v (computed by the harness)"}\n')
        + "outputs:\n"
        "  output:\n"
        "    dtype: bf16\n"
        "    shape: [total_q, num_qo_heads, head_dim]\n"
        '    description: "attention output per query token and head"\n'
        "    tolerance: {metric: allclose, rtol: 0.02, atol: 0.02, relnorm_max: 0.008}\n"
        "  lse:\n"
        "    dtype: f32\n"
        "    shape: [total_q, num_qo_heads]\n"
        '    description: "natural-log log-sum-exp of the scaled logits the mask keeps"\n'
        "    tolerance: {metric: allclose, rtol: 0.001, atol: 0.001}\n"
        f"op: {{kind: attention_prefill, paged: {'true' if paged else 'false'}, causal: true}}\n"
        "reference: "
        + q(f"scale = 1/sqrt(128); for query token t, the i-th of sequence b (q_len queries, kv_len keys), and head h:"
            f" s_j = scale * q[t,h,:] . K_b[j,h/{group},:] for j <= i + kv_len - q_len; lse[t,h] = log(sum_j exp(s_j));"
            f" output[t,h,:] = sum_j exp(s_j - lse[t,h]) * V_b[j,h/{group},:]; K_b[j] is "
            + ("k_cache[kv_indices[kv_indptr[b] + j], 0]" if paged else "k[kv_indptr[b] + j]")
            + ", V_b likewise; all in fp32 from the bf16 inputs")
        + "\n"
        "distribution: {kind: randn, std: 1.0}\n"
        + (f'baseline: {{library: cudnn, operation: "SDPA forward in bf16, causal, with paged K/V (page table) and ragged Q offsets, with softmax stats (LSE)"}}\n'
           if paged else
           f'baseline: {{library: cudnn, operation: "SDPA forward in bf16, causal, with ragged offsets (THD), with softmax stats (LSE)"}}\n')
        + 'flops: "4*attended_pairs*num_qo_heads*head_dim"\n'
        + ('bytes: "4*total_q*num_qo_heads*head_dim + 4*num_kv_indices*num_kv_heads*head_dim + 4*total_q*num_qo_heads + 8*len_indptr + 4*num_kv_indices"\n'
           if paged else
           'bytes: "4*total_q*num_qo_heads*head_dim + 4*total_kv*num_kv_heads*head_dim + 4*total_q*num_qo_heads + 8*len_indptr"\n')
        + "workloads:\n"
    )
    for kind, qo, kv, ax, uuid in lines:
        out.append(prefill_line(name(qo, kv), kind, ax, qo, kv, uuid))
    out.append(targets(
        "both matrix products (Q K^T and P V) run on the warpgroup MMA unit (wgmma.mma_async, SASS "
        "HGMMA) and the tiles arrive by TMA (cp.async.bulk.tensor, SASS UTMALDG). mma.sync (HMMA) "
        "alone does not count.",
        ATT_B,
    ))
    return tid, "".join(out)


PREFILL_TASKS = [(True, 32, 8), (True, 32, 4), (True, 24, 8), (False, 32, 8), (False, 32, 4)]


# ---------------------------------------------------------------- MLA decode (suite 1.4)
MLA_DESC = """\
Multi-head latent attention (DeepSeek-V2/V3's MLA) decode over a paged latent cache, with the
projection weights absorbed into the query (FlashInfer's mla_paged_decode): the paper's code
release's mla_paged_decode_h16_ckv512_kpe64_ps1 (FlashInfer-Trace; 16 query heads, one GPU's
share of DeepSeek-V3's 128 under 8-way tensor parallelism). Each of batch_size sequences has one
new query token; every query head reads the same single latent KV head. A cached token is a
latent row ckv of 512 (the compressed keys and values) and a rotary key row kpe of 64; a query
head comes as q_nope (512, already multiplied by the absorbed key up-projection) and q_pe (64).
Sequence b owns the pages kv_indices[kv_indptr[b] .. kv_indptr[b+1]) (a CSR page table; page
size 1, so a page is one token), in that order. With sm_scale = 1/sqrt(128 + 64) = 1/sqrt(192)
(a constant here: DeepSeek's query-key head dim before absorption, qk_nope_head_dim 128 plus the
rotary 64, not the 576 a kernel multiplies over; upstream passes sm_scale):
  s_j = sm_scale * (q_nope[b,h,:] . ckv_cache[p_j,0,:] + q_pe[b,h,:] . kpe_cache[p_j,0,:])
  lse[b,h] = log(sum_j exp(s_j))  (natural log; upstream's lse is base 2: lse2 = lse / ln 2)
  output[b,h,:] = sum_j exp(s_j - lse[b,h]) * ckv_cache[p_j,0,:]  (the values are the latent rows)

q_nope and output are bf16 [batch_size, 16, 512], q_pe bf16 [batch_size, 16, 64]; ckv_cache is
bf16 [num_pages, 1, 512] and kpe_cache bf16 [num_pages, 1, 64]; kv_indptr is int32 [len_indptr]
(batch_size + 1) and kv_indices int32 [num_kv_indices]. The harness draws a fresh page table per
trial: distinct pages in random order, with as many spare pages (owned by no sequence) as used
ones, so a kernel cannot assume a sequence's pages are consecutive. Every sequence has at least
one token.

Workloads: the release names one workload of this definition (uuid {uuid}) but ships none of
its sizes, and upstream's traces are not public, so the workloads here are written by hand in
tasks/generate.py. Correctness: a single token, lengths that are not multiples of any tile (17,
65, 130), and six sequences of different lengths from 1 to 97. Performance: {perf_words}, KV
lengths drawn once from a log-normal spread with a fixed seed and kept. Headline: {headline}
(the most bytes).

MLA decode is memory-bound even though the 16 heads share every cached row: per KV token 1152
bytes are read for 16 * 2 * (576 + 512) FLOPs, about 30 FLOPs per byte, far below Hopper's
ridge point. The 16 heads of a sequence are the rows of a matrix product against the latent
rows, so the Hopper target is FlashMLA's: both products (Q [q_nope | q_pe] against [ckv | kpe]
and P against ckv) on the warpgroup MMA unit, the ckv and kpe rows brought in by TMA (one load
per page row, or a tiled map over the cache with a box row per token).

FLOPs: 2 * num_kv_indices * 16 * (2 * 512 + 64) (per KV token and head a logit of 512 + 64
terms and an output row of 512, 2 FLOPs per term). Bytes: the ckv and kpe rows of every KV token
read once, q_nope and q_pe read, output and lse written, the page table read.

Tolerances: output allclose, rtol 2e-2 and atol 2e-2 (a convex combination of bf16 latent rows
rounded to bf16: a few units at most under these inputs, and with logits of standard deviation
about sqrt(3) a few hundredths at the performance lengths, where the elementwise rule is loose)
and relative L2 error at most 8e-3 (as paged decode, where honest bf16 kernels measured at most
2.3e-3; the norm is what fails a lower-precision P V product when the elements are small); lse allclose, rtol 1e-3 and atol 1e-3 (fp32 scores; a base-2 lse fails by
a factor ln 2, the scale 1/sqrt(576) by a factor sqrt(3) on the logits). Baseline: no library
has MLA decode. A baseline composed from cuBLASLt (the two products, batched over sequences)
and harness kernels (the softmax), recorded as library "composed" and never pooled with the
speedups over a library's own kernel, is not built in this suite version: records of this task
carry no baseline time and no speedup until it is.
"""


def mla_workload(name, kind, lens):
    tokens = sum(lens)
    # As paged decode: twice the pages in use, so that reading pages in CSR order instead of
    # through kv_indices reads mostly pages of no sequence.
    axes = {"batch_size": len(lens), "num_pages": 2 * tokens + 3, "len_indptr": len(lens) + 1,
            "num_kv_indices": tokens}
    ax = ", ".join(f"{k}: {v}" for k, v in axes.items())
    return f"  - {{name: {name}, kind: {kind}, axes: {{{ax}}}, kv_lens: [{', '.join(map(str, lens))}]}}\n"


MLA_UUID = "939f995a-1ab2-4d19-8d94-50f07e73542d"


def mla_task():
    import math
    import random
    tid = "mla_paged_decode_h16_ckv512_kpe64_ps1"
    h, dc, dp = 16, 512, 64
    correctness = [[1], [17, 65, 130], [1, 64, 2, 97, 33, 40]]
    rng = random.Random(20261220)
    perf = []
    for batch, median in ((1, 16384), (64, 2048), (128, 4096)):
        lens = [max(1, min(32768, int(round(median * math.exp(rng.gauss(0.0, 0.8))))))
                for _ in range(batch)] if batch > 1 else [median]
        perf.append(lens)
    name = lambda lens: f"B{len(lens)}_T{sum(lens)}"  # noqa: E731
    head = max(perf, key=sum)
    perf_words = ("; ".join(name(x) for x in perf)
                  + " (one long sequence, where the work must be split along the KV axis to fill "
                    "the GPU; then batches of 64 and 128 with a median length of 2048 and 4096)")
    desc = MLA_DESC.format(uuid=MLA_UUID, perf_words=perf_words, headline=name(head))
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: attention_mla_decode\n")
    out.append(f"title: {q(f'Paged MLA decode, bf16, {h} query heads, latent {dc} + rotary {dp}, page size 1')}\n")
    out.append("description: " + block(desc))
    out.append(
        "axes:\n"
        '  batch_size: {type: var, description: "sequences, one query token each"}\n'
        f'  num_qo_heads: {{type: const, value: {h}, description: "query heads (all read the one latent KV head)"}}\n'
        f'  head_dim_ckv: {{type: const, value: {dc}, description: "latent (compressed KV) dimension"}}\n'
        f'  head_dim_kpe: {{type: const, value: {dp}, description: "rotary key dimension"}}\n'
        '  page_size: {type: const, value: 1, description: "tokens per page"}\n'
        '  num_pages: {type: var, description: "pages of the latent cache"}\n'
        '  len_indptr: {type: var, description: "batch_size + 1"}\n'
        '  num_kv_indices: {type: var, description: "KV tokens over the batch (= kv_indptr[batch_size])"}\n'
        "inputs:\n"
        '  q_nope: {dtype: bf16, shape: [batch_size, num_qo_heads, head_dim_ckv], description: "the new query of each sequence, latent part (key up-projection absorbed)"}\n'
        '  q_pe: {dtype: bf16, shape: [batch_size, num_qo_heads, head_dim_kpe], description: "the new query of each sequence, rotary part"}\n'
        '  ckv_cache: {dtype: bf16, shape: [num_pages, page_size, head_dim_ckv], description: "latent rows by page (keys and values)"}\n'
        '  kpe_cache: {dtype: bf16, shape: [num_pages, page_size, head_dim_kpe], description: "rotary key rows by page"}\n'
        '  kv_indptr: {dtype: i32, shape: [len_indptr], description: "CSR row pointers into kv_indices (computed by the harness)"}\n'
        '  kv_indices: {dtype: i32, shape: [num_kv_indices], description: "the pages of each sequence, in order (drawn by the harness)"}\n'
        "outputs:\n"
        "  output:\n"
        "    dtype: bf16\n"
        "    shape: [batch_size, num_qo_heads, head_dim_ckv]\n"
        '    description: "attention output per query head, in the latent space"\n'
        "    tolerance: {metric: allclose, rtol: 0.02, atol: 0.02, relnorm_max: 0.008}\n"
        "  lse:\n"
        "    dtype: f32\n"
        "    shape: [batch_size, num_qo_heads]\n"
        '    description: "natural-log log-sum-exp of the scaled logits"\n'
        "    tolerance: {metric: allclose, rtol: 0.001, atol: 0.001}\n"
        "op: {kind: attention_mla_decode, paged: true}\n"
        "reference: "
        + q("sm_scale = 1/sqrt(192); for sequence b and query head h, over its pages p_j:"
            " s_j = sm_scale * (q_nope[b,h,:] . ckv_cache[p_j,0,:] + q_pe[b,h,:] . kpe_cache[p_j,0,:]);"
            " lse[b,h] = log(sum_j exp(s_j)); output[b,h,:] = sum_j exp(s_j - lse[b,h]) * ckv_cache[p_j,0,:];"
            " all in fp32 from the bf16 inputs")
        + "\n"
        "distribution: {kind: randn, std: 1.0}\n"
        'baseline: {library: composed, operation: "cuBLASLt for the two products (batched over sequences) with harness kernels for the softmax; not built yet"}\n'
        'flops: "2*num_kv_indices*num_qo_heads*(2*head_dim_ckv+head_dim_kpe)"\n'
        'bytes: "2*num_kv_indices*(head_dim_ckv+head_dim_kpe) + 2*batch_size*num_qo_heads*(2*head_dim_ckv+head_dim_kpe) + 4*batch_size*num_qo_heads + 4*len_indptr + 4*num_kv_indices"\n'
        "workloads:\n"
    )
    for lens in correctness:
        out.append(mla_workload(name(lens), "correctness", lens))
    for lens in perf:
        out.append(mla_workload(name(lens), "performance", lens))
    out.append(targets(
        "both products (the logits of the 16 heads against the [ckv | kpe] rows, and P against "
        "the ckv rows) run on the warpgroup MMA unit (wgmma.mma_async, SASS HGMMA), the heads of a "
        "sequence as the rows of the tile, and the cached rows arrive by TMA (cp.async.bulk.tensor, "
        "SASS UTMALDG). mma.sync (HMMA) alone does not count.",
        ATT_B,
    ))
    return tid, "".join(out)


# ---------------------------------------------------------------- GDN prefill (suite 1.4)
GDN_DESC = """\
Gated delta net (GDN) prefill, the linear-attention layers of Qwen3-Next, with a k-last state:
the paper's code release's {id} (FlashInfer-Trace, op_type gdn; {tp}). A batch of num_seqs
sequences is packed along the token axis: sequence n owns the tokens cu_seqlens[n] ..
cu_seqlens[n+1] of q, k, v, a and b. There are {hqk} query/key heads and {hv} value heads of 128
(grouped value attention: value head h reads query and key head h / {group}, the release's
repeat_interleave). Each (sequence, value head) carries a state S of 128 x 128 (d_k x d_v) that
starts as the given state (state[n,h,v,k] = S[k,v]: k-last) and runs over the sequence's tokens in
order; for token t, with scale = 1/sqrt(128) (a constant here; upstream passes scale, 0 meaning
this default):
  g = exp(-exp(A_log[h]) * softplus(a[t,h] + dt_bias[h]))  (the decay gate, in (0, 1])
  beta = sigmoid(b[t,h])  (the update strength)
  S = g * S
  S = S + k_t (beta * (v_t - S^T k_t))^T  (the delta rule: k_t's value moves toward v_t)
  output[t,h,:] = scale * S^T q_t  (after the update)
and new_state[n,h,v,k] = S[k,v] after the sequence's last token. The release writes the update as
old = g*S, old_v = k . old, new_v = beta*v + (1-beta)*old_v, S = old - k^T old_v + k^T new_v: the
same thing. softplus(x) = log(1 + exp(x)) (x above 20 taken as is, as PyTorch does).

q and k are bf16 [total_seq_len, {hqk}, 128], v and output bf16 [total_seq_len, {hv}, 128]; a and
b bf16 [total_seq_len, {hv}]; A_log and dt_bias f32 [{hv}]; state and new_state f32 [num_seqs,
{hv}, 128, 128]; cu_seqlens int32 [len_cu_seqlens] (num_seqs + 1; upstream's is int64, the
harness's indptrs are int32), derived by the harness from each workload's seq_lens. What the
release has and what was written here: the definition (tensor names, shapes, dtypes, the gate
and beta from the raw parameters, the k-last layout, the optional initial state, which every
workload here passes) and the performance workloads' uuids, token totals and sequence counts
(its gdn_problems.csv and selection notes) are the release's; its workloads' tensors and
per-sequence lengths live in safetensors blobs it does not ship, so the lengths of each sequence
are drawn once with a fixed seed for the release's totals, and the correctness workloads and the
input distributions are written by hand.

Inputs: Qwen3-Next L2-normalises q and k per head before this kernel (the release's reference
takes them as given and does not), and the delta rule is stable only for keys of norm about 1 or
less (S^T k moves by beta * |k|^2 of the error), so q and k are drawn N(0, 1/128): rows of about
unit norm. v, a, b and the initial state are N(0, 1); A_log is U(-3, 1) and dt_bias U(-2, 0), so
the gates range from forgetting most of the state in a token to keeping it for about a hundred.
The correctness workloads hold a single token, lengths that are not multiples of a 64-token chunk
(17, 65, 130, 257) and six sequences of different lengths from 1 to 97; the performance workloads
are the release's {perf_words}. Headline: {headline} (the most FLOPs).

FLOPs: 6 * total_seq_len * {hv} * 128 * 128, the recurrence's three products of the state with a
vector per token and value head (S^T k, the rank-1 update, S^T q; the decay's scaling not
counted); a chunked kernel does more work than this and is credited with this. Bytes: q, k, v, a
and b read, output written, A_log and dt_bias read, the state read and new_state written once,
cu_seqlens read. The state traffic dominates at the headline ({state_mb} MB of {total_mb} MB),
and only num_seqs * {hv} states exist, so a kernel that walks the tokens one at a time cannot fill
the GPU on the long, few-sequence workloads: the chunked form (chunks of 64 tokens; within a chunk
the WY representation of the products of the (I - beta k k^T) factors, then the chunk's outputs
and the state's update as matrix products) is the way to the tensor cores.

Tolerances: output allclose, rtol 2e-2 and atol 2e-2 (the output's elements are of the order of 0.1, so
the elementwise rule is loose), and relative L2 error at most 1e-2; new_state relative L2 error at most
1e-2 (its elements grow with the sequence and an elementwise rule has no fixed scale).
flash-linear-attention's tests bound its chunked kernels by the same measure (an RMS error ratio)
against an fp32 recurrence; an honest chunked kernel rounds q, k, v and the WY factors to bf16 for
the products but keeps the state in fp32. The bounds are not yet measured on a GPU against such a
kernel. Baseline: no library has the gated delta rule
(FlashInfer's and flash-linear-attention's kernels are Python packages' kernels, not a library the
harness links). A baseline composed from cuBLASLt (the chunked form's products) and harness
kernels, recorded as library "composed" and never pooled with the speedups over a library's own
kernel, is future work: records of this task carry no baseline time and no speedup until it is.
"""

# The release's GDN prefill workloads (gdn_problems.csv, uuids and token totals; the sequence
# counts from its SELECTION_CRITERIA.md): (uuid, total_seq_len, num_seqs).
GDN_PAPER = {
    (4, 8): [("77daf91d-0660-4c4b-8c32-336a69281cd9", 6, 1),
             ("043e74e4-0297-4988-808a-0090be48a90e", 32, 2),
             ("5a91aa02-8cee-49f9-aa2b-145d6e254ee4", 401, 4),
             ("43bf9699-adb3-4161-b741-8ff07b553336", 959, 4),
             ("109addb1-15e0-4ff2-9b39-df3e79746af0", 3271, 2),
             ("9a5d694b-7d4c-4ee6-8315-a13053ab6f92", 8192, 57)],
    (8, 16): [("d209184c-bd70-4e57-a0cc-93e696a87cfd", 6, 1),
              ("808ca40c-ed22-41f3-bd00-8a9e1e7866a0", 32, 2),
              ("089398ce-4d61-4ab5-8c50-4228e6dc1322", 401, 4),
              ("1a9da4c9-224e-4bfa-b221-fe1939ca5527", 959, 4),
              ("cdeb90ac-a29e-40a9-b7ea-8f18381b81ce", 3271, 2),
              ("0ffac158-6956-44a6-861d-ed7133b6fe47", 8192, 51)],
}
GDN_TASKS = [(4, 8), (8, 16)]


def gdn_line(kind, lens, uuid=None):
    n, t = len(lens), sum(lens)
    u = f", uuid: {q(uuid)}" if uuid else ""
    return (f"  - {{name: B{n}_T{t}, kind: {kind}, axes: {{total_seq_len: {t}, num_seqs: {n}, "
            f"len_cu_seqlens: {n + 1}}}, seq_lens: [{', '.join(map(str, lens))}]{u}}}\n")


def gdn_task(hqk, hv):
    import random
    tid = f"gdn_prefill_qk{hqk}_v{hv}_d128_k_last"
    d = 128
    correctness = [[1], [1, 17, 65], [1, 64, 2, 97, 33, 40], [130, 257]]
    rng = random.Random(20261225 + hv)
    perf = []
    for uuid, total, n in GDN_PAPER[(hqk, hv)]:
        lens = [total] if n == 1 else lens_summing(rng, n, total)
        perf.append((lens, uuid))
    name = lambda lens: f"B{len(lens)}_T{sum(lens)}"  # noqa: E731
    head = max(perf, key=lambda x: sum(x[0]))[0]
    perf_words = ", ".join(name(x) for x, _ in perf)
    perf_words += " (uuids kept; sequence lengths drawn once for each total)"
    state = 8 * len(head) * hv * d * d
    total = state + 4 * sum(head) * hqk * d + 4 * sum(head) * hv * d + 4 * sum(head) * hv + 8 * hv + 4 * (len(head) + 1)
    tp = {4: "4 query/key and 8 value heads, one GPU's share of Qwen3-Next's 16 and 32 under 4-way tensor parallelism",
          8: "8 query/key and 16 value heads, one GPU's share of Qwen3-Next's 16 and 32 under 2-way tensor parallelism"}[hqk]
    desc = GDN_DESC.format(id=tid, tp=tp, hqk=hqk, hv=hv, group=hv // hqk, perf_words=perf_words,
                           headline=name(head), state_mb=round(state / 1e6), total_mb=round(total / 1e6))
    out = [HEADER]
    out.append(f"schema: 1\nid: {tid}\nfamily: gdn_prefill\n")
    out.append(f"title: {q(f'GDN prefill (gated delta rule), bf16, {hqk} query/key heads, {hv} value heads, D=128, k-last state')}\n")
    out.append("description: " + block(desc))
    qk_std = 0.08838834764831845
    out.append(
        "axes:\n"
        '  total_seq_len: {type: var, description: "tokens over the batch (= cu_seqlens[num_seqs])"}\n'
        '  num_seqs: {type: var, description: "sequences"}\n'
        f'  num_qk_heads: {{type: const, value: {hqk}, description: "query and key heads (the release\'s num_q_heads = num_k_heads)"}}\n'
        f'  num_v_heads: {{type: const, value: {hv}, description: "value heads ({hv // hqk} per query/key head), one state each"}}\n'
        f'  head_size: {{type: const, value: {d}, description: "head dimension of q, k and v (d_k = d_v)"}}\n'
        '  len_cu_seqlens: {type: var, description: "num_seqs + 1"}\n'
        "inputs:\n"
        "  q:\n"
        "    dtype: bf16\n"
        "    shape: [total_seq_len, num_qk_heads, head_size]\n"
        '    description: "queries, sequences packed in order (rows of about unit norm)"\n'
        f"    distribution: {{kind: randn, std: {qk_std}}}\n"
        "  k:\n"
        "    dtype: bf16\n"
        "    shape: [total_seq_len, num_qk_heads, head_size]\n"
        '    description: "keys, sequences packed in order (rows of about unit norm)"\n'
        f"    distribution: {{kind: randn, std: {qk_std}}}\n"
        '  v: {dtype: bf16, shape: [total_seq_len, num_v_heads, head_size], description: "values, sequences packed in order"}\n'
        '  state: {dtype: f32, shape: [num_seqs, num_v_heads, head_size, head_size], description: "initial state per sequence and value head, k-last: state[n,h,v,k] = S[k,v]"}\n'
        "  A_log:\n"
        "    dtype: f32\n"
        "    shape: [num_v_heads]\n"
        '    description: "log decay rate per value head"\n'
        "    distribution: {kind: uniform, lo: -3.0, hi: 1.0}\n"
        '  a: {dtype: bf16, shape: [total_seq_len, num_v_heads], description: "decay input per token and value head"}\n'
        "  dt_bias:\n"
        "    dtype: f32\n"
        "    shape: [num_v_heads]\n"
        '    description: "decay bias per value head, added to a before the softplus"\n'
        "    distribution: {kind: uniform, lo: -2.0, hi: 0.0}\n"
        '  b: {dtype: bf16, shape: [total_seq_len, num_v_heads], description: "update gate input per token and value head (beta = sigmoid(b))"}\n'
        '  cu_seqlens: {dtype: i32, shape: [len_cu_seqlens], description: "row pointers of the sequences into the token axis (computed by the harness)"}\n'
        "outputs:\n"
        "  output:\n"
        "    dtype: bf16\n"
        "    shape: [total_seq_len, num_v_heads, head_size]\n"
        '    description: "scale * S^T q per token and value head, with the state after that token"\n'
        "    tolerance: {metric: allclose, rtol: 0.02, atol: 0.02, relnorm_max: 0.01}\n"
        "  new_state:\n"
        "    dtype: f32\n"
        "    shape: [num_seqs, num_v_heads, head_size, head_size]\n"
        '    description: "the state after each sequence\'s last token, k-last"\n'
        "    tolerance: {metric: relnorm, max: 0.01}\n"
        "op: {kind: gdn_prefill}\n"
        "reference: "
        + q(f"scale = 1/sqrt(128); for sequence n and value head h (query/key head h/{hv // hqk}), S[k,v] = state[n,h,v,k], then"
            " for each token t of the sequence in order: g = exp(-exp(A_log[h]) * softplus(a[t,h] + dt_bias[h])),"
            " beta = sigmoid(b[t,h]), S = g * S, S = S + k_t (beta * (v_t - S^T k_t))^T,"
            " output[t,h,:] = scale * S^T q_t; new_state[n,h,v,k] = S[k,v] after the last token;"
            " all in fp32 from the bf16 inputs")
        + "\n"
        "distribution: {kind: randn, std: 1.0}\n"
        'baseline: {library: composed, operation: "chunked gated delta rule from cuBLASLt products and harness kernels; not built yet"}\n'
        'flops: "6*total_seq_len*num_v_heads*head_size*head_size"\n'
        'bytes: "4*total_seq_len*num_qk_heads*head_size + 4*total_seq_len*num_v_heads*head_size + 4*total_seq_len*num_v_heads + 8*num_v_heads + 8*num_seqs*num_v_heads*head_size*head_size + 4*len_cu_seqlens"\n'
        "workloads:\n"
    )
    for lens in correctness:
        out.append(gdn_line("correctness", lens))
    for lens, uuid in perf:
        out.append(gdn_line("performance", lens, uuid))
    out.append(targets(
        "the chunked form's products (within a chunk K K^T and Q K^T, the WY factors against V and "
        "the state, the chunk's outputs Q S, and the state's update K^T U) run on the warpgroup MMA "
        "unit (wgmma.mma_async, SASS HGMMA) and the q, k and v tiles of a chunk arrive by TMA "
        "(cp.async.bulk.tensor, SASS UTMALDG). mma.sync (HMMA) alone does not count; the gates, "
        "beta and the triangular solve of the WY factors stay on the CUDA cores.",
        "the chunked form's products run on tcgen05.mma (SASS UTC*MMA) with accumulators (the "
        "state among them) in tensor memory (tcgen05.ld/st, SASS LDTM/STTM), the q, k and v tiles "
        "moved by TMA (SASS UTMALDG).",
    ))
    return tid, "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--upstream", type=Path, help="folder with the paper's *_problems.csv")
    src.add_argument("--store", type=Path, help="the artifact store holding the paper's import")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 naming every task file that differs from what this script makes")
    args = ap.parse_args()
    if args.store:
        found = store_files(args.store)
        upstream = lambda name: found[name]  # noqa: E731
    else:
        upstream = lambda name: args.upstream / name  # noqa: E731

    files = {}
    gemm = defaultdict(list)
    for r in read_csv(upstream("gemm_problems.csv")):
        gemm[r["definition_name"]].append(r)
    for name, rows in gemm.items():
        _, n, k = name.split("_")
        tid, text = gemm_task(int(n[1:]), int(k[1:]), rows)
        files[f"gemm/{tid}.yaml"] = text
    tid, text = fp8_task()
    files[f"gemm/{tid}.yaml"] = text

    fwd = defaultdict(list)
    for r in read_csv(upstream("mha_with_lse_problems.csv")):
        fwd[r["definition_name"]].append((int(r["seq_len"]), r["workload_uuid"]))
    for d in (64, 96, 128, 256):
        for causal in (False, True):
            name = f"mha_with_lse_d{d}" + ("_causal" if causal else "")
            perf = list(fwd[name])
            for s in (2048, 4096):  # both sizes for every definition, uuid where the paper has one
                if s not in [x for x, _ in perf]:
                    perf.append((s, None))
            tid, text = fwd_task(d, causal, perf)
            files[f"attention_fwd/{tid}.yaml"] = text

    bwd = defaultdict(list)
    for r in read_csv(upstream("mha_bwd_problems.csv")):
        bwd[r["definition_name"]].append((int(r["seq_len"]), r["workload_uuid"]))
    for d in (64, 96, 128):
        for causal in (False, True):
            name = f"mha_bwd_d{d}" + ("_causal" if causal else "")
            tid, text = bwd_task(d, causal, bwd[name])
            files[f"attention_bwd/{tid}.yaml"] = text

    for causal in (False, True):
        tid, text = fp8_att_task(causal)
        files[f"attention_fwd_fp8/{tid}.yaml"] = text
    tid, text = decode_task()
    files[f"attention_decode/{tid}.yaml"] = text
    for paged, h, hkv in PREFILL_TASKS:
        tid, text = prefill_task(paged, h, hkv)
        files[f"attention_prefill/{tid}.yaml"] = text
    tid, text = mla_task()
    files[f"attention_mla_decode/{tid}.yaml"] = text
    for hqk, hv in GDN_TASKS:
        tid, text = gdn_task(hqk, hv)
        files[f"gdn_prefill/{tid}.yaml"] = text

    if args.check:
        stale = [rel for rel, text in sorted(files.items())
                 if not (HERE / rel).is_file() or (HERE / rel).read_text() != text]
        extra = sorted(str(p.relative_to(HERE)) for fam in ("gemm", "attention_fwd", "attention_bwd",
                                                          "attention_fwd_fp8", "attention_decode",
                                                          "attention_prefill", "attention_mla_decode",
                                                          "gdn_prefill")
                       for p in (HERE / fam).glob("*.yaml") if str(p.relative_to(HERE)) not in files)
        for rel in stale:
            print(f"differs from what tasks/generate.py makes: tasks/{rel}")
        for rel in extra:
            print(f"not made by tasks/generate.py: tasks/{rel}")
        if stale or extra:
            raise SystemExit(1)
        print(f"ok: tasks/generate.py reproduces all {len(files)} task files byte for byte")
        return
    for rel, text in sorted(files.items()):
        path = HERE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"wrote {len(files)} task files under {HERE}")


if __name__ == "__main__":
    main()
