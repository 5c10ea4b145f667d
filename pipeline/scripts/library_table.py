#!/usr/bin/env python3
"""Prints a Markdown table of the library baseline on each timed workload of a stored run: the
library's median time, its TFLOP/s, the speed-of-light floor the record holds (FLOPs at the
GPU's dense peak, compulsory bytes at its DRAM bandwidth) and the fraction of it the library
reaches (floor / time; above 1 would mean a time below the floor). One row per (task,
workload), from the first record of the run that timed it; a baseline check that failed is
shown.

Usage: python3 pipeline/scripts/library_table.py RUN_DIGEST [STORE]
"""
import json
import os
import sys


def load(store, digest):
    with open(os.path.join(store, "v1", "blake3", digest[:2], digest[2:4], digest)) as f:
        return json.load(f)


def main():
    store = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "..", "artifacts")
    run = load(store, sys.argv[1])
    rows = {}
    for d in run["record_digests"]:
        r = load(store, d)
        info = (r["outcome"].get("baseline") or {})
        label = info.get("label") or info.get("provider") or "-"
        for w in r["outcome"].get("workloads", []):
            t = w.get("timing")
            if not t or not t.get("baseline"):
                continue
            key = (r["task"], w["workload"])
            if key in rows and (rows[key][0] != "-" or label == "-"):
                continue
            floor = t.get("floor") or {}
            ms = t["baseline"]["median_ms"]
            checks = t.get("baseline_check") or []
            failed = [c["output"] for c in checks if not c.get("passed")]
            rows[key] = (
                label,
                ms,
                t.get("baseline_tflops"),
                floor.get("floor_ms"),
                "compute" if floor.get("floor_ms") == floor.get("compute_ms") else "memory",
                floor.get("gpu_model", "-"),
                "failed: " + ", ".join(failed) if failed else ("passed" if checks else "-"),
                d[:12],
            )
    print("| task | workload | library | median ms | TFLOP/s | floor ms (bound) | fraction of speed of light | library output check | record |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (task, wl), (label, ms, tf, fl, bound, gpu, check, rec) in sorted(rows.items()):
        frac = f"{fl / ms:.3f}" if fl and ms else "-"
        tfs = f"{tf:.1f}" if tf else "-"
        fls = f"{fl:.4f} ({bound}, {gpu})" if fl else "-"
        print(f"| {task} | {wl} | {label} | {ms:.4f} | {tfs} | {fls} | {frac} | {check} | {rec} |")


if __name__ == "__main__":
    main()
