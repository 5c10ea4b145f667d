#!/usr/bin/env bash
# On the GPU machine: republish the reference run under the current protocol, audit published
# records from a copy of the store in a folder with no tasks/, cross-check the per-site
# counters with Nsight Compute, and time whole GEMM evaluations. Packs logs and new store
# objects into $OUT.
# Usage: pipeline/scripts/device-final.sh PTXBENCH_BINARY [OUT]
set -uo pipefail
bin=$(realpath "$1")
out="${2:-${OUT:-out}}"
mkdir -p "$out/log"
log="$out/log"
marker=$(mktemp)
repo=$(pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > "$log/gpu.txt" 2>&1

echo "== throughput"
for i in 1 2 3; do
  s=$(date +%s%N)
  "$bin" eval tasks/reference/wgmma_gemm --task gemm_n7168_k5120 --json > "$log/full-$i.json" 2> "$log/full-$i.err"
  e=$(date +%s%N)
  echo "full-$i $(( (e - s) / 1000000 ))" >> "$log/throughput-ms.txt"
done

if [ -z "${SKIP_NCU:-}" ]; then
echo "== Nsight Compute cross-check"
ncu_check() { # name candidate task workload
  pipeline/scripts/ncu-evidence.sh "$bin" "$2" "$3" "$4" "$log/ncu-$1" > "$log/ncu-$1.txt" 2>&1
  "$bin" eval "$2" --task "$3" --workload "$4" --no-timing --json > "$log/ncu-$1/eval.json" 2>> "$log/ncu-$1.txt"
  python3 pipeline/scripts/ncu_crosscheck.py "$log/ncu-$1/ncu-source.csv" "$log/ncu-$1/eval.json" >> "$log/ncu-crosscheck.txt" 2>&1
  rm -f "$log/ncu-$1/profile.ncu-rep"
}
echo "# reference wgmma GEMM, gemm_n7168_k5120 M8192" >> "$log/ncu-crosscheck.txt"
ncu_check wgmma_gemm tasks/reference/wgmma_gemm gemm_n7168_k5120 M8192
echo "# Triton TMA GEMM, gemm_n7168_k5120 M8192" >> "$log/ncu-crosscheck.txt"
ncu_check triton_gemm_tma tasks/candidates/triton_gemm_tma gemm_n7168_k5120 M8192
fi

echo "== reference run"
timeout "${REFERENCE_S:-330}" "$bin" run tasks/runs/reference-sm90a.yaml --out "$(mktemp -d)/reference-sm90a" \
  > "$log/reference-summary.txt" 2> "$log/reference-stderr.txt"

echo "== audits from a copy of the store, in a folder with no tasks/"
store=$(mktemp -d)/artifacts
cp -r artifacts "$store"
empty=$(mktemp -d)
for prefix in $(grep -E "wgmma-gemm +gemm_n7168_k5120 |wgmma-attn-fwd-d128 +mha_with_lse_d128 " "$log/reference-summary.txt" | grep -oE "[0-9a-f]{12} " ) ${AUDIT_EXTRA:-}; do
  (cd "$empty" && "$bin" audit "$prefix" --store "$store") > "$log/audit-$prefix.txt" 2>&1
  echo "audit $prefix exit $?" >> "$log/audits.txt"
done

find artifacts -type f -newer "$marker" > "$log/new-files.txt"
tar czf "$out/artifacts.tgz" -T "$log/new-files.txt"
tar czf "$out/logs.tgz" -C "$out" log
rm -rf "$log"
echo done
