#!/usr/bin/env python3
"""Load and kill test of `ptxbench serve` (issues 42 and 56), CPU only.

Sends N distinct submissions that the static check decides (half responses without a kernel:
`extraction`; half PTX that does not assemble: `compilation`) through the embedded queue and
through Redis with two `ptxbench worker` processes, kills a worker with SIGKILL K times during
the Redis run (restarting it each time), then counts: jobs lost (no result), jobs that failed,
jobs recorded twice (two lines for one key in the server's answers index), results dropped as
duplicates (a job delivered again after its worker died), p50/p99 latency from submission to
result (the server's figure; a burst of N, so mostly time in the queue), throughput, and the
server's peak and final resident memory. Prints Markdown tables.

During the Redis run, at the same time as the load and the kills (each off unless asked for):

- `--slow-clients S`: S raw connections that never finish a request (a head cut short, a head
  trickled one byte every 2 s, or a head announcing a body that never comes), each opened again
  when the server closes it;
- `--pause-every P`: `CLIENT PAUSE <--pause-ms> WRITE` every P seconds from a connection of its
  own (the server's pushes, the workers' reads and results, and the collector all stall);
- `--forged F`: a forger with write access to Redis adds F made-up results to
  `<stream>:results` for real job ids it reads from `<stream>:jobs` (verdict `correct`, a MAC
  that is not the workers', the server's job MAC, a real worker's MAC of another job, or an
  error), each naming another queued job's stream `entry` (a delete by name).

In both modes the script samples, for the whole run, `/healthz` every 0.5 s (latency, on a new
connection each time) and the server's VmRSS and open descriptors every second, and watches
that the server process stays alive. `--json-out FILE` keeps every sample and count.

    pipeline/scripts/serve-load.py --ptxbench target/debug/ptxbench --redis redis://127.0.0.1:6379 \\
        --slow-clients 200 --pause-every 15 --forged 300

The Redis password, if any, comes from PTXBENCH_REDIS_PASSWORD (and the ACL user from
PTXBENCH_REDIS_USER), for the server, the workers and the script's own connections alike.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import http.client
import json
import os
import random
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ptxbench_client import Client, ServiceError  # noqa: E402

TASK = "gemm_n4096_k4096"
# The workers' credential the server and its Redis workers share (a fresh one per run).
os.environ.setdefault("PTXBENCH_WORKER_SECRET", os.urandom(24).hex())
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CANDIDATE = os.path.join(ROOT, "tasks", "candidates", "nvcc_simt_gemm")
# A real kernel and plan, with a line that is not PTX after the kernel: the static check's
# parse fails (verdict `compilation`).
BAD_PTX = open(os.path.join(CANDIDATE, "kernel.ptx")).read() + "\nthis is not ptx;\n"
PLAN = open(os.path.join(CANDIDATE, "plan.yaml")).read()
# The verdict each kind of submission gets; neither can ever be `correct`.
EXPECTED = {0: "extraction", 1: "compilation"}


def start_server(exe, store, extra, log):
    p = subprocess.Popen(
        [exe, "serve", "--store", store, "--bind", "127.0.0.1:0", "--max-queue", "100000"] + extra,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = p.stderr.readline()
    url = next(w for w in line.split() if w.startswith("http://"))

    def drain():
        # The server's warnings (refused results among them), kept for counting.
        with open(log, "w") as f:
            f.write(line)
            for l in p.stderr:
                f.write(l)

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    return p, url, t


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


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else None


# --- Redis, over a socket (standard library only) -------------------------------------------


class RedisError(RuntimeError):
    pass


class Redis:
    """A minimal RESP2 client: AUTH from PTXBENCH_REDIS_PASSWORD (never the URL), calls."""

    def __init__(self, url, timeout=60.0):
        u = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379), timeout=timeout)
        self.f = self.sock.makefile("rb")
        password = os.environ.get("PTXBENCH_REDIS_PASSWORD")
        user = os.environ.get("PTXBENCH_REDIS_USER")
        if password:
            self.call("AUTH", *([user] if user else []), password)
        if u.path.strip("/"):
            self.call("SELECT", u.path.strip("/"))

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a.encode() if isinstance(a, str) else str(a).encode() if isinstance(a, int) else a
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._read()

    def _read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RedisError(f"unexpected reply {line!r}")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def stream_entries(reply):
    """[(entry id, {field: value})] of an XRANGE reply."""
    out = []
    for e in reply or []:
        fields = e[1] or []
        out.append((e[0].decode(), {fields[i]: fields[i + 1] for i in range(0, len(fields), 2)}))
    return out


# --- Adversaries -----------------------------------------------------------------------------


class SlowClients(threading.Thread):
    """`count` connections that never finish a request, each opened again when the server
    closes it: a head cut short (`head`), a head trickled a byte every 2 s (`trickle`), a head
    announcing 2,000 bytes of body of which 4 come (`body`)."""

    KINDS = ("head", "trickle", "body")
    HEADS = {
        "head": b"POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nContent-",
        "trickle": b"POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nX-Pad: ",
        "body": b"POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2000\r\n\r\n{\"ta",
    }

    def __init__(self, host, port, count, t0):
        super().__init__(daemon=True)
        self.addr, self.count, self.t0 = (host, port), count, t0
        self.stop = threading.Event()
        self.sel = selectors.DefaultSelector()
        self.opened = collections.Counter()
        self.closed = collections.Counter()  # by the server (EOF or reset)
        self.holds = collections.defaultdict(list)  # kind -> seconds a connection lived
        self.answers = collections.Counter()  # kind, status line the server sent before closing
        self.connect_errors = 0
        self.open_at_end = []  # (kind, age s) of connections still open when the load ended
        self.live = {}  # socket -> [kind, opened at, last trickle, first line]

    def open_one(self, kind):
        try:
            s = socket.create_connection(self.addr, timeout=10)
            s.sendall(self.HEADS[kind])
            s.setblocking(False)
        except OSError:
            self.connect_errors += 1
            return False
        now = time.monotonic()
        self.live[s] = [kind, now, now, None]
        self.sel.register(s, selectors.EVENT_READ)
        self.opened[kind] += 1
        return True

    def gone(self, s):
        kind, opened, _, first = self.live.pop(s)
        self.sel.unregister(s)
        s.close()
        self.closed[kind] += 1
        self.holds[kind].append(time.monotonic() - opened)
        self.answers[(kind, first or "(nothing)")] += 1
        return kind

    def run(self):
        for i in range(self.count):
            self.open_one(self.KINDS[i % len(self.KINDS)])
        reopen = []  # kinds to open again (a connect that failed is tried on the next round)
        while not self.stop.is_set():
            for key, _ in self.sel.select(timeout=0.5):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    st = self.live[s]
                    if st[3] is None:
                        st[3] = data.split(b"\r\n", 1)[0].decode(errors="replace")[:40]
                    continue
                reopen.append(self.gone(s))
            now = time.monotonic()
            for s, st in list(self.live.items()):
                if st[0] == "trickle" and now - st[2] >= 2.0:
                    st[2] = now
                    try:
                        s.send(b"a")
                    except OSError:
                        reopen.append(self.gone(s))
            reopen = [kind for kind in reopen if not self.open_one(kind)]
        now = time.monotonic()
        for s, st in list(self.live.items()):
            self.open_at_end.append((st[0], now - st[1]))
            self.sel.unregister(s)
            s.close()
        self.live.clear()

    def summary(self):
        holds = [h for v in self.holds.values() for h in v]
        return {
            "slow clients": self.count,
            "opened": sum(self.opened.values()),
            "closed by server": sum(self.closed.values()),
            "held longest s": max(holds) if holds else None,
            "held longest by kind s": {k: max(v) for k, v in self.holds.items()},
            "held median by kind s": {k: pct(v, 0.5) for k, v in self.holds.items()},
            "answers": {f"{k}: {a}": n for (k, a), n in sorted(self.answers.items())},
            "connect errors": self.connect_errors,
            "open at end": len(self.open_at_end),
            "oldest open at end s": max((a for _, a in self.open_at_end), default=None),
        }


def pauser(redis, every, pause_ms, stop, t0, pauses, errors):
    """`CLIENT PAUSE pause_ms WRITE` every `every` seconds, from a connection of its own."""
    r = None
    while not stop.wait(every):
        try:
            r = r or Redis(redis)
            r.call("CLIENT", "PAUSE", str(pause_ms), "WRITE")
            pauses.append(time.monotonic() - t0)
        except (OSError, RedisError, ConnectionError) as e:
            errors.append(f"{time.monotonic() - t0:.1f}: {e}")
            r = None
    if r:
        r.close()


class Forger(threading.Thread):
    """Adds `total` made-up results to `<stream>:results`, `per_round` every `every` seconds,
    for jobs it reads from `<stream>:jobs`, each naming another queued job's entry."""

    VARIANTS = ("bad-mac", "non-hex-mac", "job-mac", "stolen-mac", "error-result", "unknown-job")

    def __init__(self, redis, stream, total, every, per_round, seed, marker):
        super().__init__(daemon=True)
        self.redis, self.total, self.every, self.per_round = redis, total, every, per_round
        self.jobs_key, self.results_key = f"{stream}:jobs", f"{stream}:results"
        self.rng = random.Random(seed)
        self.marker = marker
        self.stop = threading.Event()
        self.sent = []  # {variant, job, named entry, named job, record, feedback, t}
        self.variants = collections.Counter()
        self.errors = []
        self.stolen = collections.deque(maxlen=32)  # real results seen: (meta, objects)

    def jobs(self, reply):
        out = []
        for entry, f in stream_entries(reply):
            try:
                job = json.loads(f[b"job"])
                out.append((entry, job["id"], (f.get(b"mac") or b"").decode()))
            except (KeyError, ValueError, TypeError):
                continue
        return out

    def run(self):
        r = None
        t0 = time.monotonic()
        while len(self.sent) < self.total and not self.stop.wait(self.every):
            try:
                r = r or Redis(self.redis)
                newest = self.jobs(r.call("XREVRANGE", self.jobs_key, "+", "-", "COUNT", "64"))
                oldest = self.jobs(r.call("XRANGE", self.jobs_key, "-", "+", "COUNT", "64"))
                for _, f in stream_entries(r.call("XRANGE", self.results_key, "-", "+", "COUNT", "16")):
                    try:
                        meta = json.loads(f[b"meta"])
                    except (KeyError, ValueError):
                        continue
                    if meta.get("worker") != "forger" and "mac" in meta:
                        self.stolen.append((meta, [(k, v) for k, v in f.items() if k.startswith(b"o")]))
                if len(newest) < 2:
                    continue
                for k in range(min(self.per_round, self.total - len(self.sent))):
                    self.forge_one(r, newest, oldest or newest, t0)
            except (OSError, RedisError, ConnectionError) as e:
                self.errors.append(f"{time.monotonic() - t0:.1f}: {e}")
                r = None
        if r:
            r.close()

    def forge_one(self, r, newest, oldest, t0):
        n = len(self.sent)
        variant = self.VARIANTS[n % len(self.VARIANTS)]
        # Half for jobs not taken yet (the forged result comes first), half for jobs in work.
        entry, job, job_mac = self.rng.choice(newest if n % 2 == 0 else oldest)
        # A real result of another job (one of this job would be its worker's own result).
        stolen = [m for m in self.stolen if m[0].get("job") != job]
        if variant == "stolen-mac" and not stolen:
            variant = "job-mac"
        stolen_from = None
        others = [e for e in newest if e[1] != job]
        named_entry, named_job, _ = self.rng.choice(others)
        record, feedback = os.urandom(32).hex(), os.urandom(32).hex()
        obj = json.dumps({"forged": self.marker, "n": n}).encode()
        answer = {"Ok": {"record": record, "feedback": feedback, "verdict": "correct", "gpu_seconds": 1.0}}
        mac = os.urandom(32).hex()
        objects = [(b"o0", obj)]
        if variant == "non-hex-mac":
            mac = "not hex"
        elif variant == "job-mac":
            mac = job_mac  # the server's MAC of this very job: valid, for another purpose
        elif variant == "error-result":
            answer = {"Err": f"forged failure {self.marker}"}
        elif variant == "unknown-job":
            job = os.urandom(16).hex()
        meta = {"job": job, "entry": named_entry, "worker": "forger", "result": answer, "mac": mac}
        if variant == "stolen-mac":
            # A real worker's result and MAC for another job, moved to this one.
            real, objects = self.rng.choice(stolen)
            stolen_from = real.get("job")
            meta = dict(real, job=job, entry=named_entry, worker="forger")
            record = feedback = None
        # Whether the job and the entry named were still in the jobs stream (the server deletes
        # a job's entry when it records the job): the forged result came before the real one.
        open_job = bool(r.call("XRANGE", self.jobs_key, entry, entry))
        open_named = bool(r.call("XRANGE", self.jobs_key, named_entry, named_entry))
        args = ["XADD", self.results_key, "*", "meta", json.dumps(meta).encode()]
        for k, v in objects:
            args += [k, v]
        r.call(*args)
        self.variants[variant] += 1
        self.sent.append({
            "variant": variant, "job": job, "named_entry": named_entry, "named_job": named_job,
            "record": record, "feedback": feedback, "stolen_from": stolen_from,
            "job open": open_job and variant != "unknown-job", "named open": open_named,
            "t": round(time.monotonic() - t0, 3),
        })


