"""How statements reach the database: the hot path's plain SQL on the DBAPI cursor
(:class:`Driver`, :func:`driver_sql`), the SQLite group writer (:class:`_GroupWriter`: one
thread, one SAVEPOINT per operation, group commit, an inter-process file lock when several
server processes share the store; :class:`_LoopWaiter` lets an event loop await a write) and
the PostgreSQL connections an event loop drives itself (:class:`_PgAsyncPool`, psycopg2's
asynchronous mode, first come first served).

:class:`fireval.judging.engine.Database` builds on these; :mod:`fireval.judging.engine`
re-exports them.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

from sqlalchemy.engine import Connection, Engine

T = TypeVar("T")


class Driver:
    """Statements of the hot path (the answer, the hand-out, the session check) on the
    transaction's own DBAPI cursor, in the driver's SQL (see :func:`driver_sql`).

    SQLAlchemy's execution costs about 35 µs per statement on top of SQLite's 2-3 µs, and an
    answer that hands out the next item runs about a dozen; these statements are plain SQL
    with positional parameters, already in the driver's paramstyle, so they skip it. When a
    ``before_cursor_execute`` / ``after_cursor_execute`` listener is registered on the engine
    (instrumentation, fault injection in tests), every statement goes through SQLAlchemy's
    ``exec_driver_sql`` instead, so listeners still see all of them. Either way the result
    has ``fetchone()``, ``fetchall()`` and ``rowcount``. Parameters are passed as the driver
    takes them: timestamps through :meth:`~fireval.judging.engine.Database.param_time`.
    """

    __slots__ = ("conn", "cur")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        d = conn.engine.dispatch
        self.cur = (
            None
            if d.before_cursor_execute or d.after_cursor_execute
            else conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        )

    def __call__(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        if self.cur is None:
            return self.conn.exec_driver_sql(sql, params)
        self.cur.execute(sql, params)
        return self.cur


def driver_sql(sql: str, postgres: bool) -> str:
    """``sql`` written with ``?`` placeholders in the driver's paramstyle (psycopg2: ``%s``)."""
    return sql.replace("?", "%s") if postgres else sql


class _LoopWaiter:
    """A write awaited from an event loop (:meth:`~fireval.judging.engine.Database.write_async`): the
    writer delivers its outcome together with the others of its group on that loop, in one
    ``call_soon_threadsafe`` (one wake-up of the loop per group, not one per write)."""

    __slots__ = ("fut", "loop")

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.fut = loop.create_future()

    def set_running_or_notify_cancel(self) -> bool:
        # read from the writer thread: a cancellation that comes later only means the committed
        # result is dropped (:func:`_deliver`), as with a running concurrent future
        return not self.fut.cancelled()


def _deliver(outcomes: list[tuple[Any, Any, BaseException | None]]) -> None:
    """Set the results of a group's awaited writes (runs on their event loop)."""
    for fut, value, err in outcomes:
        if fut.done():  # cancelled meanwhile
            continue
        if err is not None:
            fut.set_exception(err)
        else:
            fut.set_result(value)


def _finish(outcomes: list[tuple[Any, Any, BaseException | None]]) -> None:
    """Hand a committed (or failed) group's outcomes to their callers."""
    loops: dict[Any, list[tuple[Any, Any, BaseException | None]]] = {}
    for fut, value, err in outcomes:
        if isinstance(fut, _LoopWaiter):
            loops.setdefault(fut.loop, []).append((fut.fut, value, err))
        elif err is not None:
            fut.set_exception(err)
        else:
            fut.set_result(value)
    for loop, items in loops.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_deliver, items)


