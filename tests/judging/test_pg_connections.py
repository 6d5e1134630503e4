"""PostgreSQL connection budget: a store's SQLAlchemy pool and its asynchronous connections
together stay within ``pg_connection_budget()``, and ``fireval serve --workers N`` refuses, in
one line, a number of workers whose connections cannot fit in the server's ``max_connections``.

(Before: a pool of 20 plus up to 8 asynchronous connections per process, so 4 workers could
open 112 connections against PostgreSQL's default of 100.)
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

import pytest

from fireval.core import InputError
from fireval.judging.engine import (
    PG_ASYNC_CONNECTIONS,
    PG_CONNECTIONS,
    PG_MIN_CONNECTIONS,
    Database,
    check_pg_connections,
    pg_connection_budget,
    pg_pool_split,
)


def pg_url() -> str:
    url = os.environ.get("FIREVAL_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("FIREVAL_PG_URL is not set in CI")
        pytest.skip("FIREVAL_PG_URL not set")
    return url


@pytest.mark.parametrize("budget", range(PG_MIN_CONNECTIONS, 41))
def test_split_fills_the_budget_and_no_more(budget: int) -> None:
    size, overflow, asynchronous = pg_pool_split(budget)
    assert size + overflow + asynchronous == budget
    assert size >= 1 and overflow >= 1 and asynchronous >= 2
    assert asynchronous <= PG_ASYNC_CONNECTIONS


def test_budget_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIREVAL_PG_CONNECTIONS", raising=False)
    assert pg_connection_budget() == PG_CONNECTIONS == 20
    monkeypatch.setenv("FIREVAL_PG_CONNECTIONS", " 9 ")
    assert pg_connection_budget() == 9
    for bad in ("3", "0", "-5", "many", "4.5"):
        monkeypatch.setenv("FIREVAL_PG_CONNECTIONS", bad)
        with pytest.raises(InputError) as err:
            pg_connection_budget()
        text = str(err.value)
        assert "FIREVAL_PG_CONNECTIONS" in text and ">= 4" in text and repr(bad) in text
        assert "\n" not in text


def test_sqlite_has_no_connection_budget(tmp_path) -> None:
    assert check_pg_connections(str(tmp_path / "s.db"), 64) is None


def _server_limits(url: str) -> int:
    import sqlalchemy as sa

    eng = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with eng.connect() as conn:
            return int(conn.exec_driver_sql("SHOW max_connections").scalar_one()) - int(
                conn.exec_driver_sql("SHOW superuser_reserved_connections").scalar_one()
            )
    finally:
        eng.dispose()


@pytest.mark.postgres
def test_workers_that_cannot_fit_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_url()
    usable = _server_limits(url)
    monkeypatch.delenv("FIREVAL_PG_CONNECTIONS", raising=False)
    too_many = usable // PG_CONNECTIONS + 1
    with pytest.raises(InputError) as err:
        check_pg_connections(url, too_many)
    text = str(err.value)
    assert "\n" not in text and "max_connections" in text and "--workers" in text
    assert f"{too_many} server processes × 20 PostgreSQL connections = {too_many * 20}" in text
    assert f"FIREVAL_PG_CONNECTIONS to at most {usable // too_many}" in text
    # the advice works: with that budget the same workers fit
    monkeypatch.setenv("FIREVAL_PG_CONNECTIONS", str(usable // too_many))
    note = check_pg_connections(url, too_many)
    assert note is None or (note.startswith("warning: ") and "\n" not in note)
    # one process always fits a default budget on a default server
    monkeypatch.delenv("FIREVAL_PG_CONNECTIONS")
    assert usable >= PG_CONNECTIONS
    note = check_pg_connections(url, 1)
    assert note is None or note.startswith("warning: ")


@pytest.mark.postgres
def test_serve_refuses_workers_that_cannot_fit_in_one_line(tmp_path) -> None:
    url = pg_url()
    workers = _server_limits(url) // PG_CONNECTIONS + 1
    env = {k: v for k, v in os.environ.items() if k != "FIREVAL_PG_CONNECTIONS"}
    proc = subprocess.run(
        [sys.executable, "-m", "fireval", "serve", "--db", url, "--workers", str(workers), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "max_connections" in lines[0] and "Traceback" not in proc.stderr
    assert "fireval:fireval@" not in proc.stderr  # no password in the message


def _pg_sockets() -> int:
    """This process's open TCP connections to the PostgreSQL server's port."""
    import psutil

    port = urlsplit(os.environ["FIREVAL_PG_URL"].replace("+psycopg2", "")).port or 5432
    return sum(1 for c in psutil.Process().net_connections("tcp") if c.raddr and c.raddr.port == port)


@pytest.mark.postgres
@pytest.mark.parametrize("budget", [None, "6"])
def test_a_store_never_opens_more_than_its_budget(
    monkeypatch: pytest.MonkeyPatch, budget: str | None
) -> None:
    """Many threads on the pool and many tasks on the asynchronous path at once: the process's
    connections to the server, sampled throughout, never exceed the budget."""
    url = pg_url()
    if budget is None:
        monkeypatch.delenv("FIREVAL_PG_CONNECTIONS", raising=False)
    else:
        monkeypatch.setenv("FIREVAL_PG_CONNECTIONS", budget)
    limit = pg_connection_budget()
    base = _pg_sockets()
    db = Database(url)
    assert db.can_fetch_async
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _pg_sockets() - base)
            time.sleep(0.002)

    def sync_work() -> None:
        for _ in range(3):
            db.write(lambda conn: conn.exec_driver_sql("SELECT pg_sleep(0.05)").all())

    async def async_work() -> None:
        await asyncio.gather(*(db.fetch_async("SELECT pg_sleep(0.05)", ()) for _ in range(60)))

    monitor = threading.Thread(target=sample)
    monitor.start()
    threads = [threading.Thread(target=sync_work) for _ in range(30)]
    try:
        for t in threads:
            t.start()
        asyncio.run(async_work())
        for t in threads:
            t.join(120)
    finally:
        done.set()
        monitor.join()
        db.close()
    size, overflow, asynchronous = pg_pool_split(limit)
    assert peak[0] <= limit, f"{peak[0]} connections open at once, budget {limit}"
    assert peak[0] >= asynchronous  # the load did use the connections (the sampling saw them)
