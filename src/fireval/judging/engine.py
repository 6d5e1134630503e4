"""Where the annotation store lives: URL checks, engines, migrations, the SQLite group writer.

Every state change is committed before it is acknowledged:

- SQLite (a file path or ``sqlite:///PATH``): write operations of a process go through one
  writer thread which runs them first in, first out, each in its own SAVEPOINT, and commits
  whatever queued up together (group commit: one sync for several answers; an operation that
  fails rolls back alone). Write transactions start with ``BEGIN IMMEDIATE`` (other processes
  wait on the busy timeout); readers use a separate pool with deferred transactions and never
  wait for the writer (WAL). ``synchronous=FULL`` by default, so an acknowledged answer survives
  a crash of the process or of the machine (``NORMAL``, via ``$FIREVAL_SQLITE_SYNC``, survives
  process crashes only). When several server processes share the store (``shared=True``,
  ``fireval serve --workers N``) their writers also take turns on a file lock
  (``<store>-writer.lock``) around each group, so the next process wakes at once instead of
  polling SQLite's busy handler. An event loop can await a write without a thread of its own
  (:meth:`Database.write_async`; the writer wakes each loop once per group). Each operation's
  savepoint is plain SQL on the driver's cursor.
- PostgreSQL (``postgresql[+psycopg2]://...``): one transaction per operation on a pooled
  connection (READ COMMITTED); the hand-out serialises itself (see
  :mod:`fireval.judging.handout`). Statements every connection runs first (the hand-out's
  ``pg_temp`` function) are registered with :meth:`Database.session_setup`. An event loop can
  run a single statement (its own transaction, committed before its result is complete) on a
  connection it drives itself, without a worker thread (:meth:`Database.fetch_async`:
  psycopg2's asynchronous connections).

PostgreSQL connection budget: a store opens at most :func:`pg_connection_budget` connections
(default :data:`PG_CONNECTIONS` = 20, ``$FIREVAL_PG_CONNECTIONS`` to change it, at least
:data:`PG_MIN_CONNECTIONS`), its SQLAlchemy pool and its asynchronous connections together
(:func:`pg_pool_split`: 20 = a pool of 6 + 6 overflow, and 8 asynchronous). A server process
opens one store, so ``fireval serve --workers N`` needs ``N`` × the budget, which must fit in
the server's ``max_connections`` less ``superuser_reserved_connections``:
:func:`check_pg_connections` refuses a configuration that cannot fit with a one-line error, and
warns when it fits only with more connections than are free at that moment.

The hot path's statements run on the transaction's DBAPI cursor (:class:`Driver`), skipping
SQLAlchemy's per-statement work unless a cursor event listener is registered.

Errors: a URL of another backend, a directory, a file that is not an SQLite database, a
server that does not answer and a full disk all become one-line
:class:`~fireval.core.FirevalError` s (:class:`~fireval.judging.errors.StoreUnavailableError`
for storage failures, which the web app answers with 503); opening a new SQLite store that
fails leaves no file behind. The schema is versioned with Alembic; :func:`migrate` upgrades to
the head revision.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from fireval.core import FirevalError, InputError
from fireval.judging import schema as S
from fireval.judging.errors import LabelConflictError, StoreUnavailableError

MIGRATIONS = Path(__file__).resolve().parent / "migrations"

#: PostgreSQL connections one store opens at most (SQLAlchemy pool + asynchronous connections)
PG_CONNECTIONS = 20
#: the smallest budget that still leaves the pool and the asynchronous path two connections each
PG_MIN_CONNECTIONS = 4
#: asynchronous connections at most (the answer path; more do not help on a few cores)
PG_ASYNC_CONNECTIONS = 8
SCHEMES = ("sqlite", "sqlite+pysqlite", "postgresql", "postgresql+psycopg2", "postgresql+psycopg")

T = TypeVar("T")


def now() -> datetime:
    return datetime.now(UTC)


def new_id(result: Any) -> int:
    """Primary key of the row an INSERT just created."""
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


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
    takes them: timestamps through :meth:`Database.param_time`.
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


#: first key of the PostgreSQL advisory locks that serialise one annotator's undos ("undo" in
#: ASCII; the second key is the annotator's id; two-key locks never collide with one-key ones)
UNDO_LOCK_KEY = 0x756E646F


def serialise_undos(conn: Connection, annotator_id: int) -> None:
    """Make the annotator's undos take turns: called first in every write transaction that
    chooses and withdraws one of their answers (:mod:`fireval.judging.history`).

    PostgreSQL (READ COMMITTED): a transaction-scoped advisory lock on ``(UNDO_LOCK_KEY,
    annotator_id)``, held until the commit; the statements after it read a snapshot taken after
    the previous holder committed, so a second undo sees the first one's withdrawal. It takes no
    row lock, so it cannot deadlock with the answer path (which never takes it). SQLite: nothing
    to do: write transactions already run one at a time (the group writer, ``BEGIN IMMEDIATE``
    across processes), and the choice is read inside the write transaction.
    """
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(
            "SELECT pg_advisory_xact_lock(%s, %s)", (UNDO_LOCK_KEY, int(annotator_id))
        ).fetchone()


# ---------------------------------------------------------------------- PostgreSQL connection budget
def pg_connection_budget() -> int:
    """PostgreSQL connections one store may open: ``$FIREVAL_PG_CONNECTIONS`` or
    :data:`PG_CONNECTIONS`; :class:`~fireval.core.InputError` for a value that is not an integer
    of at least :data:`PG_MIN_CONNECTIONS`."""
    raw = os.environ.get("FIREVAL_PG_CONNECTIONS", "").strip()
    if not raw:
        return PG_CONNECTIONS
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < PG_MIN_CONNECTIONS:
        raise InputError(
            f"FIREVAL_PG_CONNECTIONS must be an integer >= {PG_MIN_CONNECTIONS} "
            f"(PostgreSQL connections per server process), got {raw!r}"
        )
    return n


def pg_pool_split(budget: int) -> tuple[int, int, int]:
    """``(pool_size, max_overflow, asynchronous)`` of a store with ``budget`` connections: half
    (at most :data:`PG_ASYNC_CONNECTIONS`) for the asynchronous answer path, the rest for the
    SQLAlchemy pool, half of it kept open and half overflow; the three add up to ``budget``."""
    asynchronous = min(PG_ASYNC_CONNECTIONS, budget // 2)
    pool = budget - asynchronous
    return (pool + 1) // 2, pool // 2, asynchronous


def check_pg_connections(url: str, processes: int) -> str | None:
    """Check that ``processes`` server processes, each with a store of
    :func:`pg_connection_budget` connections, fit in the PostgreSQL server of ``url``.

    Raises :class:`~fireval.core.InputError` (one line) when ``processes`` × budget exceeds the
    server's ``max_connections`` less ``superuser_reserved_connections``; returns a one-line
    warning when it fits but not in the connections free now (other clients hold some), else
    ``None``. SQLite stores: always ``None``."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        return None
    budget = pg_connection_budget()
    need = processes * budget
    try:
        eng = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args={"connect_timeout": 10})
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as exc:
        raise InputError(f"cannot use this annotation store URL: {exc}", source=display_url(url)) from None
    try:
        with eng.connect() as conn:
            max_conn = int(conn.exec_driver_sql("SHOW max_connections").scalar_one())
            reserved = int(conn.exec_driver_sql("SHOW superuser_reserved_connections").scalar_one())
            used = int(
                conn.exec_driver_sql(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
                ).scalar_one()
            )
    except sa.exc.DBAPIError as exc:
        raise StoreUnavailableError(
            f"{display_url(url)}: cannot open annotation store: {storage_reason(exc)}"
        ) from None
    finally:
        eng.dispose()
    usable = max_conn - reserved
    who = f"{processes} server process{'es' if processes > 1 else ''} × {budget} PostgreSQL connections"
    if need > usable:
        fix = (
            f"set FIREVAL_PG_CONNECTIONS to at most {usable // processes}"
            if usable // processes >= PG_MIN_CONNECTIONS
            else f"use at most {max(1, usable // PG_MIN_CONNECTIONS)} worker processes"
        )
        raise InputError(
            f"{who} = {need} exceed the server's max_connections {max_conn} less "
            f"{reserved} reserved ({usable}); use fewer --workers or {fix}",
            source=display_url(url),
        )
    if need > usable - used:
        return (
            f"warning: {who} = {need}, but only {usable - used} of the server's {usable} are free now "
            f"({used} in use by other clients); requests may fail when they are all taken"
        )
    return None


