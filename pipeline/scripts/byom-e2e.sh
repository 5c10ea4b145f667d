#!/usr/bin/env bash
# README.md's "Evaluate your model", end to end: its commands, read from README.md (the block
# between `<!-- byom:begin` and `<!-- byom:end -->`), run as written in a copy of the checkout's
# tracked files, with the canned chat server on 127.0.0.1 in place of vLLM. Lines run as written
# except:
#   cargo build …            with PTXBENCH set (a built binary), its folder goes on PATH instead
#   vllm serve …             starts the canned server (pipeline/tests/support/canned.rs) on a free
#                            port, 3 s late (a server that starts slowly, as vLLM loading a model
#                            does): it lists the manifest's model at GET /v1/models and answers
#                            every request with Triton's TMA GEMM (tasks/candidates/
#                            triton_gemm_tma): a kernel for the GEMM task, a plan that does not
#                            bind for the attention tasks
#   until curl … 8000 …      waits for the canned server's port instead of 8000
#   cp … my-model.yaml       is followed by the edit README describes: `name: my-model` and the
#                            endpoint's port (with --gpu also a harness-test model and entry, one
#                            variant, one replica and turn limits [1, 2], to keep the GPU time short)
#   ptxbench generate …      gets --no-eval, unless --gpu
#   python3 -m http.server … is replaced by the check in headless Chromium (as site/tests/browser.sh
#                            drives it): the built index has the model's row, named by its
#                            display_name: on the CPU (--no-eval) listed as not yet evaluated and
#                            in no measured row, beside the paper's reported row of the same name
#                            (the example's Qwen3.6-27B); with --gpu marked measured; the entry
#                            page loads
# Then `ptxbench generate` runs once more and must ask the server for nothing. With --gpu, a
# second generation (my-model-later) runs with --no-eval, then without it: the kept answers are
# evaluated in their trajectories.
#
# Usage: pipeline/scripts/byom-e2e.sh [--gpu] [OUT_DIR]
#   PTXBENCH        a built ptxbench (default: build as README says, in the copy)
#   CANNED_SERVER   the canned server (default: the `canned-server` example under
#                   $CARGO_TARGET_DIR/debug, built when missing)
# OUT_DIR (default: a new temp folder) gets the log of every command (commands.log), the
# generate output, the DOM checks, screenshots and, with --gpu, evidence.tgz: the generation's
# store objects and output folder (for artifacts/evidence/byom-h200/). Needs python3 and
# chromium (with --gpu, where a GPU machine may have none, the pages are checked as served).
# BYOM_CUDA_HOME: a CUDA_HOME already installed, in place of the install line (a machine that
# cannot reach PyPI).
set -euo pipefail
gpu=0
if [ "${1:-}" = "--gpu" ]; then gpu=1; shift; fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$(mktemp -d -t byom-XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ] && [ "$gpu" -eq 0 ]; then
  echo "byom-e2e: no chromium (Debian: apt-get install -y chromium)" >&2; exit 2
fi

canned_server=${CANNED_SERVER:-${CARGO_TARGET_DIR:-$repo/target}/debug/examples/canned-server}
if [ ! -x "$canned_server" ]; then
  (cd "$repo" && cargo build --locked -q -p ptxbench --example canned-server)
fi
canned_server=$(realpath "$canned_server")

