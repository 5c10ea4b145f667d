#!/usr/bin/env bash
# On the GPU machine (issue 46): correctness-only evaluations sharing the GPU, each in its own
# worker process and context (PTXBENCH_UNTIMED_AT_ONCE). Runs tasks/runs/reuse-sm90a.yaml
# (faulting, trapping, hanging and wrong kernels between correct ones, then a timed GEMM and a
# timed attention forward) with 2 and 3 at once and checks every verdict against `expect`;
# then a correctness-only throughput list (LIST, default the short one) with each of VARIANTS
# (AT_ONCE/SPARES, default "1/2 2/2 3/2"), in ROUNDS rounds taking turns, sampling the GPU's
# utilization beside each run; then the full list (timing included) once with the default.
# QUICK=1 skips the reuse list and the full list. Prints the throughput table and packs the
# logs and every record's laps (laps.csv) into OUT/at-once.tgz.
# Usage: [LIST=…] [VARIANTS=…] [QUICK=1] pipeline/scripts/device-at-once.sh PTXBENCH_BINARY [OUT] [ROUNDS]
set -uo pipefail
bin=$(realpath "$1")
out="${2:-${OUT:-out}}"
rounds="${3:-2}"
log="$out/log"
mkdir -p "$log"
marker=$(mktemp)
work=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > "$log/gpu.txt" 2>&1
list="${LIST:-tasks/runs/throughput-correctness-sm90a.yaml}"
variants="${VARIANTS:-1/2 2/2 3/2}"
quick="${QUICK:-0}"
[ "$quick" = 1 ] || for n in 2 3; do
  PTXBENCH_UNTIMED_AT_ONCE=$n timeout 400 "$bin" run tasks/runs/reuse-sm90a.yaml --out "$work/reuse-$n" > "$log/reuse-$n.txt" 2> "$log/reuse-$n.err"
  rc=$?
  echo "reuse list, $n at once: exit $rc; $(grep -o '[0-9]* differ from their expected verdict' "$log/reuse-$n.txt")" | tee -a "$log/summary.txt"
done
runs=()
measure() { # LABEL LIST SETTING
  local label=$1 list=$2 setting=$3
  nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw,clocks.sm --format=csv,noheader -lms 200 > "$log/util-$label.csv" 2>/dev/null &
  local smi=$!
  local s e rc wall digest
  s=$(date +%s.%N)
  env $setting timeout 400 "$bin" run "$list" --out "$work/$label" > "$log/$label.txt" 2> "$log/$label.err"
  rc=$?
  e=$(date +%s.%N)
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  wall=$(python3 -c "print(f'{$e - $s:.2f}')")
  digest=$(sed -n 's/^run object \([0-9a-f]\{64\}\).*/\1/p' "$log/$label.txt")
  util=$(python3 -c "
import sys
v=[float(l.split(',')[1].split()[0]) for l in open('$log/util-$label.csv') if l.count(',')>=3 and l.split(',')[1].strip()[0].isdigit()]
print(f'GPU utilization mean {sum(v)/max(len(v),1):.0f}% over {len(v)} samples')")
  echo "$label ($setting) exit $rc after $wall s, run object $digest; $(grep -o '[0-9]* differ from their expected verdict' "$log/$label.txt"); $util" | tee -a "$log/summary.txt"
  runs+=("$label=$digest=$wall")
}
for r in $(seq 1 "$rounds"); do
  for v in $variants; do
    n=${v%/*}
    k=${v#*/}
    measure "c$n-s$k-$r" "$list" "PTXBENCH_UNTIMED_AT_ONCE=$n PTXBENCH_SPARES=$k"
  done
done
[ "$quick" = 1 ] || measure full-default tasks/runs/throughput-full-sm90a.yaml ""
python3 pipeline/scripts/throughput_table.py "${runs[@]}" | tee "$log/throughput.md"
# Every record's clock, for the laps table.
python3 - "$log/laps.csv" "${runs[@]}" <<'PY'
import json, os, sys
def load(d):
    with open(os.path.join("artifacts", "v1", "blake3", d[:2], d[2:4], d)) as f:
        return json.load(f)
with open(sys.argv[1], "w") as out:
    out.write("run,label,record,task,verdict,lap,seconds\n")
    for arg in sys.argv[2:]:
        label, digest, _ = arg.split("=")
        if not digest:
            continue
        for r in load(digest)["record_digests"]:
            rec = load(r)
            o = rec["outcome"]
            for lap, s in o.get("seconds") or []:
                out.write(f"{digest[:12]},{label},{r[:12]},{rec['task']},{rec['verdict']},{lap},{s:.4f}\n")
PY
tar czf "$out/at-once.tgz" -C "$out" log
rm -rf "$log" "$work"
