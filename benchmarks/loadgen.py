"""Simulated annotators for load and crash tests of a running fireval server.

Each simulated annotator logs in through the real login form, then loops ``POST /api/labels``
(with ``next: true``: the answer and the next item in one request) with its CSRF header,
recording every *acknowledged* label (HTTP 200 with an answer handle; with the server's
``secret`` mapped back to the store's label id, as the loss check needs) and the latency of each
submission. A share of submissions is sent twice to exercise idempotence. Like the annotation
page (which prefetches the next video), each annotator also asks ``GET /api/peek`` once per
item unless told not to (``peek=False``). The annotators are
coroutines in one asyncio loop, each speaking HTTP/1.1 over its own keep-alive socket
(:class:`_Conn`): a thread and an HTTP library per annotator cost as much CPU as the server on a
2-core machine and the benchmark measured the client. Used by ``benchmarks/load_annotation.py``
and the reliability tests; it only talks to the URL it is given (loopback in tests).

A test and benchmark tool, not part of the product package: run the benchmarks from the
repository root (``python benchmarks/load_annotation.py``); pytest finds it through
``pythonpath = ["."]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
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
from typing import Any
from urllib.parse import urlencode, urlsplit

import numpy as np

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class LoadResult:
    """Acknowledged labels ``(label_id, item_id, annotator)``, latencies (s) and failures.

    ``label_id`` is the store's row id when :func:`run_load` was given the server's ``secret``,
    else the answer's opaque handle (the server's answers carry no row id: blind judging)."""

    acked: list[tuple[Any, str, str]] = field(default_factory=list)  # item: the page's opaque handle
    latencies: list[float] = field(default_factory=list)
    peek_latencies: list[float] = field(default_factory=list)  # GET /api/peek, the page's prefetch
    duplicates_ok: int = 0
    errors: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")

    def peek_percentile(self, q: float) -> float:
        return float(np.percentile(self.peek_latencies, q)) if self.peek_latencies else float("nan")

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
        workers: int | None = None,
    ) -> None:
        self.db, self.port, self.secret, self.extra, self.log = (
            db,
            port or free_port(),
            secret or secrets.token_urlsafe(32),  # kept across restarts of this server
            list(extra),
            log,
        )
        if workers is not None:  # else ``fireval serve``'s default
            self.extra += ["--workers", str(workers)]
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
            start_new_session=True,  # its own process group: kill9 reaches every worker
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
        """SIGKILL the server and all its worker processes at once: no shutdown handlers run."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        """SIGTERM (the server passes it on to its workers and waits for them), then SIGKILL
        whatever is left of its process group."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill9()
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)


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


class _Conn:
    """One keep-alive HTTP/1.1 connection to the server, spoken directly over an asyncio stream.

    A browser-like client at a fraction of an HTTP library's CPU cost, so the load generator
    measures the server and not itself: requests are written as bytes, responses parsed by
    hand (status line, headers, ``Content-Length`` or chunked body), the session cookie kept,
    and a connection the server closed while idle replaced before the next request.
    """

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.cookie = ""

    async def _open(self) -> None:
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port), self.timeout
        )

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = self.reader = None

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        for attempt in (0, 1):
            if self.reader is not None and self.reader.at_eof():
                # the server closed the idle keep-alive connection (uvicorn does after 5 s): open
                # a new one, as a browser does
                self.close()
            fresh = self.writer is None
            if fresh:
                await self._open()
            assert self.reader is not None and self.writer is not None
            head = (
                f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: application/json\r\n"
            )
            if self.cookie:
                head += f"Cookie: fireval_session={self.cookie}\r\n"
            for k, v in (headers or {}).items():
                head += f"{k}: {v}\r\n"
            if body or method == "POST":
                head += f"Content-Length: {len(body)}\r\n"
            self.writer.write(head.encode("latin-1") + b"\r\n" + body)
            try:
                return await asyncio.wait_for(self._response(), self.timeout)
            except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
                # the server closed the reused idle connection just as the request went out
                # (nothing of an answer came back): a browser sends it again on a new one; a
                # fresh connection that fails, or an answer cut off, is an error
                if fresh or attempt or (isinstance(exc, asyncio.IncompleteReadError) and exc.partial):
                    raise
                self.close()
        raise AssertionError("unreachable")

    async def _response(self) -> tuple[int, bytes]:
        assert self.reader is not None
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, chunked, close = 0, False, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
            elif name == "connection" and value.lower() == "close":
                close = True
            elif name == "set-cookie" and value.startswith("fireval_session="):
                cookie = value.split(";", 1)[0].split("=", 1)[1]
                self.cookie = "" if cookie in ("", "null") or "expires=Thu, 01 Jan 1970" in value else cookie
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            data = b"".join(parts)
        else:
            data = await self.reader.readexactly(length) if length else b""
        if close:
            self.close()
        return status, data


