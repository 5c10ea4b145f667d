#!/usr/bin/env python3
"""How repeatable each estimator of a speedup is across processes (issue 46), from the raw
timed pairs that `device-repeatability.sh` keeps (PTXBENCH_PAIRS_OUT): OUT_DIR/pairs/KERNEL-I.jsonl,
one file per process, one line per timed workload.

For each kernel and workload, each process's pairs give a speedup by several estimators:
`median` (the median of per-pair ratios: the protocol's), `mean log` (the geometric mean of the
ratios), `iq mean` (the mean of the ratios between their quartiles) and `mean`. The table gives,
per estimator, the spread of the processes' speedups ((max - min) / median, the issue's measure),
their standard deviation of ln(speedup), and the candidate's own median time's spread, so that a
kernel whose time takes one of two states shows as such. A bimodal kernel moves the median by a
whole mode when the share of its fast pairs crosses one half; means move with the share.

Usage: pair_estimators.py OUT_DIR [OUT_DIR ...]
"""

import collections
import glob
import json
import math
import os
import statistics
import sys


def iq_mean(v):
    s = sorted(v)
    n = len(s)
    lo, hi = n // 4, n - n // 4
    part = s[lo:hi] or s
    return sum(part) / len(part)


ESTIMATORS = {
    "median": statistics.median,
    "mean log": lambda r: math.exp(sum(math.log(x) for x in r) / len(r)),
    "iq mean": iq_mean,
    "mean": lambda r: sum(r) / len(r),
}


def spread(v):
    return (max(v) - min(v)) / statistics.median(v)


def main(dirs):
    runs = collections.defaultdict(list)  # (kernel, task, workload) -> [(process, line)]
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "pairs", "*.jsonl"))):
            kernel = os.path.basename(path).rsplit("-", 1)[0]
            with open(path) as f:
                for line in f:
                    p = json.loads(line)
                    runs[(kernel, p["task"], p["workload"])].append((path, p))
    if not runs:
        sys.exit(f"no pairs under {dirs}/pairs (was PTXBENCH_PAIRS_OUT set?)")
    print("| kernel | task | workload | processes | pairs (min-max) | estimator | speedups (min-max) | spread | sd of ln |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (kernel, task, workload), procs in sorted(runs.items()):
        ns = [len(p["candidate_ms"]) for _, p in procs]
        ratios = [
            [b / c for c, b in zip(p["candidate_ms"], p["baseline_ms"]) if c > 0 and b > 0]
            for _, p in procs
        ]
        rows = dict(ESTIMATORS)
        rows["candidate median ms"] = None
        for name, f in rows.items():
            if f is None:
                v = [statistics.median(p["candidate_ms"]) for _, p in procs]
            else:
                v = [f(r) for r in ratios if r]
            sd = statistics.stdev([math.log(x) for x in v]) if len(v) > 1 else 0.0
            print(
                f"| {kernel} | {task} | {workload} | {len(v)} | {min(ns)}-{max(ns)} | {name} | "
                f"{min(v):.4f}-{max(v):.4f} | {spread(v):.2%} | {sd:.5f} |"
            )


if __name__ == "__main__":
    main(sys.argv[1:] or ["."])
