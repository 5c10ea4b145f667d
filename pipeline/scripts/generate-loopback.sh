#!/usr/bin/env bash
# The whole generation loop on a GPU machine, with no model behind it: the canned chat server
# (the `canned-server` example, test support that is not in the shipped binary) replays canned
# answers on 127.0.0.1, `ptxbench generate` prompts it, extracts, checks and
# evaluates every answer in an engine worker between turns and feeds the result back; then both
# SFT kinds are exported from the run. Canned answers, by turn: 0 a truncated answer
# (extraction), 1 the SIMT GEMM with its numerically wrong plan (tasks/candidates/simt/gemm/
# wrong.yaml: numerical), 2 and later the correct SIMT GEMM (correct; slower than cuBLAS, so the
# trajectory runs on to the turn limit). The first requests meet a 429 and a 500 (retried).
#
# Usage (from anywhere; needs a GPU and the CUDA libraries the engine loads, as `ptxbench run`):
#   PTXBENCH=target/release/ptxbench pipeline/scripts/generate-loopback.sh [WORK_DIR]
# CANNED_SERVER names the server's binary (default: target/release/examples/canned-server,
# built with `cargo build --release --example canned-server` when it is missing).
# Writes under WORK_DIR (default: a new temp folder): canned/, gen.yaml, out/ (journal,
# digests), artifacts/ (the store), kernelgen.jsonl, fixit.jsonl, fixit.parquet and the
# coverage reports beside them. Run it twice: the second run asks the server for nothing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
ptxbench=${PTXBENCH:-$repo/target/release/ptxbench}
canned_server=${CANNED_SERVER:-${CARGO_TARGET_DIR:-$repo/target}/release/examples/canned-server}
if [ ! -x "$canned_server" ]; then
  (cd "$repo" && cargo build --release --locked -p ptxbench --example canned-server)
fi
work=${1:-$(mktemp -d)}
port=${PORT:-18931}
mkdir -p "$work/canned"
cand=$repo/tasks/candidates/simt/gemm

answer() { # answer PLAN: a model-like answer with the SIMT GEMM kernel and PLAN
  printf 'Here is a tiled SIMT kernel.\n\n```cuda\n'
  cat "$cand/kernel.cu"
  printf '```\n\nIts launch plan:\n\n```yaml\n'
  cat "$1"
  printf '```\n'
}
full=$(answer "$cand/plan.yaml")
printf '%s' "${full:0:900}" > "$work/canned/turn-0.md"   # cut inside the kernel block
answer "$cand/wrong.yaml" > "$work/canned/turn-1.md"
answer "$cand/plan.yaml" > "$work/canned/turn-2.md"
printf '429 1\n500\n' > "$work/canned/faults.txt"

"$canned_server" "$work/canned" --port "$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

cat > "$work/gen.yaml" <<YAML
generate: 1
name: loopback-h200
tasks: [gemm_n4096_k4096]
archs: [sm_90a]
variants: [1, 2]
replicas: 2
turn_limits: [1, 4]
seed: 20261201
eval:
  timeout_s: 240
  workloads: [M1, M129, M333, M70, M232]
retry: {max_attempts: 4, base_delay_ms: 200, max_delay_ms: 5000}
models:
  - name: canned-simt
    display_name: Canned SIMT (loopback)
    endpoint: "http://127.0.0.1:$port/v1"
    concurrency: 2
    timeout_s: 60
    sampling: {temperature: 0.0, max_tokens: 8192}
YAML

cd "$repo"
"$ptxbench" --tasks "$repo/tasks" generate "$work/gen.yaml" --out "$work/out" --store "$work/artifacts"
echo "--- second run (resumes; asks for nothing)"
"$ptxbench" --tasks "$repo/tasks" generate "$work/gen.yaml" --out "$work/out" --store "$work/artifacts"
generation=$(cat "$work/out/generation.digest")
"$ptxbench" export sft "$generation" --store "$work/artifacts" --kind kernelgen --out "$work/kernelgen.jsonl"
"$ptxbench" export sft "$generation" --store "$work/artifacts" --kind fixit --out "$work/fixit.jsonl"
"$ptxbench" export sft "$generation" --store "$work/artifacts" --kind fixit --out "$work/fixit.parquet"
"$ptxbench" export sft "$generation" --store "$work/artifacts" --kind kernelgen --require-arch --out "$work/kernelgen-arch.jsonl"
echo "run object(s): $(cat "$work"/out/run-*.digest | tr '\n' ' ')"
echo "outputs in $work"
