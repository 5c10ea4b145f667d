#!/usr/bin/env bash
# The leaderboard in a real browser: serves a built site from a sub-path on 127.0.0.1 (as
# GitHub Pages serves a project site), loads pages in headless Chromium with every host but
# 127.0.0.1 unresolvable, runs the page script's self-check (#selftest: sorting, filtering, no
# script error), fails on any console error or any request the server could not answer, and
# takes screenshots.
#
#   site/tests/browser.sh [SITE_DIR [SHOT_DIR]]
#
# SITE_DIR: a site built by `ptxbench site` (default: build manifests/leaderboard.yaml with
# $PTXBENCH, default `target/release/ptxbench` under $CARGO_TARGET_DIR or ./target).
# SHOT_DIR: where the screenshots go (default: a new temporary folder; printed at the end).
# Needs chromium (Debian: apt-get install -y chromium) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."

browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
  echo "browser test: no chromium (Debian: apt-get install -y chromium)" >&2
  exit 2
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

site="${1:-}"
if [ -z "$site" ]; then
  bin="${PTXBENCH:-${CARGO_TARGET_DIR:-target}/release/ptxbench}"
  if [ ! -x "$bin" ]; then
    echo "browser test: no $bin; build it (cargo build --release -p ptxbench) or set PTXBENCH" >&2
    exit 2
  fi
  site="$work/public"
  "$bin" site manifests/leaderboard.yaml -o "$site"
fi
shots="${2:-$(mktemp -d -t ptxbench-shots-XXXXXX)}"
mkdir -p "$shots"

# Serve the site under /ptxbench/, like https://<user>.github.io/ptxbench/.
mkdir -p "$work/root"
ln -s "$(cd "$site" && pwd)" "$work/root/ptxbench"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/root" >"$work/server.log" 2>&1 &
server_pid=$!
base="http://127.0.0.1:$port/ptxbench"
for _ in $(seq 50); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "$base/index.html" 2>/dev/null; then
    break
  fi
  sleep 0.2
done

chrome() {
  # A fresh profile per run; nothing but 127.0.0.1 resolves, so any outside request fails
  # loudly (as a console error) instead of leaving the machine.
  local profile
  profile="$(mktemp -d -p "$work")"
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-extensions --disable-default-apps --mute-audio \
    --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@"
}

# (sed, not head: head exits early and pipefail turns the SIGPIPE of sort into a failure.)
record="$(cd "$site" && find record -name '*.html' | sort | sed -n 1p)"
entry="$(cd "$site" && find entry -name '*.html' | sort | sed -n 1p)"
arch="$(cd "$site" && find arch -name '*.html' | sort | sed -n 1p)"
failed=0
check() { # page, hash [window width]
  local page="$1" hash="$2" width="${3:-1400}" name
  name="$(echo "$page-$width" | tr '/.' '__')"
  # A 1400 px desktop window: the self-check also finds table columns cut off at that width.
  # At 400 px (a phone) it checks that nothing is squeezed or cut off (issue 44, item 8).
  chrome --window-size="$width",1000 --virtual-time-budget=5000 --dump-dom "$base/$page#$hash" >"$work/$name.dom" 2>"$work/$name.log" || true
  local result
  result="$(sed -n '/<pre id="selftest-result">/,/<\/pre>/p' "$work/$name.dom")"
  if ! grep -q "SELFTEST PASS" <<<"$result"; then
    echo "FAIL $page ($width px): self-check did not pass"; printf '    %s\n' "$result"; failed=1
  else
    echo "ok   $page ($width px): $(grep -c '^ok ' <<<"$result") checks passed"
  fi
  if grep -E ':(ERROR|WARNING):CONSOLE|Uncaught|ERR_NAME_NOT_RESOLVED' "$work/$name.log" >/dev/null; then
    echo "FAIL $page: console errors:"; grep -E 'CONSOLE|Uncaught|ERR_' "$work/$name.log" | sed 's/^/    /'; failed=1
  fi
}
check index.html selftest
# Every page with leaderboard or per-task tables: one entry's long task ids or intervals can
# widen its table past the window while the first page in the list fits.
while IFS= read -r page; do
  check "$page" selftest
