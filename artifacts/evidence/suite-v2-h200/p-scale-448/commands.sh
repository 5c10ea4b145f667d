set -u
xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
mkdir -p $OUT/b
for t in fp8_mha_with_lse_d128 fp8_mha_with_lse_d128_causal; do
  timeout 60 /tmp/p baseline --task $t --json > $OUT/b/baseline-$t.json 2>$OUT/b/baseline-$t.err
  for w in B2_H3_L77 B1_H2_L200; do
    timeout 60 /tmp/p baseline --task $t --workload $w --iterations 3 --warmup 1 --json >> $OUT/b/baseline-$t-small.json 2>>$OUT/b/baseline-$t.err
  done
done
cd $OUT && tar czf baselines.tgz b && rm -rf b && cd - >/dev/null
pipeline/scripts/device-run.sh /tmp/p tasks/runs/suite-v2-sm90a.yaml .device/v2run-b 300 $OUT
