#!/usr/bin/env bash
# README's test command: installs what the tests need on a fresh machine, then runs every test
# of the workspace, none of them skipped.
#   - NVIDIA's compiler tools (ptxas, nvcc, nvdisasm, NVRTC, headers) from PyPI wheels into
#     ~/.cache/ptxbench/cuda-13.0 (no GPU needed; reused when there), as CUDA_HOME;
#   - a Redis server on a free loopback port for the evaluation service's queue tests (Debian's
#     redis-server, installed with apt when missing), stopped when the tests end.
# Tests that need a tool fail, never skip, under this command (PTXBENCH_REQUIRE_CUDA_TOOLS=1,
# PTXBENCH_REQUIRE_REDIS=1). Arguments go to `cargo test` (e.g. `-- issue_56`).
# The build folder is CARGO_TARGET_DIR, else ~/.cache/ptxbench/target (reused between clones).
set -euo pipefail
cd "$(dirname "$0")/../.."
cache="${PTXBENCH_CACHE:-$HOME/.cache/ptxbench}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}"

echo "== CUDA compiler tools (PyPI wheels, no GPU needed)" >&2
CUDA_HOME="$(pipeline/scripts/install-cuda-tools.sh "$cache/cuda-13.0")"
export CUDA_HOME PTXBENCH_REQUIRE_CUDA_TOOLS=1

echo "== Redis for the evaluation service's queue tests" >&2
if ! command -v redis-server >/dev/null 2>&1; then
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq
  $sudo_ apt-get install -y -qq redis-server >/dev/null
fi
redis_dir="$(mktemp -d -t ptxbench-redis-XXXXXX)"
redis_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --dir "$redis_dir" \
  --daemonize yes --pidfile "$redis_dir/redis.pid" >/dev/null
trap 'kill "$(cat "$redis_dir/redis.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$redis_dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
export PTXBENCH_TEST_REDIS="redis://127.0.0.1:$redis_port" PTXBENCH_REQUIRE_REDIS=1

echo "== cargo test --workspace" >&2
cargo test --workspace --locked "$@"
