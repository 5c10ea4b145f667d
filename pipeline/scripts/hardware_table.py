#!/usr/bin/env python3
"""Prints a Markdown table of a stored run's hardware-counter checks (`PTXBENCH_HARDWARE_COUNTERS=
cupti`): per record and timed workload, each measured launch's quantities as the GPU's counters
read them beside the counted copy's, whether they agree, and the measured launch's time beside
the workload's median (the profiler's cost); then the metrics used and any error.

Usage: python3 pipeline/scripts/hardware_table.py RUN_DIGEST [STORE]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from evidence_table import load  # noqa: E402


def main():
    store = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "..", "artifacts")
    run = load(store, sys.argv[1])
    print("| evaluation | task | workload | launch | quantity | hardware | counted | agrees | measured ms / median ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    notes = []
    for d in run["record_digests"]:
        r = load(store, d)
        name = r.get("evaluation") or r["entry"]
        for w in (r.get("outcome") or {}).get("workloads") or []:
            t = w.get("timing") or {}
            h = t.get("hardware")
            if not h:
                continue
            median = (t.get("candidate") or {}).get("median_ms")
            if h.get("error"):
                notes.append(f"{name} {w['workload']}: {h['error']}")
            metrics = ", ".join(m[0] for m in (h.get("plan") or {}).get("metrics") or [])
            missing = "; ".join((h.get("plan") or {}).get("missing") or [])
            notes.append(f"{name} {w['workload']}: metrics {metrics or '-'}; missing {missing or 'none'}")
            for launch, agreements, ms in zip(h.get("launches") or [], h.get("agreements") or [], h.get("measured_ms") or []):
                for a in agreements or [{"quantity": "(none compared)", "hardware": None, "counted": None, "agrees": None}]:
                    hw = "-" if a["hardware"] is None else f"{a['hardware']:.4g}"
                    ct = "-" if a["counted"] is None else f"{a['counted']:.4g}"
                    print(
                        f"| {name} | {r['task']} | {w['workload']} | {launch['launch']} | {a['quantity']} "
                        f"| {hw} | {ct} | {a['agrees']} | {ms:.4f} / {median if median is None else f'{median:.4f}'} |"
                    )
    print()
    for n in notes:
        print(f"- {n}")


if __name__ == "__main__":
    main()
