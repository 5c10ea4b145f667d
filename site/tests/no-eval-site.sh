#!/usr/bin/env bash
# A site with records of `ptxbench generate --no-eval` beside the paper's reported data, for
# the browser test (site/tests/browser.sh) to check that candidates which were checked and
# never run do not look measured. No GPU: the canned chat server (the `canned-server`
# example) answers with the SIMT GEMM, `generate --no-eval` checks each answer statically and
# stores it; the model is named Qwen3.6-27B, as the paper's is, so its records meet the
# paper's rows.
#
#   site/tests/no-eval-site.sh OUT_DIR
#
# Writes OUT_DIR/public (the site) and OUT_DIR/work (store copy, generation). Needs
# $PTXBENCH (default: target/debug/ptxbench under $CARGO_TARGET_DIR or ./target) and
# $CANNED_SERVER (default: the canned-server example beside it; built when missing), the CUDA
# compiler tools (CUDA_HOME) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
out=${1:?usage: no-eval-site.sh OUT_DIR}
target=${CARGO_TARGET_DIR:-$repo/target}
ptxbench=${PTXBENCH:-$target/debug/ptxbench}
canned=${CANNED_SERVER:-$target/debug/examples/canned-server}
if [ ! -x "$canned" ]; then
  cargo build --locked -q -p ptxbench --example canned-server
fi
work="$out/work"
rm -rf "$work" "$out/public"
mkdir -p "$work/canned"
# The committed store, copied: the paper's reported data and the suites the site names.
cp -r artifacts "$work/artifacts"

cand=tasks/candidates/simt/gemm
for turn in 0 1; do
  {
    printf 'Here is a tiled SIMT kernel.\n\n```cuda\n'
    cat "$cand/kernel.cu"
    printf '```\n\nIts launch plan:\n\n```yaml\n'
    cat "$cand/plan.yaml"
    printf '```\n'
  } >"$work/canned/turn-$turn.md"
done
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
"$canned" "$work/canned" --port "$port" >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
cat >"$work/gen.yaml" <<YAML
generate: 1
name: no-eval-example
tasks: [gemm_n4096_k4096, mha_with_lse_d128]
archs: [sm_90a]
variants: [1]
replicas: 2
turn_limits: [1]
models:
  - name: canned-simt
    display_name: Qwen3.6-27B
    endpoint: "http://127.0.0.1:$port/v1"
    concurrency: 1
    timeout_s: 60
    sampling: {temperature: 0.0, max_tokens: 8192}
YAML
"$ptxbench" --tasks tasks generate "$work/gen.yaml" --no-eval --out "$work/out" --store "$work/artifacts" >"$work/generate.log" 2>&1 ||
  { tail -n 20 "$work/generate.log"; exit 1; }

# The records of the generation: its trajectories' record digests.
show() { "$ptxbench" show "$1" --raw --store "$work/artifacts"; }
generation="$(cat "$work/out/generation.digest")"
records=()
for t in $(show "$generation" | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["trajectory_digests"]))'); do
  while IFS= read -r r; do records+=("$r"); done < <(show "$t" | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["record_digests"]))')
done
[ "${#records[@]}" -gt 0 ] || { echo "no-eval-site: the generation stored no record" >&2; exit 1; }

# The default leaderboard's suite, suites, reported data and models, with these records
# instead of its runs.
python3 - "$work/manifest.yaml" "${records[@]}" <<'PY'
import re, sys
text = open("manifests/leaderboard.yaml").read()
runs = re.search(r"^runs:\n(?:  .*\n|\s*#.*\n)*", text, re.M)
records = "".join(f'  - "{d}"\n' for d in sys.argv[2:])
text = text[:runs.start()] + "runs: []\n" + text[runs.end():]
text = re.sub(r"^records: \[\]\n", "records:\n" + records, text, flags=re.M)
text = text.replace('title: "PTXBench leaderboard"', 'title: "PTXBench: records of generate --no-eval"')
open(sys.argv[1], "w").write(text)
PY
"$ptxbench" site "$work/manifest.yaml" --store "$work/artifacts" -o "$out/public" >"$work/site.log" 2>&1 ||
  { cat "$work/site.log"; exit 1; }
echo "no-eval site: ${#records[@]} records in $out/public"