class _GroupWriter:
    """One thread that runs SQLite write operations, several per transaction (group commit).

    Callers enqueue an operation and block until the transaction holding it has committed, so
    an answer is only acknowledged once it is durable. Each operation runs in its own
    SAVEPOINT: if it raises, only its changes are rolled back and the exception goes to its
    caller; the others in the group still commit. Grouping is opportunistic (whatever queued up
    while the previous commit was syncing), so a lone request is never delayed. Operations are
    served first in, first out.
    """

    def __init__(self, engine: Engine, max_group: int = 64, lock_path: str | None = None) -> None:
        self.engine, self.max_group = engine, max_group
        # several server processes on one store: their writers take turns on this file lock
        # (a blocking flock wakes the next process at once; SQLite's busy handler would poll
        # with sleeps of up to 100 ms)
        self.lock_path = lock_path
        self._lock_fd: int | None = None
        self.queue: queue.SimpleQueue[tuple[Callable[[Connection], Any], Any] | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, name="fireval-store-writer", daemon=True)
        self.thread.start()

    def run(self, op: Callable[[Connection], T]) -> T:
        return self.submit(op).result()

    def submit(self, op: Callable[[Connection], T]) -> Future[T]:
        """Queue ``op``; the future is done once the transaction holding it has committed."""
        fut: Future[T] = Future()
        self._put(op, fut)
        return fut

    def submit_waiter(self, op: Callable[[Connection], Any], waiter: _LoopWaiter) -> None:
        """Queue ``op`` for an event loop; ``waiter.fut`` is done once it has committed."""
        self._put(op, waiter)

    def _put(self, op: Callable[[Connection], Any], fut: Any) -> None:
        with self.lock:  # restart after stop(): a closed Store may be used again, like a disposed engine
            if not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="fireval-store-writer", daemon=True)
                self.thread.start()
        self.queue.put((op, fut))

    def stop(self) -> None:
        with self.lock:
            if self.thread.is_alive():
                self.queue.put(None)
                self.thread.join(60)
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    @contextlib.contextmanager
    def _process_lock(self) -> Iterator[None]:
        """Hold the store's inter-process writer lock (a no-op for a store of one process)."""
        if self.lock_path is None:
            yield
            return
        import fcntl

        if self._lock_fd is None:
            self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _loop(self) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                return
            group = [first]
            stopping = False
            while len(group) < self.max_group:
                try:
                    nxt = self.queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stopping = True
                    break
                group.append(nxt)
            # an operation whose caller was cancelled before it started is not run
            group = [(op, fut) for op, fut in group if fut.set_running_or_notify_cancel()]
            if not group:
                if stopping:
                    return
                continue
            outcomes: list[tuple[Any, Any, BaseException | None]] = []
            try:
                with self._process_lock(), self.engine.begin() as conn:
                    x = Driver(conn)  # plain savepoint statements: SQLAlchemy's cost more than the op
                    for op, fut in group:
                        x("SAVEPOINT fireval_op")
                        try:
                            value = op(conn)
                        except BaseException as exc:  # the caller gets it; the group goes on
                            try:
                                x("ROLLBACK TO SAVEPOINT fireval_op")
                                x("RELEASE SAVEPOINT fireval_op")
                            except BaseException:
                                # SQLite rolled the whole transaction back itself (a full disk,
                                # an I/O error): the group fails with the op's error, which says
                                # why, not with "no such savepoint"
                                raise exc from None
                            outcomes.append((fut, None, exc))
                        else:
                            x("RELEASE SAVEPOINT fireval_op")
                            outcomes.append((fut, value, None))
            except BaseException as exc:  # the commit itself failed: nothing of the group is durable
                _finish([(fut, None, exc) for _, fut in group])
            else:
                _finish(outcomes)
            if stopping:
                return


