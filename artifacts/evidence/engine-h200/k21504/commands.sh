xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
mkdir -p $OUT/inv
for i in 1 2 3 4 5 6; do /tmp/p eval tasks/candidates/triton_gemm_tma --task gemm_n5376_k21504 --workload M8828 --json > $OUT/inv/tma-$i.json 2>$OUT/inv/tma-$i.err; done
for i in 1 2 3; do /tmp/p eval tasks/candidates/triton_gemm_ptr --task gemm_n5376_k21504 --workload M8828 --json > $OUT/inv/ptr-$i.json 2>$OUT/inv/ptr-$i.err; done
for i in 1 2; do /tmp/p eval tasks/reference/wgmma_gemm --task gemm_n5376_k21504 --workload M8828 --json > $OUT/inv/ref-$i.json 2>$OUT/inv/ref-$i.err; done
for i in 1 2 3; do /tmp/p eval tasks/candidates/triton_gemm_tma --task gemm_n5376_k21504 --workload M8828 --no-timing --json > $OUT/inv/tmanotime-$i.json 2>$OUT/inv/tmanotime-$i.err; done
cd $OUT && tar czf inv.tgz inv && rm -rf inv
