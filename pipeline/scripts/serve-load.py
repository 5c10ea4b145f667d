#!/usr/bin/env python3
"""Load and kill test of `ptxbench serve` (issue 42), CPU only.

Sends N distinct submissions that the static check decides (half responses without a kernel:
`extraction`; half PTX that does not assemble: `compilation`) through the embedded queue and
through Redis with two `ptxbench worker` processes, kills a worker with SIGKILL K times during
the Redis run (restarting it each time), then counts: jobs lost (no result), jobs that failed,
jobs recorded twice (two lines for one key in the server's answers index), results dropped as
duplicates (a job delivered again after its worker died), p50/p99 latency from submission to
result (the server's figure; a burst of N, so mostly time in the queue), throughput, and the
server's peak and final resident memory. Prints a Markdown table.

    pipeline/scripts/serve-load.py --ptxbench target/debug/ptxbench --redis redis://127.0.0.1:6379
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ptxbench_client import Client  # noqa: E402

TASK = "gemm_n4096_k4096"
# The workers' credential the server and its Redis workers share (a fresh one per run).
os.environ.setdefault("PTXBENCH_WORKER_SECRET", os.urandom(24).hex())
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CANDIDATE = os.path.join(ROOT, "tasks", "candidates", "nvcc_simt_gemm")
# A real kernel and plan, with a line that is not PTX after the kernel: the static check's
# parse fails (verdict `compilation`).
BAD_PTX = open(os.path.join(CANDIDATE, "kernel.ptx")).read() + "\nthis is not ptx;\n"
PLAN = open(os.path.join(CANDIDATE, "plan.yaml")).read()


def start_server(exe, store, extra):
    p = subprocess.Popen(
        [exe, "serve", "--store", store, "--bind", "127.0.0.1:0", "--max-queue", "100000"] + extra,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = p.stderr.readline()
    url = next(w for w in line.split() if w.startswith("http://"))
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, url


def start_worker(exe, redis, stream, wdir):
    return subprocess.Popen(
        [exe, "worker", "--queue", redis, "--stream", stream, "--claim-after", "5", "--store", wdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def memory(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0]) / 1024
    return out


def run(mode, exe, n, kills, kill_every, redis, seed):
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix=f"ptxbench-load-{mode}-")
    store = os.path.join(tmp, "store")
    stream = f"load-{os.getpid()}-{int(time.time())}"
    extra = ["--gpus", "2"] if mode == "embedded" else ["--queue", redis, "--stream", stream]
    server, url = start_server(exe, store, extra)
    workers = []
    if mode == "redis":
        workers = [start_worker(exe, redis, stream, os.path.join(tmp, f"w{i}")) for i in range(2)]
    client = Client(url, timeout=3600)
    subs = []
    for i in range(n):
        if i % 2 == 0:
            subs.append({"task": TASK, "response": f"No kernel this time ({i}).", "seed": i})
        else:
            subs.append({"task": TASK, "kernel": BAD_PTX, "plan": PLAN, "seed": i})
    t0 = time.monotonic()
    ids = client.submit_many(subs, batch=500)
    submitted = time.monotonic() - t0
    done = threading.Event()
    killed = []

    def killer():
        while len(killed) < kills and not done.wait(kill_every):
            i = rng.randrange(len(workers))
            workers[i].send_signal(signal.SIGKILL)
            workers[i].wait()
            killed.append(time.monotonic() - t0)
            workers[i] = start_worker(exe, redis, stream, os.path.join(tmp, f"w{i}"))

    k = threading.Thread(target=killer, daemon=True)
    if mode == "redis" and kills:
        k.start()
    results, failed = {}, 0
    deadline = time.monotonic() + 3600
    for i in ids:
        while True:
            try:
                r = client.result(i, wait=60)
            except Exception as e:  # a failed job is counted, not fatal
                failed += 1
                print(f"{i}: {e}", file=sys.stderr)
                break
            if r is not None:
                results[i] = r
                break
            if time.monotonic() > deadline:
                break
    wall = time.monotonic() - t0
    done.set()
    mem = memory(server.pid)
    metrics = {}
    import urllib.request

    with urllib.request.urlopen(url + "/metrics") as f:
        for line in f.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                metrics[name] = float(value)
    keys = collections.Counter()
    with open(os.path.join(store, "serve", "answers")) as f:
        for line in f:
            keys[line.split(" ")[0]] += 1
    twice = sum(1 for c in keys.values() if c > 1)
    lat = sorted(r.latency_s for r in results.values() if r.latency_s is not None)
    verdicts = collections.Counter(r.verdict for r in results.values())
    expected = {"extraction": (n + 1) // 2, "compilation": n // 2}
    wrong = sum(abs(verdicts.get(v, 0) - c) for v, c in expected.items())
    for w in workers:
        w.send_signal(signal.SIGKILL)
        w.wait()
    server.send_signal(signal.SIGTERM)
    server.wait()
    return {
        "mode": "embedded queue, 2 worker threads" if mode == "embedded" else "Redis Streams, 2 worker processes",
        "submissions": n,
        "kills": len(killed),
        "lost": n - len(results) - failed,
        "failed": failed,
        "recorded twice": twice,
        "records": len(keys),
        "duplicate results dropped": int(metrics.get("ptxbench_duplicate_results_total", 0)),
        "verdicts off": wrong,
        "p50 s": lat[len(lat) // 2] if lat else None,
        "p99 s": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
        "submit s": submitted,
        "wall s": wall,
        "eval/s": n / wall,
        "server peak MiB": mem.get("VmHWM"),
        "server end MiB": mem.get("VmRSS"),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ptxbench", required=True)
    p.add_argument("--redis", help="redis://host:port (without it, the embedded queue only)")
    p.add_argument("-n", type=int, default=10000)
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--kill-every", type=float, default=4.0, help="seconds between kills")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--modes", default="embedded,redis")
    a = p.parse_args()
    rows = []
    for mode in a.modes.split(","):
        if mode == "redis" and not a.redis:
            continue
        rows.append(run(mode, a.ptxbench, a.n, a.kills, a.kill_every, a.redis, a.seed))
        print(json.dumps(rows[-1]), file=sys.stderr)
    cols = list(rows[0])
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)  # noqa: E731
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(fmt(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
