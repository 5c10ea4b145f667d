"""Cross-check of the per-site counters against Nsight Compute's per-SASS-instruction counts.

Usage: python3 ncu_crosscheck.py NCU_SOURCE_CSV EVAL_JSON
NCU_SOURCE_CSV: `ncu --import R --page source --print-source sass --csv` of one launch sequence
(pipeline/scripts/ncu-evidence.sh writes it); EVAL_JSON: `ptxbench eval --json` of the same
candidate and workload (its `dynamic.sites` hold the spliced per-site counts).

Compares executed wgmma work (ncu: warp-level HGMMA executions / 4 warps per warpgroup, times
2*M*N*K of the SASS shape; ptxbench: thread-level site counts / 128, times the PTX shape) and
TMA loads (ncu: UTMALDG executed by threads with a true predicate; ptxbench: load-site counts).
"""

import csv
import json
import re
import sys


def ncu_rows(path):
    text = open(path, encoding="utf-8", errors="replace").read().splitlines()
    start = next(i for i, line in enumerate(text) if '"Source"' in line or line.startswith("Address"))
    return list(csv.DictReader(text[start:]))


def number(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return 0.0


def main(ncu_csv, eval_json):
    rows = ncu_rows(ncu_csv)
    warp_col = next(k for k in rows[0] if k.lower() in ("inst_executed", "instructions executed", "warp instructions executed"))
    thread_col = next((k for k in rows[0] if k.lower() in ("thread_inst_executed_true", "predicated-on thread instructions executed")), None)
    ncu_flops = 0.0
    ncu_hgmma = 0.0
    ncu_tma = 0.0
    ncu_tma_warps = 0.0
    for r in rows:
        src = r.get("Source", "")
        m = re.search(r"GMMA\.(\d+)x(\d+)x(\d+)", src)
        if m:
            warps = number(r[warp_col])
            ncu_hgmma += warps
            ncu_flops += warps / 4 * 2 * int(m.group(1)) * int(m.group(2)) * int(m.group(3))
        if "UTMALDG" in src:
            ncu_tma += number(r[thread_col]) if thread_col else number(r[warp_col])
            ncu_tma_warps += number(r[warp_col])
    o = json.load(open(eval_json))
    d = o.get("dynamic") or {}
    ours_flops = 0.0
    ours_tma = 0
    for s in d.get("sites", []):
        if s["family"] == "wgmma" and s.get("flops_per_execution"):
            ours_flops += s["count"] / s["threads_per_execution"] * s["flops_per_execution"]
        if s["family"] == "tma" and s.get("direction") == "load":
            ours_tma += s["count"]
    ratio = lambda a, b: f"{a / b:.6f}" if b else "n/a"
    print(f"workload {d.get('workload')}: mma_flop_share {d.get('mma_flop_share')}, tma_byte_share {d.get('tma_byte_share')}")
    print(f"wgmma FLOPs   ptx-splice {ours_flops:.6e}   ncu {ncu_flops:.6e} ({ncu_hgmma:.0f} warp-level HGMMA)   ratio {ratio(ours_flops, ncu_flops)}")
    # The counters count PTX-level issues with a true guard (one per copy). ptxas lowers a copy
    # either to a UTMALDG with one true lane (elect.sync: ncu's true-thread count matches) or
    # to a warp-uniform UTMALDG with all 32 lanes true (true threads / 32 matches); ncu's
    # warp-level count also holds warps whose predicate was false.
    print(f"TMA loads     ptx-splice {ours_tma}   ncu UTMALDG: {ncu_tma:.0f} true threads (/32 = {ncu_tma / 32:.0f}), {ncu_tma_warps:.0f} warps issued   ratio to true threads {ratio(ours_tma, ncu_tma)}, to true threads / 32 {ratio(ours_tma, ncu_tma / 32)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
