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

Where the pieces live (all re-exported here): URLs, storage errors and the PostgreSQL
connection budget, :mod:`fireval.judging.storage`; :class:`Driver`, the SQLite group writer and
the asynchronous PostgreSQL pool, :mod:`fireval.judging.connections`. This module holds
:func:`make_engine`, :func:`migrate` and :class:`Database`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from fireval.core import FirevalError, InputError
from fireval.judging import schema as S
from fireval.judging.connections import Driver as Driver
from fireval.judging.connections import _GroupWriter as _GroupWriter
from fireval.judging.connections import _LoopWaiter as _LoopWaiter
from fireval.judging.connections import _PgAsyncPool as _PgAsyncPool
from fireval.judging.connections import driver_sql as driver_sql
from fireval.judging.errors import StoreUnavailableError
from fireval.judging.storage import PG_ASYNC_CONNECTIONS as PG_ASYNC_CONNECTIONS
from fireval.judging.storage import PG_CONNECTIONS as PG_CONNECTIONS
from fireval.judging.storage import PG_MIN_CONNECTIONS as PG_MIN_CONNECTIONS
from fireval.judging.storage import SCHEMES as SCHEMES
from fireval.judging.storage import check_pg_connections as check_pg_connections
from fireval.judging.storage import display_url as display_url
from fireval.judging.storage import is_storage_error as is_storage_error
from fireval.judging.storage import normalise_url as normalise_url
from fireval.judging.storage import pg_connection_budget as pg_connection_budget
from fireval.judging.storage import pg_pool_split as pg_pool_split
from fireval.judging.storage import sqlite_path as sqlite_path
from fireval.judging.storage import storage_reason as storage_reason
from fireval.judging.storage import translate as translate

MIGRATIONS = Path(__file__).resolve().parent / "migrations"

T = TypeVar("T")


def now() -> datetime:
    return datetime.now(UTC)


def new_id(result: Any) -> int:
    """Primary key of the row an INSERT just created."""
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


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
