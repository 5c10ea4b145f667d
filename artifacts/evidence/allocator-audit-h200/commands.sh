set -u
xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
mkdir -p $OUT/audit
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $OUT/audit/gpu.txt 2>&1
for r in 4fa37f64c03b d02c3db3b05e 019d0113a5bf dfb565bff949; do
  s=$(date +%s)
  /tmp/p audit $r > $OUT/audit/$r.txt 2>&1
  echo "exit $? after $(( $(date +%s) - s )) s" >> $OUT/audit/$r.txt
done
tail -n 40 $OUT/audit/*.txt
