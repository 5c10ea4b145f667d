"""A client of `ptxbench serve` (standard library only), usable as a training loop's reward.

    from ptxbench_client import Client
    client = Client("http://gpu-pool:8420", token="...")      # or PTXBENCH_SERVE_TOKEN
    r = client.evaluate(task="gemm_n4096_k4096", response=model_output)
    r.verdict, r.correct, r.correct_on_target, r.speedup, r.speedup_ci95, r.feedback

    rewards = client.evaluate_many([{"task": t, "response": text} for t, text in batch])

`reward()` turns a result into a number (0 unless correct; then the speedup, capped); write
your own from the fields if you want another shape. The full record is `r.record`, its
digest `r.record_digest` (in the server's store).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterable


class ServiceError(RuntimeError):
    """The service refused a request or an evaluation failed without a record."""

    def __init__(self, status: int, message: str, field_name: str | None = None):
        super().__init__(f"HTTP {status}: {message}" + (f" (field {field_name})" if field_name else ""))
        self.status = status
        self.field = field_name


@dataclass
class Result:
    id: str
    verdict: str
    correct: bool
    correct_on_target: bool | None
    speedup: float | None
    speedup_ci95: tuple[float, float] | None
    feedback: str
    record_digest: str
    cached: bool
    latency_s: float | None
    record: dict[str, Any] = field(repr=False, default_factory=dict)

    def reward(self, cap: float = 10.0) -> float:
        """0 unless correct (on target when the record says), else the speedup (1 if untimed)."""
        if not self.correct or self.correct_on_target is False:
            return 0.0
        return min(self.speedup if self.speedup is not None else 1.0, cap)


class Client:
    def __init__(self, url: str, token: str | None = None, timeout: float = 3600.0):
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("PTXBENCH_SERVE_TOKEN")
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        while True:
            req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=90) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as e:
                payload = e.read()
                try:
                    v = json.loads(payload)
                except ValueError:
                    v = {"error": payload.decode(errors="replace")}
                if e.code == 429:
                    time.sleep(float(e.headers.get("Retry-After", "5")))
                    continue
                raise ServiceError(e.code, v.get("error", ""), v.get("field")) from None

    def tasks(self) -> list[str]:
        return [t["id"] for t in self._call("GET", "/v1/tasks")[1]["tasks"]]

    def submit(self, **submission: Any) -> str:
        """Queues one evaluation (see pipeline/openapi.yaml for the fields); returns its id."""
        return self._call("POST", "/v1/evaluations", submission)[1]["id"]

    def submit_many(self, submissions: Iterable[dict[str, Any]], batch: int = 500) -> list[str]:
        subs, ids = list(submissions), []
        for i in range(0, len(subs), batch):
            ids += self._call("POST", "/v1/batches", {"items": subs[i : i + batch]})[1]["ids"]
        return ids

    def result(self, id: str, wait: float = 30.0) -> Result | None:
        """The result of `id`, waiting up to `wait` seconds (at most 60); None if not done."""
        status, v = self._call("GET", f"/v1/evaluations/{id}?wait={min(wait, 60.0)}")
        if v["state"] == "queued":
            return None
        if v["state"] == "failed":
            raise ServiceError(status, f"evaluation {id}: {v.get('error')}")
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
        )

    def wait(self, id: str) -> Result:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            r = self.result(id, wait=60.0)
            if r is not None:
                return r
        raise TimeoutError(f"evaluation {id}: no result in {self.timeout} s")

    def evaluate(self, **submission: Any) -> Result:
        return self.wait(self.submit(**submission))

    def evaluate_many(self, submissions: Iterable[dict[str, Any]]) -> list[Result]:
        return [self.wait(i) for i in self.submit_many(submissions)]


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