async def _login(conn: _Conn, token: str) -> str:
    """Log in through the real form (GET /login for the CSRF field, POST /login); the API's CSRF token."""
    status, page = await conn.request("GET", "/login")
    m = _CSRF.search(page.decode("utf-8", "replace"))
    if status != 200 or not m:
        raise RuntimeError(f"login page answered {status} without a CSRF field")
    form = urlencode({"token": token, "csrf_token": m.group(1)}).encode()
    status, _ = await conn.request(
        "POST", "/login", form, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    if status not in (200, 303):
        raise RuntimeError(f"login failed with {status}")
    status, data = await conn.request("GET", "/api/session")
    if status != 200:
        raise RuntimeError(f"/api/session answered {status}")
    return str(json.loads(data)["csrf_token"])


_TRANSPORT = (
    OSError,
    asyncio.IncompleteReadError,
    asyncio.LimitOverrunError,
    asyncio.TimeoutError,
    ValueError,
)


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
    secret: str | None = None,
    peek: bool = True,
) -> LoadResult:
    """Run the annotators concurrently until ``total`` labels are acknowledged or the queue is empty.

    Each annotator is a coroutine with its own keep-alive connection (:class:`_Conn`), all in
    one asyncio loop in the calling thread: logs in through the form, ``GET /api/next``, then
    loops ``POST /api/labels`` with ``next: true`` (the answer and the next item in one
    request). With ``peek`` (default, as the annotation page does when the server prefetches)
    each annotator also asks ``GET /api/peek`` for the next video once it has an item, before
    thinking and answering: one more request per label, timed apart (``peek_latencies``).

    ``think_ms`` > 0: each annotator waits an exponentially distributed time of that mean
    (seeded per annotator) before each answer, as a person reading and watching would; 0 is a
    closed loop without think time (saturation). ``max_seconds`` bounds the run: annotators
    stop starting new answers after it (answers in flight are still counted). ``stop`` (set
    from another thread) ends the run early.

    Latency is measured per label submission, from writing the request to reading the whole
    answer. ``resubmit_share`` of the answers are sent a second time and must come back as
    ``duplicate`` with the same answer handle. A connection error ends that annotator (the server
    may have been killed on purpose) and is recorded as ``transport``. With the server's
    ``secret`` the answer handles are mapped back to label ids after the run (:func:`label_id`).
    """
    res = asyncio.run(
        _run_load(base_url, tokens, total, seed, resubmit_share, stop, timeout, think_ms, max_seconds, peek)
    )
    res.acked = [
        (answer if secret is None else label_id(secret, sid, answer), item, name)
        for (answer, sid), item, name in res.acked
    ]
    return res


def session_id(cookie: str) -> str:
    """The server-side session id inside a ``fireval_session`` cookie (Starlette's signed
    base64 JSON; read, not verified: a test tool's own cookie)."""
    from base64 import b64decode

    return str(json.loads(b64decode(cookie.split(".")[0]))["sid"])


