#!/usr/bin/env python3
"""Prints a Markdown table of a stored run's target evidence: per record, its verdict, the two
grades (correct with arch, correct on target) and the shares they are graded on (the worst
performance workload's MMA FLOP share, other-arithmetic share and TMA byte share), with the
expected verdict of its run list beside it.

Usage: python3 pipeline/scripts/evidence_table.py RUN_DIGEST [STORE]
(a ptxbench.run object, as `ptxbench run` prints it; STORE defaults to artifacts/).
"""
import json
import os
import sys


def load(store, digest):
    with open(os.path.join(store, "v1", "blake3", digest[:2], digest[2:4], digest)) as f:
        return json.load(f)


def fmt(x):
    return "-" if x is None else f"{x:.3f}"


def main():
    store = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "..", "artifacts")
    run = load(store, sys.argv[1])
    print("| evaluation | task | verdict | expected | MMA share | other share | TMA byte share | notes |")
    print("|---|---|---|---|---|---|---|---|")
    for d in run["record_digests"]:
        r = load(store, d)
        dyn = (r.get("outcome") or {}).get("dynamic") or {}
        notes = "; ".join(dyn.get("notes") or [])[:160]
        print(
            f"| {r.get('evaluation') or r['entry']} | {r['task']} | {r['verdict']} | {r.get('expected') or '-'} "
            f"| {fmt(dyn.get('mma_flop_share'))} | {fmt(dyn.get('other_flop_share'))} "
            f"| {fmt(dyn.get('tma_byte_share'))} | {notes} |"
        )


if __name__ == "__main__":
    main()
