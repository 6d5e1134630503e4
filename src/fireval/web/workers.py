"""Serve the web app with one or several uvicorn worker processes (``fireval serve --workers N``).

One process runs the app on one core at most (the GIL), so on a machine with several cores
the server forks ``N`` workers that share one listening socket; the kernel hands each new
connection to one of them. The parent binds the socket, migrates the store once, forks the
workers (each builds its own app and store after the fork: no connection, thread or engine
crosses a fork), then only supervises: SIGTERM or SIGINT is passed on to every worker and the
parent waits for them; a worker that dies while serving is replaced (at most
:data:`MAX_RESTARTS` times in a row within :data:`RESTART_WINDOW` seconds, then the server
stops with an error). On Linux a worker also dies with its parent (``PR_SET_PDEATHSIG``), so
no worker outlives a ``kill -9`` of the server.

What the workers share is the store and nothing else, which is what keeps them correct:

- sessions are rows in the store (a session opened by one worker is live in all; logout or
  revocation in one ends it in all), the cookie is signed with the one secret key chosen in
  the parent before the fork, and the CSRF token travels in that cookie;
- the hand-out is serialised by the database: SQLite's ``BEGIN IMMEDIATE`` write lock (WAL,
  60 s busy timeout) orders the group writers of the workers, PostgreSQL's advisory claim lock
  orders claims (:mod:`fireval.judging.handout`);
- the login rate limiter (:class:`fireval.web.security.LoginLimiter`) is per process: with
  ``N`` workers a client may make up to ``N`` times the allowed failed attempts in a window
  before every worker refuses it (each connection stays with one worker).

``workers == 1`` runs uvicorn in this process, as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
import traceback
from typing import Any

#: a worker that keeps dying is not restarted for ever
MAX_RESTARTS = 5
RESTART_WINDOW = 30.0


def default_workers() -> int:
    """``fireval serve``'s default number of worker processes: 1, on either store.

    Measured with ``benchmarks/load_annotation.py`` (50 annotators, 2-core machine, runs with
    1 and 2 workers interleaved; docs/annotation.md): on SQLite one process served more labels
    per second with less CPU per label than two (every answer is written by one group writer at
    a time, so a second process only adds its hand-offs on the write lock); on PostgreSQL two
    were no faster. Use ``--workers N`` (at most :func:`cpu_count`) where the database runs on
    other cores than the server and measurements there say more processes help.
    """
    return 1


def cpu_count() -> int:
    """The number of CPUs this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _uvicorn_options(log_level: str, forwarded_allow_ips: str | None = None) -> dict[str, Any]:
    """Fast event loop and HTTP parser when installed (uvloop, httptools), else asyncio and h11.

    Proxy headers (``X-Forwarded-For``) are believed only from the proxies the operator names
    (``fireval serve --forwarded-allow-ips``); by default none, so the client address is the TCP
    peer's (uvicorn's own default trusts loopback, where a rotated header escaped the login
    throttle).
    """
    opts: dict[str, Any] = {"log_level": log_level, "access_log": False}
    if forwarded_allow_ips:
        opts.update(proxy_headers=True, forwarded_allow_ips=forwarded_allow_ips)
    else:
        opts.update(proxy_headers=False)
    try:
        import httptools  # noqa: F401

        opts["http"] = "httptools"
    except ImportError:
        opts["http"] = "h11"
    try:
        import uvloop  # noqa: F401

        opts["loop"] = "uvloop"
    except ImportError:
        opts["loop"] = "asyncio"
    return opts


def serve(config: Any, host: str, port: int, workers: int = 1, log_level: str = "warning") -> None:
    """Serve ``create_app(config)`` on ``host:port`` with ``workers`` processes until stopped."""
    import uvicorn

    from fireval.web.app import create_app

    if workers <= 1:
        uvicorn.run(
            create_app(config),
            host=host,
            port=port,
            **_uvicorn_options(log_level, config.forwarded_allow_ips),
        )
        return
    from fireval.judging.store import Store

    config.workers = workers
    Store(config.db_url, create=False).close()  # migrate once, before the workers open it
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    _Supervisor(config, sock, workers, log_level).run()


class _Supervisor:
    def __init__(self, config: Any, sock: socket.socket, workers: int, log_level: str) -> None:
        self.config, self.sock, self.n, self.log_level = config, sock, workers, log_level
        self.children: set[int] = set()
        self.stopping = False
        self.deaths: list[float] = []

    def _spawn(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            # not the parent's handlers: until uvicorn installs its own, a signal ends the worker
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            code = 1
            try:
                code = self._worker(parent)
            except BaseException:  # noqa: BLE001 - a worker must never return into the parent's loop
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        self.children.add(pid)
        if self.stopping:  # a stop signal came during the fork: this worker must end too
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def _worker(self, parent: int) -> int:
        _die_with_parent(parent)
        import uvicorn

        from fireval.web.app import create_app

        app = create_app(self.config)
        opts = _uvicorn_options(self.log_level, self.config.forwarded_allow_ips)
        server = uvicorn.Server(uvicorn.Config(app, **opts))
        server.run(sockets=[self.sock])
        return 0

    def _stop(self, _sig: int, _frame: Any) -> None:
        self.stopping = True
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        for _ in range(self.n):
            self._spawn()
        failed = False
        while self.children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                continue
            self.children.discard(pid)
            if self.stopping or failed:
                continue
            t = time.monotonic()
            self.deaths = [d for d in self.deaths if t - d < RESTART_WINDOW] + [t]
            print(
                f"fireval: worker {pid} ended unexpectedly (status {status}); "
                + ("restarting it" if len(self.deaths) <= MAX_RESTARTS else "stopping the server"),
                file=sys.stderr,
            )
            if len(self.deaths) > MAX_RESTARTS:
                failed = True
                self._stop(signal.SIGTERM, None)
            else:
                self._spawn()
        self.sock.close()
        if failed:
            from fireval.core import FirevalError

            raise FirevalError("the server's workers kept failing; see the messages above")


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when its parent dies (no orphaned workers)."""
    if not sys.platform.startswith("linux"):  # pragma: no cover
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent is already gone
            os._exit(1)