def label_id(secret: str, sid: str, answer: str) -> int:
    """The ``labels`` row id behind an answer handle of session ``sid`` (:mod:`fireval.web.handles`)."""
    from fireval.web.handles import ANSWER_INFO, Handles, answer_row

    code = Handles(secret, ANSWER_INFO).decode(sid, answer)
    if code is None:
        raise ValueError(f"not an answer handle of this session: {answer!r}")
    row, gold = answer_row(code)
    if gold:
        raise ValueError(f"a gold answer, not a label: {answer!r}")
    return row


async def _run_load(
    base_url: str,
    tokens: dict[str, str],
    total: int,
    seed: int,
    resubmit_share: float,
    stop: threading.Event | None,
    timeout: float,
    think_ms: float,
    max_seconds: float | None,
    peek: bool = True,
) -> LoadResult:
    parts = urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    res = LoadResult()
    stop = stop or threading.Event()
    t_end = None if max_seconds is None else time.monotonic() + max_seconds
    json_h = {"Content-Type": "application/json"}

    async def pause(seconds: float) -> None:
        """Sleep, waking early when ``stop`` is set (checked every 50 ms)."""
        end = time.monotonic() + seconds
        while not stop.is_set() and (left := end - time.monotonic()) > 0:
            await asyncio.sleep(min(left, 0.05))

    async def annotator(name: str, token: str, k: int) -> None:
        rng = np.random.default_rng(seed * 1000 + k)
        conn = _Conn(host, port, timeout)
        try:
            h = {"X-CSRF-Token": await _login(conn, token), **json_h}
            sid = session_id(conn.cookie)  # maps answer handles back to label ids after the run
            status, data = await conn.request("GET", "/api/next")
            if status != 200:
                res.errors.append(f"{name}: /api/next answered {status} {data[:200]!r}")
                return
            item = json.loads(data)["item"]
            while not stop.is_set() and item is not None:
                if peek:  # the page asks for the next video while this one is shown
                    t0 = time.perf_counter()
                    status, data = await conn.request("GET", "/api/peek")
                    if status != 200 or "video_url" not in json.loads(data):
                        res.errors.append(f"{name}: /api/peek answered {status} {data[:200]!r}")
                        return
                    res.peek_latencies.append(time.perf_counter() - t0)
                if think_ms > 0:  # the person looks at the item first
                    wait = float(rng.exponential(think_ms / 1000.0))
                    if t_end is not None:  # never past the end of the run
                        wait = min(wait, max(0.0, t_end - time.monotonic()))
                    await pause(wait)
                if stop.is_set() or (t_end is not None and time.monotonic() >= t_end):
                    return
                if len(res.acked) >= total:
                    return
                body = {
                    "item_id": item["id"],
                    "label": "relevant" if rng.random() < 0.5 else "irrelevant",
                    "time_spent_ms": int(rng.integers(500, 5000)),
                }
                payload = json.dumps({**body, "next": True}).encode()
                t0 = time.perf_counter()
                status, data = await conn.request("POST", "/api/labels", payload, h)
                dt = time.perf_counter() - t0
                if status != 200:
                    res.errors.append(f"{name}: {status} {data[:200]!r}")
                    return
                answer = json.loads(data)
                ans = str(answer["answer"])  # the answer's handle (no row id: blind judging)
                res.acked.append(((ans, sid), item["id"], name))
                res.latencies.append(dt)
                if rng.random() < resubmit_share:
                    st2, again = await conn.request("POST", "/api/labels", json.dumps(body).encode(), h)
                    if st2 == 200 and json.loads(again) == {
                        "status": "duplicate",
                        "answer": ans,
                        "item_id": item["id"],
                    }:
                        res.duplicates_ok += 1
                    else:
                        res.errors.append(f"{name}: resubmission answered {st2} {again[:200]!r}")
                item = answer["next"]
        except _TRANSPORT as exc:
            res.errors.append(f"{name}: transport {type(exc).__name__}")
        finally:
            conn.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(annotator(n, t, k) for k, (n, t) in enumerate(tokens.items())))
    res.elapsed = time.perf_counter() - t0
    return res
