"""Store URLs, storage errors and the PostgreSQL connection budget (no engine, no connection
kept).

- URLs: :func:`normalise_url` (a plain path is an SQLite file; only SQLite and PostgreSQL
  schemes, :data:`SCHEMES`), :func:`display_url` (the path, or the URL without its password),
  :func:`sqlite_path`.
- Storage errors: :func:`storage_reason` (the driver's first line, secrets masked),
  :func:`is_storage_error`, :func:`translate` (a unique-key race is a
  :class:`~fireval.judging.errors.LabelConflictError`, the rest
  :class:`~fireval.judging.errors.StoreUnavailableError`, i.e. 503).
- PostgreSQL connection budget: :func:`pg_connection_budget` (``$FIREVAL_PG_CONNECTIONS`` or
  :data:`PG_CONNECTIONS`), :func:`pg_pool_split` (pool, overflow, asynchronous) and
  :func:`check_pg_connections` (does ``--workers N`` fit in the server's ``max_connections``).

:mod:`fireval.judging.engine` uses and re-exports all of these.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from fireval.core import FirevalError, InputError
from fireval.judging.errors import LabelConflictError, StoreUnavailableError

#: PostgreSQL connections one store opens at most (SQLAlchemy pool + asynchronous connections)
PG_CONNECTIONS = 20
#: the smallest budget that still leaves the pool and the asynchronous path two connections each
PG_MIN_CONNECTIONS = 4
#: asynchronous connections at most (the answer path; more do not help on a few cores)
PG_ASYNC_CONNECTIONS = 8
SCHEMES = ("sqlite", "sqlite+pysqlite", "postgresql", "postgresql+psycopg2", "postgresql+psycopg")


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
    directly, :meth:`~fireval.judging.engine.Database.fetch_async`, raise it unwrapped)."""
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
