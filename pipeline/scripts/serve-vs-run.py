#!/usr/bin/env python3
"""Evaluations per hour through `ptxbench serve` against `ptxbench run` on the same pairs (GPU).

1. `ptxbench run LIST --seed SEED [--shard I/N]` into a scratch store, timed.
2. `ptxbench serve` (embedded queue, one worker per GPU) on another scratch store; every pair
   `run` recorded is submitted (its PTX, plan, task, seed, workloads; `fresh`), timed from the
   first submission to the last result.
Prints a Markdown table (pairs, seconds, evaluations per hour, the ratio, and how many pairs got
the same verdict both ways) and writes the two stores' records to OUT/pairs.json.

    pipeline/scripts/serve-vs-run.py --ptxbench target/release/ptxbench \\
        --list tasks/runs/engine-sm90a.yaml --shard 0/2 --out out
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ptxbench_client import Client  # noqa: E402


def show(exe, store, digest):
    return subprocess.run(
        [exe, "show", "--raw", digest, "--store", store], check=True, capture_output=True
    ).stdout


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ptxbench", required=True)
    p.add_argument("--list", required=True)
    p.add_argument("--shard")
    p.add_argument("--seed", type=int, default=20261204)
    p.add_argument("--out", default="out")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ptxbench-serve-vs-run-")
    run_store, serve_store = os.path.join(work, "run-store"), os.path.join(work, "serve-store")
    run_dir = os.path.join(work, "run")

    cmd = [a.ptxbench, "run", a.list, "--store", run_store, "--out", run_dir, "--seed", str(a.seed)]
    if a.shard:
        cmd += ["--shard", a.shard]
    t = time.monotonic()
    with open(os.path.join(a.out, "run-stdout.txt"), "w") as so, open(os.path.join(a.out, "run-stderr.txt"), "w") as se:
        rc = subprocess.run(cmd, stdout=so, stderr=se).returncode
    run_s = time.monotonic() - t
    index = json.load(open(os.path.join(run_dir, "index.json")))
    pairs = []
    for digest in index["records"].values():
        r = json.loads(show(a.ptxbench, run_store, digest))
        if not r.get("ptx_digest"):
            continue
        pairs.append(
            {
                "record": digest,
                "verdict": r["verdict"],
                "sub": {
                    "task": r["task"],
                    "arch": r["arch"],
                    "kernel": show(a.ptxbench, run_store, r["ptx_digest"]).decode(),
                    "plan": show(a.ptxbench, run_store, r["plan_digest"]).decode(),
                    "seed": r["seed"],
                    "workloads": r.get("workloads_selected") or [],
                    "correctness_only": r.get("correctness_only", False),
                    "fresh": True,
                },
            }
        )

    server = subprocess.Popen(
        [a.ptxbench, "serve", "--store", serve_store, "--bind", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True
    )
    line = server.stderr.readline()
    url = next(w for w in line.split() if w.startswith("http://"))
    log = open(os.path.join(a.out, "serve-stderr.txt"), "w")
    log.write(line)
    threading.Thread(target=lambda: [log.write(x) for x in server.stderr], daemon=True).start()
    client = Client(url, timeout=3 * 3600)
    t = time.monotonic()
    ids = client.submit_many([q["sub"] for q in pairs])
    results = [client.wait(i) for i in ids]
    serve_s = time.monotonic() - t
    server.terminate()
    server.wait()

    same = sum(1 for q, r in zip(pairs, results) if q["verdict"] == r.verdict)
    # The workers' own seconds (their stage clocks), to tell slower evaluations from idle GPUs.
    def worker_s(store, digest):
        rec = json.loads(show(a.ptxbench, store, digest))
        return sum(s for _, s in rec["outcome"].get("seconds") or [])

    run_worker = sum(worker_s(run_store, q["record"]) for q in pairs)
    serve_worker = sum(worker_s(serve_store, r.record_digest) for r in results)
    n = len(pairs)
    per_hour = lambda s: n / s * 3600 if s else float("nan")  # noqa: E731
    json.dump(
        [
            {"task": q["sub"]["task"], "run": q["verdict"], "serve": r.verdict, "run_record": q["record"], "serve_record": r.record_digest}
            for q, r in zip(pairs, results)
        ],
        open(os.path.join(a.out, "pairs.json"), "w"),
        indent=1,
    )
    print(f"list {a.list} shard {a.shard or 'all'} seed {a.seed}; run exit {rc}")
    print("| way | pairs | seconds | evaluations per hour | workers' stage clocks, s |")
    print("|---|---|---|---|---|")
    print(f"| ptxbench run | {n} | {run_s:.1f} | {per_hour(run_s):.0f} | {run_worker:.1f} |")
    print(f"| ptxbench serve (embedded queue) | {n} | {serve_s:.1f} | {per_hour(serve_s):.0f} | {serve_worker:.1f} |")
    print(f"\nserve / run throughput: {run_s / serve_s:.3f} (goal: at least 0.95); same verdict both ways: {same}/{n}")


if __name__ == "__main__":
    main()
