#!/usr/bin/env bash
# Rebuilds the PTX files in tasks/ that are made by a compiler from committed sources.
#
#   tasks/rebuild-ptx.sh                  rebuild every nvcc-made PTX listed in tasks/ptx-sources.txt
#   tasks/rebuild-ptx.sh --check          rebuild into a temporary folder; fail, naming each file and
#                                         showing the head of its diff, if a committed PTX differs
#                                         (or is missing, or an nvcc-made PTX in tasks/ is not listed)
#   tasks/rebuild-ptx.sh --triton         on a GPU machine with Triton and PyTorch: run each
#                                         tasks/triton/*.py (each checks its kernels on the GPU) and
#                                         write the PTX it emits (and the plan, where the script
#                                         writes one) into tasks/candidates/<kernel name>/
#   tasks/rebuild-ptx.sh --triton --check the same, comparing with the committed files instead
#
# nvcc is the pinned one: $CUDA_HOME/bin/nvcc if CUDA_HOME is set, else the wheels that
# pipeline/scripts/install-cuda-tools.sh installs (CUDA 13.0.88). It runs in the repository root
# on relative paths, without -lineinfo or -G, so the PTX names no machine's folders; the script
# refuses output that does.
#
# Triton's PTX records the absolute path of the script in its debug information, so each script is
# run from a copy in $TRITON_SRC_DIR (default /src, created if needed): the committed PTX names
# /src/<script>.py and no machine's folders.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
triton=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    --triton) triton=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "rebuild-ptx: unknown argument $arg (see --help)" >&2
      exit 2
      ;;
  esac
done

manifest=tasks/ptx-sources.txt
pinned_nvcc="V13.0.88"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failed=0

fail() {
  echo "rebuild-ptx: $*" >&2
  failed=1
}

# Lines of a freshly made file that name a build machine's folders: a debug `.file` other than
# the neutral /src/<script>.py, or any absolute path under a usual top-level folder.
machine_paths() {
  {
    grep -nE '^\s*\.file\s' "$1" | grep -vE '^[0-9]+:\s*\.file\s+[0-9]+\s+"/src/[^/"]+"\s*$'
    grep -nE '(^|[^A-Za-z0-9_.])/(work|root|tmp|home|usr|opt|var|mnt|builds?|github|runner)/' "$1" |
      grep -vE '^[0-9]+:\s*\.file\s'
  } || true
}

# Compare a freshly made file with the committed one (--check) or install it.
deliver() {
  local made="$1" committed="$2" what="$3"
  local paths
  paths="$(machine_paths "$made")"
  if [ -n "$paths" ]; then
    fail "$committed: the $what output names a machine path:"
    echo "$paths" | head -5 >&2
    return
  fi
  if [ "$check" = 1 ]; then
    if [ ! -f "$committed" ]; then
      fail "$committed is missing (rebuild it with tasks/rebuild-ptx.sh${4:-})"
    elif ! cmp -s "$made" "$committed"; then
      fail "$committed differs from what $what makes of its source (rebuild it with tasks/rebuild-ptx.sh${4:-}):"
      diff -u --label "$committed (committed)" --label "$committed (rebuilt)" "$committed" "$made" |
        head -40 >&2 || true
    fi
  else
    mkdir -p "$(dirname "$committed")"
    if [ -f "$committed" ] && cmp -s "$made" "$committed"; then
      echo "unchanged $committed"
    else
      cp "$made" "$committed"
      echo "wrote     $committed"
    fi
  fi
}

if [ "$triton" = 0 ]; then
  if [ -z "${CUDA_HOME:-}" ]; then
    CUDA_HOME="$(pipeline/scripts/install-cuda-tools.sh)"
  fi
  nvcc="$CUDA_HOME/bin/nvcc"
  [ -x "$nvcc" ] || { echo "rebuild-ptx: $nvcc not found (set CUDA_HOME)" >&2; exit 1; }
  if ! "$nvcc" --version | grep -q "$pinned_nvcc"; then
    echo "rebuild-ptx: $nvcc is not the pinned nvcc $pinned_nvcc:" >&2
    "$nvcc" --version >&2
    exit 1
  fi
  listed="$tmp/listed"
  : >"$listed"
  n=0
  while read -r out src rest; do
    case "$out" in '' | '#'*) continue ;; esac
    read -ra flags <<<"${rest:-}"
    n=$((n + 1))
    echo "$out" >>"$listed"
    if [ -z "${src:-}" ] || [ ! -f "$src" ]; then
      fail "$manifest: $out: source '${src:-}' does not exist"
      continue
    fi
    # shellcheck disable=SC2054 # the comma belongs to nvcc's -gencode value
    arch=(-gencode arch=compute_90a,code=sm_90a)
    for f in "${flags[@]}"; do
      case "$f" in -gencode* | -arch* | --gpu-architecture* | --generate-code*) arch=() ;; esac
      case "$f" in -lineinfo | --generate-line-info | -G | --device-debug)
        fail "$manifest: $out: $f writes source paths into the PTX" ;;
      esac
    done
    made="$tmp/ptx/$n.ptx"
    mkdir -p "$tmp/ptx"
    if ! "$nvcc" -ptx -std=c++17 "${arch[@]}" "${flags[@]}" "$src" -o "$made" 2>"$tmp/log"; then
      fail "$out: nvcc failed on $src:"
      head -40 "$tmp/log" >&2
      continue
    fi
    deliver "$made" "$out" "nvcc"
  done <"$manifest"
  [ "$n" -gt 0 ] || fail "$manifest lists no PTX"
  # Every nvcc-made PTX in tasks/ (committed or not ignored) must be listed, or it could drift
  # from its source unnoticed.
  while IFS= read -r -d '' f; do
    if [ -f "$f" ] && head -5 "$f" | grep -q "Generated by NVIDIA NVVM Compiler" &&
      ! grep -qxF "$f" "$listed"; then
      fail "$f was made by nvcc but is not listed in $manifest"
    fi
  done < <(git ls-files -z --cached --others --exclude-standard -- 'tasks/*.ptx' | sort -zu)
  what="nvcc-made PTX files ($n listed)"
else
  src_dir="${TRITON_SRC_DIR:-/src}"
  mkdir -p "$src_dir"
  n=0
  for script in tasks/triton/*.py; do
    name="$(basename "$script" .py)"
    cp "$script" "$src_dir/$name.py"
    out="$tmp/triton/$name"
    mkdir -p "$out"
    echo "== $script (run as $src_dir/$name.py)"
    if ! (cd "$src_dir" && python3 "$name.py" "$out"); then
      fail "$script failed (see above)"
      continue
    fi
    for ptx in "$out"/*.ptx; do
      [ -e "$ptx" ] || { fail "$script wrote no PTX"; break; }
      kernel="$(basename "$ptx" .ptx)"
      n=$((n + 1))
      deliver "$ptx" "tasks/candidates/$kernel/kernel.ptx" "Triton" " --triton"
      if [ -f "$out/$kernel.plan.yaml" ]; then
        deliver "$out/$kernel.plan.yaml" "tasks/candidates/$kernel/plan.yaml" "Triton" " --triton"
      fi
    done
  done
  what="Triton-made PTX files ($n)"
fi

if [ "$failed" != 0 ]; then
  echo "rebuild-ptx: FAILED" >&2
  exit 1
fi
if [ "$check" = 1 ]; then
  echo "rebuild-ptx: the committed $what match their sources"
else
  echo "rebuild-ptx: rebuilt the $what"
fi
