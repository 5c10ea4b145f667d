#!/usr/bin/env python3
"""Prints a Markdown table of a stored run's timed workloads: per evaluation, task and workload,
the candidate's and the library baseline's median time and TFLOP/s (measured side by side,
interleaved, in one worker) and their ratio, plus the task's min ratio.

Usage: python3 pipeline/scripts/run_table.py RUN_DIGEST [PREFIX ...]
(a ptxbench.run object in artifacts/, as `ptxbench run` prints it or a manifest names it; only
evaluations whose names start with one of the PREFIXes, if given). Records of
ptxbench.record/1, which do not name their evaluation, show their entry instead.
"""
import json
import os
import sys

STORE = os.path.join(os.path.dirname(__file__), "..", "..", "artifacts", "v1", "blake3")


def load(digest):
    with open(os.path.join(STORE, digest[:2], digest[2:4], digest)) as f:
        return json.load(f)


def main():
    run, prefixes = load(sys.argv[1]), tuple(sys.argv[2:])
    rows = []
    for d in run["record_digests"]:
        r = load(d)
        name = r.get("evaluation") or r["entry"]
        if prefixes and not name.startswith(prefixes):
            continue
        o = r["outcome"]
        for w in o["workloads"]:
            t = w.get("timing")
            if not t or not t.get("baseline"):
                continue
            rows.append((name, r["task"], w["workload"], t["candidate"]["median_ms"],
                         t["baseline"]["median_ms"], t["candidate_tflops"], t["baseline_tflops"],
                         t["speedup"], o.get("min_speedup")))
    print("| entry | task | workload | ours ms | library ms | ours TFLOP/s | library TFLOP/s "
          "| ratio | task min ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: r[:3]):
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.4f} | {r[4]:.4f} | {r[5]:.0f} | {r[6]:.0f} "
              f"| {r[7]:.3f} | {r[8]:.3f} |")


if __name__ == "__main__":
    main()
