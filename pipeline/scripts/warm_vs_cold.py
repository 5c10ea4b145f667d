"""Does a speedup depend on how its worker started? (issue 46, item 3)

Usage: warm_vs_cold.py COLD_RUN=WALL WARM_RUN=WALL [STORE]   (device-throughput.sh's runs)
For each task: the speedup and 95% interval of the cold run (its worker started for it, the
first evaluation of its process) and of each warm evaluation (a spare worker, started while the
previous evaluation ran, in list order), and whether each warm speedup lies inside the cold
record's interval and the cold speedup inside the warm record's.
"""

import json
import os
import sys


def load(store, digest):
    with open(os.path.join(store, "v1", "blake3", digest[:2], digest[2:4], digest)) as f:
        return json.load(f)


def headline(rec):
    """The timed workload with the largest M: (speedup, low, high)."""
    best = None
    for w in rec["outcome"].get("workloads") or []:
        t = w.get("timing")
        if not t or t.get("speedup") is None:
            continue
        m = int("".join(c for c in w["workload"] if c.isdigit()) or 0)
        if best is None or m > best[0]:
            lo, hi = t["speedup_ci95"]
            best = (m, w["workload"], t["speedup"], lo, hi)
    return best


def records(store, run_digest):
    out = {}
    for position, d in enumerate(load(store, run_digest)["record_digests"]):
        rec = load(store, d)
        out.setdefault(rec["task"], []).append((rec.get("evaluation") or rec["entry"], rec))
    return out


def main(cold_arg, warm_arg, store="artifacts"):
    cold = records(store, cold_arg.split("=")[0])
    warm = records(store, warm_arg.split("=")[0])
    inside = total = 0
    print("| task | workload | cold speedup [95%] | warm speedups [95%] | warm inside cold's interval | cold inside warm's |")
    print("|---|---|---|---|---|---|")
    for task in sorted(cold):
        c = headline(cold[task][0][1])
        if c is None:
            continue
        ws = [headline(r) for _, r in warm.get(task, [])]
        ws = [w for w in ws if w and w[1] == c[1]]
        a = sum(1 for w in ws if c[3] <= w[2] <= c[4])
        b = sum(1 for w in ws if w[3] <= c[2] <= w[4])
        inside += a + b
        total += 2 * len(ws)
        warm_text = ", ".join(f"{w[2]:.4f} [{w[3]:.4f}, {w[4]:.4f}]" for w in ws)
        print(f"| {task} | {c[1]} | {c[2]:.4f} [{c[3]:.4f}, {c[4]:.4f}] | {warm_text} | {a}/{len(ws)} | {b}/{len(ws)} |")
    if total:
        print(f"\n{inside} of {total} comparisons inside the other's interval ({100 * inside / total:.0f}%)")


if __name__ == "__main__":
    main(*sys.argv[1:])
