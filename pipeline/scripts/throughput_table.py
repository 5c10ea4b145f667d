"""Throughput of a stored run (issue 46's benchmark): evaluations per hour per evaluation name
and where the worker's time went, from the records' stage clocks.

Usage: python3 throughput_table.py RUN_DIGEST WALL_SECONDS [STORE]
WALL_SECONDS is the run's wall time (device-run.sh's summary: "exit 0 after N s"). The stage
clocks cover the GPU worker (setup, JIT, correctness with the counted copy, timing); the rest
of the wall (the static check with NVRTC and ptxas, the worker's start, SASS evidence, storing)
is shared out per evaluation, as every evaluation pays it alike.
"""

import collections
import json
import os
import sys


def load(store, digest):
    with open(os.path.join(store, "v1", "blake3", digest[:2], digest[2:4], digest)) as f:
        return json.load(f)


def category(stage):
    return stage.split(" ")[0]


def main(run_digest, wall, store):
    run = load(store, run_digest)
    digests = run["record_digests"]
    groups = collections.defaultdict(lambda: collections.Counter())
    counts = collections.Counter()
    for d in digests:
        rec = load(store, d)
        name = rec.get("evaluation") or rec["entry"]
        counts[name] += 1
        for stage, s in rec["outcome"].get("seconds") or []:
            groups[name][category(stage)] += s
    worker = sum(sum(g.values()) for g in groups.values())
    n = sum(counts.values())
    rest = max(wall - worker, 0.0) / n
    cats = ["setup", "jit", "correctness", "timing"]
    print("| evaluations | n | per evaluation (s) | per H200-hour | worker setup | JIT | correctness + counted copy | timing | outside the worker (static check, evidence, storing) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sorted(counts):
        k = counts[name]
        per = (sum(groups[name].values()) + rest * k) / k
        parts = " | ".join(f"{groups[name][c] / k:.2f}" for c in cats)
        print(f"| {name} | {k} | {per:.2f} | {3600 / per:.0f} | {parts} | {rest:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "artifacts")
