"""Where the annotation store lives: URL checks, engines, migrations, the SQLite group writer.

Every state change is committed before it is acknowledged:

- SQLite (a file path or ``sqlite:///PATH``): write operations of a process go through one
  writer thread which runs them first in, first out, each in its own SAVEPOINT, and commits
  whatever queued up together (group commit: one sync for several answers; an operation that
  fails rolls back alone). Write transactions start with ``BEGIN IMMEDIATE`` (other processes
  wait on the busy timeout); readers use a separate pool with deferred transactions and never
  wait for the writer (WAL). ``synchronous=FULL`` by default, so an acknowledged answer survives
  a crash of the process or of the machine (``NORMAL``, via ``$FIREVAL_SQLITE_SYNC``, survives
  process crashes only).
- PostgreSQL (``postgresql[+psycopg2]://...``): one transaction per operation on a pooled
  connection (READ COMMITTED); the hand-out serialises itself (see
  :mod:`fireval.judging.handout`).

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
SCHEMES = ("sqlite", "sqlite+pysqlite", "postgresql", "postgresql+psycopg2", "postgresql+psycopg")

T = TypeVar("T")


def now() -> datetime:
    return datetime.now(UTC)


def new_id(result: Any) -> int:
    """Primary key of the row an INSERT just created."""
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


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
    return url


def display_url(url: str) -> str:
    """``url`` fit for a message: the SQLite path, or the server URL without its password."""
    if "://" not in url:
        return url
    if url.startswith("sqlite"):
        return sqlite_path(url) or url
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL: show only its scheme
        return url.split("://", 1)[0] + "://..."


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
    return text[:300]


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


def translate(exc: BaseException, url: str) -> FirevalError:
    """A storage exception as the store's error (a unique-key race is a conflict, the rest 503)."""
    if isinstance(exc, sa.exc.IntegrityError):
        return LabelConflictError(f"a concurrent request changed the same row; retry ({storage_reason(exc)})")
    return StoreUnavailableError(f"annotation store unavailable: {storage_reason(exc)}")


# ---------------------------------------------------------------------- engines and migrations
class _GroupWriter:
    """One thread that runs SQLite write operations, several per transaction (group commit).

    Callers enqueue an operation and block until the transaction holding it has committed, so
    an answer is only acknowledged once it is durable. Each operation runs in its own
    SAVEPOINT: if it raises, only its changes are rolled back and the exception goes to its
    caller; the others in the group still commit. Grouping is opportunistic (whatever queued up
    while the previous commit was syncing), so a lone request is never delayed. Operations are
    served first in, first out.
    """

    def __init__(self, engine: Engine, max_group: int = 64) -> None:
        self.engine, self.max_group = engine, max_group
        self.queue: queue.SimpleQueue[tuple[Callable[[Connection], Any], Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, name="fireval-store-writer", daemon=True)
        self.thread.start()

    def run(self, op: Callable[[Connection], T]) -> T:
        with self.lock:  # restart after stop(): a closed Store may be used again, like a disposed engine
            if not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="fireval-store-writer", daemon=True)
                self.thread.start()
        fut: Future[T] = Future()
        self.queue.put((op, fut))
        return fut.result()

    def stop(self) -> None:
        with self.lock:
            if self.thread.is_alive():
                self.queue.put(None)
                self.thread.join(60)

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
            outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
            try:
                with self.engine.begin() as conn:
                    for op, fut in group:
                        sp = conn.begin_nested()
                        try:
                            value = op(conn)
                        except BaseException as exc:  # the caller gets it; the group goes on
                            sp.rollback()
                            outcomes.append((fut, None, exc))
                        else:
                            sp.commit()
                            outcomes.append((fut, value, None))
            except BaseException as exc:  # the commit itself failed: nothing of the group is durable
                for _, fut in group:
                    fut.set_exception(exc)
            else:
                for fut, value, err in outcomes:
                    if err is not None:
                        fut.set_exception(err)
                    else:
                        fut.set_result(value)
            if stopping:
                return


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
            engine = sa.create_engine(
                url, pool_size=16, max_overflow=32, pool_pre_ping=True, connect_args={"connect_timeout": 10}
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

    def __init__(self, url: str, sqlite_sync: str | None = None) -> None:
        self.url = normalise_url(url)
        self.engine = make_engine(self.url, sqlite_sync)  # writes (and reads on PostgreSQL)
        self.is_postgres = self.engine.dialect.name == "postgresql"
        self.writer = _GroupWriter(self.engine) if self.engine.dialect.name == "sqlite" else None
        self.read_engine = (
            make_engine(self.url, sqlite_sync, immediate=False) if self.writer is not None else self.engine
        )
        self.revision: str | None = None

    @classmethod
    def open(cls, url: str, *, upgrade: bool = True, sqlite_sync: str | None = None) -> Database:
        """Open (and with ``upgrade`` create or migrate) the store at ``url``."""
        url = normalise_url(url)
        shown = display_url(url)
        path = sqlite_path(url)
        created: Path | None = None
        if path is not None:
            p = Path(path)
            if p.is_dir():
                raise InputError("is a directory; expected an SQLite annotation store file", source=shown)
            if not p.parent.is_dir():
                raise InputError(f"directory {str(p.parent)!r} does not exist", source=shown)
            if not p.exists():
                created = p
            else:
                _check_sqlite_file(p, shown)
        db: Database | None = None
        try:
            db = cls(url, sqlite_sync)
            rev = current_revision(db.engine)
            if rev is None and sa.inspect(db.engine).get_table_names():
                raise InputError(
                    "not an annotation store (a database without fireval's schema)", source=shown
                )
            if upgrade:
                rev = migrate(db.engine)
            elif rev != S.SCHEMA_HEAD:
                raise FirevalError(
                    f"annotation store {db.url} is at schema revision {rev!r}, expected {S.SCHEMA_HEAD!r}; "
                    "run `fireval judgments init`"
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
        if self.writer is not None:
            self.writer.stop()
            self.read_engine.dispose()
        self.engine.dispose()

    def write(self, op: Callable[[Connection], T]) -> T:
        """Run ``op`` in a write transaction and return its result once it is committed.

        Exceptions raised by ``op`` roll back its changes only and propagate to the caller;
        storage failures become :class:`StoreUnavailableError`.
        """
        try:
            if self.writer is not None:
                return self.writer.run(op)
            with self.engine.begin() as conn:
                return op(conn)
        except FirevalError:
            raise
        except Exception as exc:
            if is_storage_error(exc, self.engine):
                raise translate(exc, self.url) from exc
            raise

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """A read connection; storage failures become :class:`StoreUnavailableError`."""
        try:
            with self.read_engine.connect() as conn:
                yield conn
        except FirevalError:
            raise
        except Exception as exc:
            if is_storage_error(exc, self.engine):
                raise translate(exc, self.url) from exc
            raise
