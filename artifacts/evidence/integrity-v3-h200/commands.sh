# On one H200 (gpu.txt), with the release binary carried as .device-bin/ptxbench.xz.
set -u
xz -dc .device-bin/ptxbench.xz > /tmp/p && chmod +x /tmp/p
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT/zoo $OUT/v2 $OUT/ref $OUT/engine
# Call 1 (its zoo and suite-v2 runs discarded, see README.md):
pipeline/scripts/device-run.sh /tmp/p tasks/runs/reference-sm90a.yaml /tmp/r/ref 330 $OUT/ref
# Call 2:
pipeline/scripts/device-run.sh /tmp/p tasks/runs/zoo-sm90a.yaml /tmp/r/zoo 110 $OUT/zoo
pipeline/scripts/device-run.sh /tmp/p tasks/runs/suite-v2-sm90a.yaml /tmp/r/v2 110 $OUT/v2
pipeline/scripts/device-run.sh /tmp/p tasks/runs/engine-sm90a.yaml /tmp/r/engine 360 $OUT/engine
