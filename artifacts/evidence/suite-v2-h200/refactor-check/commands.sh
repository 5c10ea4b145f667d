xz -dc .device/ptxbench.xz > /tmp/p && chmod +x /tmp/p
for tw in "mha_with_lse_d128 B4_H48_S4096" "mha_with_lse_d128_causal B4_H48_S4096" "gqa_paged_decode_h32_kv8_d128_ps1 B64_T59337" "fp8_mha_with_lse_d128_causal B1_H2_L200"; do
  set -- $tw
  timeout 60 /tmp/p baseline --task $1 --workload $2 --iterations 10 --json 2>&1 | python3 -c "
import sys,json
for l in sys.stdin:
  try: d=json.loads(l)
  except Exception: print(l.strip()); continue
  r=d['run']; print(d['task'], d['workload'], round(r['stats']['median_ms'],4), [(c['output'], c['passed'], c['comparison']['violations']) for c in r['check']])"
done
