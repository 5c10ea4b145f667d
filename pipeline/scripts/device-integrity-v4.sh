#!/usr/bin/env bash
# On the GPU machine (issues 57 and 61): the compiler sandbox on this kernel (Landlock ABI, a CUDA
# C++ candidate through NVRTC in its view); the GPU's own counters on timed launches (CUPTI's
# range profiler in the harness, against the counted copy); the counters this device offers, as
# Nsight Compute lists and reads them; then the integrity v4 run lists: the zoo's new members
# and the honest kernels under the complete count. Packs the store objects the runs made, their
# logs and evidence tables into OUT.
# Usage: pipeline/scripts/device-integrity-v4.sh PTXBENCH_BINARY LIMIT_S [OUT [PARTS]]
# PARTS, comma-separated (default counters,ncu,zoo,integrity): counters (the counter run list,
# its evidence and counter tables), ncu (Nsight Compute's names and reads of the counters), zoo,
# integrity (the v4 run lists), suite-v3 (suite v3's baselines alone, library or composed, then
# its run list), site-cost (what the counted copy's counters cost a CTA), reference (the fp32
# reference's files through a worker), suite-v3-list (the list alone), prefill-probe (the nvcc build of the SIMT prefill
# kernel on the 24-head paged task, whose timed launches met an illegal address once: repeated,
# beside the NVRTC build, and under compute-sanitizer where the machine has it), republish (the published run lists again under
# this binary's protocol: zoo, suite-v2, reference, engine, in that order). What the runs made is
# packed after each run list, so a call cut short still brings back the lists it finished.
set -uo pipefail
bin=$(realpath "$1")
limit="$2"
out="${3:-${OUT:-out}}"
parts=",${4:-counters,ncu,zoo,integrity},"
want() { [[ "$parts" == *",$1,"* ]]; }
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

# One run list under LIMIT_S, with its log and evidence table; extra environment first.
run_list() {
  local list="$1" s digest
  shift
  s=$(date +%s)
  env "$@" timeout "$limit" "$bin" run "tasks/runs/$list.yaml" --out "runs/$list" > "$log/$list.txt" 2> "$log/$list.stderr.txt"
  echo "exit $? after $(( $(date +%s) - s )) s" >> "$log/$list.txt"
  digest=$(grep -o 'run object [0-9a-f]*' "$log/$list.txt" | awk '{print $3}')
  [ -n "$digest" ] && python3 pipeline/scripts/evidence_table.py "$digest" artifacts > "$log/$list-table.md" 2>&1
  pack
}
# Everything the runs stored so far, and the logs, into OUT.
pack() {
  find artifacts -type f -newer "$marker" > "$log/new-files.txt"
  tar czf "$out/artifacts.tgz" -T "$log/new-files.txt"
  tar czf "$out/logs.tgz" -C "$out" log
}
if want counters; then
run_list hardware-counters-sm90a PTXBENCH_HARDWARE_COUNTERS=cupti
digest=$(grep -o 'run object [0-9a-f]*' "$log/hardware-counters-sm90a.txt" | awk '{print $3}')
[ -n "$digest" ] && python3 pipeline/scripts/hardware_table.py "$digest" artifacts > "$log/hardware-counters-counts.md" 2>&1
fi

if want ncu; then
# The counters as Nsight Compute names and reads them: on cuBLAS's bf16 GEMM (2*4096^3 FLOPs).
{
  command -v ncu && ncu --version
  ncu --query-metrics --chip gh100 > "$log/ncu-query-metrics.txt" 2>&1
  echo "query exit $?"
  grep -i -E "gmma|tma|pipe_fma|pipe_alu|pipe_fp|pipe_xu|pipe_tensor" "$log/ncu-query-metrics.txt" | head -120
} > "$log/ncu-probe.txt" 2>&1
metrics='sm__inst_executed_pipe_tensor_op_gmma.sum,sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_xu.sum,sm__inst_executed_pipe_fp64.sum'
cat > "$log/mm.py" <<'PY'
import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize(); c = a @ b; torch.cuda.synchronize(); print(float(c.float().abs().mean()))
PY
timeout 60 ncu --clock-control none --csv --page raw --metrics "$metrics" --kernel-name regex:'.*(nvjet|gemm|xmma).*' --launch-count 1 python3 "$log/mm.py" > "$log/ncu-cublas.csv" 2> "$log/ncu-cublas.stderr.txt"
echo "exit $?" >> "$log/ncu-cublas.stderr.txt"
fi

