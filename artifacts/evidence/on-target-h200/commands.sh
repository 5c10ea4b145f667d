set -u
xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
mkdir -p $OUT/zoo $OUT/v2 $OUT/ref
pipeline/scripts/device-run.sh /tmp/p tasks/runs/zoo-sm90a.yaml .device/zoorun 170 $OUT/zoo
pipeline/scripts/device-run.sh /tmp/p tasks/runs/suite-v2-sm90a.yaml .device/v2run 100 $OUT/v2
pipeline/scripts/device-run.sh /tmp/p tasks/runs/reference-sm90a.yaml .device/refrun 290 $OUT/ref
set -u
xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
mkdir -p $OUT/engine
pipeline/scripts/device-run.sh /tmp/p tasks/runs/engine-sm90a.yaml .device/enginerun 500 $OUT/engine
