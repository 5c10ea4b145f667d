#!/usr/bin/env bash
# On the GPU machine: the integrity protocol's evidence in one pass. Runs the zoo and the
# reference run lists (records go into artifacts/), the repeatability benchmark
# (device-repeatability.sh with 5 processes; repeatability_table.py prints it), and the
# throughput benchmark (whole GEMM evaluations; throughput.txt ends with their mean), and packs
# what it made into $OUT.
# Usage: pipeline/scripts/device-integrity.sh PTXBENCH_BINARY [OUT]
set -uo pipefail
bin="$1"
out="${2:-${OUT:-out}}"
mkdir -p "$out/log"
marker=$(mktemp)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > "$out/log/gpu.txt" 2>&1

echo "== repeatability: 5 processes each (seeds drawn per process; device-repeatability.sh)"
pipeline/scripts/device-repeatability.sh "$bin" 5 "$out/log"

echo "== throughput: whole evaluations of a GEMM candidate over every workload of its task"
for i in 1 2 3; do
  s=$(date +%s.%N)
  "$bin" eval tasks/reference/wgmma_gemm --task gemm_n7168_k5120 --json > "$out/log/full-$i.json" 2> "$out/log/full-$i.err"
  e=$(date +%s.%N)
  echo "full-$i $(echo "$e - $s" | bc)" >> "$out/log/throughput.txt"
done
awk '{ t += $2 } END { printf "mean %.2f s: %.0f candidates per H200-hour\n", t / NR, 3600 * NR / t }' \
  "$out/log/throughput.txt" >> "$out/log/throughput.txt"

echo "== zoo"
timeout "${ZOO_S:-150}" "$bin" run tasks/runs/zoo-sm90a.yaml --out "${RUNS:-artifacts/runs}/zoo-sm90a" > "$out/log/zoo-summary.txt" 2> "$out/log/zoo-stderr.txt"
echo "== reference"
timeout "${REFERENCE_S:-240}" "$bin" run tasks/runs/reference-sm90a.yaml --out "${RUNS:-artifacts/runs}/reference-sm90a" > "$out/log/reference-summary.txt" 2> "$out/log/reference-stderr.txt"
if [ -n "${ENGINE_S:-}" ]; then
  echo "== engine tests"
  timeout "$ENGINE_S" "$bin" run tasks/runs/engine-sm90a.yaml > "$out/log/engine-summary.txt" 2> "$out/log/engine-stderr.txt"
fi

find artifacts -type f -newer "$marker" > "$out/log/new-files.txt"
tar czf "$out/artifacts.tgz" -T "$out/log/new-files.txt"
tar czf "$out/logs.tgz" -C "$out" log
echo done
