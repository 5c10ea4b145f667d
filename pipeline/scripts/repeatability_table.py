"""Tables of device-repeatability.sh's logs: the speedup of each kernel over N separate
processes, its spread, the between-run component it implies, and how often a re-run falls inside
another run's 95% interval (the record's interval, and the within-process interval alone).

Usage: python3 repeatability_table.py LOG_DIR [LOG_DIR ...]
Each LOG_DIR holds rep-<kernel>-<i>.json (`ptxbench eval --json` outputs) and state.txt.
"""

import json
import math
import pathlib
import re
import statistics
import sys

KERNELS = [
    ("gemm", "hand-written TMA + wgmma GEMM, gemm_n7168_k5120 M8192"),
    ("attn", "hand-written attention forward, mha_with_lse_d128 B4_H48_S4096"),
    ("ptr", "Triton pointer-load GEMM, gemm_n7168_k5120 M8192"),
]


def timing(path):
    o = json.loads(path.read_text())
    timed = [w["timing"] for w in o["workloads"] if w.get("timing")]
    if not timed:
        raise ValueError(f"{o.get('verdict')}: {o.get('message', '')[:80]}")
    return o, timed[-1]


def runs(dirs, kernel):
    out = []
    for d in dirs:
        files = sorted(
            pathlib.Path(d).glob(f"rep-{kernel}-*.json"),
            key=lambda p: int(re.search(r"-(\d+)\.json$", p.name).group(1)),
        )
        for p in files:
            try:
                out.append((p, *timing(p)))
            except Exception as e:  # a failed process is a row, not a crash
                out.append((p, None, str(e)))
    return out


def coverage(rows, key):
    """Share of ordered pairs (i, j), i != j, whose speedup j lies in interval i."""
    inside = total = 0
    for i, a in enumerate(rows):
        for j, b in enumerate(rows):
            if i == j or a[key] is None:
                continue
            lo, hi = a[key]
            total += 1
            inside += lo <= b["speedup"] <= hi
    return inside, total


def main(dirs):
    pooled = []
    for kernel, label in KERNELS:
        rows = []
        print(f"## {label}\n")
        print("| process | verdict | speedup | record's 95% interval | within-process interval | pairs | stop | candidate ms | library ms | library algorithm |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for p, o, t in runs(dirs, kernel):
            name = f"{p.parent.name}/{p.stem}"
            if o is None:
                print(f"| {name} | ({t}) | | | | | | | | |")
                continue
            ci = t.get("speedup_ci95")
            within = t.get("speedup_ci95_within") or ci
            engine = (o.get("baseline") or {}).get("engine") or ""
            algo = re.match(r"algorithm (\d+ of the heuristic's \d+)", engine)
            rows.append({"speedup": t["speedup"], "ci": ci, "within": within,
                         "lib": t["baseline"]["median_ms"], "cand": t["candidate"]["median_ms"],
                         "w": (math.log(within[1] / within[0]) / (2 * 1.96)) if within else 0.0})
            print(
                f"| {name} | {o['verdict']} | {t['speedup']:.4f} | {ci[0]:.4f}–{ci[1]:.4f} | {within[0]:.4f}–{within[1]:.4f} "
                f"| {t['candidate']['n']} | {t.get('stop_reason')} | {t['candidate']['median_ms']:.4f} | {t['baseline']['median_ms']:.4f} "
                f"| {algo.group(1) if algo else engine[:30]} |"
            )
        if len(rows) < 2:
            print()
            continue
        s = sorted(r["speedup"] for r in rows)
        logs = [math.log(r["speedup"]) for r in rows]
        sd = statistics.stdev(logs)
        within_var = statistics.mean(r["w"] ** 2 for r in rows)
        between = math.sqrt(max(sd**2 - within_var, 0.0))
        pooled.append((len(rows), sd**2, within_var))
        ins, tot = coverage(rows, "ci")
        wins, wtot = coverage(rows, "within")
        print(
            f"\n{len(rows)} processes: spread (max - min) / median {(s[-1] - s[0]) / statistics.median(s) * 100:.2f}%; "
            f"sd of ln(speedup) {sd:.5f}, within-process part {math.sqrt(within_var):.5f}, between-run part {between:.5f}; "
            f"a re-run inside the record's interval in {ins} of {tot} pairs ({100 * ins / max(tot, 1):.0f}%), "
            f"inside the within-process interval in {wins} of {wtot} ({100 * wins / max(wtot, 1):.0f}%); "
            f"library median {min(r['lib'] for r in rows):.4f}–{max(r['lib'] for r in rows):.4f} ms\n"
        )
    if pooled:
        n = sum(k - 1 for k, _, _ in pooled)
        var = sum((k - 1) * v for k, v, _ in pooled) / n
        wv = sum((k - 1) * w for k, _, w in pooled) / n
        print(f"## pooled over kernels\n\nbetween-run sd of ln(speedup): {math.sqrt(max(var - wv, 0.0)):.5f} "
              f"(total {math.sqrt(var):.5f}, within {math.sqrt(wv):.5f}; {n} degrees of freedom)")


if __name__ == "__main__":
    main(sys.argv[1:])
