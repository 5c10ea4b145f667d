#!/usr/bin/env bash
# On the GPU machine: evaluations per hour through `ptxbench serve` against `ptxbench run` on
# the same pairs (pipeline/scripts/serve-vs-run.py), with the GPU's state, into OUT.
# Usage: pipeline/scripts/device-serve.sh PTXBENCH_BINARY LIST [SHARD] [OUT]
set -uo pipefail
bin=$(realpath "$1")
list="$2"
shard="${3:-}"
out="${4:-${OUT:-out}}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > "$out/gpu.txt" 2>&1
python3 pipeline/scripts/serve-vs-run.py --ptxbench "$bin" --list "$list" ${shard:+--shard "$shard"} --out "$out" | tee "$out/table.md"