class Monitor(threading.Thread):
    """Every second: is the server alive, its VmRSS and open descriptors. Every 0.5 s (its own
    thread): `/healthz` on a new connection, with its latency."""

    def __init__(self, server, url, t0):
        super().__init__(daemon=True)
        self.server, self.t0 = server, t0
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.stop = threading.Event()
        self.rss = []  # (t, MiB, fds)
        self.health = []  # (t started, seconds, status or error)
        self.exited = None
        self.hz = threading.Thread(target=self.healthz, daemon=True)

    def run(self):
        self.hz.start()
        while not self.stop.wait(1.0):
            rc = self.server.poll()
            if rc is not None:
                self.exited = (time.monotonic() - self.t0, rc)
                return
            try:
                rss = memory(self.server.pid).get("VmRSS")
                fds = len(os.listdir(f"/proc/{self.server.pid}/fd"))
            except OSError:
                continue
            self.rss.append((round(time.monotonic() - self.t0, 1), rss, fds))

    def healthz(self):
        nxt = time.monotonic()
        while not self.stop.is_set():
            start = time.monotonic()
            try:
                c = http.client.HTTPConnection(self.host, self.port, timeout=30)
                c.request("GET", "/healthz")
                resp = c.getresponse()
                resp.read()
                status = resp.status
                c.close()
            except (OSError, http.client.HTTPException) as e:
                status = f"error: {e.__class__.__name__}"
            self.health.append((round(start - self.t0, 3), time.monotonic() - start, status))
            nxt += 0.5
            self.stop.wait(max(0.0, nxt - time.monotonic()))
            nxt = max(nxt, time.monotonic() - 0.5)