done < <(cd "$site" && find arch entry task -name '*.html' | sort)
check "$record" selftest-optional
# The reader checks (issue 44): records that were not evaluated never look measured (item 1),
# every page leads to the install steps, the store and the run's bundle (item 6), and on a
# 400 px screen nothing is squeezed or cut off (item 8).
trajectory="$(cd "$site" && { find trajectory -name '*.html' 2>/dev/null || true; } | sort | sed -n 1p)"
run="$(cd "$site" && { find run -name '*.html' 2>/dev/null || true; } | sort | sed -n 1p)"
unevaluated="$(cd "$site" && grep -l 'data-evaluated="false"' record/*.html 2>/dev/null | sort | sed -n 1p || true)"
for page in "$record" $trajectory $run $unevaluated data.html; do check "$page" selftest-optional; done
task="$(cd "$site" && find task -name '*.html' | sort | sed -n 1p)"
# Issue 59, item 9: the per-task tables of entry and task pages and the methodology page too.
for page in index.html "$arch" "$entry" "$task" methodology.html data.html "$record" $trajectory $unevaluated; do check "$page" selftest-optional 400; done
if [ "${REQUIRE_UNEVALUATED:-0}" = 1 ] && [ -z "$unevaluated" ]; then
  echo "FAIL: REQUIRE_UNEVALUATED is set and the site has no record that was not evaluated"; failed=1
fi
# Issue 59, item 10: a model whose answers are not all evaluated (site/tests/no-eval-site.sh)
# is listed as such on the overview and is nowhere its best measured model.
if [ "${REQUIRE_UNEVALUATED:-0}" = 1 ]; then
  if ! grep -q 'class="pending-row"' "$site/index.html"; then
    echo "FAIL: the overview does not list the model whose answers were not evaluated"; failed=1
  fi
  if grep -q 'Best measured here' "$site/index.html"; then
    echo "FAIL: the overview names a model that was not evaluated its best measured"; failed=1
  fi
fi

# Every request the pages made was answered (no 404: a broken asset or link target).
if grep -E '" (4|5)[0-9][0-9] ' "$work/server.log"; then
  echo "FAIL: the server answered errors (above)"; failed=1
fi

specs=("index:index.html:1400,1000" "index-narrow:index.html:400,1400" "arch:$arch:1400,2600" "record:$record:1400,2200"
  "entry:$entry:1400,1400" "methodology:methodology.html:1400,1800" "data:data.html:1400,2400")
# A site of measured runs alone has no trajectory (they come from `generate`).
if [ -n "$trajectory" ]; then specs+=("trajectory:$trajectory:1400,2400" "trajectory-narrow:$trajectory:400,2400"); fi
specs+=("record-narrow:$record:400,2400" "harness:harness-tests.html:1400,2000")
for spec in "${specs[@]}"; do
  IFS=: read -r name page size <<<"$spec"
  shoot() {
    chrome --hide-scrollbars --window-size="$size" --virtual-time-budget=3000 \
      --screenshot="$shots/$name.png" "$base/$page" >"$work/shot-$name.log" 2>&1
  }
  # A screenshot proves nothing about the page (the checks above do), and headless Chromium
  # now and then exits non-zero on a loaded machine: one retry, then the failure with its log.
  if ! shoot; then
    echo "note: the screenshot of $page failed once; retrying"
    shoot || { echo "FAIL: screenshot of $page:"; tail -n 5 "$work/shot-$name.log"; failed=1; }
  fi
done
echo "screenshots: $shots"
if [ "$failed" -ne 0 ]; then
  echo "browser test: FAILED"
  exit 1
fi
echo "browser test: passed"
