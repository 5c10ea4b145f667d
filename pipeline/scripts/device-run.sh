#!/usr/bin/env bash
# On the GPU machine: run (or resume) one run list for at most LIMIT seconds, then pack the
# store objects it made, its resumption index and its logs into OUT. A run cut off by the limit
# resumes where it stopped when the index comes back (carried as RUN_DIR) with the objects
# unpacked into artifacts/: the seed drawn at its first start is kept in the index.
# Usage: pipeline/scripts/device-run.sh PTXBENCH_BINARY LIST RUN_DIR LIMIT_S [OUT]
set -uo pipefail
bin=$(realpath "$1")
list="$2"
run_dir="$3"
limit="$4"
out="${5:-${OUT:-out}}"
mkdir -p "$out/log" "$run_dir"
log="$out/log"
marker=$(mktemp)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > "$log/gpu.txt" 2>&1
s=$(date +%s)
timeout "$limit" "$bin" run "$list" --out "$run_dir" > "$log/summary.txt" 2> "$log/stderr.txt"
echo "exit $? after $(( $(date +%s) - s )) s" >> "$log/summary.txt"
cp "$run_dir/index.json" "$log/index.json" 2>/dev/null
find artifacts -type f -newer "$marker" > "$log/new-files.txt"
tar czf "$out/artifacts.tgz" -T "$log/new-files.txt"
tar czf "$out/logs.tgz" -C "$out" log
rm -rf "$log"
