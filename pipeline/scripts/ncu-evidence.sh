#!/usr/bin/env bash
# Dynamic target evidence with Nsight Compute (the paper's method), on a machine with a GPU.
#
#   pipeline/scripts/ncu-evidence.sh PTXBENCH CANDIDATE TASK WORKLOAD [OUTDIR]
#
# PTXBENCH   the ptxbench binary
# CANDIDATE  a candidate folder (kernel.ptx + plan.yaml) or a model response
# TASK       task id, e.g. gemm_n7168_k5120
# WORKLOAD   one small workload of the task (see `ptxbench tasks show TASK`)
# OUTDIR     where the report, CSV and evidence go (default: ncu-evidence-TASK)
#
# Environment: NCU (default: $CUDA_HOME/bin/ncu, else ncu on PATH, else /usr/local/cuda/bin/ncu),
# ARCH (default sm_90a), LAUNCH_SKIP (default 0: the first launch of the kernel),
# TASKS (a task-suite folder, passed as --tasks).
#
# Steps: (1) the kernel-name regex from the candidate's PTX entries; (2) `ptxbench eval` of one
# workload without timing under ncu, with --target-processes all because eval runs the kernel
# in a child worker process, writing a report; (3) the report's SASS source page as CSV;
# (4) `ptxbench evidence --ncu-csv` folds the executed counts into the per-family status.
set -euo pipefail

if [[ $# -lt 4 ]]; then
  sed -n '2,20p' "$0" >&2
  exit 2
fi
PTXBENCH=$1
CANDIDATE=$2
TASK=$3
WORKLOAD=$4
OUT=${5:-ncu-evidence-$TASK}
ARCH=${ARCH:-sm_90a}
LAUNCH_SKIP=${LAUNCH_SKIP:-0}

if [[ -z "${NCU:-}" ]]; then
  if [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/ncu" ]]; then
    NCU=$CUDA_HOME/bin/ncu
  elif command -v ncu >/dev/null 2>&1; then
    NCU=$(command -v ncu)
  else
    NCU=/usr/local/cuda/bin/ncu
  fi
fi
[[ -x "$NCU" ]] || { echo "ncu not found (set NCU)" >&2; exit 2; }

suite=()
if [[ -n "${TASKS:-}" ]]; then
  suite=(--tasks "$TASKS")
fi

mkdir -p "$OUT"
echo "ncu: $("$NCU" --version | tail -n 1)" | tee "$OUT/versions.txt"

# 1. Which kernels to profile: exactly the candidate's entries.
regex=$("$PTXBENCH" "${suite[@]}" evidence "$CANDIDATE" --task "$TASK" --arch "$ARCH" --kernel-regex)
echo "kernels: $regex"

# 2. One launch of the candidate's kernel, in eval's worker process.
set +e
"$NCU" --target-processes all --clock-control none \
  --kernel-name-base mangled --kernel-name "regex:$regex" \
  --launch-skip "$LAUNCH_SKIP" --launch-count 1 \
  --metrics inst_executed,thread_inst_executed_true \
  -f -o "$OUT/profile" \
  "$PTXBENCH" "${suite[@]}" eval "$CANDIDATE" --task "$TASK" --arch "$ARCH" \
  --workload "$WORKLOAD" --no-timing --timeout 600 \
  >"$OUT/eval.log" 2>&1
rc=$?
set -e
echo "eval under ncu exited $rc (log: $OUT/eval.log)"
if [[ ! -s "$OUT/profile.ncu-rep" ]]; then
  echo "ncu wrote no report: no launch matched $regex, or profiling is not permitted" >&2
  tail -n 20 "$OUT/eval.log" >&2
  exit 1
fi

# 3. The SASS source page: one row per instruction with its executed counts.
"$NCU" --import "$OUT/profile.ncu-rep" --page source --print-source sass --csv \
  >"$OUT/ncu-source.csv"

# 4. The evidence, as JSON and as text.
"$PTXBENCH" "${suite[@]}" evidence "$CANDIDATE" --task "$TASK" --arch "$ARCH" \
  --ncu-csv "$OUT/ncu-source.csv" --json >"$OUT/evidence.json"
"$PTXBENCH" "${suite[@]}" evidence "$CANDIDATE" --task "$TASK" --arch "$ARCH" \
  --ncu-csv "$OUT/ncu-source.csv" | tee "$OUT/evidence.txt"
