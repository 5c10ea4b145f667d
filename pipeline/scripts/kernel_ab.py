#!/usr/bin/env python3
"""Paired A/B of candidate kernels against the library, on the GPU machine.

Usage: python3 kernel_ab.py PTXBENCH ROUNDS NAME=VARIANT [NAME=VARIANT ...] -- TASK:W1,W2 [TASK:W ...]

A VARIANT is a candidate folder (kernel.ptx and plan.yaml) or KERNEL.ptx:PLAN.yaml (copied into
a temporary folder). Each round evaluates every variant on every
task's listed workloads with `ptxbench eval --json`, the variants taking turns within the round
(and in reversed order every other round), so that drifts of the machine fall on all of them
alike. Each evaluation times the candidate interleaved with the library in one worker; the
table gives each variant's verdict and its ratio to the library (library time / candidate time,
paired median) per workload and round, then the median ratio over the rounds.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def folder(variant, scratch):
    """A candidate folder for VARIANT (see the usage)."""
    if ":" not in variant:
        return variant
    kernel, plan = variant.split(":", 1)
    d = tempfile.mkdtemp(dir=scratch)
    shutil.copy(kernel, os.path.join(d, "kernel.ptx"))
    shutil.copy(plan, os.path.join(d, "plan.yaml"))
    return d


def main():
    binary, rounds = sys.argv[1], int(sys.argv[2])
    split = sys.argv.index("--")
    scratch = tempfile.mkdtemp()
    variants = [(n, folder(v, scratch)) for n, v in (a.split("=", 1) for a in sys.argv[3:split])]
    cases = []
    for spec in sys.argv[split + 1:]:
        task, workloads = spec.split(":")
        cases.append((task, workloads.split(",")))
    ratios = {}
    for rnd in range(rounds):
        order = variants if rnd % 2 == 0 else variants[::-1]
        for task, workloads in cases:
            for name, folder in order:
                cmd = [binary, "eval", "--task", task, "--timeout", "60", "--json", folder]
                for w in workloads:
                    cmd += ["--workload", w]
                p = subprocess.run(cmd, capture_output=True, text=True)
                try:
                    out = json.loads(p.stdout)
                except json.JSONDecodeError:
                    print(f"{name} {task} round {rnd}: no JSON (exit {p.returncode}): "
                          f"{p.stderr.strip()[-400:]}", flush=True)
                    continue
                verdict = out.get("verdict")
                for w in out.get("workloads", []):
                    t = w.get("timing") or {}
                    s = t.get("speedup")
                    ms = (t.get("candidate") or {}).get("median_ms")
                    lib = (t.get("baseline") or {}).get("median_ms")
                    print(f"{name:8} {task:22} {w['workload']:8} round {rnd} {verdict} "
                          f"ours {ms} ms library {lib} ms ratio {s}", flush=True)
                    if s is not None:
                        ratios.setdefault((task, w["workload"], name), []).append(s)
                if not out.get("workloads"):
                    print(f"{name} {task} round {rnd}: {verdict} {str(out)[:600]}", flush=True)
    print("\n| task | workload | " + " | ".join(n for n, _ in variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for task, workloads in cases:
        for w in workloads:
            cells = []
            for name, _ in variants:
                r = ratios.get((task, w, name), [])
                cells.append(f"{statistics.median(r):.3f} ({len(r)})" if r else "-")
            print(f"| {task} | {w} | " + " | ".join(cells) + " |")
    shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
