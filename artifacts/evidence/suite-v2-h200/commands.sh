set -u
xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
mkdir -p $OUT/b
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/b/gpu.txt
for t in gqa_paged_decode_h32_kv8_d128_ps1 fp8_mha_with_lse_d128 fp8_mha_with_lse_d128_causal; do
  timeout 60 /tmp/p baseline --task $t --json > $OUT/b/baseline-$t.json 2>$OUT/b/baseline-$t.err
done
cd $OUT && tar czf baselines.tgz b && rm -rf b && cd - >/dev/null
pipeline/scripts/device-run.sh /tmp/p tasks/runs/suite-v2-sm90a.yaml .device/v2run 380 $OUT
