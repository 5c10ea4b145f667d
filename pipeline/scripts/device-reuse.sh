#!/usr/bin/env bash
# On the GPU machine (issue 46): worker processes that serve several candidates, each in a
# fresh CUDA context. Runs tasks/runs/reuse-sm90a.yaml (faulting, trapping, hanging and wrong
# kernels between correct ones, then a timed GEMM and a timed attention forward) with the
# default lane and with a process per evaluation (PTXBENCH_WORKER_EVALUATIONS=1), then the
# correctness-only throughput list both ways and with 1 and 3 spare workers, and prints the
# throughput table. Packs the logs and the store objects made into OUT/reuse.tgz.
# Usage: pipeline/scripts/device-reuse.sh PTXBENCH_BINARY [OUT]
set -uo pipefail
bin=$(realpath "$1")
out="${2:-${OUT:-out}}"
log="$out/log"
mkdir -p "$log"
marker=$(mktemp)
work=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > "$log/gpu.txt" 2>&1
for how in reuse single; do
  setting=""
  [ "$how" = single ] && setting="PTXBENCH_WORKER_EVALUATIONS=1"
  env $setting timeout 400 "$bin" run tasks/runs/reuse-sm90a.yaml --out "$work/reuse-$how" > "$log/reuse-$how.txt" 2> "$log/reuse-$how.err"
  rc=$?
  echo "reuse list, $how ($setting): exit $rc; $(grep -o '[0-9]* differ from their expected verdict' "$log/reuse-$how.txt")" | tee -a "$log/summary.txt"
done
runs=()
for how in reuse= single=PTXBENCH_WORKER_EVALUATIONS=1 spares1=PTXBENCH_SPARES=1 spares3=PTXBENCH_SPARES=3; do
  label=${how%%=*}
  setting=${how#*=}
  s=$(date +%s.%N)
  env $setting timeout 300 "$bin" run tasks/runs/throughput-correctness-sm90a.yaml --out "$work/correctness-$label" > "$log/correctness-$label.txt" 2> "$log/correctness-$label.err"
  rc=$?
  e=$(date +%s.%N)
  wall=$(python3 -c "print(f'{$e - $s:.2f}')")
  digest=$(sed -n 's/^run object \([0-9a-f]\{64\}\).*/\1/p' "$log/correctness-$label.txt")
  echo "correctness-$label ($setting) exit $rc after $wall s, run object $digest" | tee -a "$log/summary.txt"
  runs+=("correctness-$label=$digest=$wall")
done
python3 pipeline/scripts/throughput_table.py "${runs[@]}" | tee "$log/throughput.md"
find artifacts -type f -newer "$marker" > "$log/new-files.txt"
tar czf "$out/reuse.tgz" -T "$log/new-files.txt" -C "$out" log
rm -rf "$log" "$work"
