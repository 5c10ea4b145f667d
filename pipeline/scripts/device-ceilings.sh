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
#               (attention forward per task: v1, v2 without and with the ping-pong; attention
#               backward v1 against dQ by TMA reduce-add; fp8 GEMM;
#               the TMA paged decode and the fp8 attention forward, which have no v1;
#               bf16 GEMM v1, stream-K, 2-CTA clusters)
#   run         `ptxbench run tasks/runs/reference-v2-sm90a.yaml` into artifacts/ (every
#               workload, expected verdicts checked), packed as OUT/artifacts.tgz
#   profile     Nsight Compute (where the machine lets it read counters) on one launch of v1 and
#               v2 at the headlines: speed of light, compute and memory workload (pipe
#               utilisation), warp state (stall reasons); one text report each, packed as
#               OUT/ncu.tgz. Not in the default PARTS: a timed A/B never runs under a profiler.
# Logs go to OUT (a device call brings back few files: the cross-check's dumps are packed).
# All parts together take longer than one device call's 600 s: run `crosscheck,run` in one call,
# `ab` in another (ROUNDS 2: about 60 evaluations of a few seconds each) and `profile` in a third.
set -uo pipefail
BIN=$1
OUT=$2
PARTS=${3:-crosscheck,ab,run}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
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
    ab 200 v1=$R/wgmma_attn_fwd/kernel.ptx:$R/wgmma_attn_fwd/plan.$p.yaml \
      ov=$R/wgmma_attn_fwd_ov/kernel.ptx:$R/wgmma_attn_fwd_ov/plan.$p.nopp.yaml \
      ovpp=$R/wgmma_attn_fwd_ov/kernel.ptx:$R/wgmma_attn_fwd_ov/plan.$p.yaml \
      -- "mha_with_lse_${p/./_}:B4_H48_S4096,B4_H48_S2048"
  done > "$OUT/ab-attention.txt" 2>&1
  for p in plan:mha_bwd_d128 plan.causal:mha_bwd_d128_causal plan.d64:mha_bwd_d64; do
    ab 200 v1=$R/wgmma_attn_bwd/kernel.ptx:$R/wgmma_attn_bwd/${p%%:*}.yaml \
      tr=$R/wgmma_attn_bwd_tr/kernel.ptx:$R/wgmma_attn_bwd_tr/${p%%:*}.yaml \
      -- "${p##*:}:B4_H48_S4096,B4_H48_S2048"
  done > "$OUT/ab-backward.txt" 2>&1
  ab 120 v1=$R/wgmma_gemm_fp8/kernel.ptx:$R/wgmma_gemm_fp8/plan.yaml \
    x2=$R/wgmma_gemm_sk/kernel.ptx:$R/wgmma_gemm_sk/plan.fp8_x2.yaml \
    -- gemm_fp8_n7168_k5120:M8192,M952,M70 > "$OUT/ab-fp8.txt" 2>&1
  ab 90 tma=$R/tma_decode -- gqa_paged_decode_h32_kv8_d128_ps1:B1_T8192,B16_T17211,B64_T59337 \
    > "$OUT/ab-decode.txt" 2>&1
  for p in plan:fp8_mha_with_lse_d128 plan.causal:fp8_mha_with_lse_d128_causal; do
    ab 90 fp8=$R/wgmma_attn_fwd_fp8/kernel.ptx:$R/wgmma_attn_fwd_fp8/${p%%:*}.yaml \
      -- "${p##*:}:B4_H48_L4096,B4_H48_L2048"
  done > "$OUT/ab-attention-fp8.txt" 2>&1
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

if has profile; then
  mkdir -p "$OUT/ncu"
  # NAME KERNEL PLAN TASK WORKLOAD ENTRY-REGEX
  while read -r name kernel plan task workload regex; do
    dir=$(mktemp -d)
    cp "$R/$kernel" "$dir/kernel.ptx"
    cp "$R/$plan" "$dir/plan.yaml"
    timeout 150 "$NCU" --target-processes all --clock-control none \
      --kernel-name "regex:$regex" --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
      "$BIN" eval "$dir" --task "$task" --workload "$workload" --no-timing --timeout 140 \
      > "$OUT/ncu/$name.txt" 2>&1
    echo "exit $?" >> "$OUT/ncu/$name.txt"
    rm -rf "$dir"
  done <<'LIST'
gemm-v1 wgmma_gemm/kernel.ptx wgmma_gemm/plan.yaml gemm_n7168_k5120 M8192 ^gemm_bf16_ws$
gemm-sk wgmma_gemm_sk/kernel.ptx wgmma_gemm_sk/plan.yaml gemm_n7168_k5120 M8192 ^gemm_bf16_sk$
gemm-x2 wgmma_gemm_sk/kernel.ptx wgmma_gemm_sk/plan.x2.yaml gemm_n7168_k5120 M8192 ^gemm_bf16_sk_x2$
fp8-x2 wgmma_gemm_sk/kernel.ptx wgmma_gemm_sk/plan.fp8_x2.yaml gemm_fp8_n7168_k5120 M8192 ^gemm_fp8_x2$
attn-v1-d128 wgmma_attn_fwd/kernel.ptx wgmma_attn_fwd/plan.d128.yaml mha_with_lse_d128 B4_H48_S4096 ^attn_fwd_d128$
attn-v2-d128 wgmma_attn_fwd_ov/kernel.ptx wgmma_attn_fwd_ov/plan.d128.yaml mha_with_lse_d128 B4_H48_S4096 ^attn_fwd_ov_d128$
bwd-v1-d128 wgmma_attn_bwd/kernel.ptx wgmma_attn_bwd/plan.yaml mha_bwd_d128 B4_H48_S4096 ^attn_bwd_main_d128$
bwd-tr-d128 wgmma_attn_bwd_tr/kernel.ptx wgmma_attn_bwd_tr/plan.yaml mha_bwd_d128 B4_H48_S4096 ^attn_bwd_main_tr_d128$
attn-fp8 wgmma_attn_fwd_fp8/kernel.ptx wgmma_attn_fwd_fp8/plan.yaml fp8_mha_with_lse_d128 B4_H48_L4096 ^attn_fwd_fp8_d128$
decode-b1 tma_decode/kernel.ptx tma_decode/plan.yaml gqa_paged_decode_h32_kv8_d128_ps1 B1_T8192 ^decode_tma_split$
LIST
  tar czf "$OUT/ncu.tgz" -C "$OUT" ncu && rm -rf "$OUT/ncu"
fi