# ---------------------------------------------------------------------- URLs
def normalise_url(url: str) -> str:
    """A database URL, or a plain file path meaning an SQLite file.

    Raises :class:`~fireval.core.InputError` for a URL of a backend the store does not support
    (only SQLite and PostgreSQL are).
    """
    if "://" not in url:
        if not url.strip():
            raise InputError("empty annotation store path; expected an SQLite file or a postgresql:// URL")
        return f"sqlite:///{Path(url).resolve()}"
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise InputError(
            f"unsupported annotation store backend {scheme!r}; expected an SQLite file path, "
            "sqlite:///PATH or postgresql+psycopg2://USER:PASSWORD@HOST/DB",
            source=display_url(url),
        )
    try:  # a port that is not a number, a bad query string: one line, not a traceback
        sa.engine.make_url(url)
    except (sa.exc.ArgumentError, ValueError) as exc:
        raise InputError(f"malformed annotation store URL ({exc})", source=display_url(url)) from None
    return url


def display_url(url: str) -> str:
    """``url`` fit for a message: the SQLite path, or the server URL without its password."""
    if "://" not in url:
        return url
    if url.startswith("sqlite"):
        return sqlite_path(url) or url
    from fireval.core.errors import mask_secrets

    return mask_secrets(url)


def sqlite_path(url: str) -> str | None:
    """The file of an ``sqlite:///`` URL (``None`` for in-memory databases and other backends)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split(":///", 1)[1].split("?", 1)[0] if ":///" in url else ""
    return None if path in ("", ":memory:") else path


# ---------------------------------------------------------------------- storage errors
def storage_reason(exc: BaseException) -> str:
    """The first line of the driver's message (no SQL, no parameters, no traceback)."""
    orig = getattr(exc, "orig", None) or exc
    text = orig.strerror if isinstance(orig, OSError) and orig.strerror else str(orig)
    text = text.strip().splitlines()[0] if text.strip() else type(orig).__name__
    from fireval.core.errors import mask_secrets

    return mask_secrets(text[:300])