if want suite-v3; then
  for f in tasks/attention_prefill/*.yaml tasks/attention_mla_decode/*.yaml tasks/gdn_prefill/*.yaml; do
    t=$(basename "$f" .yaml)
    timeout 120 "$bin" baseline --task "$t" --json > "$log/baseline-$t.jsonl" 2> "$log/baseline-$t.stderr.txt"
    echo "exit $?" >> "$log/baseline-$t.stderr.txt"
  done
  run_list suite-v3-sm90a
fi
# What the counted copy's counters cost a CTA (issue 61 item 2): the reference GEMM and the
# attention forward, each against its counted variants, launched in turns.
if want site-cost; then
  attn=$(mktemp -d)
  cp tasks/reference/wgmma_attn_fwd/kernel.ptx "$attn/kernel.ptx"
  cp tasks/reference/wgmma_attn_fwd/plan.d128.yaml "$attn/plan.yaml"
  timeout 200 "$bin" site-cost tasks/reference/wgmma_gemm --task gemm_n7168_k5120 --workload M8192 > "$log/site-cost-gemm.md" 2>&1
  echo "exit $?" >> "$log/site-cost-gemm.md"
  timeout 200 "$bin" site-cost "$attn" --task mha_with_lse_d128 --workload B4_H48_S4096 > "$log/site-cost-attn.md" 2>&1
  echo "exit $?" >> "$log/site-cost-attn.md"
  pack
fi
# The fp32 reference's files through a worker process (ptxbench reference).
if want reference; then
  timeout 120 "$bin" reference --task gemm_n4096_k4096 --workload M232 -o "$log/reference-gemm" > "$log/reference.txt" 2>&1
  echo "exit $?" >> "$log/reference.txt"
  ls -la "$log/reference-gemm" >> "$log/reference.txt" 2>&1
  rm -rf "$log/reference-gemm"
fi
# The list alone, without the baselines' own timing.
want suite-v3-list && run_list suite-v3-sm90a
limit=$(( limit * 2 / 3 ))
if want prefill-probe; then
  probe=$(mktemp -d)
  for build in nvcc_simt_attention_prefill simt/attention_prefill; do
    d="$probe/$(basename "$build")"
    mkdir -p "$d"
    cp tasks/candidates/$build/kernel.* "$d/"
    cp tasks/candidates/$build/plan.paged.yaml "$d/plan.yaml"
    for i in 1 2 3; do
      timeout 120 "$bin" eval "$d" --task gqa_paged_prefill_causal_h24_kv8_d128_ps1 --workload B16_Q4096_K20480 \
        > "$log/probe-$(basename "$build")-$i.txt" 2>&1
      echo "exit $?" >> "$log/probe-$(basename "$build")-$i.txt"
    done
  done
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  if [ -n "$sanitizer" ]; then
    timeout 240 "$sanitizer" --target-processes all --print-limit 20 "$bin" eval "$probe/nvcc_simt_attention_prefill" \
      --task gqa_paged_prefill_causal_h24_kv8_d128_ps1 --workload B16_Q4096_K20480 > "$log/probe-sanitizer.txt" 2>&1
    echo "exit $?" >> "$log/probe-sanitizer.txt"
  else
    echo "no compute-sanitizer on this machine" > "$log/probe-sanitizer.txt"
  fi
fi
want zoo && run_list zoo-v4-sm90a
want integrity && run_list integrity-v4-sm90a
if want republish; then
  for list in zoo-sm90a suite-v2-sm90a reference-sm90a engine-sm90a; do
    run_list "$list"
    digest=$(grep -o 'run object [0-9a-f]*' "$log/$list.txt" | awk '{print $3}')
    [ -n "$digest" ] && python3 pipeline/scripts/library_table.py "$digest" artifacts > "$log/$list-library.md" 2>&1
    pack
  done
fi
pack
rm -rf "$log"
