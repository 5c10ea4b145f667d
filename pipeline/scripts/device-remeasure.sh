#!/usr/bin/env bash
# On the GPU machine (issues 61 and 62): suite v3's run list (GDN included), then the throughput
# lists with the default pipeline, then the repeatability rounds until BUDGET_S seconds after the
# start (no round starts after that, so each process that ran finished). Packs the store objects
# and logs into OUT/remeasure.tgz after each part, so a call cut short still brings back the parts
# it finished.
# Usage: pipeline/scripts/device-remeasure.sh PTXBENCH_BINARY BUDGET_S OUT
set -uo pipefail
bin=$(realpath "$1")
budget="$2"
out=$(realpath -m "$3")
start=$(date +%s)
mkdir -p "$out/log"
marker=$(mktemp)
pack() {
  find artifacts -type f -newer "$marker" > "$out/log/new-files.txt"
  tar czf "$out/remeasure.tgz" -T "$out/log/new-files.txt" -C "$out" log
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > "$out/log/gpu.txt" 2>&1
bash pipeline/scripts/device-integrity-v4.sh "$bin" 200 "$out/suite" suite-v3-list > "$out/log/suite.txt" 2>&1
# device-integrity-v4.sh packs its logs into logs.tgz and removes the folder.
tar xzf "$out/suite/logs.tgz" -C "$out/suite" && mv "$out/suite/log" "$out/log/suite-v3"
rm -rf "$out/suite"
pack
HOWS=warm bash pipeline/scripts/device-throughput.sh "$bin" "$out/throughput" > "$out/log/throughput.txt" 2>&1
tar xzf "$out/throughput/throughput.tgz" -C "$out/log" log 2>/dev/null && mv "$out/log/log" "$out/log/throughput"
rm -rf "$out/throughput"
pack
DEADLINE=$((start + budget)) bash pipeline/scripts/device-repeatability.sh "$bin" 10 "$out/log/repeatability" > "$out/log/repeatability.txt" 2>&1
python3 pipeline/scripts/repeatability_table.py "$out/log/repeatability" > "$out/log/repeatability.md" 2>&1
echo "done after $(( $(date +%s) - start )) s" >> "$out/log/gpu.txt"
pack
