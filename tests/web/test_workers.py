"""``fireval serve --workers N``: several processes share the port and the store.

The store is the only shared state, so a session opened through one worker is live in the
others and a logout in one ends it in all; answers sent through different workers are recorded
once; the workers end with the server (SIGTERM passes on; after a kill -9 of the server they die
too, they are never orphaned).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest
from benchmarks.loadgen import ServerProcess

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store

pytestmark = pytest.mark.slow


def make_store(path) -> tuple[str, dict[str, str]]:
    db = f"sqlite:///{path}"
    st = Store(db)
    st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}) for i in range(40)], "T")
    tokens = {name: st.add_annotator(name)[1] for name in ("ann", "bob")}
    st.close()
    return db, tokens


class Client:
    """One keep-alive connection carrying a session cookie; knows which worker serves it."""

    def __init__(self, port: int, cookie: str = "") -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.conn.connect()
        self.cookie = cookie

    def request(self, method: str, path: str, body: str = "", headers: dict | None = None):
        h = {"Accept": "application/json", **(headers or {})}
        if self.cookie:
            h["Cookie"] = f"fireval_session={self.cookie}"
        self.conn.request(method, path, body=body or None, headers=h)
        r = self.conn.getresponse()
        data = r.read()
        for k, v in r.getheaders():
            if k.lower() == "set-cookie" and v.startswith("fireval_session="):
                self.cookie = v.split(";", 1)[0].split("=", 1)[1]
        return r.status, data

    def worker(self, workers: list[psutil.Process]) -> int:
        """The pid of the worker holding this connection's server side."""
        port = self.conn.sock.getsockname()[1]
        for p in workers:
            if any(c.raddr and c.raddr.port == port for c in p.net_connections(kind="tcp")):
                return p.pid
        raise AssertionError("no worker holds the connection")

    def close(self) -> None:
        self.conn.close()


def login(port: int, token: str) -> tuple[str, str]:
    c = Client(port)
    _, page = c.request("GET", "/login")
    csrf = re.search(rb'name="csrf_token" value="([^"]+)"', page).group(1).decode()
    form = f"token={token}&csrf_token={csrf}"
    status, _ = c.request("POST", "/login", form, {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 303
    status, data = c.request("GET", "/api/session")
    assert status == 200
    c.close()
    return c.cookie, json.loads(data)["csrf_token"]


def on_both_workers(port: int, cookie: str, workers: list[psutil.Process]) -> dict[int, Client]:
    """Open connections until each worker serves one (bounded)."""
    found: dict[int, Client] = {}
    deadline = time.monotonic() + 30
    while len(found) < len(workers) and time.monotonic() < deadline:
        c = Client(port, cookie)
        status, _ = c.request("GET", "/api/session")
        assert status == 200
        pid = c.worker(workers)
        if pid in found:
            c.close()
            time.sleep(0.02)
        else:
            found[pid] = c
    assert len(found) == len(workers), "the kernel gave every connection to one worker"
    return found


def test_sessions_answers_and_logout_span_the_workers(tmp_path) -> None:
    db, tokens = make_store(tmp_path / "w.db")
    server = ServerProcess(db, log=tmp_path / "server.log", workers=2).start()
    try:
        assert server.proc is not None
        workers = psutil.Process(server.proc.pid).children()
        assert len(workers) == 2
        cookie, csrf = login(server.port, tokens["ann"])
        clients = on_both_workers(server.port, cookie, workers)  # one session, two processes
        h = {"Content-Type": "application/json", "X-CSRF-Token": csrf}
        a, b = clients.values()
        status, data = a.request("GET", "/api/next")
        item = json.loads(data)["item"]
        # the open assignment is the same whichever worker is asked
        assert json.loads(b.request("GET", "/api/next")[1])["item"]["id"] == item["id"]
        body = json.dumps({"item_id": item["id"], "label": "relevant", "next": True})
        status, data = a.request("POST", "/api/labels", body, h)
        assert status == 200, data
        first = json.loads(data)
        status, again = b.request("POST", "/api/labels", body, h)  # the same answer via the other worker
        assert status == 200 and json.loads(again)["status"] == "duplicate"
        assert json.loads(again)["answer"] == first["answer"]  # the same answer's handle
        nxt = first["next"]
        body = json.dumps({"item_id": nxt["id"], "label": "irrelevant", "next": True})
        assert b.request("POST", "/api/labels", body, h)[0] == 200
        # logout through one worker ends the session in the other at once
        assert a.request("POST", "/logout", headers={"X-CSRF-Token": csrf})[0] == 303
        assert b.request("GET", "/api/session")[0] == 401
        b.cookie = cookie  # a copy of the old cookie
        assert b.request("POST", "/api/labels", body, h)[0] in (401, 403)
        for c in clients.values():
            c.close()
    finally:
        server.stop()
    st = Store(db, upgrade=False)
    v = st.votes()
    st.close()
    assert v["label_id"].size == 2 and len(set(v["item_id"].tolist())) == 2


def test_workers_end_with_the_server(tmp_path) -> None:
    db, _ = make_store(tmp_path / "k.db")
    server = ServerProcess(db, log=tmp_path / "server.log", workers=2).start()
    assert server.proc is not None
    workers = psutil.Process(server.proc.pid).children()
    assert len(workers) == 2
    server.stop()  # SIGTERM to the server: passed on
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive
    # kill -9 of the server process alone (not its group): the workers die with it
    server = ServerProcess(db, log=tmp_path / "server2.log", workers=2).start()
    assert server.proc is not None
    workers = psutil.Process(server.proc.pid).children()
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(30)
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, [p.pid for p in alive]


def test_bad_worker_count_is_one_line(tmp_path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "fireval", "serve", "--db", str(tmp_path / "x.db"), "--workers", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert "--workers must be >= 1" in r.stderr and "Traceback" not in r.stderr
