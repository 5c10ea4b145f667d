#!/usr/bin/env python3
"""The adversaries of `pipeline/scripts/serve-load.py` without the load: `ptxbench serve` on
Redis (no worker, no submission) with S slow clients (opened again whenever the server closes
them) and `CLIENT PAUSE … WRITE` every P seconds, for T seconds; samples the server's VmRSS and
open descriptors every second and `/healthz` every 0.5 s, to tell whether the slow clients and
the pauses alone make its memory grow.

    pipeline/scripts/serve-soak.py --ptxbench target/debug/ptxbench --redis redis://127.0.0.1:6379
"""

import argparse
import importlib.util
import json
import os
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "serve_load", os.path.join(HERE, "serve-load.py")
)
sl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sl)

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--ptxbench", required=True)
p.add_argument("--redis", required=True)
p.add_argument("--seconds", type=float, default=240)
p.add_argument("--slow-clients", type=int, default=200)
p.add_argument("--pause-every", type=float, default=15)
p.add_argument("--pause-ms", type=int, default=3000)
p.add_argument("--json-out")
a = p.parse_args()
tmp = tempfile.mkdtemp(prefix="ptxbench-soak-")
stream = f"soak-{os.getpid()}-{int(time.time())}"
server, url, drain = sl.start_server(
    a.ptxbench, os.path.join(tmp, "store"), ["--queue", a.redis, "--stream", stream], os.path.join(tmp, "server.log")
)
t0 = time.monotonic()
mon = sl.Monitor(server, url, t0)
mon.start()
u = urllib.parse.urlsplit(url)
slow = sl.SlowClients(u.hostname, u.port, a.slow_clients, t0)
slow.start()
stop, pauses, errors = threading.Event(), [], []
pt = threading.Thread(target=sl.pauser, args=(a.redis, a.pause_every, a.pause_ms, stop, t0, pauses, errors), daemon=True)
pt.start()
time.sleep(a.seconds)
slow.stop.set()
stop.set()
slow.join(10)
pt.join(10)
time.sleep(2)
mon.stop.set()
mon.join(5)
mon.hz.join(35)
health = [s for _, s, _ in mon.health]
out = {
    "seconds": a.seconds,
    "server exited": mon.exited,
    "slow clients": slow.summary(),
    "pauses": len(pauses),
    "pause errors": errors,
    "healthz": {
        "samples": len(health),
        "p50 ms": 1000 * sl.pct(health, 0.5),
        "p99 ms": 1000 * sl.pct(health, 0.99),
        "max ms": 1000 * max(health),
        "over 1 s or not 200": [h for h in mon.health if h[2] != 200 or h[1] > 1.0],
    },
    "rss MiB first, max, last": [mon.rss[0][1], max(m for _, m, _ in mon.rss), mon.rss[-1][1]],
    "fds max, last": [max(f for _, _, f in mon.rss), mon.rss[-1][2]],
    "rss every 10 s (t, MiB, fds)": [(t, round(m, 1), f) for t, m, f in mon.rss[::10]] + [mon.rss[-1]],
}
if server.poll() is None:
    out["VmHWM MiB"] = sl.memory(server.pid).get("VmHWM")
    server.terminate()
    server.wait()
print(json.dumps(out, indent=1))
if a.json_out:
    with open(a.json_out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