def is_storage_error(exc: BaseException, engine: Engine | None = None) -> bool:
    """Driver or OS errors that mean the database could not be read or written."""
    if isinstance(exc, (sa.exc.DBAPIError, sa.exc.DisconnectionError, OSError)):
        return True
    import sqlite3

    if isinstance(exc, sqlite3.Error):
        return True
    dbapi = getattr(getattr(engine, "dialect", None), "dbapi", None) if engine is not None else None
    base = getattr(dbapi, "Error", None)
    return isinstance(base, type) and isinstance(exc, base)


def translate(exc: BaseException, url: str, integrity: Any = None) -> FirevalError:
    """A storage exception as the store's error (a unique-key race is a conflict, the rest 503).
    ``integrity``: the driver's own ``IntegrityError`` class (statements run on the driver
    directly, :meth:`Database.fetch_async`, raise it unwrapped)."""
    if isinstance(exc, sa.exc.IntegrityError) or (isinstance(integrity, type) and isinstance(exc, integrity)):
        return LabelConflictError(f"a concurrent request changed the same row; retry ({storage_reason(exc)})")
    reason = storage_reason(exc)
    path = sqlite_path(url)
    if path is not None and ("disk is full" in reason or "No space left" in reason):
        # name the user's file and the condition (the web app logs it; the CLI prints it)
        return StoreUnavailableError(
            f"{path}: annotation store unavailable: {reason} (free some space and retry)"
        )
    return StoreUnavailableError(f"annotation store unavailable: {reason}")


