xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
mkdir -p $OUT/k
for i in 1 2 3 4 5; do
  for c in triton_gemm_tma triton_gemm_ptr; do
    /tmp/p eval tasks/candidates/$c --task gemm_n5376_k21504 --workload M8828 --json > $OUT/k/$c-$i.json 2>$OUT/k/$c-$i.err
  done
done
cd $OUT && tar czf k.tgz k && rm -rf k
