#!/usr/bin/env bash
# On the GPU machine (issue 57 / 61): the compiler sandbox on this kernel (Landlock ABI, a CUDA
# C++ candidate through NVRTC in its view), then the integrity v4 run
# lists: the zoo's new members and the honest kernels under the complete count. Packs the
# store objects the runs made, their logs and evidence tables into OUT.
# Usage: pipeline/scripts/device-integrity-v4.sh PTXBENCH_BINARY LIMIT_S [OUT]
set -uo pipefail
bin=$(realpath "$1")
limit="$2"
out="${3:-${OUT:-out}}"
log="$out/log"
mkdir -p "$log"
marker=$(mktemp)
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
{
  uname -r
  python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); print("landlock abi", libc.syscall(444, None, 0, 1), "errno", ctypes.get_errno())'
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
} > "$log/machine.txt" 2>&1
# A kernel without Landlock cannot hold the compilers' filesystem view: they refuse to run unless
# told otherwise. Say so in the log, and run unconfined only then.
abi=$(python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); print(libc.syscall(444, None, 0, 1))')
if [ "${abi:-0}" -lt 1 ]; then
  echo "no Landlock on this kernel: compilers run with PTXBENCH_SANDBOX=unconfined" >> "$log/machine.txt"
  export PTXBENCH_SANDBOX=unconfined
fi
"$bin" check tasks/candidates/simt/gemm --task gemm_n4096_k4096 > "$log/check-cuda.txt" 2>&1
echo "exit $?" >> "$log/check-cuda.txt"
for list in zoo-v4-sm90a integrity-v4-sm90a; do
  s=$(date +%s)
  timeout "$limit" "$bin" run "tasks/runs/$list.yaml" --out "runs/$list" > "$log/$list.txt" 2> "$log/$list.stderr.txt"
  echo "exit $? after $(( $(date +%s) - s )) s" >> "$log/$list.txt"
  digest=$(grep -o 'run object [0-9a-f]*' "$log/$list.txt" | awk '{print $3}')
  [ -n "$digest" ] && python3 pipeline/scripts/evidence_table.py "$digest" artifacts > "$log/$list-table.md" 2>&1
done
find artifacts -type f -newer "$marker" > "$log/new-files.txt"
tar czf "$out/artifacts.tgz" -T "$log/new-files.txt"
tar czf "$out/logs.tgz" -C "$out" log
rm -rf "$log"
