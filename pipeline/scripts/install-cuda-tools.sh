#!/usr/bin/env bash
# Installs NVIDIA's compiler tools from PyPI (no GPU or driver needed) into one folder and
# prints that folder, a CUDA_HOME with bin/ (nvcc, ptxas, nvdisasm), lib/ (libnvrtc) and include/.
# Pinned to CUDA 13.0 to match the H200 driver we measure on (a newer ptxas accepts PTX the
# driver cannot load). nvdisasm has no 13.0 wheel; the oldest 13.x that exists is used.
# Usage: CUDA_HOME=$(pipeline/scripts/install-cuda-tools.sh [DEST])
set -euo pipefail
dest="${1:-${PTXBENCH_CACHE:-$HOME/.cache/ptxbench}/cuda-13.0}"
root="$dest/nvidia/cu13"
stamp="$dest/.installed-v1"
if [ ! -f "$stamp" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --target "$dest" --upgrade \
    nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-cuda-nvrtc==13.0.88 \
    nvidia-cuda-nvdisasm==13.2.51 >&2
  touch "$stamp"
fi
for f in bin/nvcc bin/ptxas bin/nvdisasm lib/libnvrtc.so.13 include/cuda_bf16.h; do
  [ -e "$root/$f" ] || { echo "install-cuda-tools: $root/$f is missing after install" >&2; exit 1; }
done
echo "$root"