class _PgAsyncPool:
    """PostgreSQL connections that an event loop drives itself (psycopg2's asynchronous mode: the loop
    waits for the socket with ``add_reader``/``add_writer``), for single statements: no worker
    thread and no thread hop per request (:meth:`~fireval.judging.engine.Database.fetch_async`).

    Asynchronous connections are in autocommit mode, so each statement is its own transaction,
    committed (``synchronous_commit`` as the server has it, on by default: flushed to disk) before
    its result is complete. At most ``size`` connections, opened on demand; a request waits for a
    free one. A connection whose statement failed at the connection level or was interrupted
    (cancellation) is closed, not reused. Each new connection first runs the store's session set-up
    statements (:meth:`~fireval.judging.engine.Database.session_setup`). Bound to the loop that
    created it.

    Waiting requests are served first come, first served: a released connection (or the slot of
    a closed one) is handed directly to the oldest waiter, so a request that arrives just then
    cannot take it first. (With a condition variable, a woken waiter that found the connection
    already taken went to the back of the queue again: under saturation the slowest answers
    waited several rounds.) All of it runs on the loop's thread, so no lock is needed.
    """

    def __init__(self, connect: Callable[[], Any], setup: list[str], size: int, loop: Any) -> None:
        import collections

        self.connect, self.setup, self.size, self.loop = connect, setup, size, loop
        self.idle: list[Any] = []
        self.opened = 0  # connections open or being opened (each holds one of the ``size`` slots)
        # oldest first; each is resolved with a connection, or with None: "open one in my slot"
        self.waiters: collections.deque[Any] = collections.deque()
        self.closed = False

    async def _wait(self, conn: Any) -> None:
        """Drive ``conn`` until its current operation is complete (psycopg2's ``poll`` protocol)."""
        import psycopg2.extensions as ext

        while True:
            state = conn.poll()
            if state == ext.POLL_OK:
                return
            if state == ext.POLL_READ:
                watch, unwatch = self.loop.add_reader, self.loop.remove_reader
            elif state == ext.POLL_WRITE:
                watch, unwatch = self.loop.add_writer, self.loop.remove_writer
            else:  # pragma: no cover - psycopg2 answers only the states above
                raise OSError(f"unexpected psycopg2 poll state {state}")
            fut = self.loop.create_future()
            fd = conn.fileno()
            watch(fd, fut.set_result, None)
            try:
                await fut
            finally:
                unwatch(fd)

    async def _open(self) -> Any:
        conn = self.connect()
        try:
            await self._wait(conn)
            for sql in self.setup:
                cur = conn.cursor()
                cur.execute(sql)
                await self._wait(conn)
                cur.close()
        except BaseException:
            conn.close()
            raise
        return conn

    async def _acquire(self) -> Any:
        if self.idle:
            return self.idle.pop()
        if self.opened < self.size:
            self.opened += 1
            return await self._open_in_slot()
        fut = self.loop.create_future()
        self.waiters.append(fut)
        try:
            conn = await fut
        except BaseException:
            if fut.done() and not fut.cancelled():  # handed over just as we were cancelled: pass it on
                self._release(fut.result())
            else:
                with contextlib.suppress(ValueError):
                    self.waiters.remove(fut)
            raise
        return conn if conn is not None else await self._open_in_slot()

    async def _open_in_slot(self) -> Any:
        """Open a connection in a slot this request already holds (``opened`` counts it)."""
        try:
            return await self._open()
        except BaseException:
            self._release(None)
            raise

    def _release(self, conn: Any) -> None:
        """Give ``conn`` back (``None``: its slot, the connection is gone): to the oldest waiter
        if any, else to the idle list (or close the slot)."""
        if conn is not None and self.closed:
            conn.close()
            conn = None
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(conn)  # a connection, or the slot to open one in
                return
        if conn is None:
            self.opened -= 1
        else:
            self.idle.append(conn)

    async def fetchone(self, sql: str, params: tuple[Any, ...]) -> Any:
        """Run one statement (its own transaction) and return its first row."""
        conn = await self._acquire()
        ok = False
        try:
            cur = conn.cursor()
            cur.execute(sql, params)
            await self._wait(conn)
            row = cur.fetchone()
            cur.close()
            ok = True
            return row
        except BaseException as exc:
            # a statement's own error (a constraint, a raise) leaves the connection usable
            import psycopg2

            ok = isinstance(exc, psycopg2.Error) and not isinstance(
                exc, (psycopg2.OperationalError, psycopg2.InterfaceError)
            )
            raise
        finally:
            self._release(conn if ok and not conn.closed else None)
            if not ok and not conn.closed:
                conn.close()

    def close(self) -> None:
        self.closed = True
        for conn in self.idle:
            conn.close()
        self.idle.clear()
