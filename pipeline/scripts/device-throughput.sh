#!/usr/bin/env bash
# On the GPU machine (issue 46's throughput benchmark): the two throughput lists, each once with
# the default pipeline (ptxas ahead on the CPU, a spare worker started while one evaluates) over
# all 51 pairs, and once with --cold-workers (each worker started when its evaluation comes,
# compiling in it) over the shard 0/3 (each of the 17 tasks once). Prints the throughput table
# and the warm-against-cold speedups, and packs the store objects made and the logs into
# OUT/throughput.tgz.
# Usage: pipeline/scripts/device-throughput.sh PTXBENCH_BINARY [OUT]
# HOWS="warm" runs only the default pipeline (no cold comparison); MODES="full" only the timed list.
set -uo pipefail
bin=$(realpath "$1")
out="${2:-${OUT:-out}}"
mkdir -p "$out/log"
log="$out/log"
marker=$(mktemp)
work=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > "$log/gpu.txt" 2>&1
runs=()
for mode in ${MODES:-correctness full}; do
  list="tasks/runs/throughput-$mode-sm90a.yaml"
  for how in ${HOWS:-warm cold}; do
    args=()
    [ "$how" = cold ] && args=(--shard 0/3 --cold-workers)
    s=$(date +%s.%N)
    "$bin" run "$list" --out "$work/$mode-$how" "${args[@]}" > "$log/$mode-$how.txt" 2> "$log/$mode-$how.err"
    rc=$?
    e=$(date +%s.%N)
    wall=$(python3 -c "print(f'{$e - $s:.2f}')")
    digest=$(sed -n 's/^run object \([0-9a-f]\{64\}\).*/\1/p' "$log/$mode-$how.txt")
    echo "$mode-$how exit $rc after $wall s, run object $digest" | tee -a "$log/summary.txt"
    runs+=("$mode-$how=$digest=$wall")
  done
done
python3 pipeline/scripts/throughput_table.py "${runs[@]}" | tee "$log/throughput.md"
[ "${#runs[@]}" -eq 4 ] && python3 pipeline/scripts/warm_vs_cold.py "${runs[3]#*=}" "${runs[2]#*=}" | tee "$log/warm-vs-cold.md"
find artifacts -type f -newer "$marker" > "$log/new-files.txt"
# One file back: the store objects made and the logs.
tar czf "$out/throughput.tgz" -T "$log/new-files.txt" -C "$out" log
rm -rf "$log" "$work"