# ---------------------------------------------------------------------- engines and migrations
class _LoopWaiter:
    """A write awaited from an event loop (:meth:`Database.write_async`): the writer delivers
    its outcome together with the others of its group on that loop, in one
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
    """PostgreSQL connections that an event loop drives itself (psycopg2's asynchronous mode:
    the loop waits for the socket with ``add_reader``/``add_writer``), for single statements:
    no worker thread and no thread hop per request (:meth:`Database.fetch_async`).

    Asynchronous connections are in autocommit mode, so each statement is its own transaction,
    committed (``synchronous_commit`` as the server has it, on by default: flushed to disk)
    before its result is complete. At most ``size`` connections, opened on demand; a request
    waits for a free one. A connection whose statement failed at the connection level or was
    interrupted (cancellation) is closed, not reused. Each new connection first runs the store's
    session set-up statements (:meth:`Database.session_setup`). Bound to the loop that created it.

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


def make_engine(url: str, sqlite_sync: str | None = None, *, immediate: bool = True) -> Engine:
    """Create an engine; SQLite gets WAL, a busy timeout and explicit transactions.

    SQLite transactions start with ``BEGIN IMMEDIATE`` (take the write lock up front, so two
    writers never deadlock on a lock upgrade) when ``immediate``, else with a deferred ``BEGIN``
    (readers: in WAL mode they never wait for a writer).

    ``sqlite_sync`` (default ``$FIREVAL_SQLITE_SYNC`` or ``FULL``): ``FULL`` fsyncs every commit
    (an acknowledged label survives a power loss); ``NORMAL`` survives a crash or ``kill -9`` of
    the server but may lose the last commits on a power loss, and is several times faster.
    """
    url = normalise_url(url)
    sync = (sqlite_sync or os.environ.get("FIREVAL_SQLITE_SYNC") or "FULL").upper()
    if sync not in ("FULL", "NORMAL", "EXTRA"):
        raise InputError(f"SQLite synchronous mode must be FULL, NORMAL or EXTRA, got {sync!r}")
    try:
        if url.startswith("sqlite"):
            engine = sa.create_engine(
                url,
                connect_args={"timeout": 60, "check_same_thread": False, "isolation_level": None},
                pool_size=16 if not immediate else 2,
                max_overflow=32 if not immediate else 4,
                pool_timeout=120,
            )
        else:
            # the pool's share of the store's connection budget (the module doc): with
            # `fireval serve --workers N` each worker has its own, and the server's
            # max_connections (100 by default) is shared
            size, overflow, _ = pg_pool_split(pg_connection_budget())
            engine = sa.create_engine(
                url,
                pool_size=size,
                max_overflow=overflow,
                pool_pre_ping=True,
                connect_args={"connect_timeout": 10},
            )
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as exc:
        raise InputError(f"cannot use this annotation store URL: {exc}", source=display_url(url)) from None
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _rec: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={sync}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def migrate(engine: Engine, target: str = "head") -> str:
    """Upgrade the schema to the Alembic revision ``target`` (default the newest); return it."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, target)
    return current_revision(engine) or ""


def current_revision(engine: Engine) -> str | None:
    """The Alembic revision stored in the database, or ``None`` before the first migration."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _check_sqlite_file(path: Path, shown: str) -> None:
    """Refuse an existing file that is not an annotation store, reading it only.

    (Opening it through the store's engine would already change it: switching to WAL mode
    rewrites the file header.)
    """
    import sqlite3
    from urllib.parse import quote

    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            raise InputError("not an annotation store (not an SQLite database)", source=shown) from None
        raise StoreUnavailableError(f"{shown}: cannot open annotation store: {storage_reason(exc)}") from None
    if names and "alembic_version" not in names:
        raise InputError("not an annotation store (a database without fireval's schema)", source=shown)


