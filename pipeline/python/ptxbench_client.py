"""A client of `ptxbench serve` (standard library only), usable as a training loop's reward.

    from ptxbench_client import Client, Result
    client = Client("http://gpu-pool:8420", token="...")      # or PTXBENCH_SERVE_TOKEN
    r = client.evaluate(task="gemm_n4096_k4096", response=model_output)
    r.verdict, r.correct, r.correct_on_target, r.speedup, r.speedup_ci95, r.feedback

    items = client.evaluate_many([{"task": t, "response": text} for t, text in batch])
    rewards = [reward(x) for x in items]     # None for an error or a harness failure

`evaluate_many` never raises for one item: each item of its list is that submission's
`Result`, or its error (a `ServiceError`, or a `TimeoutError` when no result came in time).
A `Result` whose `state` is `harness_failure` (no GPU, a worker that died) is no verdict on the
candidate: its `reward()` is None and it is `retryable` (submit it again).

Requests that fail for a passing reason (429, 503, a connection refused or reset) are retried
with backoff, at most `max_retries` times. Every submission carries an `Idempotency-Key`, so a
submission retried after a lost response makes no second job. Batches are cut to the server's
caps (`GET /v1/limits`); a batch the server finds too large is split, and a malformed item is
reported in its place while the others are queued. `AsyncClient` offers the same for asyncio.

`reward()` turns a result into a number (0 unless correct; then the speedup, capped); write
your own from the fields if you want another shape. The full record is `r.record`, its
digest `r.record_digest` (in the server's store).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import random
import re
import socket
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Union


class ServiceError(RuntimeError):
    """The service refused a request, could not be reached, or an evaluation ended without a
    result (`state`: `failed`, `cancelled`, `expired`)."""

    def __init__(
        self,
        status: int,
        message: str,
        field_name: str | None = None,
        *,
        state: str | None = None,
        id: str | None = None,
        retryable: bool = False,
    ):
        where = f"HTTP {status}" if status else "no answer"
        super().__init__(f"{where}: {message}" + (f" (field {field_name})" if field_name else ""))
        self.status = status
        self.message = message
        self.field = field_name
        self.state = state
        self.id = id
        self.retryable = retryable


@dataclass
class Result:
    id: str
    verdict: str | None
    correct: bool
    correct_on_target: bool | None
    speedup: float | None
    speedup_ci95: tuple[float, float] | None
    feedback: str
    record_digest: str | None
    cached: bool
    latency_s: float | None
    record: dict[str, Any] = field(repr=False, default_factory=dict)
    # `done`, or `harness_failure`: the harness failed, no verdict (retry it).
    state: str = "done"
    retryable: bool = False
    error: str | None = None
    seed_given: bool = False

    def reward(self, cap: float = 10.0) -> float | None:
        """0 unless correct (on target when the record says), else the speedup (1 if untimed);
        None for a harness failure (no verdict on the candidate)."""
        if self.state != "done":
            return None
        if not self.correct or self.correct_on_target is False:
            return 0.0
        return min(self.speedup if self.speedup is not None else 1.0, cap)


Item = Union[Result, ServiceError, TimeoutError]


def reward(item: Item, cap: float = 10.0) -> float | None:
    """An item of `evaluate_many` as a reward: None for an error or a harness failure."""
    return item.reward(cap) if isinstance(item, Result) else None


# Errors worth another try: the server is busy or down for a moment, or the connection broke.
_RETRY_STATUS = (429, 503)
_ITEM_FIELD = re.compile(r"^items\[(\d+)\]\.?(.*)$")


class Client:
    def __init__(
        self,
        url: str,
        token: str | None = None,
        timeout: float = 3600.0,
        *,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        request_timeout: float = 90.0,
        poll: float = 10.0,
    ):
        """`timeout`: the longest `evaluate`/`evaluate_many` wait for results; `max_retries`:
        further tries of a request that failed for a passing reason (429, 503, connection),
        waiting `backoff * 2**n` seconds (at least the server's Retry-After, at most
        `max_backoff`) with jitter."""
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("PTXBENCH_SERVE_TOKEN")
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.request_timeout = request_timeout
        self.poll = poll
        self._limits: dict[str, Any] | None = None

    # --- HTTP -----------------------------------------------------------------------------

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        d = self.backoff * (2**attempt) * random.uniform(0.5, 1.0)
        if retry_after:
            try:
                d = max(d, float(retry_after))
            except ValueError:
                pass
        return min(d, self.max_backoff)

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> tuple[int, Any]:
        """One request, tried again (at most `max_retries` times) while it fails for a passing
        reason; raises ServiceError otherwise."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        attempt = 0
        while True:
            req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.request_timeout) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as e:
                payload = e.read()
                try:
                    v = json.loads(payload)
                except ValueError:
                    v = {"error": payload.decode(errors="replace")}
                if not isinstance(v, dict):
                    v = {"error": str(v)}
                retry_after = e.headers.get("Retry-After")
                # 409 with Retry-After: the same idempotency key is being queued right now.
                retryable = e.code in _RETRY_STATUS or (
                    e.code == 409 and retry_after is not None and bool(idempotency_key)
                )
                err = ServiceError(e.code, v.get("error", ""), v.get("field"), retryable=retryable)
            except (urllib.error.URLError, http.client.HTTPException, socket.timeout, OSError) as e:
                # Refused, reset, timed out, or an answer cut short.
                reason = getattr(e, "reason", e)
                err = ServiceError(0, f"{self.url}{path}: {reason}", retryable=True)
                retry_after = None
            if not err.retryable or attempt >= self.max_retries:
                raise err from None
            time.sleep(self._delay(attempt, retry_after))
            attempt += 1

    # --- The API ----------------------------------------------------------------------------

    def tasks(self) -> list[str]:
        return [t["id"] for t in self._call("GET", "/v1/tasks")[1]["tasks"]]

    def limits(self, refresh: bool = False) -> dict[str, Any]:
        """The server's caps (`max_batch`, `max_queue`, `max_body`, `max_deadline_s`, ...)."""
        if self._limits is None or refresh:
            self._limits = self._call("GET", "/v1/limits")[1]
        return self._limits

    def submit(self, idempotency_key: str | None = None, **submission: Any) -> str:
        """Queues one evaluation (see pipeline/openapi.yaml for the fields, `deadline_s`
        included); returns its id. Retried with the same idempotency key (a fresh one unless
        given), so a retry never makes a second job."""
        key = idempotency_key or uuid.uuid4().hex
        return self._call("POST", "/v1/evaluations", submission, idempotency_key=key)[1]["id"]

    def _chunk(self, batch: int | None) -> int:
        try:
            lim = self.limits()
            size = min(int(lim["max_batch"]), int(lim["max_queue"]))
        except (ServiceError, KeyError, TypeError, ValueError):
            size = 500
        if batch:
            size = min(size, batch)
        return max(size, 1)

    def _submit_items(self, subs: list[dict[str, Any]], batch: int | None = None) -> list[str | ServiceError]:
        """An id or an error for each submission, in order. Batches are cut to the server's
        caps; one the server finds too large is halved; a malformed item gets its error and
        the rest of its batch is sent again without it."""
        out: list[Any] = [None] * len(subs)
        size = self._chunk(batch)
        todo = [list(range(i, min(i + size, len(subs)))) for i in range(0, len(subs), size)]
        while todo:
            idx = todo.pop(0)
            if not idx:
                continue
            try:
                _, v = self._call(
                    "POST", "/v1/batches", {"items": [subs[i] for i in idx]}, idempotency_key=uuid.uuid4().hex
                )
                for i, id in zip(idx, v["ids"]):
                    out[i] = id
                continue
            except ServiceError as e:
                err = e
            bad = None
            m = _ITEM_FIELD.match(err.field or "")
            if err.status == 400 and m and int(m.group(1)) < len(idx):
                bad, name = int(m.group(1)), m.group(2)
            elif err.status == 400 and len(idx) == 1 and err.field not in (None, "items"):
                bad, name = 0, err.field
            if bad is not None:
                out[idx[bad]] = ServiceError(
                    400, err.message.replace(f"items[{bad}].", ""), name or None
                )
                todo.insert(0, idx[:bad] + idx[bad + 1 :])
            elif len(idx) > 1 and (err.status == 413 or (err.status == 400 and err.field == "items")):
                # Larger than the server takes at once (its caps changed, or the body): halve.
                self._limits = None
                half = len(idx) // 2
                todo[0:0] = [idx[:half], idx[half:]]
            else:
                for i in idx:
                    out[i] = err
        return out

    def submit_many(self, submissions: Iterable[dict[str, Any]], batch: int | None = None) -> list[str]:
        """Queues every submission; returns their ids in order, or raises the first error
        (`evaluate_many` reports errors per item instead)."""
        out = self._submit_items(list(submissions), batch)
        for x in out:
            if isinstance(x, ServiceError):
                raise x
        return out  # type: ignore[return-value]

    def cancel(self, id: str) -> dict[str, Any]:
        """Cancels a queued evaluation (it leaves the queue; state `cancelled`); returns its
        view. A finished one, or one identical submissions share, is a ServiceError 409."""
        return self._call("DELETE", f"/v1/evaluations/{id}")[1]

    def status(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        """The views of many evaluations at once (none waited for), in order; an id this client
        has no evaluation of gets `{"id": ..., "error": ...}`."""
        ids = list(ids)
        size = self._chunk(None)
        views: list[dict[str, Any]] = []
        for i in range(0, len(ids), size):
            views += self._call("POST", "/v1/evaluations/status", {"ids": ids[i : i + size]})[1]["results"]
        return views

    @staticmethod
    def _outcome(id: str, v: dict[str, Any]) -> Result | ServiceError | None:
        """A view as a Result, an error, or None while it is queued."""
        state = v.get("state")
        if state is None:
            return ServiceError(404, v.get("error", f"no evaluation `{id}`"), id=id)
        if state == "queued":
            return None
        if state == "harness_failure":
            return Result(
                id=id,
                verdict=None,
                correct=False,
                correct_on_target=None,
                speedup=None,
                speedup_ci95=None,
                feedback="",
                record_digest=v.get("record_digest"),
                cached=v.get("cached", False),
                latency_s=v.get("latency_s"),
                state=state,
                retryable=True,
                error=v.get("error"),
            )
        if state != "done":
            return ServiceError(200, f"evaluation {id} {state}: {v.get('error')}", state=state, id=id)
        r = v["reward"]
        ci = r.get("speedup_ci95")
        return Result(
            id=id,
            verdict=r["verdict"],
            correct=r["correct"],
            correct_on_target=r.get("correct_on_target"),
            speedup=r.get("speedup"),
            speedup_ci95=tuple(ci) if ci else None,
            feedback=v["feedback"],
            record_digest=v["record_digest"],
            cached=v["cached"],
            latency_s=v.get("latency_s"),
            record=v["record"],
            seed_given=bool(r.get("seed_given", False)),
        )

    def result(self, id: str, wait: float = 30.0) -> Result | None:
        """The result of `id`, waiting up to `wait` seconds (at most 60); None if not done.
        An evaluation that ended without a result (failed, cancelled, expired) raises
        ServiceError."""
        _, v = self._call("GET", f"/v1/evaluations/{id}?wait={max(0.0, min(wait, 60.0))}")
        r = self._outcome(id, v)
        if isinstance(r, ServiceError):
            raise r
        return r

    def wait(self, id: str) -> Result:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            r = self.result(id, wait=min(60.0, max(0.0, deadline - time.monotonic())))
            if r is not None:
                return r
        raise TimeoutError(f"evaluation {id}: no result in {self.timeout} s")

    def evaluate(self, **submission: Any) -> Result:
        return self.wait(self.submit(**submission))

    def evaluate_many(
        self,
        submissions: Iterable[dict[str, Any]],
        timeout: float | None = None,
        cancel_unfinished: bool = True,
        batch: int | None = None,
    ) -> list[Item]:
        """For each submission, in order, its Result or its error; never raises for one item.
        Results are read many at once (`status`) between long-polls of the first one still
        queued. After `timeout` (default: the client's) the items still queued are each a
        TimeoutError, and are cancelled unless `cancel_unfinished` is False."""
        subs = list(submissions)
        out: list[Any] = list(self._submit_items(subs, batch))
        waiting = {i: x for i, x in enumerate(out) if isinstance(x, str)}
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        size = self._chunk(None)
        while waiting:
            pending = list(waiting.items())
            for c in range(0, len(pending), size):
                chunk = pending[c : c + size]
                try:
                    views = self.status([id for _, id in chunk])
                except ServiceError as e:
                    for i, _ in chunk:
                        out[i] = e
                        del waiting[i]
                    continue
                for (i, id), v in zip(chunk, views):
                    r = self._outcome(id, v)
                    if r is not None:
                        out[i] = r
                        del waiting[i]
            left = deadline - time.monotonic()
            if not waiting or left <= 0:
                break
            first = next(iter(waiting.values()))
            try:
                self._call("GET", f"/v1/evaluations/{first}?wait={min(left, self.poll, 60.0):.3f}")
            except ServiceError:
                pass  # the next status read reports it
        for i, id in waiting.items():
            out[i] = TimeoutError(f"evaluation {id}: no result in time")
            if cancel_unfinished:
                try:
                    self.cancel(id)
                except ServiceError:
                    pass
        return out


class AsyncClient:
    """`Client` for asyncio: each call runs in a thread (`asyncio.to_thread`), so many can be
    awaited at once."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 3600.0, **options: Any):
        self.client = Client(url, token, timeout, **options)

    async def evaluate(self, **submission: Any) -> Result:
        return await asyncio.to_thread(lambda: self.client.evaluate(**submission))

    async def evaluate_many(self, submissions: Iterable[dict[str, Any]], **options: Any) -> list[Item]:
        subs = list(submissions)
        return await asyncio.to_thread(lambda: self.client.evaluate_many(subs, **options))

    async def submit(self, **submission: Any) -> str:
        return await asyncio.to_thread(lambda: self.client.submit(**submission))

    async def result(self, id: str, wait: float = 30.0) -> Result | None:
        return await asyncio.to_thread(self.client.result, id, wait)

    async def cancel(self, id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.client.cancel, id)

    async def status(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        ids = list(ids)
        return await asyncio.to_thread(self.client.status, ids)

    async def limits(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.client.limits)


if __name__ == "__main__":
    import argparse
    import sys

    p = argparse.ArgumentParser(description="Evaluate one model response through ptxbench serve.")
    p.add_argument("url")
    p.add_argument("--task", required=True)
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--seed", type=int)
    p.add_argument("response", help="a file with the model's response ('-': standard input)")
    a = p.parse_args()
    text = sys.stdin.read() if a.response == "-" else open(a.response, encoding="utf-8").read()
    sub = {"task": a.task, "arch": a.arch, "response": text}
    if a.seed is not None:
        sub["seed"] = a.seed
    res = Client(a.url).evaluate(**sub)
    print(json.dumps({k: v for k, v in res.__dict__.items() if k != "record"}, indent=2))
    print("reward", res.reward())
