#!/usr/bin/env bash
# On the GPU machine (issue 61): the GPU's own counters on timed launches alone
# (tasks/runs/hardware-counters-sm90a.yaml under PTXBENCH_HARDWARE_COUNTERS=cupti), with its
# evidence and counter tables, packed into OUT.
# Usage: pipeline/scripts/device-hardware-counters.sh PTXBENCH_BINARY LIMIT_S [OUT]
set -uo pipefail
bin=$(realpath "$1")
limit="$2"
out="${3:-${OUT:-out}}"
log="$out/log"
mkdir -p "$log"
marker=$(mktemp)
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
list=hardware-counters-sm90a
s=$(date +%s)
PTXBENCH_HARDWARE_COUNTERS=cupti timeout "$limit" "$bin" run "tasks/runs/$list.yaml" --out "runs/$list" > "$log/$list.txt" 2> "$log/$list.stderr.txt"
echo "exit $? after $(( $(date +%s) - s )) s" >> "$log/$list.txt"
digest=$(grep -o 'run object [0-9a-f]*' "$log/$list.txt" | awk '{print $3}')
if [ -n "$digest" ]; then
  python3 pipeline/scripts/evidence_table.py "$digest" artifacts > "$log/$list-table.md" 2>&1
  python3 pipeline/scripts/hardware_table.py "$digest" artifacts > "$log/$list-counts.md" 2>&1
fi
find artifacts -type f -newer "$marker" > "$log/new-files.txt"
tar czf "$out/artifacts.tgz" -T "$log/new-files.txt"
tar czf "$out/logs.tgz" -C "$out" log
rm -rf "$log"
