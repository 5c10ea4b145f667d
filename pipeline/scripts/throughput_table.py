"""Throughput of stored runs (issue 46's benchmark): evaluations per hour of each run, from its
wall time, and where a worker's time went, from the records' stage clocks.

Usage: throughput_table.py LABEL=RUN_DIGEST=WALL_SECONDS ... [--store STORE]
WALL_SECONDS is the run's whole wall time (pipeline/scripts/device-throughput.sh measures it
around `ptxbench run`), so evaluations per hour count everything: the static check, ptxas,
starting workers, the GPU work, the evidence and storing. The stage columns are means per
evaluation from the worker's clocks: `start` (the GPU's lane waiting for a worker to be ready:
none when a spare was), `setup` (opening the GPU and loading the harness; a spare worker does it
while the previous evaluation runs), `jit` (loading the cubins, or compiling in
the worker with --cold-workers), `correctness` (every workload's trials, the counted copy's
included), `wait` (a worker ready to time waiting for the next one to finish starting), and
`timing`. `lane` is the wall time per evaluation minus `start` and the worker's own stages after
setup: the hand-over, the run's static check and publishing, shared out.
"""

import collections
import json
import os
import sys


def load(store, digest):
    with open(os.path.join(store, "v1", "blake3", digest[:2], digest[2:4], digest)) as f:
        return json.load(f)


def category(stage):
    first = stage.split(" ")[0]
    return {"waiting": "wait", "parse": "jit", "worker": "start"}.get(first, first)


def main(args):
    store = "artifacts"
    if "--store" in args:
        i = args.index("--store")
        store = args[i + 1]
        args = args[:i] + args[i + 2:]
    cats = ["start", "setup", "jit", "correctness", "wait", "timing"]
    print("| run | evaluations | wall s | s per evaluation | per H200-hour | " + " | ".join(cats) + " | lane |")
    print("|---|---|---|---|---|" + "---|" * len(cats) + "---|")
    for arg in args:
        label, digest, wall = arg.split("=")
        wall = float(wall)
        run = load(store, digest)
        digests = run["record_digests"]
        sums = collections.Counter()
        for d in digests:
            for stage, s in load(store, d)["outcome"].get("seconds") or []:
                sums[category(stage)] += s
        n = len(digests)
        per = wall / n
        after_setup = sum(v for k, v in sums.items() if k != "setup") / n
        parts = " | ".join(f"{sums[c] / n:.3f}" for c in cats)
        print(f"| {label} | {n} | {wall:.1f} | {per:.3f} | {3600 / per:.0f} | {parts} | {per - after_setup:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
