xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
for t in fp8_mha_with_lse_d128 fp8_mha_with_lse_d128_causal; do
  for w in B1_H1_L1 B2_H3_L77 B1_H2_L200; do
    timeout 60 /tmp/p baseline --task $t --workload $w --iterations 3 --warmup 1 --json 2>&1 | python3 -c "
import sys,json
for l in sys.stdin:
  try: d=json.loads(l)
  except Exception: print(l.strip()); continue
  print(d['task'], d['workload'], [(c['output'], c['passed'], c['comparison']['violations'], c['comparison']['elements'], c['comparison']['first_violation'], round(c['comparison']['max_abs_error'],3), round(c['comparison']['relative_l2'],4)) for c in d['run']['check']])"
  done
done
