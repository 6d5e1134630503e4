"""The event loop's PostgreSQL connections (``engine._PgAsyncPool``): requests that wait for a
connection are served in arrival order, a request arriving just as one is released does not
take it first, and cancelled or failed requests give their slot back.

Fake connections (no server needed): only the pool's bookkeeping is under test here; the real
connections are exercised by the store's tests on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

pytest.importorskip("psycopg2")

from fireval.judging.engine import _PgAsyncPool  # noqa: E402


class FakeConn:
    closed = False

    def __init__(self, n: int) -> None:
        self.n = n

    def poll(self) -> int:
        import psycopg2.extensions as ext

        return ext.POLL_OK

    def close(self) -> None:
        self.closed = True


def make_pool(size: int, loop: Any, opened: list[FakeConn]) -> _PgAsyncPool:
    def connect() -> FakeConn:
        opened.append(FakeConn(len(opened)))
        return opened[-1]

    return _PgAsyncPool(connect, [], size, loop)


async def release(pool: _PgAsyncPool, conn: Any) -> None:
    r = pool._release(conn)
    if inspect.isawaitable(r):  # the former pool's release was a coroutine
        await r


def test_waiters_are_served_first_come_first_served() -> None:
    async def main() -> list[str]:
        opened: list[FakeConn] = []
        pool = make_pool(1, asyncio.get_running_loop(), opened)
        first = await pool._acquire()
        order: list[str] = []

        async def user(name: str) -> None:
            conn = await pool._acquire()
            order.append(name)
            await asyncio.sleep(0)
            await release(pool, conn)

        waiting = [asyncio.ensure_future(user(f"w{i}")) for i in range(3)]
        for _ in range(3):
            await asyncio.sleep(0)  # all three now wait for the one connection, in order
        late = asyncio.ensure_future(user("late"))  # scheduled before the release below runs
        await release(pool, first)
        await asyncio.gather(*waiting, late)
        assert len(opened) == 1  # never more than the pool's size
        return order

    assert asyncio.run(main()) == ["w0", "w1", "w2", "late"]


def test_a_failed_connection_hands_its_slot_to_the_oldest_waiter() -> None:
    async def main() -> None:
        opened: list[FakeConn] = []
        pool = make_pool(1, asyncio.get_running_loop(), opened)
        first = await pool._acquire()
        got: list[Any] = []

        async def user() -> None:
            conn = await pool._acquire()
            got.append(conn)
            await release(pool, conn)

        waiter = asyncio.ensure_future(user())
        await asyncio.sleep(0)
        first.close()
        await release(pool, None)  # the connection broke: its slot, not the connection, goes on
        await waiter
        assert got == [opened[1]] and not opened[1].closed
        assert pool.opened == 1 and pool.idle == [opened[1]]

    asyncio.run(main())


def test_a_cancelled_waiter_leaks_nothing() -> None:
    async def main() -> None:
        opened: list[FakeConn] = []
        pool = make_pool(1, asyncio.get_running_loop(), opened)
        first = await pool._acquire()
        gone = asyncio.ensure_future(pool._acquire())
        await asyncio.sleep(0)
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        await release(pool, first)
        assert pool.idle == [first] and pool.opened == 1
        # the next request gets the connection at once, without opening another
        assert await asyncio.wait_for(pool._acquire(), 1) is first
        assert len(opened) == 1

    asyncio.run(main())


def test_a_waiter_cancelled_after_the_hand_over_passes_the_connection_on() -> None:
    async def main() -> None:
        opened: list[FakeConn] = []
        pool = make_pool(1, asyncio.get_running_loop(), opened)
        first = await pool._acquire()
        a = asyncio.ensure_future(pool._acquire())
        b = asyncio.ensure_future(pool._acquire())
        await asyncio.sleep(0)
        await release(pool, first)  # handed to ``a`` ...
        a.cancel()  # ... which is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await a
        assert await asyncio.wait_for(b, 1) is first
        assert len(opened) == 1

    asyncio.run(main())