# --- One run ---------------------------------------------------------------------------------


def run(mode, a):
    exe, n, kills, kill_every, redis, seed = a.ptxbench, a.n, a.kills, a.kill_every, a.redis, a.seed
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix=f"ptxbench-load-{mode}-")
    store = os.path.join(tmp, "store")
    stream = f"load-{os.getpid()}-{int(time.time())}"
    extra = ["--gpus", "2"] if mode == "embedded" else ["--queue", redis, "--stream", stream]
    server_log = os.path.join(tmp, "server.log")
    started_at = datetime.datetime.now(datetime.timezone.utc)
    load_at_start = open("/proc/loadavg").read().split()[:3]
    server, url, drain = start_server(exe, store, extra, server_log)
    t0 = time.monotonic()
    monitor = Monitor(server, url, t0)
    monitor.start()
    adversarial = mode == "redis"
    slow = pauses = forger = None
    pause_times, pause_errors, stop = [], [], threading.Event()
    if adversarial and a.slow_clients:
        u = urllib.parse.urlsplit(url)
        slow = SlowClients(u.hostname, u.port, a.slow_clients, t0)
        slow.start()
    if adversarial and a.pause_every:
        pauses = threading.Thread(
            target=pauser, args=(redis, a.pause_every, a.pause_ms, stop, t0, pause_times, pause_errors), daemon=True
        )
        pauses.start()
    marker = f"ptxbench-load-forgery-{os.getpid()}-{int(time.time())}"
    if adversarial and a.forged:
        forger = Forger(redis, stream, a.forged, a.forge_every, a.forge_per_round, seed + 1, marker)
        forger.start()
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
    ts = time.monotonic()
    ids = client.submit_many(subs, batch=500)
    submitted = time.monotonic() - ts
    index = {j: i for i, j in enumerate(ids)}
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
    # Every id polled until it has a result (a long-poll each time); past the deadline, an id
    # without one is lost. The server dying ends the polling (counted as a crash).
    results, failed, errors = {}, {}, []
    deadline = time.monotonic() + a.deadline
    for i in ids:
        while True:
            if server.poll() is not None:
                break
            try:
                status, v = client._call("GET", f"/v1/evaluations/{i}?wait=60")
            except ServiceError as e:
                failed[i] = str(e)
                break
            except OSError as e:  # the server unreachable: noted, tried again
                errors.append(f"{time.monotonic() - t0:.1f} {i}: {e}")
                time.sleep(1)
                continue
            if v["state"] == "done":
                results[i] = v
                break
            if v["state"] == "failed":
                failed[i] = v.get("error", "")
                print(f"{i}: {failed[i]}", file=sys.stderr)
                break
            if time.monotonic() > deadline:
                break
        if server.poll() is not None:
            break
    wall = time.monotonic() - ts
    done.set()
    # The adversaries stop with the load.
    stop.set()
    if slow:
        slow.stop.set()
        slow.join(10)
    if forger:
        forger.stop.set()
        forger.join(30)
    if pauses:
        pauses.join(10)
    time.sleep(1.5)  # the descriptors the slow clients held are let go
    # The collector reads the last forged results (a pause may hold it up to --pause-ms).
    refused_wait = None
    if forger and forger.sent:
        w0 = time.monotonic()
        while server.poll() is None and time.monotonic() - w0 < 20:
            with urllib.request.urlopen(url + "/metrics") as f:
                m = f.read().decode()
            if any(l.startswith("ptxbench_refused_results_total ") and float(l.split()[1]) >= len(forger.sent)
                   for l in m.splitlines()):
                refused_wait = time.monotonic() - w0
                break
            time.sleep(0.5)
    monitor.stop.set()
    monitor.join(5)
    monitor.hz.join(35)
    crashed = server.poll() is not None
    mem = memory(server.pid) if not crashed else {}
    fds_end = len(os.listdir(f"/proc/{server.pid}/fd")) if not crashed else None
    metrics = {}
    if not crashed:
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
    lat = sorted(v["latency_s"] for v in results.values() if v.get("latency_s") is not None)
    verdicts = collections.Counter(v["reward"]["verdict"] for v in results.values())
    expected = {"extraction": (n + 1) // 2, "compilation": n // 2}
    wrong = sum(abs(verdicts.get(v, 0) - c) for v, c in expected.items())
    # A job whose final record is not the one a real worker made for it: a verdict its kind
    # cannot get (`correct` above all), a record of another seed, a record or feedback the
    # forger named, or a failure the forger wrote.
    forged_records = set()
    if forger:
        for s in forger.sent:
            forged_records |= {s["record"], s["feedback"]} - {None}
    adopted = []
    for j, v in results.items():
        i = index[j]
        rec = v.get("record") or {}
        why = []
        if v["reward"]["verdict"] != EXPECTED[i % 2] or v["reward"]["correct"]:
            why.append(f"verdict {v['reward']['verdict']}")
        if rec.get("seed") != i:
            why.append(f"record seed {rec.get('seed')}")
        if v.get("record_digest") in forged_records or rec.get("verdict") != v["reward"]["verdict"]:
            why.append("forged record")
        if why:
            adopted.append((j, why))
    adopted += [(j, ["forged failure"]) for j, m in failed.items() if marker in m or "forger" in m]
    targeted = {s["job"] for s in forger.sent} if forger else set()
    named = {s["named_job"] for s in forger.sent} if forger else set()
    # Forged objects that reached the server's store (it stores a result's objects only after
    # its MAC checked): looked for by the forger's marker.
    in_store = 0
    if forger:
        needle = marker.encode()
        for dirpath, _, files in os.walk(store):
            for name in files:
                try:
                    with open(os.path.join(dirpath, name), "rb") as f:
                        in_store += needle in f.read()
                except OSError:
                    pass
    for w in workers:
        w.send_signal(signal.SIGKILL)
        w.wait()
    if not crashed:
        server.send_signal(signal.SIGTERM)
        server.wait()
    drain.join(10)
    with open(server_log) as f:
        log = f.read()
    h = [s for _, s, _ in monitor.health]
    bad_health = [(t, s, st) for t, s, st in monitor.health if st != 200 or s > 1.0]
    in_pause = [
        s for t, s, _ in monitor.health if any(p <= t < p + a.pause_ms / 1000 for p in pause_times)
    ]
    rss = [m for _, m, _ in monitor.rss if m is not None]
    row = {
        "mode": "embedded queue, 2 worker threads" if mode == "embedded" else "Redis Streams, 2 worker processes",
        "submissions": n,
        "kills": len(killed),
        "lost": n - len(results) - len(failed),
        "failed": len(failed),
        "recorded twice": twice,
        "records": len(keys),
        "duplicate results dropped": int(metrics.get("ptxbench_duplicate_results_total", 0)),
        "verdicts off": wrong,
        "p50 s": lat[len(lat) // 2] if lat else None,
        "p99 s": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
        "submit s": submitted,
        "wall s": wall,
        "eval/s": n / wall,
        "server crashes": int(crashed),
        "healthz p50 ms": 1000 * pct(h, 0.5) if h else None,
        "healthz p99 ms": 1000 * pct(h, 0.99) if h else None,
        "healthz max ms": 1000 * max(h) if h else None,
        "healthz over 1 s or not 200": len(bad_health),
        "server peak MiB": mem.get("VmHWM"),
        "sampled peak MiB": max(rss) if rss else None,
        "server end MiB": mem.get("VmRSS"),
    }
    refused = int(metrics.get("ptxbench_refused_results_total", 0))
    attacks = {
        "mode": row["mode"],
        "slow clients": a.slow_clients if slow else 0,
        "slow connections opened": slow.summary()["opened"] if slow else 0,
        "closed by server": slow.summary()["closed by server"] if slow else 0,
        "longest held s": slow.summary()["held longest s"] if slow else None,
        "Redis pauses": len(pause_times),
        "healthz max in pauses ms": 1000 * max(in_pause) if in_pause else None,
        "forged results": len(forger.sent) if forger else 0,
        "jobs targeted": len(targeted),
        "entries named": len(named),
        "refused results": refused,
        "forged adopted": len(adopted),
        "forged objects stored": in_store,
    }
    detail = {
        "started": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ended": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "loadavg at start": load_at_start,
        "loadavg at end": open("/proc/loadavg").read().split()[:3],
        "folder": tmp,
        "row": row,
        "attacks": attacks,
        "server exited": monitor.exited,
        "server fds": {"max": max((d for _, _, d in monitor.rss), default=None), "end": fds_end},
        "metrics": {k: v for k, v in metrics.items() if "refused" in k or "rejected" in k or "failed" in k
                    or "duplicate" in k or "workers" in k},
        "server log": {
            "refused, no valid credential": log.count("does not carry the workers' credential"),
            "refused, job not queued": log.count("which this server did not queue"),
            "refused, no readable meta": log.count("has no readable `meta`"),
            "warnings reading results": log.count("reading results from redis"),
            "lines": log.count("\n"),
        },
        "poll errors": errors[:50],
        "failed": dict(list(failed.items())[:50]),
        "adopted": adopted[:50],
        "lost ids": [j for j in ids if j not in results and j not in failed][:50],
        "kills at s": [round(x, 1) for x in killed],
        "pauses at s": [round(x, 1) for x in pause_times],
        "pause errors": pause_errors,
        "healthz": {
            "samples": len(h),
            "over 1 s or not 200": bad_health[:50],
            "in pauses": len(in_pause),
            "p99 in pauses ms": 1000 * pct(in_pause, 0.99) if in_pause else None,
        },
        "slow clients": slow.summary() if slow else None,
        "forger": {
            "sent": len(forger.sent),
            "variants": dict(forger.variants),
            "errors": forger.errors[:20],
            "seconds until every forged result was refused (after the load)": refused_wait,
            "sent while the job was still open": sum(1 for x in forger.sent if x["job open"]),
            "sent while the entry named was still open": sum(1 for x in forger.sent if x["named open"]),
            "named jobs lost": len([j for j in named if j in index and j not in results and j not in failed]),
            "targeted jobs with a worker's record": len([j for j in targeted if j in results]),
        } if forger else None,
        "samples": {"healthz": monitor.health, "rss": monitor.rss},
    }
    return row, attacks, detail


def table(rows):
    cols = list(rows[0])
    fmt = lambda v: "–" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)  # noqa: E731
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ptxbench", required=True)
    p.add_argument("--redis", help="redis://host:port (without it, the embedded queue only)")
    p.add_argument("-n", type=int, default=10000)
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--kill-every", type=float, default=4.0, help="seconds between kills")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--modes", default="embedded,redis")
    p.add_argument("--slow-clients", type=int, default=0, help="connections that never finish a request (Redis run)")
    p.add_argument("--pause-every", type=float, default=0, help="seconds between CLIENT PAUSE … WRITE (Redis run)")
    p.add_argument("--pause-ms", type=int, default=3000, help="how long each pause lasts, ms")
    p.add_argument("--forged", type=int, default=0, help="made-up results added to the results stream (Redis run)")
    p.add_argument("--forge-every", type=float, default=0.4, help="seconds between the forger's rounds")
    p.add_argument("--forge-per-round", type=int, default=3, help="forged results a round")
    p.add_argument("--deadline", type=float, default=900, help="seconds after the submissions until an id is lost")
    p.add_argument("--json-out", help="a file for every count and sample of the run")
    a = p.parse_args()
    rows, attacks, details = [], [], []
    for mode in a.modes.split(","):
        if mode == "redis" and not a.redis:
            continue
        row, att, detail = run(mode, a)
        rows.append(row)
        attacks.append(att)
        details.append(detail)
        print(json.dumps({k: v for k, v in detail.items() if k != "samples"}), file=sys.stderr)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"argv": sys.argv[1:], "runs": details}, f, indent=1)
            f.write("\n")
    print(table(rows))
    if any(r["slow clients"] or r["Redis pauses"] or r["forged results"] for r in attacks):
        print()
        print(table([r for r in attacks if r["mode"].startswith("Redis")]))


if __name__ == "__main__":
    main()
