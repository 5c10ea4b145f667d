#!/usr/bin/env python3
"""Prints a Markdown table of a committed run folder's timed workloads: per evaluation, task and
workload, the candidate's and the library baseline's median time and TFLOP/s (measured side by
side, interleaved, in one worker) and their ratio, plus the task's min ratio.

Usage: python3 pipeline/scripts/run_table.py artifacts/runs/reference-sm90a [PREFIX ...]
(only evaluations whose names start with one of the PREFIXes, if given)
"""
import glob
import json
import os
import sys


def main():
    folder, prefixes = sys.argv[1], tuple(sys.argv[2:])
    rows = []
    for f in sorted(glob.glob(os.path.join(folder, "*.json"))):
        d = json.load(open(f))
        if "outcome" not in d or (prefixes and not d["evaluation"].startswith(prefixes)):
            continue
        o = d["outcome"]
        for w in o["workloads"]:
            t = w.get("timing")
            if not t or not t.get("baseline"):
                continue
            rows.append((d["evaluation"], d["task"], w["workload"], t["candidate"]["median_ms"],
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
