"""Simulated annotators for load and crash tests of a running fireval server.

Each simulated annotator logs in through the real login form, then loops ``GET /api/next`` →
``POST /api/labels`` with its CSRF header, recording every *acknowledged* label (HTTP 200 with a
label id) and the latency of each submission. A share of submissions is sent twice to exercise
idempotence. Used by ``benchmarks/load_annotation.py`` and the reliability tests; it only talks to
the URL it is given (loopback in tests).

A test and benchmark tool, not part of the product package: run the benchmarks from the
repository root (``python benchmarks/load_annotation.py``); pytest finds it through
``pythonpath = ["."]``.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class LoadResult:
    """Acknowledged labels ``(label_id, item_id, annotator)``, latencies (s) and failures."""

    acked: list[tuple[int, int, str]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    duplicates_ok: int = 0
    errors: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")

    @property
    def rate(self) -> float:
        return len(self.acked) / self.elapsed if self.elapsed else 0.0


def reset_postgres(url: str) -> None:
    """Empty the PostgreSQL database at ``url`` (schema ``public`` dropped and recreated), so a
    store can be created afresh there: tables, triggers and functions of every migration go.

    For test and benchmark databases only.
    """
    import sqlalchemy as sa

    eng = sa.create_engine(url)
    try:
        with eng.begin() as conn:
            conn.exec_driver_sql("DROP SCHEMA IF EXISTS public CASCADE")
            conn.exec_driver_sql("CREATE SCHEMA public")
    finally:
        eng.dispose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``fireval serve`` in a subprocess on 127.0.0.1 (started and stopped by the caller)."""

    def __init__(
        self,
        db: str,
        *,
        port: int | None = None,
        secret: str | None = None,
        extra: Sequence[str] = (),
        log: Path | None = None,
    ) -> None:
        self.db, self.port, self.secret, self.extra, self.log = (
            db,
            port or free_port(),
            secret or secrets.token_urlsafe(32),  # kept across restarts of this server
            list(extra),
            log,
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ServerProcess:
        import httpx

        env = {**os.environ, "FIREVAL_SECRET_KEY": self.secret}
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fireval",
                "serve",
                "--db",
                self.db,
                "--port",
                str(self.port),
                *self.extra,
            ],
            env=env,
            stdout=out,
            stderr=out,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with code {self.proc.returncode}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("server did not come up")

    def kill9(self) -> None:
        """SIGKILL the server: no shutdown handlers run."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill9()


def login(client: object, token: str) -> str:
    """Log in an ``httpx.Client`` with ``token``; return its CSRF token."""
    page = client.get("/login")  # type: ignore[attr-defined]
    m = _CSRF.search(page.text)
    if not m:
        raise RuntimeError("login page without CSRF field")
    r = client.post("/login", data={"token": token, "csrf_token": m.group(1)})  # type: ignore[attr-defined]
    if r.status_code not in (200, 303):
        raise RuntimeError(f"login failed with {r.status_code}")
    return str(client.get("/api/session").json()["csrf_token"])  # type: ignore[attr-defined]


def run_load(
    base_url: str,
    tokens: dict[str, str],
    total: int,
    *,
    seed: int = 0,
    resubmit_share: float = 0.05,
    stop: threading.Event | None = None,
    timeout: float = 30.0,
    think_ms: float = 0.0,
    max_seconds: float | None = None,
) -> LoadResult:
    """Run one thread per annotator until ``total`` labels are acknowledged or the queue is empty.

    ``think_ms`` > 0: each annotator waits an exponentially distributed time of that mean
    (seeded per annotator) before each answer, as a person reading and watching would; 0 is a
    closed loop without think time (saturation). ``max_seconds`` bounds the run: annotators
    stop starting new answers after it (answers in flight are still counted).

    Latency is measured per label submission (``POST /api/labels`` with ``next: true``, which
    also hands out the annotator's next item).

    A connection error ends that annotator (the server may have been killed on purpose).
    """
    import httpx

    res = LoadResult()
    lock = threading.Lock()
    stop = stop or threading.Event()
    t_end = None if max_seconds is None else time.monotonic() + max_seconds

    def annotator(name: str, token: str, k: int) -> None:
        rng = np.random.default_rng(seed * 1000 + k)
        with httpx.Client(base_url=base_url, timeout=timeout, follow_redirects=False) as c:
            try:
                h = {"X-CSRF-Token": login(c, token)}
                nxt = c.get("/api/next")
                nxt.raise_for_status()
                item = nxt.json()["item"]
                while not stop.is_set() and item is not None:
                    if think_ms > 0:  # the person looks at the item first; wakes early on stop
                        pause = float(rng.exponential(think_ms / 1000.0))
                        if t_end is not None:  # never past the end of the run
                            pause = min(pause, max(0.0, t_end - time.monotonic()))
                        stop.wait(pause)
                    if stop.is_set() or (t_end is not None and time.monotonic() >= t_end):
                        return
                    with lock:
                        if len(res.acked) >= total:
                            return
                    body = {
                        "item_id": item["id"],
                        "label": "relevant" if rng.random() < 0.5 else "irrelevant",
                        "time_spent_ms": int(rng.integers(500, 5000)),
                    }
                    t0 = time.perf_counter()
                    # submit and receive the next item in one request (one transaction)
                    r = c.post("/api/labels", json={**body, "next": True}, headers=h)
                    dt = time.perf_counter() - t0
                    if r.status_code != 200:
                        with lock:
                            res.errors.append(f"{name}: {r.status_code} {r.text[:200]}")
                        return
                    answer = r.json()
                    lid = int(answer["label_id"])
                    with lock:
                        res.acked.append((lid, int(item["id"]), name))
                        res.latencies.append(dt)
                    if rng.random() < resubmit_share:
                        again = c.post("/api/labels", json=body, headers=h)
                        if again.status_code == 200 and again.json() == {
                            "status": "duplicate",
                            "label_id": lid,
                            "item_id": item["id"],
                        }:
                            with lock:
                                res.duplicates_ok += 1
                        else:
                            with lock:
                                res.errors.append(
                                    f"{name}: resubmission answered {again.status_code} {again.text[:200]}"
                                )
                    item = answer["next"]
            except httpx.TransportError as exc:
                with lock:
                    res.errors.append(f"{name}: transport {type(exc).__name__}")

    threads = [
        threading.Thread(target=annotator, args=(n, t, k), daemon=True)
        for k, (n, t) in enumerate(tokens.items())
    ]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res.elapsed = time.perf_counter() - t0
    return res
