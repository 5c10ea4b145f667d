"""Throughput of stored runs (issue 46's benchmark): evaluations per hour of each run, from its
wall time, and where a worker's time went, from the records' stage clocks.

Usage: throughput_table.py LABEL=RUN_DIGEST=WALL_SECONDS ... [--store STORE]
WALL_SECONDS is the run's whole wall time (pipeline/scripts/device-throughput.sh measures it
around `ptxbench run`), so evaluations per hour count everything: the static check, ptxas,
starting workers, the GPU work, the evidence and storing. The other columns are means per
evaluation, in seconds, from each record's clock (`outcome.seconds`), in the order an
evaluation meets them:

- `compile`: ptxas for the PTX and its counted copy on a CPU thread, ahead of the GPU (off the
  GPU's path unless the GPU waited for it: see `idle`);
- `idle`: the GPU's thread waiting for this evaluation to be prepared (the CPU's share of the
  GPU's idle time);
- `start`: the GPU's thread waiting for a worker to be ready (none when a spare was);
- `setup`: the worker opening the GPU and loading the harness (a spare does it while the
  previous evaluation runs, so it is not in the wall time unless `start` shows it);
- `jit`: parsing and loading the cubins (or compiling in the worker, with --cold-workers);
- `correctness`: every workload's plain trials; `evidence`: the counted copy's trial of every
  workload (the counted copy's load is in `jit`);
- `wait`: a worker ready to time waiting for the lane to be quiet (spares ready, old workers
  gone); `timing`: the timed pairs;
- `hand-over`: the rest of the GPU thread's time in the lane (sending the request, the worker
  writing its outcome, reading it back, starting the next spares);
- `rest`: the wall time per evaluation not in any of these (the run's static check, the first
  worker's start, the last records stored, shared out). Records made before a lap existed show
  0 for it, and its time falls into `rest`.

`GPU busy` is (jit + correctness + evidence + timing) / (wall time per evaluation): the share of
the run the GPU spent on the candidates' work (one GPU). When correctness-only evaluations
share the GPU (`PTXBENCH_UNTIMED_AT_ONCE` above 1), the laps of evaluations under way at once
overlap: `GPU busy` then counts seconds of candidates' work per second and can pass 100%, and
`rest` can be negative.
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
    return {
        "waiting": "wait",
        "parse": "jit",
        "worker": "start",
        "GPU": "idle",
        "compile": "compile",
    }.get(first, first)


def main(args):
    store = "artifacts"
    if "--store" in args:
        i = args.index("--store")
        store = args[i + 1]
        args = args[:i] + args[i + 2:]
    cats = ["compile", "idle", "start", "setup", "jit", "correctness", "evidence", "wait", "timing", "hand-over"]
    busy = ["jit", "correctness", "evidence", "timing"]
    print("| run | evaluations | wall s | s per evaluation | per H200-hour | " + " | ".join(cats) + " | rest | GPU busy |")
    print("|---|---|---|---|---|" + "---|" * len(cats) + "---|---|")
    for arg in args:
        label, digest, wall = arg.split("=")
        wall = float(wall)
        run = load(store, digest)
        digests = run["record_digests"]
        sums = collections.Counter()
        for d in digests:
            for stage, s in load(store, d)["outcome"].get("seconds") or []:
                sums[category(stage)] += s
        unknown = set(sums) - set(cats)
        if unknown:
            sys.exit(f"{label}: laps of no column: {sorted(unknown)}")
        n = len(digests)
        per = wall / n
        on_lane = sum(v for k, v in sums.items() if k not in ("compile", "setup")) / n
        parts = " | ".join(f"{sums[c] / n:.3f}" for c in cats)
        gpu = sum(sums[c] for c in busy) / n / per
        print(f"| {label} | {n} | {wall:.1f} | {per:.3f} | {3600 / per:.0f} | {parts} | {per - on_lane:.3f} | {gpu:.0%} |")


if __name__ == "__main__":
    main(sys.argv[1:])
