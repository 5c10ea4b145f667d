"""Tables of device-integrity.sh's logs: repeatability of the speedup over 5 processes and
evaluation throughput. Usage: python3 repeatability_table.py LOG_DIR"""

import json
import pathlib
import sys


def timing(path):
    o = json.loads(path.read_text())
    t = [w["timing"] for w in o["workloads"] if w.get("timing")][-1]
    return o, t


def main(log):
    log = pathlib.Path(log)
    for kind, label in [("gemm", "wgmma GEMM, gemm_n7168_k5120 M=8192"), ("attn", "wgmma attention fwd, mha_with_lse_d128 B4 H48 S4096")]:
        print(f"## {label}")
        print("| process | verdict | speedup | 95% CI | pairs | stop | candidate ms | library ms | floor fraction | clocks moved |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        speedups = []
        for i in range(1, 6):
            p = log / f"rep-{kind}-{i}.json"
            try:
                o, t = timing(p)
            except Exception as e:  # a failed process is a row, not a crash
                print(f"| {i} | ({e}) | | | | | | | | |")
                continue
            ci = t.get("speedup_ci95") or [float("nan")] * 2
            clocks = t.get("clocks") or {}
            speedups.append(t["speedup"])
            print(
                f"| {i} | {o['verdict']} | {t['speedup']:.4f} | {ci[0]:.4f}–{ci[1]:.4f} | {t['candidate']['n']} | {t.get('stop_reason')} "
                f"| {t['candidate']['median_ms']:.4f} | {t['baseline']['median_ms']:.4f} | {t.get('floor_fraction') or float('nan'):.3f} | {clocks.get('moved')} |"
            )
        if speedups:
            s = sorted(speedups)
            med = s[len(s) // 2]
            print(f"\nspread (max - min) / median over {len(s)} processes: {(s[-1] - s[0]) / med * 100:.2f}%\n")
    rows = (log / "throughput.txt").read_text().split() if (log / "throughput.txt").exists() else []
    walls = [float(x) for x in rows[1::2] if x.replace(".", "", 1).isdigit()]
    if walls:
        mean = sum(walls) / len(walls)
        print(f"## throughput\nwhole evaluations (every workload of gemm_n7168_k5120): {', '.join(f'{w:.2f} s' for w in walls)}; mean {mean:.2f} s, {3600 / mean:.0f} candidates per H200-hour")


if __name__ == "__main__":
    main(sys.argv[1])
