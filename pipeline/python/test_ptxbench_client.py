"""The Python client against a real `ptxbench serve` (run by pipeline/tests/it/serve.rs).

PTXBENCH_TEST_SERVER: a server with embedded workers, `--max-queue 3 --max-batch 4`;
PTXBENCH_TEST_QUEUE_SERVER: a server on Redis with no worker, `--max-queue 2` (jobs stay
queued); PTXBENCH_TEST_KERNEL: a folder with a kernel.ptx and plan.yaml that pass the static
check. Without PTXBENCH_TEST_SERVER every test is skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
import unittest
import urllib.request
import uuid
from unittest import mock

from ptxbench_client import AsyncClient, Client, Result, ServiceError, reward

SERVER = os.environ.get("PTXBENCH_TEST_SERVER")
QUEUE_SERVER = os.environ.get("PTXBENCH_TEST_QUEUE_SERVER")
KERNEL = os.environ.get("PTXBENCH_TEST_KERNEL")
TASK = "gemm_n4096_k4096"


def text(tag: str) -> dict:
    """A submission the static check decides (no kernel in the response), unique to this run."""
    return {"task": TASK, "response": f"no kernel here ({tag} {uuid.uuid4().hex})"}


def metric(base: str, name: str) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


def gpus(base: str) -> int:
    with urllib.request.urlopen(f"{base}/healthz", timeout=30) as r:
        return json.loads(r.read())["gpus"] or 0


@unittest.skipUnless(SERVER, "PTXBENCH_TEST_SERVER is not set")
class AgainstEmbedded(unittest.TestCase):
    def client(self, **kw) -> Client:
        kw.setdefault("max_backoff", 0.5)
        kw.setdefault("max_retries", 40)
        kw.setdefault("timeout", 120)
        return Client(SERVER, **kw)

    def test_limits_are_the_servers(self):
        lim = self.client().limits()
        self.assertEqual((lim["max_queue"], lim["max_batch"]), (3, 4), lim)
        self.assertEqual(lim["max_deadline_s"], 86400)
        self.assertEqual(lim["max_wait_s"], 60)

    def test_evaluate_many_answers_each_item_in_order_and_never_raises(self):
        subs = [
            text("a"),
            {"task": "no_such_task", "response": "x"},
            text("b"),
            text("c"),
            {"task": TASK, "response": "x", "workloads": ["M7O"]},
            text("d"),
            text("e"),
        ]
        if KERNEL:
            with open(os.path.join(KERNEL, "kernel.ptx")) as k, open(os.path.join(KERNEL, "plan.yaml")) as p:
                subs.append({"task": TASK, "kernel": k.read(), "plan": p.read(), "correctness_only": True})
        # 7 or 8 items, batches of at most 3 (the queue's cap), two malformed ones among them.
        out = self.client().evaluate_many(subs)
        self.assertEqual(len(out), len(subs))
        for i in (0, 2, 3, 5, 6):
            self.assertIsInstance(out[i], Result, out[i])
            self.assertEqual(out[i].verdict, "extraction")
            self.assertEqual(out[i].reward(), 0.0)
            self.assertEqual(reward(out[i]), 0.0)
        self.assertIsInstance(out[1], ServiceError)
        self.assertEqual((out[1].status, out[1].field), (400, "task"), out[1])
        self.assertIsInstance(out[4], ServiceError)
        self.assertEqual((out[4].status, out[4].field), (400, "workloads[0]"), out[4])
        self.assertIsNone(reward(out[4]))
        if KERNEL:
            last = out[-1]
            self.assertIsInstance(last, Result, last)
            if gpus(SERVER) == 0:
                # No GPU: the harness failed; a retryable result with no reward, not an error.
                self.assertEqual(last.state, "harness_failure", last)
                self.assertTrue(last.retryable)
                self.assertIsNone(last.reward())
                self.assertIn("GPU", last.error or "")

    def test_a_retried_submission_makes_no_second_job(self):
        c = self.client()
        real = urllib.request.urlopen
        sent = []

        def lose_the_first_answer(req, *a, **kw):
            resp = real(req, *a, **kw)
            sent.append((req.get_method(), req.full_url, req.get_header("Idempotency-key")))
            if len(sent) == 1:
                resp.close()
                raise ConnectionResetError("the answer was lost")
            return resp

        before = metric(SERVER, "ptxbench_answered_from_store_total")
        sub = text("retried")
        with mock.patch.object(urllib.request, "urlopen", lose_the_first_answer):
            id = c.submit(**sub)
        self.assertEqual(len(sent), 2, sent)
        self.assertEqual(sent[0][2], sent[1][2], "the same key on the retry")
        self.assertTrue(sent[0][2])
        # A second job would have been answered by the first's evaluation (counted here).
        self.assertEqual(metric(SERVER, "ptxbench_answered_from_store_total"), before)
        self.assertEqual(c.wait(id).verdict, "extraction")
        # The same key again: the same id; with another request: refused, naming the key.
        key = "key-" + id
        self.assertEqual(c.submit(idempotency_key=key, **sub), c.submit(idempotency_key=key, **sub))
        with self.assertRaises(ServiceError) as e:
            c.submit(idempotency_key=key, **text("another"))
        self.assertEqual((e.exception.status, e.exception.field), (422, "Idempotency-Key"))
        self.assertIn(key, str(e.exception))

    def test_cancel_and_status(self):
        c = self.client()
        r = c.evaluate(**text("cancel"))
        with self.assertRaises(ServiceError) as e:
            c.cancel(r.id)
        self.assertEqual(e.exception.status, 409)
        with self.assertRaises(ServiceError) as e:
            c.cancel("0" * 32)
        self.assertEqual(e.exception.status, 404)
        views = c.status([r.id, "nope"])
        self.assertEqual([v["id"] for v in views], [r.id, "nope"])
        self.assertEqual(views[0]["state"], "done")
        self.assertIn("no evaluation", views[1]["error"])

    def test_asyncio(self):
        async def main():
            ac = AsyncClient(SERVER, max_backoff=0.5, max_retries=40, timeout=120)
            one, many, lim = await asyncio.gather(
                ac.evaluate(**text("async one")),
                ac.evaluate_many([text("async a"), {"task": "nope", "response": "x"}, text("async b")]),
                ac.limits(),
            )
            return one, many, lim

        one, many, lim = asyncio.run(main())
        self.assertEqual(one.verdict, "extraction")
        self.assertEqual([type(x) for x in many], [Result, ServiceError, Result])
        self.assertEqual(lim["max_queue"], 3)

    def test_connection_errors_are_retried_a_bounded_number_of_times(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        c = Client(f"http://127.0.0.1:{port}", max_retries=2, backoff=0.01, max_backoff=0.05)
        real = urllib.request.urlopen
        tries = []

        def count(req, *a, **kw):
            tries.append(req.full_url)
            return real(req, *a, **kw)

        with mock.patch.object(urllib.request, "urlopen", count):
            with self.assertRaises(ServiceError) as e:
                c.submit(**text("nowhere"))
        self.assertEqual(e.exception.status, 0)
        self.assertEqual(len([t for t in tries if t.endswith("/v1/evaluations")]), 3, tries)
        out = c.evaluate_many([text("x"), text("y")])
        self.assertEqual([type(x) for x in out], [ServiceError, ServiceError])


@unittest.skipUnless(QUEUE_SERVER, "PTXBENCH_TEST_QUEUE_SERVER is not set")
class AgainstAQueueWithoutWorkers(unittest.TestCase):
    def test_full_queue_deadlines_splits_and_timeouts(self):
        c = Client(QUEUE_SERVER, max_retries=1, backoff=0.05, max_backoff=0.2, timeout=60)
        a, b = c.submit(**text("fill a")), c.submit(**text("fill b"))
        # The queue is full: 429, retried once, then this item's error (not an exception).
        start = time.monotonic()
        out = c.evaluate_many([text("no room")], timeout=5)
        self.assertIsInstance(out[0], ServiceError, out)
        self.assertEqual(out[0].status, 429)
        self.assertLess(time.monotonic() - start, 5)
        # Cancelled: they leave the queue; cancelling again is no error.
        for id in (a, b):
            self.assertEqual(c.cancel(id)["state"], "cancelled")
        self.assertEqual(c.cancel(a)["state"], "cancelled")
        self.assertEqual([v["state"] for v in c.status([a, b])], ["cancelled", "cancelled"])
        # Three items with a 1 s deadline, sent as one batch by a client that believes the queue
        # takes 100: the server refuses a batch larger than its queue (400), the client splits
        # it; what does not fit yet (429) is retried until the first expire and make room.
        c = Client(QUEUE_SERVER, max_retries=30, backoff=0.1, max_backoff=0.5, timeout=60)
        c._limits = {"max_batch": 100, "max_queue": 100}
        items = [dict(text(f"deadline {i}"), deadline_s=1) for i in range(3)]
        out = c.evaluate_many(items)
        self.assertEqual([getattr(x, "state", x) for x in out], ["expired"] * 3)
        # No result in time: a TimeoutError in its place, and the job is cancelled.
        cancelled = metric(QUEUE_SERVER, "ptxbench_cancelled_jobs_total")
        out = c.evaluate_many([text("too slow")], timeout=1)
        self.assertIsInstance(out[0], TimeoutError, out)
        self.assertEqual(metric(QUEUE_SERVER, "ptxbench_cancelled_jobs_total"), cancelled + 1)
        views = c.status(c.submit_many([text("left queued")]))
        self.assertEqual(views[0]["state"], "queued")
        self.assertEqual(c.cancel(views[0]["id"])["state"], "cancelled")


if __name__ == "__main__":
    unittest.main()