work=$(mktemp -d -t byom-work-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
fail() { echo "byom-e2e: failed: $1 (log: $log)" >&2; tail -n 20 "$log" >&2; exit 1; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# The copy: tracked files as they are in the checkout (a fresh clone in CI); a file the index
# lists but the checkout no longer has (a copy of a working tree beside an older index) is left
# out.
clone="$work/clone"
mkdir -p "$clone"
(cd "$repo" && git ls-files -z | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | xargs -0 cp --parents -t "$clone")

# The canned model.
model="Qwen/Qwen3.6-27B"
display="Qwen3.6-27B"
if [ "$gpu" -eq 1 ]; then model="canned/triton-gemm-tma"; display="Canned Triton TMA GEMM (harness test)"; fi
mkdir -p "$work/canned"
cand="$clone/tasks/candidates/triton_gemm_tma"
{ printf 'Here is my kernel.\n\n```ptx\n'; cat "$cand/kernel.ptx"; printf '```\n\nIts launch plan:\n\n```yaml\n'
  cat "$cand/plan.yaml"; printf '```\n'; } > "$work/canned/turn-0.md"
printf '%s\n' "$model" > "$work/canned/models.txt"
port=$(free_port)

block=$(awk '/^<!-- byom:begin/{on=1; next} /^<!-- byom:end -->/{on=0} on && !/^```/' "$repo/README.md")
[ -n "$block" ] || { echo "byom-e2e: no byom block in README.md" >&2; exit 1; }
log="$out/commands.log"
: > "$log"
cd "$clone"
while IFS= read -r line; do
  [ -n "$line" ] || continue
  printf '$ %s\n' "$line" | tee -a "$log"
  case "$line" in
    "export CUDA_HOME="*)
      if [ -n "${BYOM_CUDA_HOME:-}" ]; then
        export CUDA_HOME="$BYOM_CUDA_HOME"
        echo "  (BYOM_CUDA_HOME: $CUDA_HOME)" | tee -a "$log"
      else
        eval "$line" >>"$log" 2>&1 || fail "$line"
      fi ;;
    "cargo build "*)
      if [ -n "${PTXBENCH:-}" ]; then
        export PATH="$(dirname "$(realpath "$PTXBENCH")"):$PATH"
        echo "  (PTXBENCH: $(command -v ptxbench))" | tee -a "$log"
      else
        eval "$line" >>"$log" 2>&1 || fail "$line"
      fi ;;
    "vllm serve "*)
      (sleep 3; exec "$canned_server" "$work/canned" --port "$port") >>"$log" 2>&1 &
      pids+=($!)
      echo "  (the canned server on 127.0.0.1:$port in its place, starting in 3 s)" | tee -a "$log" ;;
    "until curl "*)
      eval "${line//127.0.0.1:8000/127.0.0.1:$port}" >>"$log" 2>&1 || fail "$line"
      echo "  (waited for 127.0.0.1:$port)" | tee -a "$log" ;;
    "cp manifests/generate-example.yaml my-model.yaml"*)
      eval "$line"
      sed -i -e 's|^name: example |name: my-model|' \
        -e "s|http://127.0.0.1:8000/v1|http://127.0.0.1:$port/v1|" my-model.yaml
      if [ "$gpu" -eq 1 ]; then
        sed -i -e "s|- name: Qwen/Qwen3.6-27B |- name: $model |" \
          -e "s|display_name: Qwen3.6-27B |display_name: \"$display\" |" \
          -e 's|^variants: \[1, 2, 3\]|variants: [1]|' -e 's|^replicas: 4|replicas: 1|' \
          -e 's|^turn_limits: \[1, 4, 8\]|turn_limits: [1, 2]|' my-model.yaml
      fi
      grep -q '^name: my-model' my-model.yaml && grep -q "127.0.0.1:$port" my-model.yaml \
        || { echo "byom-e2e: the edit of my-model.yaml did not apply" >&2; exit 1; }
      echo "  (edited: name my-model, endpoint port $port$([ "$gpu" -eq 1 ] && echo ', harness-test model, 5 trajectories'))" | tee -a "$log" ;;
    "ptxbench generate "*)
      cmd="${line%%#*}"
      [ "$gpu" -eq 1 ] || cmd="$cmd --no-eval"
      echo "  (runs: $cmd)" | tee -a "$log"
      eval "$cmd" > "$out/generate.out" 2> "$out/generate.err" \
        || { echo "byom-e2e: generate failed:"; cat "$out/generate.out" "$out/generate.err"; exit 1; } >&2
      cat "$out/generate.out" | tee -a "$log" ;;
    "python3 -m http.server "*)
      echo "  (the browser check below in its place)" | tee -a "$log" ;;
    *)
      eval "$line" >>"$log" 2>&1 || fail "$line" ;;
  esac
done <<<"$block"

echo "--- generate again: nothing is asked" | tee -a "$log"
ptxbench generate my-model.yaml $([ "$gpu" -eq 1 ] || echo --no-eval) > "$out/generate-again.out" 2> "$out/generate-again.err" \
  || { echo "byom-e2e: the second generate failed:"; cat "$out/generate-again.err"; exit 1; } >&2
grep -q "already finished" "$out/generate-again.err" && grep -q '^spent: ' "$out/generate-again.out"
before=$(sed -n 's/^spent: \([0-9]*\) requests.*/\1/p' "$out/generate.out")
after=$(sed -n 's/^spent: \([0-9]*\) requests.*/\1/p' "$out/generate-again.out")
[ -n "$before" ] && [ "$before" = "$after" ] \
  || { echo "byom-e2e: the second generate spent requests ($before, then $after)" >&2; exit 1; }
echo "  (spent $before requests, still $after)" | tee -a "$log"

# The browser: the site served from 127.0.0.1, nothing else resolvable.
[ -f public/index.html ] || { echo "byom-e2e: no public/index.html" >&2; exit 1; }
hport=$(free_port)
python3 -m http.server "$hport" --bind 127.0.0.1 --directory public >"$work/http.log" 2>&1 &
pids+=($!)
wait_port "$hport"
chrome() {
  if [ -z "$browser" ]; then return 1; fi
  local profile
  profile="$(mktemp -d -p "$work")"
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-extensions --disable-default-apps --mute-audio \
    --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" \
    --user-data-dir="$profile" "$@" 2>>"$work/chrome.log"
}
dom() { # PAGE FILE: the page's DOM after its scripts ran, or (--gpu without chromium) its HTML
  if [ -n "$browser" ]; then
    chrome --window-size=1400,1000 --virtual-time-budget=5000 --dump-dom "http://127.0.0.1:$hport/$1" > "$2"
  else
    echo "  (no chromium on this machine: $1 checked as served, before its scripts run)" | tee -a "$log"
    python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' \
      "http://127.0.0.1:$hport/$1" > "$2"
  fi
}
dom index.html "$out/index.dom"
python3 - "$out/index.dom" "$display" "$gpu" > "$out/rows.txt" <<'PY'
import html, re, sys
dom, name, gpu = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3] == "1"
rows = []
for tr in re.findall(r"<tr\b.*?</tr>", dom, re.S):
    cells = [html.unescape(re.sub(r"<[^>]+>", " ", c)).split() for c in re.findall(r"<td\b.*?</td>", tr, re.S)]
    cells = [" ".join(c) for c in cells]
    if name in cells:
        rows.append(cells)
