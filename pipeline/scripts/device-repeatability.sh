#!/usr/bin/env bash
# On the GPU machine: the repeatability benchmark. Evaluates three kernels, each on one
# performance workload, in N separate processes (seeds drawn per process; the kernels take
# turns, so the GPU's state drifts across all of them alike), with the GPU's clocks, temperature
# and power read before each process; pipeline/scripts/repeatability_table.py prints the table.
#   gemm    the hand-written TMA + wgmma GEMM, gemm_n7168_k5120 M8192
#   attn    the hand-written attention forward, mha_with_lse_d128 B4_H48_S4096
#   ptr     Triton's pointer-load GEMM (far from the library), gemm_n7168_k5120 M8192
# Usage: pipeline/scripts/device-repeatability.sh PTXBENCH_BINARY N OUT_DIR [EXTRA EVAL FLAGS...]
# KERNELS="attn" (say) runs only those of the three. DEADLINE (seconds since the epoch) ends the
# rounds early: no round starts after it, so every process that ran finished. Each process's raw timed pairs go to
# OUT_DIR/pairs/KERNEL-I.jsonl (PTXBENCH_PAIRS_OUT); pipeline/scripts/pair_estimators.py
# compares estimators on them.
set -uo pipefail
bin="$1"
n="$2"
out="$3"
shift 3
mkdir -p "$out/pairs"
export PTXBENCH_PAIRS_OUT="$out/pairs"
attn=$(mktemp -d)
cp tasks/reference/wgmma_attn_fwd/kernel.ptx "$attn/kernel.ptx"
cp tasks/reference/wgmma_attn_fwd/plan.d128.yaml "$attn/plan.yaml"
state() {
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active \
    --format=csv,noheader 2>&1
}
for i in $(seq 1 "$n"); do
  if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then
    echo "deadline: stopped before round $i of $n" >> "$out/wall.txt"
    break
  fi
  for k in ${KERNELS:-gemm attn ptr}; do
    case "$k" in
      gemm) args=(tasks/reference/wgmma_gemm --task gemm_n7168_k5120 --workload M8192) ;;
      attn) args=("$attn" --task mha_with_lse_d128 --workload B4_H48_S4096) ;;
      ptr) args=(tasks/candidates/triton_gemm_ptr --task gemm_n7168_k5120 --workload M8192) ;;
    esac
    echo "$k $i $(state)" >> "$out/state.txt"
    s=$(date +%s.%N)
    "$bin" eval "${args[@]}" --json "$@" > "$out/rep-$k-$i.json" 2> "$out/rep-$k-$i.err"
    rc=$?
    # One evaluation, one worker process, one file of pairs.
    for f in "$out"/pairs/pairs-*.jsonl; do
      [ -e "$f" ] && mv "$f" "$out/pairs/$k-$i.jsonl"
    done
    echo "$k $i exit $rc $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s" >> "$out/wall.txt"
  done
done
