#!/usr/bin/env bash
# Issue 62's reference cross-check and issue 63's second reference kernels, on one GPU machine in
# one call (run from the repository root):
#
#   pipeline/scripts/device-ceilings.sh BIN OUT [PARTS] [ROUNDS]
#
# BIN: a ptxbench binary. PARTS (comma-separated, default all):
#   crosscheck  pipeline/scripts/crosscheck_references.py: every family's GPU reference on small
#               shapes against PyTorch in float64 (the new tasks' page tables, ragged sequences,
#               MLA and the gated delta rule walked in plain loops on the CPU)
#   ab          pipeline/scripts/kernel_ab.py, ROUNDS rounds (default 2): v1 against v2 on the
#               headline and worst workloads, each timed side by side with the library
#               (attention forward per task; fp8 GEMM; the TMA paged decode, which has no v1;
#               bf16 GEMM v1, stream-K, 2-CTA clusters)
#   run         `ptxbench run tasks/runs/reference-v2-sm90a.yaml` into artifacts/ (every
#               workload, expected verdicts checked), packed as OUT/artifacts.tgz
# Logs go to OUT (a device call brings back few files: the cross-check's dumps are packed).
set -uo pipefail
BIN=$1
OUT=$2
PARTS=${3:-crosscheck,ab,run}
ROUNDS=${4:-2}
R=tasks/reference
mkdir -p "$OUT"
has() { [[ ",$PARTS," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1

if has crosscheck; then
  timeout 200 python3 pipeline/scripts/crosscheck_references.py "$BIN" "$OUT/crosscheck" \
    > "$OUT/crosscheck.txt" 2>&1
  echo "exit $?" >> "$OUT/crosscheck.txt"
  tar czf "$OUT/crosscheck.tgz" -C "$OUT" crosscheck && rm -rf "$OUT/crosscheck"
fi

if has ab; then
  ab() { timeout "$1" python3 pipeline/scripts/kernel_ab.py "$BIN" "$ROUNDS" "${@:2}"; }
  for p in d128 d128.causal d64 d64.causal; do
    ab 150 v1=$R/wgmma_attn_fwd/kernel.ptx:$R/wgmma_attn_fwd/plan.$p.yaml \
      v2=$R/wgmma_attn_fwd_ov/kernel.ptx:$R/wgmma_attn_fwd_ov/plan.$p.yaml \
      -- "mha_with_lse_${p/./_}:B4_H48_S4096,B4_H48_S2048"
  done > "$OUT/ab-attention.txt" 2>&1
  ab 120 v1=$R/wgmma_gemm_fp8/kernel.ptx:$R/wgmma_gemm_fp8/plan.yaml \
    x2=$R/wgmma_gemm_sk/kernel.ptx:$R/wgmma_gemm_sk/plan.fp8_x2.yaml \
    -- gemm_fp8_n7168_k5120:M8192,M952,M70 > "$OUT/ab-fp8.txt" 2>&1
  ab 90 tma=$R/tma_decode -- gqa_paged_decode_h32_kv8_d128_ps1:B1_T8192,B16_T17211,B64_T59337 \
    > "$OUT/ab-decode.txt" 2>&1
  ab 400 v1=$R/wgmma_gemm/kernel.ptx:$R/wgmma_gemm/plan.yaml \
    sk=$R/wgmma_gemm_sk/kernel.ptx:$R/wgmma_gemm_sk/plan.yaml \
    x2=$R/wgmma_gemm_sk/kernel.ptx:$R/wgmma_gemm_sk/plan.x2.yaml \
    -- gemm_n7168_k5120:M8192,M2379,M972,M232,M70 gemm_n5376_k4096:M901,M2379 \
    gemm_n5120_k2048:M952,M8828 gemm_n2048_k5376:M2379 gemm_n256_k7168:M901 \
    gemm_n128_k2048:M952 > "$OUT/ab-gemm.txt" 2>&1
fi

if has run; then
  timeout 420 "$BIN" run tasks/runs/reference-v2-sm90a.yaml > "$OUT/run.txt" 2>&1
  echo "exit $?" >> "$OUT/run.txt"
  tar czf "$OUT/artifacts.tgz" artifacts/v1 2>/dev/null
fi