# ---------------------------------------------------------------------- the database of one store
class Database:
    """The engines of one store, its write path and its read path, with errors translated.

    ``write(op)`` runs ``op(conn)`` in a write transaction and returns once it is committed
    (the SQLite group writer, or one PostgreSQL transaction); ``reading()`` yields a read
    connection. Driver and OS errors leave both as :class:`StoreUnavailableError` (503).
    Opening (:meth:`open`) refuses what is not an annotation store and, when it created a
    new SQLite file but failed, removes that file again (no 0-byte database left behind).
    """

    def __init__(self, url: str, sqlite_sync: str | None = None, *, shared: bool = False) -> None:
        self.url = normalise_url(url)
        self.engine = make_engine(self.url, sqlite_sync)  # writes (and reads on PostgreSQL)
        self.is_postgres = self.engine.dialect.name == "postgresql"
        path = sqlite_path(self.url)
        self.writer = (
            _GroupWriter(self.engine, lock_path=f"{path}-writer.lock" if shared and path else None)
            if self.engine.dialect.name == "sqlite"
            else None
        )
        self.read_engine = (
            make_engine(self.url, sqlite_sync, immediate=False) if self.writer is not None else self.engine
        )
        self.revision: str | None = None
        self._setup: list[str] = []  # PostgreSQL: statements every new connection runs first
        self._async_pool: _PgAsyncPool | None = None
        # SQLite: the read connection kept for one event loop's thread (loop_reading)
        self._loop_conn: tuple[int, Connection] | None = None
        # a timestamp as SQLAlchemy would bind it (SQLite: its text format; PostgreSQL: as is)
        dialect = self.engine.dialect
        self._time_proc = sa.DateTime(timezone=True).dialect_impl(dialect).bind_processor(dialect)

    def session_setup(self, sql: str) -> None:
        """PostgreSQL: run ``sql`` (e.g. ``CREATE FUNCTION pg_temp...``) on every connection of
        the store once, when it opens (committed before first use); connections already pooled
        are closed, so every connection handed out from now on has it."""
        if not self.is_postgres:
            raise RuntimeError("session set-up statements are for PostgreSQL stores")
        if sql in self._setup:  # registered already (a PREPARE must not run twice on a connection)
            return
        self._setup.append(sql)

        @event.listens_for(self.engine, "connect")
        def _setup(dbapi_conn: Any, _rec: Any) -> None:
            with dbapi_conn.cursor() as cur:
                cur.execute(sql)
            dbapi_conn.commit()

        self.engine.pool.dispose()

    def param_time(self, t: datetime) -> Any:
        """``t`` as a :class:`Driver` parameter, stored exactly as SQLAlchemy stores it."""
        return self._time_proc(t) if self._time_proc is not None else t

    @classmethod
    def open(
        cls,
        url: str,
        *,
        upgrade: bool = True,
        sqlite_sync: str | None = None,
        shared: bool = False,
        create: bool = True,
    ) -> Database:
        """Open (with ``upgrade``, migrate) the store at ``url``; with ``create``, make it first
        when it does not exist (an SQLite file, or the schema in a PostgreSQL database).

        Without ``create`` (every verb but ``fireval judgments init``) a missing SQLite file, an
        empty one and a database without fireval's schema are refused, naming the init command:
        a mistyped ``--db`` must not start a new, empty store. An in-memory SQLite database
        (``sqlite://``) is always refused: it would vanish with the process.
        ``shared``: several processes (``fireval serve --workers N``) write to this SQLite
        store; their writers take turns on the file lock ``<store>-writer.lock``.
        """
        url = normalise_url(url)
        shown = display_url(url)
        path = sqlite_path(url)
        init = f"create it with `fireval judgments init --db {shown}`"
        if path is None and url.startswith("sqlite"):
            raise InputError(
                "an in-memory SQLite database cannot be an annotation store (it vanishes when the "
                "process ends); give a file path or sqlite:///PATH",
                source=shown,
            )
        created: Path | None = None
        if path is not None:
            p = Path(path)
            if p.is_dir():
                raise InputError("is a directory; expected an SQLite annotation store file", source=shown)
            if not p.parent.is_dir():
                raise InputError(f"directory {str(p.parent)!r} does not exist", source=shown)
            if not p.exists():
                if not create:
                    raise InputError(f"no annotation store here; {init}", source=shown)
                created = p
            elif p.is_file() and p.stat().st_size == 0 and not create:
                # SQLite would take it for an empty database and the store would write into it
                raise InputError(f"not an annotation store (empty file); {init}", source=shown)
            else:
                _check_sqlite_file(p, shown)
        db: Database | None = None
        try:
            db = cls(url, sqlite_sync, shared=shared)
            rev = current_revision(db.engine)
            if rev is None and sa.inspect(db.engine).get_table_names():
                raise InputError(
                    "not an annotation store (a database without fireval's schema)", source=shown
                )
            if rev is None and not create:
                raise InputError(
                    f"no annotation store in this database (no fireval schema); {init}", source=shown
                )
            if upgrade:
                rev = migrate(db.engine)
            elif rev != S.SCHEMA_HEAD:
                raise FirevalError(
                    f"annotation store {shown} is at schema revision {rev!r}, expected {S.SCHEMA_HEAD!r}; "
                    f"run `fireval judgments init --db {shown}` to upgrade it"
                )
            db.revision = rev
            return db
        except BaseException as exc:
            if db is not None:
                db.close()
            if created is not None:
                for suffix in ("", "-wal", "-shm", "-journal"):
                    with contextlib.suppress(OSError):
                        Path(str(created) + suffix).unlink()
            if isinstance(exc, FirevalError) or not is_storage_error(exc):
                raise
            reason = storage_reason(exc)
            if "file is not a database" in reason:
                raise InputError("not an annotation store (not an SQLite database)", source=shown) from None
            raise StoreUnavailableError(f"{shown}: cannot open annotation store: {reason}") from None

    def close(self) -> None:
        if self._async_pool is not None:
            self._async_pool.close()
            self._async_pool = None
        if self._loop_conn is not None:
            with contextlib.suppress(Exception):
                self._loop_conn[1].close()
            self._loop_conn = None
        if self.writer is not None:
            self.writer.stop()
            self.read_engine.dispose()
        self.engine.dispose()

    def write(self, op: Callable[[Connection], T]) -> T:
        """Run ``op`` in a write transaction and return its result once it is committed.

        Exceptions raised by ``op`` roll back its changes only and propagate to the caller;
        storage failures become :class:`StoreUnavailableError`.
        """
        with self.storage_errors():
            if self.writer is not None:
                return self.writer.run(op)
            with self.engine.begin() as conn:
                return op(conn)

    @contextlib.contextmanager
    def storage_errors(self) -> Iterator[None]:
        """Storage failures inside become :class:`StoreUnavailableError` (and kin, :func:`translate`);
        fireval's own errors and every other exception pass through unchanged."""
        try:
            yield
        except FirevalError:
            raise
        except Exception as exc:
            if is_storage_error(exc, self.engine):
                integrity = getattr(self.engine.dialect.dbapi, "IntegrityError", None)
                raise translate(exc, self.url, integrity) from exc
            raise

    @property
    def can_write_async(self) -> bool:
        """Whether :meth:`write_async` is available (SQLite: the group writer)."""
        return self.writer is not None

    @property
    def can_fetch_async(self) -> bool:
        """Whether :meth:`fetch_async` is available: PostgreSQL over psycopg2, with no cursor
        event listener on the engine (instrumentation and fault injection see every statement:
        with one, statements go through SQLAlchemy on the synchronous path instead)."""
        d = self.engine.dispatch
        return (
            self.is_postgres
            and self.engine.dialect.driver == "psycopg2"
            and not (d.before_cursor_execute or d.after_cursor_execute)
        )

    async def fetch_async(self, sql: str, params: tuple[Any, ...]) -> Any:
        """PostgreSQL: run one statement in its own transaction from an event loop, on a
        connection the loop drives itself (:class:`_PgAsyncPool`: no worker thread); return its
        first row once it is committed. ``sql`` in psycopg2's paramstyle; the connections have
        run :meth:`session_setup`'s statements. Errors as in :meth:`write`."""
        import asyncio

        loop = asyncio.get_running_loop()
        pool = self._async_pool
        if pool is None or pool.loop is not loop:  # a new loop (tests): a pool of its own
            if pool is not None:
                pool.close()
            cargs, cparams = self.engine.dialect.create_connect_args(self.engine.url)
            dbapi = self.engine.dialect.dbapi
            assert dbapi is not None

            def connect() -> Any:
                return dbapi.connect(*cargs, **{"connect_timeout": 10, **cparams, "async_": True})

            size = pg_pool_split(pg_connection_budget())[2]  # the pool's own share: make_engine
            pool = self._async_pool = _PgAsyncPool(connect, list(self._setup), size, loop)
        with self.storage_errors():
            return await pool.fetchone(sql, params)

    async def write_async(self, op: Callable[[Connection], T]) -> T:
        """:meth:`write` awaited from an event loop: the operation is queued on the SQLite group
        writer and the caller's task resumes once it is committed, with no thread of its own.

        Only for SQLite stores (:attr:`can_write_async`); errors as in :meth:`write`. An
        operation the writer has not started yet when the caller is cancelled is not run.
        """
        import asyncio

        if self.writer is None:
            raise RuntimeError("write_async needs the SQLite group writer")
        waiter = _LoopWaiter(asyncio.get_running_loop())
        self.writer.submit_waiter(op, waiter)
        with self.storage_errors():
            return await waiter.fut  # type: ignore[no-any-return]

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """A read connection; storage failures become :class:`StoreUnavailableError`."""
        with self.storage_errors(), self.read_engine.connect() as conn:
            yield conn

    @property
    def can_read_on_loop(self) -> bool:
        """Whether :meth:`loop_reading` may run on an event loop: SQLite (its reads in WAL mode
        never wait for a writer; a PostgreSQL read may wait on the network)."""
        return self.writer is not None

    @contextlib.contextmanager
    def loop_reading(self) -> Iterator[Connection]:
        """SQLite: a short read transaction on one connection kept for the calling thread (the
        web app's event loop), so that a read the loop runs itself never waits for a pool slot
        nor pays a thread hop. A call from another thread than the first caller's, or after a
        storage error, falls back to :meth:`reading`. Storage failures become
        :class:`StoreUnavailableError` (the kept connection is dropped)."""
        me = threading.get_ident()
        kept = self._loop_conn
        if self.writer is None or (kept is not None and kept[0] != me):
            with self.reading() as conn:
                yield conn
            return
        with self.storage_errors():
            try:
                if kept is None:
                    kept = self._loop_conn = (me, self.read_engine.connect())
                conn = kept[1]
                with conn.begin():
                    yield conn
            except BaseException:
                self._loop_conn = None
                if kept is not None:
                    with contextlib.suppress(Exception):
                        kept[1].close()
                raise
