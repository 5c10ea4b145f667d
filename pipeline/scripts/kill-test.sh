#!/usr/bin/env bash
# Kill tests (issue 15): `kill -9` at random points of an import, a site build and a generation
# run (against the canned chat server on 127.0.0.1), then count what the kills cost: objects
# lost or corrupt (`ptxbench verify`), litter left (temp files, staging folders), and requests
# the server saw over the `--max-requests` cap. CPU only; no GPU, no network beyond loopback.
#
# Usage (from anywhere):
#   PTXBENCH=target/debug/ptxbench CANNED_SERVER=target/debug/examples/canned-server \
#     pipeline/scripts/kill-test.sh [KILLS] [WORK_DIR]
# KILLS per phase (default 25); WORK_DIR default: a new temp folder. Prints a summary (also
# written to WORK_DIR/summary.txt). Exits 1 if any object was lost, any litter survived the next
# run, or any request went over the cap.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
ptxbench=${PTXBENCH:-$target/debug/ptxbench}
canned_server=${CANNED_SERVER:-$target/debug/examples/canned-server}
kills=${1:-25}
work=${2:-$(mktemp -d)}
port=${PORT:-18933}
cap=30
mkdir -p "$work"
cd "$repo"
log=$work/log.txt
: > "$log"

# Starts a program (not a shell function: the kill must reach the program itself) in the
# background and kills it with SIGKILL after a random delay under $1 ms.
kill_at_random() {
  local max=$1; shift
  "$@" >>"$log" 2>&1 &
  local pid=$!
  local ms=$((RANDOM % max))
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
count() { find "$@" 2>/dev/null | wc -l; }
# Remembers the litter present now (file names are unique), for the total seen.
seen() { find "$@" 2>/dev/null >>"$work/seen-$phase.txt" || true; }
total_seen() { sort -u "$work/seen-$1.txt" 2>/dev/null | grep -c . || true; }
# Problems `verify` lists: `damaged` counts corrupt, malformed or unreadable objects,
# `problems` every problem (missing ones too).
damaged() { "$ptxbench" verify "$@" 2>/dev/null | grep -cE '^(corrupt|malformed|unreadable)' || true; }
problems() { "$ptxbench" verify "$@" 2>/dev/null | grep -cE '^(missing|corrupt|malformed|unreadable|wrong kind)' || true; }

echo "== import: $kills kills"
"$ptxbench" bundle manifests/leaderboard.yaml -o "$work/lb.zip" --store artifacts >>"$log"
imp=$work/import
for _ in $(seq "$kills"); do
  # Drop about half of the objects, so that every import has writes to be killed in.
  for d in "$imp"/artifacts/v1/blake3/*; do
    if [ $((RANDOM % 2)) -eq 0 ]; then rm -rf "$d"; fi
  done
  kill_at_random 3500 "$ptxbench" import "$work/lb.zip" --store "$imp/artifacts" --manifests "$imp/manifests"
  phase=import seen "$imp/artifacts/v1/tmp" "$imp/manifests" -name '.tmp-*' -o -name '.manifest-*'
done
import_litter=$(total_seen import)
import_corrupt=$(damaged --store "$imp/artifacts")
sleep 11 # leftovers are swept once no writer holds them and they are older than 10 s
"$ptxbench" import "$work/lb.zip" --store "$imp/artifacts" --manifests "$imp/manifests" >>"$log" 2>&1
import_lost=$(problems "$imp/manifests/leaderboard.yaml" --store "$imp/artifacts")
import_after=$(( $(count "$imp/artifacts/v1/tmp" -name '.tmp-*') + $(count "$imp/manifests" -name '.manifest-*') ))

echo "== site build: $kills kills"
site=$work/site
"$ptxbench" site manifests/leaderboard.yaml --store artifacts -o "$site/public" >>"$log" 2>&1
site_missing=0
for _ in $(seq "$kills"); do
  kill_at_random 3000 "$ptxbench" site manifests/leaderboard.yaml --store artifacts -o "$site/public"
  [ -f "$site/public/index.html" ] || site_missing=$((site_missing + 1))
  phase=site seen "$site" -maxdepth 1 -name '.ptxbench-site-*'
done
site_litter=$(total_seen site)
site_litter_mb=$(du -sm "$site" | cut -f1)
sleep 11
"$ptxbench" site manifests/leaderboard.yaml --store artifacts -o "$site/public" >>"$log" 2>&1
site_after=$(count "$site" -maxdepth 1 -name '.ptxbench-site-*')

echo "== generation: $kills kills (cap $cap requests)"
gen=$work/gen
mkdir -p "$gen/canned"
cand=tasks/candidates/simt/gemm
{
  printf 'Here is a tiled SIMT kernel.\n\n```cuda\n'; cat "$cand/kernel.cu"
  printf '```\n\n```yaml\n'; cat "$cand/plan.yaml"; printf '```\n'
} > "$gen/canned/turn-0.md"
for _ in $(seq 400); do echo "slow 1"; done > "$gen/canned/faults.txt"
"$canned_server" "$gen/canned" --port "$port" --count-file "$gen/served" >>"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -f "$gen/served" ] && break; sleep 0.05; done
[ -f "$gen/served" ] || { echo "the canned server did not start (see $log)" >&2; exit 2; }
cat > "$gen/gen.yaml" <<YAML
generate: 1
name: kill-test
tasks: [gemm_n4096_k4096]
archs: [sm_90a]
variants: [1]
replicas: 40
turn_limits: [1]
retry: {max_attempts: 2, base_delay_ms: 10, max_delay_ms: 100}
models:
  - name: canned
    endpoint: "http://127.0.0.1:$port/v1"
    concurrency: 4
    timeout_s: 5
YAML
generate=("$ptxbench" generate "$gen/gen.yaml" --no-eval --out "$gen/out" --store "$gen/artifacts"
  --max-requests "$cap")
for _ in $(seq "$kills"); do
  kill_at_random 3000 "${generate[@]}"
  phase=gen seen "$gen/artifacts/v1/tmp" "$gen/out" -maxdepth 1 -name '.tmp-*' -o -name '.journal-*'
done
gen_litter=$(total_seen gen)
sleep 11
"${generate[@]}" >>"$log" 2>&1 || true # exit 3: capped
sleep 0.1
served=$(cat "$gen/served")
journalled=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spent"]["requests"])' "$gen/out/journal.json")
over=$((served > cap ? served - cap : 0))
gen_lost=$(damaged --store "$gen/artifacts")
# Every record and exchange the journal names is in the store.
gen_dangling=$(python3 - "$gen/out/journal.json" "$gen/artifacts" <<'PY'
import json, os, sys
j = json.load(open(sys.argv[1]))
ds = [t[k] for t in j["turns"].values() for k in ("record_digest", "exchange_digest")]
ds += list(j["trajectories"].values())
print(sum(not os.path.isfile(os.path.join(sys.argv[2], "v1/blake3", d[:2], d[2:4], d)) for d in ds))
PY
)
gen_after=$(( $(count "$gen/artifacts/v1/tmp" -name '.tmp-*') + $(count "$gen/out" -maxdepth 1 -name '.journal-*') ))
turns=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["turns"]))' "$gen/out/journal.json")

summary=$work/summary.txt
cat > "$summary" <<TXT
kill -9 tests, $kills kills per phase, at random points ($(date -u +%Y-%m-%d))
import of manifests/leaderboard.yaml's bundle (316 entries), killed within 0-3.5 s:
  corrupt or malformed objects after the kills:     $import_corrupt (about half the objects were removed before each kill)
  objects lost (closure incomplete after re-import): $import_lost
  litter seen after the kills (temp files, total):  $import_litter
  litter after the next import:                     $import_after
site build of manifests/leaderboard.yaml, killed within 0-3 s:
  output folder missing after a kill:               $site_missing of $kills
  litter seen after the kills (staging folders):    $site_litter (the output's folder held ${site_litter_mb} MB in all)
  litter after the next build:                      $site_after
generation (40 trajectories, --no-eval, --max-requests $cap, canned server answering in 1 s):
  requests the server saw:                          $served (journal counts $journalled; turns recorded $turns)
  requests over the cap:                            $over
  corrupt objects / journal entries not in store:   $gen_lost / $gen_dangling
  litter seen after the kills (temp files, total):  $gen_litter
  litter after the next run:                        $gen_after
TXT
cat "$summary"
lost=$((import_corrupt + import_lost + gen_lost + gen_dangling))
left=$((import_after + site_after + gen_after))
[ "$lost" -eq 0 ] && [ "$left" -eq 0 ] && [ "$over" -eq 0 ] && [ "$served" -le "$journalled" ]