def marked(row, word):
    return any(c.split()[:1] == [word] for c in row)
measured = [r for r in rows if marked(r, "measured")]
reported = [r for r in rows if marked(r, "reported")]
pending = [tr for tr in re.findall(r'<tr class="pending-row">.*?</tr>', dom, re.S)
           if name in html.unescape(re.sub(r"<[^>]+>", " ", tr)) and "badge unevaluated" in tr]
for r in rows:
    print(" | ".join(r[:8]))
if gpu and not measured:
    sys.exit(f"no measured row named {name!r} on the index")
if not gpu:
    # --no-eval: the answers wait for a GPU; the row says so and is in no measured table.
    if measured:
        sys.exit(f"a measured row named {name!r} although nothing was evaluated")
    if not pending:
        sys.exit(f"{name!r} is not listed as not yet evaluated on the index")
    print(f"ok: {name!r} listed as not yet evaluated")
if not gpu and not reported:
    sys.exit(f"no reported row named {name!r} beside the measured one")
if any(marked(r, "measured") and marked(r, "reported") for r in rows):
    sys.exit("a row is both measured and reported")
print(f"ok: {len(measured)} measured and {len(reported)} reported rows named {name!r} (one per turn limit)")
PY
cat "$out/rows.txt" | tee -a "$log"
entry=$(python3 - "$out/index.dom" "$display" <<'PY'
import html, re, sys
dom, name = open(sys.argv[1]).read(), sys.argv[2]
m = re.search(r'href="(entry/[^"]+\.html)"[^>]*>\s*' + re.escape(html.escape(name, quote=False)) + r"\s*<", dom)
print(m.group(1) if m else "")
PY
)
[ -n "$entry" ] || { echo "byom-e2e: no link to the entry page of $display" >&2; exit 1; }
dom "$entry" "$out/entry.dom"
grep -qF "$display" "$out/entry.dom" || { echo "byom-e2e: $entry does not name $display" >&2; exit 1; }
echo "ok: $entry names $display" | tee -a "$log"
if grep -E '" (4|5)[0-9][0-9] ' "$work/http.log"; then echo "byom-e2e: the server answered errors (above)" >&2; exit 1; fi
chrome --hide-scrollbars --window-size=1400,1000 --virtual-time-budget=3000 --screenshot="$out/index.png" "http://127.0.0.1:$hport/index.html" >/dev/null || true
chrome --hide-scrollbars --window-size=1400,1400 --virtual-time-budget=3000 --screenshot="$out/entry.png" "http://127.0.0.1:$hport/$entry" >/dev/null || true

if [ "$gpu" -eq 1 ]; then
  echo "--- generate now, evaluate later: --no-eval, then the same command without it" | tee -a "$log"
  sed -e 's|^name: my-model |name: my-model-later |' my-model.yaml > later.yaml
  ptxbench generate later.yaml --no-eval > "$out/later-no-eval.out" 2> "$out/later-no-eval.err" \
    || { echo "byom-e2e: generate --no-eval failed:"; cat "$out/later-no-eval.err"; exit 1; } >&2
  ptxbench generate later.yaml > "$out/later-eval.out" 2> "$out/later-eval.err" \
    || { echo "byom-e2e: evaluating the kept answers failed:"; cat "$out/later-eval.err"; exit 1; } >&2
  cat "$out/later-no-eval.out" "$out/later-eval.out" | tee -a "$log"
  nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/gpu.txt" 2>&1 || true
  gen=$(cat artifacts/generate/my-model/generation.digest)
  ptxbench verify my-leaderboard.yaml > "$out/verify.txt" 2>&1
  # The generation's store objects (what `git status` shows as new under artifacts/) and its
  # output folder.
  (cd "$repo" && git ls-files artifacts) | sort > "$work/tracked.txt"
  find artifacts -type f ! -path 'artifacts/generate/*' | sort | comm -13 "$work/tracked.txt" - > "$out/new-objects.txt"
  tar czf "$out/evidence.tgz" -T "$out/new-objects.txt" artifacts/generate/my-model \
    artifacts/generate/my-model-later my-model.yaml later.yaml my-leaderboard.yaml
  echo "generation $gen; $(wc -l < "$out/new-objects.txt") new store objects in evidence.tgz" | tee -a "$log"
fi
echo "byom-e2e: passed ($([ "$gpu" -eq 1 ] && echo GPU || echo CPU, --no-eval)); logs in $out"
