"""The annotation store: SQLite (WAL) by default, PostgreSQL by URL, via SQLAlchemy 2.

Every state change is committed before it is acknowledged:

- SQLite: write operations of a process go through one writer thread which runs them first in,
  first out, each in its own SAVEPOINT, and commits whatever queued up together (group commit:
  one sync for several answers; an operation that fails rolls back alone). Write transactions
  start with ``BEGIN IMMEDIATE`` (other processes wait on the busy timeout); readers use a
  separate pool with deferred transactions and never wait for the writer (WAL).
  ``synchronous=FULL`` by default, so an acknowledged answer survives a crash of the process or
  of the machine (``NORMAL``, via ``$FIREVAL_SQLITE_SYNC``, survives process crashes only).
- PostgreSQL: the item row is locked (``SELECT ... FOR UPDATE``, ``SKIP LOCKED`` when handing
  out work) before its vote counts are changed.

Assignment follows FIRE's scheme: an item needs one vote, two if it was sampled for double
annotation, and one more whenever its votes tie (a disagreement gets a third annotator).
Items are handed out in pool order, except that an item someone else has already started and
that still needs another person (the second vote of a double item, a tie-breaker) comes first,
so started items get completed; fresh double items are not preferred, so a lone annotator is
not fed a run of items that only a second person can complete. A
``skip`` is not a vote, so a skipped item goes back to the queue for someone else. The
unique constraint on (item, annotator) for assignments and labels means nobody sees an item
twice and resubmitting a label has no second effect. Changing an answer goes through
:meth:`Store.undo` (delete own label, reopen the assignment), an explicit update path.

The schema is versioned with Alembic; :func:`migrate` upgrades to the head revision and runs
when a :class:`Store` opens (``fireval judgments init`` does the same explicitly).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from fireval.core import Collection, FirevalError, InputError, Judgments, normalise
from fireval.judging import schema as S
from fireval.judging.aggregate import DISAGREEMENT, IRRELEVANT, RELEVANT, VoteCounts, agreement_report
from fireval.judging.pool import PoolItem, read_pool

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


# ---------------------------------------------------------------------- errors (mapped to HTTP 4xx)
class StoreError(FirevalError):
    """A request the store refuses; ``status`` is the HTTP status the web app answers with."""

    status = 400


class UnknownItemError(StoreError):
    status = 404


class NotAssignedError(StoreError):
    status = 403


class InvalidLabelError(StoreError):
    status = 422


class LabelConflictError(StoreError):
    status = 409


# ---------------------------------------------------------------------- helpers
def normalise_url(url: str) -> str:
    """A database URL, or a plain file path meaning an SQLite file."""
    if "://" in url:
        return url
    return f"sqlite:///{Path(url).resolve()}"


def hash_token(token: str) -> str:
    """SHA-256 hex digest of a login token (tokens are 256-bit random, so no salt/KDF is needed)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Annotator:
    id: int
    name: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


@dataclass(frozen=True)
class ItemView:
    """What an annotator sees for one item."""

    id: int
    caption: str
    video_id: str
    dataset: str
    assignment_id: int


@dataclass(frozen=True)
class SubmitResult:
    status: str  # "created" | "duplicate"
    label_id: int
    item_id: int
    next: ItemView | None = None


T = TypeVar("T")


def _new_id(result: Any) -> int:
    """Primary key of the row an INSERT just created."""
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


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
    if url.startswith("sqlite"):
        engine = sa.create_engine(
            url,
            connect_args={"timeout": 60, "check_same_thread": False, "isolation_level": None},
            pool_size=16 if not immediate else 2,
            max_overflow=32 if not immediate else 4,
            pool_timeout=120,
        )

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
    return sa.create_engine(url, pool_size=16, max_overflow=32, pool_pre_ping=True)


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


class _Statements:
    """The hot-path statements, built once per store (plain SQL valid on SQLite and PostgreSQL).

    Building SQLAlchemy expressions per request costs more CPU than running them; these are
    prepared once. The claim queries repeat the partial indexes' predicates literally
    (``open_slots > 0``, ``open_slots < needed``) so SQLite can use those indexes.
    """

    def __init__(self, postgres: bool) -> None:
        lock = " FOR UPDATE" if postgres else ""
        skip = " FOR UPDATE SKIP LOCKED" if postgres else ""
        ts = sa.DateTime(timezone=True)
        self.lock_item = sa.text(f"SELECT id, is_double FROM items WHERE id = :item{lock}")
        self.assignment_of = sa.text(
            "SELECT id FROM assignments WHERE item_id = :item AND annotator_id = :ann"
        )
        self.label_of = sa.text("SELECT id, label FROM labels WHERE item_id = :item AND annotator_id = :ann")
        self.votes_of_item = sa.text(
            "SELECT SUM(CASE WHEN label <> 'skip' THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN label = 'relevant' THEN 1 ELSE 0 END) FROM labels WHERE item_id = :item"
        )
        self.active_of_item = sa.text("SELECT count(*) FROM assignments WHERE item_id = :item AND done = :f")
        self.set_slots = sa.text("UPDATE items SET needed = :needed, open_slots = :open WHERE id = :item")
        self.open_assignment = sa.text(
            "SELECT i.id, i.caption, i.video_id, i.dataset, a.id AS aid FROM assignments a "
            "JOIN items i ON i.id = a.item_id WHERE a.annotator_id = :ann AND a.done = :f "
            "ORDER BY a.updated_at DESC, a.id DESC LIMIT 1"
        )
        claim = (
            "SELECT id, caption, video_id, dataset FROM items WHERE open_slots > 0{extra} "
            "AND id NOT IN (SELECT item_id FROM assignments WHERE annotator_id = :ann) ORDER BY id LIMIT 1"
        )
        self.claim_started = sa.text(claim.format(extra=" AND open_slots < needed") + skip)
        self.claim_any = sa.text(claim.format(extra="") + skip)
        self.take_slot = sa.text("UPDATE items SET open_slots = open_slots - 1 WHERE id = :item")
        self.finish_assignment = sa.text(
            "UPDATE assignments SET done = :t, updated_at = :now WHERE id = :id"
        ).bindparams(sa.bindparam("now", type_=ts), sa.bindparam("t", type_=sa.Boolean()))
        self.annotator = sa.text("SELECT id, name, role FROM annotators WHERE id = :id AND active = :t")
        self.insert_label = S.labels.insert()
        self.insert_assignment = S.assignments.insert()


class Store:
    """The annotation store behind the web app and the ``fireval judgments`` verbs."""

    def __init__(self, url: str, *, upgrade: bool = True, sqlite_sync: str | None = None) -> None:
        self.url = normalise_url(url)
        self.engine = make_engine(self.url, sqlite_sync)  # writes (and reads on PostgreSQL)
        self.is_postgres = self.engine.dialect.name == "postgresql"
        self._sql = _Statements(self.is_postgres)
        # SQLite has one writer at a time: this process's writes go through one writer thread
        # that commits them in groups (see _GroupWriter) instead of contending for the file lock
        self._writer = _GroupWriter(self.engine) if self.engine.dialect.name == "sqlite" else None
        # SQLite readers use deferred transactions on their own pool: they never take the write lock
        self.read_engine = (
            make_engine(self.url, sqlite_sync, immediate=False) if self._writer is not None else self.engine
        )
        if upgrade:
            self.revision = migrate(self.engine)
        else:
            rev = current_revision(self.engine)
            if rev != S.SCHEMA_HEAD:
                raise FirevalError(
                    f"annotation store {self.url} is at schema revision {rev!r}, expected {S.SCHEMA_HEAD!r}; "
                    "run `fireval judgments init`"
                )
            self.revision = rev

    def close(self) -> None:
        if self._writer is not None:
            self._writer.stop()
            self.read_engine.dispose()
        self.engine.dispose()

    def _write(self, op: Callable[[Connection], T]) -> T:
        """Run ``op`` in a write transaction and return its result once it is committed.

        Exceptions raised by ``op`` roll back its changes only and propagate to the caller.
        """
        if self._writer is not None:
            return self._writer.run(op)
        with self.engine.begin() as conn:
            return op(conn)

    # ------------------------------------------------------------------ annotators
    def add_annotator(self, name: str, role: str = "annotator") -> tuple[Annotator, str]:
        """Create an annotator; return it and its new random login token (only the hash is stored)."""
        if role not in S.ROLES:
            raise InputError(f"unknown role {role!r}; expected one of {', '.join(S.ROLES)}")
        name = name.strip()
        if not name:
            raise InputError("annotator name must not be empty")
        token = secrets.token_urlsafe(32)  # 256 random bits: an unsalted hash is safe only for these

        def op(conn: Connection) -> int:
            if conn.execute(sa.select(S.annotators.c.id).where(S.annotators.c.name == name)).first():
                raise InputError(f"annotator {name!r} already exists")
            res = conn.execute(
                S.annotators.insert().values(
                    name=name, token_hash=hash_token(token), role=role, active=True, created_at=now()
                )
            )
            return _new_id(res)

        aid = self._write(op)
        return Annotator(aid, name, role), token

    def authenticate(self, token: str) -> Annotator | None:
        """The active annotator whose token hashes to the stored hash, else ``None``."""
        if not token or len(token) > 512:
            return None
        with self.read_engine.connect() as conn:
            row = conn.execute(
                sa.select(S.annotators).where(
                    S.annotators.c.token_hash == hash_token(token), S.annotators.c.active.is_(True)
                )
            ).first()
        return Annotator(row.id, row.name, row.role) if row else None

    def annotator(self, annotator_id: int) -> Annotator | None:
        """The active annotator with this id (checked on every request of a logged-in user)."""
        with self.read_engine.connect() as conn:
            row = conn.execute(self._sql.annotator, {"id": annotator_id, "t": True}).first()
        return Annotator(row.id, row.name, row.role) if row else None

    def annotators(self) -> list[Annotator]:
        with self.read_engine.connect() as conn:
            rows = conn.execute(sa.select(S.annotators).order_by(S.annotators.c.id)).all()
        return [Annotator(r.id, r.name, r.role) for r in rows]

    # ------------------------------------------------------------------ items
    def add_items(self, items: Iterable[PoolItem], dataset: str) -> tuple[int, int]:
        """Insert pool items (one transaction); return ``(added, already_present)``.

        An item already present (same dataset, normalised caption and video) is left as is.
        """
        items = list(items)
        t = now()

        def op(conn: Connection) -> tuple[int, int]:
            existing = {
                (r.norm_caption, r.video_id)
                for r in conn.execute(
                    sa.select(S.items.c.norm_caption, S.items.c.video_id).where(S.items.c.dataset == dataset)
                )
            }
            rows = []
            seen = set(existing)
            for it in items:
                key = (normalise(it.caption), it.video_id)
                if key in seen:
                    continue
                seen.add(key)
                need = 2 if it.double else 1
                rows.append(
                    {
                        "dataset": dataset,
                        "caption": it.caption,
                        "norm_caption": key[0],
                        "caption_ids": json.dumps(it.caption_ids),
                        "video_id": it.video_id,
                        "runs": json.dumps(it.runs),
                        "models": json.dumps(sorted(it.runs)),
                        "is_double": bool(it.double),
                        "needed": need,
                        "open_slots": need,
                        "created_at": t,
                    }
                )
            for start in range(0, len(rows), 5000):
                conn.execute(S.items.insert(), rows[start : start + 5000])
            return len(rows), len(items) - len(rows)

        return self._write(op)

    def load_pool(self, path: str | Path, dataset: str | None = None) -> tuple[int, int]:
        """Load a pool file written by :func:`fireval.judging.pool.write_pool`."""
        pool = read_pool(path)
        return self.add_items(pool.items, dataset or pool.dataset or "unknown")

    # ------------------------------------------------------------------ work queue
    def _lock_item(self, conn: Connection, item_id: int) -> Any:
        return conn.execute(self._sql.lock_item, {"item": item_id}).first()

    def _recompute(self, conn: Connection, item_id: int, is_double: bool) -> None:
        """Recount an item's votes and open slots after a change (caller holds the item lock)."""
        n, r = conn.execute(self._sql.votes_of_item, {"item": item_id}).one()
        n, r = int(n or 0), int(r or 0)
        active = int(conn.execute(self._sql.active_of_item, {"item": item_id, "f": False}).scalar_one())
        needed = 2 if is_double else 1
        if n >= 2 and 2 * r == n:
            needed = n + 1
        open_slots = max(0, needed - n - active)
        conn.execute(self._sql.set_slots, {"item": item_id, "needed": needed, "open": open_slots})

    def next_item(self, annotator_id: int) -> ItemView | None:
        """The annotator's open assignment, or a newly claimed item; ``None`` when the queue is empty."""

        def op(conn: Connection) -> ItemView | None:
            return self._next(conn, annotator_id)

        return self._write(op)

    def _next(self, conn: Connection, annotator_id: int) -> ItemView | None:
        q = self._sql
        row = conn.execute(q.open_assignment, {"ann": annotator_id, "f": False}).first()
        if row:
            return ItemView(row.id, row.caption, row.video_id, row.dataset, row.aid)
        # items another annotator started and this one can finish first (ix_items_started_id), then
        # the rest in pool order, fresh double items among the single ones
        cand = conn.execute(q.claim_started, {"ann": annotator_id}).first()
        if cand is None:
            cand = conn.execute(q.claim_any, {"ann": annotator_id}).first()
        if cand is None:
            return None
        t = now()
        res = conn.execute(
            q.insert_assignment,
            {
                "item_id": cand.id,
                "annotator_id": annotator_id,
                "done": False,
                "created_at": t,
                "updated_at": t,
            },
        )
        conn.execute(q.take_slot, {"item": cand.id})
        return ItemView(cand.id, cand.caption, cand.video_id, cand.dataset, _new_id(res))

    def submit(
        self,
        annotator_id: int,
        item_id: int,
        label: str,
        time_spent_ms: int | None = None,
        *,
        claim_next: bool = False,
    ) -> SubmitResult:
        """Record one answer in one transaction.

        Raises :class:`InvalidLabelError` (label outside the enum), :class:`UnknownItemError`,
        :class:`NotAssignedError` (no assignment of this item to this annotator) and
        :class:`LabelConflictError` (a different answer exists; use :meth:`undo`). The same
        answer again returns ``status="duplicate"`` and changes nothing. With ``claim_next`` the
        annotator's next item is handed out in the same transaction (``SubmitResult.next``).
        """
        if label not in S.LABELS:
            raise InvalidLabelError(f"label must be one of {', '.join(S.LABELS)}, got {label!r}")
        if time_spent_ms is not None:
            time_spent_ms = int(max(0, min(int(time_spent_ms), 24 * 3600 * 1000)))

        def op(conn: Connection) -> SubmitResult:
            q = self._sql
            it = self._lock_item(conn, item_id)
            if it is None:
                raise UnknownItemError(f"unknown item {item_id}")
            key = {"item": item_id, "ann": annotator_id}
            asg = conn.execute(q.assignment_of, key).first()
            if asg is None:
                raise NotAssignedError(f"item {item_id} is not assigned to you")
            old = conn.execute(q.label_of, key).first()
            if old is not None:
                if old.label == label:
                    nxt = self._next(conn, annotator_id) if claim_next else None
                    return SubmitResult("duplicate", old.id, item_id, nxt)
                raise LabelConflictError(
                    f"item {item_id} already labelled {old.label!r}; undo it first to change the answer"
                )
            t = now()
            res = conn.execute(
                q.insert_label,
                {
                    "item_id": item_id,
                    "annotator_id": annotator_id,
                    "assignment_id": asg.id,
                    "label": label,
                    "time_spent_ms": time_spent_ms,
                    "created_at": t,
                },
            )
            conn.execute(q.finish_assignment, {"id": asg.id, "t": True, "now": t})
            self._recompute(conn, item_id, bool(it.is_double))
            nxt = self._next(conn, annotator_id) if claim_next else None
            return SubmitResult("created", _new_id(res), item_id, nxt)

        return self._write(op)

    def undo(self, annotator_id: int, item_id: int | None = None) -> int | None:
        """Withdraw the annotator's answer for ``item_id`` (default: their latest answer).

        The assignment reopens, so the item is shown again next. Returns the item id, or
        ``None`` when there is nothing to undo.
        """

        def op(conn: Connection) -> int | None:
            q = sa.select(S.labels.c.id, S.labels.c.item_id, S.labels.c.assignment_id).where(
                S.labels.c.annotator_id == annotator_id
            )
            q = q.where(S.labels.c.item_id == item_id) if item_id is not None else q
            row = conn.execute(q.order_by(S.labels.c.id.desc()).limit(1)).first()
            if row is None:
                if item_id is not None and self._lock_item(conn, item_id) is None:
                    raise UnknownItemError(f"unknown item {item_id}")
                return None
            it = self._lock_item(conn, row.item_id)
            conn.execute(S.labels.delete().where(S.labels.c.id == row.id))
            conn.execute(
                S.assignments.update()
                .where(S.assignments.c.id == row.assignment_id)
                .values(done=False, updated_at=now())
            )
            self._recompute(conn, row.item_id, bool(it.is_double))
            return int(row.item_id)

        return self._write(op)

    def release_stale(self, older_than: timedelta) -> int:
        """Take back open assignments untouched for longer than ``older_than``; return how many.

        An annotator who claimed an item and left holds its slot; releasing the assignment puts
        the item back in the queue (the annotator may be given it again later).
        """
        cutoff = now() - older_than

        def op(conn: Connection) -> int:
            a = S.assignments.c
            rows = conn.execute(
                sa.select(a.id, a.item_id).where(a.done.is_(False), a.updated_at < cutoff)
            ).all()
            for row in rows:
                it = self._lock_item(conn, row.item_id)
                conn.execute(S.assignments.delete().where(a.id == row.id))
                self._recompute(conn, row.item_id, bool(it.is_double))
            return len(rows)

        return self._write(op)

    def adjudicate(self, admin_id: int, item_id: int, label: str) -> SubmitResult:
        """An admin breaks a tie: a vote by the admin on a disagreement item (FIRE's third label)."""
        if label not in ("relevant", "irrelevant"):
            raise InvalidLabelError(f"adjudication must be 'relevant' or 'irrelevant', got {label!r}")
        adm = self.annotator(admin_id)
        if adm is None or not adm.is_admin:
            raise NotAssignedError("only an admin can adjudicate")

        def op(conn: Connection) -> None:
            it = self._lock_item(conn, item_id)
            if it is None:
                raise UnknownItemError(f"unknown item {item_id}")
            exists = conn.execute(
                sa.select(S.assignments.c.id).where(
                    S.assignments.c.item_id == item_id, S.assignments.c.annotator_id == admin_id
                )
            ).first()
            if exists is None:
                t = now()
                conn.execute(
                    S.assignments.insert().values(
                        item_id=item_id, annotator_id=admin_id, done=False, created_at=t, updated_at=t
                    )
                )

        self._write(op)
        return self.submit(admin_id, item_id, label)

    # ------------------------------------------------------------------ reading
    def votes(self) -> dict[str, np.ndarray]:
        """All labels as parallel arrays: label_id, item_id, annotator_id, assignment_id, label, created_at."""
        L = S.labels.c
        with self.read_engine.connect() as conn:
            rows = conn.execute(
                sa.select(L.id, L.item_id, L.annotator_id, L.assignment_id, L.label, L.created_at).order_by(
                    L.id
                )
            ).all()
        cols: list[Sequence[Any]] = list(zip(*rows)) if rows else [()] * 6
        return {
            "label_id": np.asarray(cols[0], dtype=np.int64),
            "item_id": np.asarray(cols[1], dtype=np.int64),
            "annotator_id": np.asarray(cols[2], dtype=np.int64),
            "assignment_id": np.asarray(cols[3], dtype=np.int64),
            "label": np.asarray(cols[4], dtype=object),
            "created_at": np.asarray(cols[5], dtype=object),
        }

    def items_table(self) -> list[dict[str, Any]]:
        with self.read_engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.select(S.items).order_by(S.items.c.id))]

    def vote_counts(self) -> tuple[np.ndarray, VoteCounts]:
        """Item ids (sorted) and their :class:`VoteCounts`."""
        v = self.votes()  # votes before items: items are never deleted, so every voted item is listed
        with self.read_engine.connect() as conn:
            ids = np.asarray(
                conn.execute(sa.select(S.items.c.id).order_by(S.items.c.id)).scalars().all(), np.int64
            )
        return ids, _counts(ids, v)

    def progress(self, annotator_id: int | None = None) -> dict[str, int]:
        """Votes done / votes needed over the whole queue, and the annotator's own count."""
        with self.read_engine.connect() as conn:
            needed = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(S.items.c.needed), 0))).scalar_one()
            done = conn.execute(
                sa.select(sa.func.count()).select_from(S.labels).where(S.labels.c.label != "skip")
            ).scalar_one()
            mine = 0
            if annotator_id is not None:
                mine = conn.execute(
                    sa.select(sa.func.count()).where(S.labels.c.annotator_id == annotator_id)
                ).scalar_one()
        return {"needed": int(needed), "done": int(done), "mine": int(mine)}

    def status(self) -> dict[str, Any]:
        """Queue status, throughput and agreement for the admin view and ``fireval judgments status``."""
        v = self.votes()  # votes before items (see vote_counts)
        with self.read_engine.connect() as conn:
            rows = conn.execute(sa.select(S.items.c.id, S.items.c.needed).order_by(S.items.c.id)).all()
            ids, needed = np.asarray(rows, np.int64).reshape(-1, 2).T
            in_progress = conn.execute(
                sa.select(sa.func.count()).select_from(S.assignments).where(S.assignments.c.done.is_(False))
            ).scalar_one()
            per_annotator = conn.execute(
                sa.select(S.annotators.c.name, sa.func.count(S.labels.c.id))
                .select_from(S.annotators.outerjoin(S.labels, S.labels.c.annotator_id == S.annotators.c.id))
                .group_by(S.annotators.c.name)
                .order_by(S.annotators.c.name)
            ).all()
            t = now()
            last_hour = conn.execute(
                sa.select(sa.func.count()).where(S.labels.c.created_at >= t - timedelta(hours=1))
            ).scalar_one()
            last_10 = conn.execute(
                sa.select(sa.func.count()).where(S.labels.c.created_at >= t - timedelta(minutes=10))
            ).scalar_one()
        counts = _counts(ids, v)
        complete = int(((counts.n >= needed) & (counts.decisions() != DISAGREEMENT)).sum())
        rep = agreement_report(counts)
        return {
            "items": int(ids.size),
            "complete": complete,
            "pending": int(ids.size) - complete,
            "in_progress": int(in_progress),
            "votes": int(counts.n.sum()),
            "votes_needed": int(needed.sum()),
            "labels_last_hour": int(last_hour),
            "labels_per_minute_last_10": float(last_10) / 10.0,
            "per_annotator": {name: int(n) for name, n in per_annotator},
            "agreement": rep,
        }

    def disagreements(self) -> list[dict[str, Any]]:
        """Items whose votes tie, with their votes (annotator name, label)."""
        ids, counts = self.vote_counts()
        dis = set(ids[counts.decisions() == DISAGREEMENT].tolist())
        if not dis:
            return []
        with self.read_engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    S.items.c.id, S.items.c.caption, S.items.c.video_id, S.annotators.c.name, S.labels.c.label
                )
                .select_from(
                    S.labels.join(S.items, S.items.c.id == S.labels.c.item_id).join(
                        S.annotators, S.annotators.c.id == S.labels.c.annotator_id
                    )
                )
                .where(S.items.c.id.in_(sorted(dis)))
                .order_by(S.items.c.id, S.labels.c.id)
            ).all()
        out: dict[int, dict[str, Any]] = {}
        for r in rows:
            d = out.setdefault(
                r.id, {"item_id": r.id, "caption": r.caption, "video_id": r.video_id, "votes": []}
            )
            d["votes"].append((r.name, r.label))
        return list(out.values())

    # ------------------------------------------------------------------ export
    def fire_records(self, dataset: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Aggregated items in the FIRE JSON schema: ``(annotations, disagreements)``.

        ``annotator_ids`` are store annotator ids, ``response_ids`` label ids, ``queue_ids``
        assignment ids, ``models`` the runs that proposed the pair, ``dataset`` the item's
        dataset (or ``dataset`` if given). Skips are not votes and are left out; items without a
        vote are not exported.
        """
        v = self.votes()  # votes before items (see vote_counts)
        items = {r["id"]: r for r in self.items_table()}
        is_vote = v["label"] != "skip"
        order = np.lexsort((v["label_id"], v["item_id"]))
        order = order[is_vote[order]]
        ids = np.fromiter(items, np.int64, len(items))
        dec = dict(zip(ids.tolist(), _counts(ids, v).decisions().tolist()))
        grouped: dict[int, list[int]] = {}
        for k in order:
            grouped.setdefault(int(v["item_id"][k]), []).append(int(k))
        ann, dis = [], []
        for item_id, ks in grouped.items():
            it = items[item_id]
            rec: dict[str, Any] = {
                "annotator_ids": [int(v["annotator_id"][k]) for k in ks],
                "video_id": it["video_id"],
                "query": it["caption"],
                "annotator_labels": [str(v["label"][k]) for k in ks],
                "response_ids": [int(v["label_id"][k]) for k in ks],
                "queue_ids": [int(v["assignment_id"][k]) for k in ks],
                "models": json.loads(it["models"]),
                "dataset": dataset or it["dataset"],
            }
            d = dec[item_id]
            if d in (RELEVANT, IRRELEVANT):
                ann.append({"label": "relevant" if d == RELEVANT else "irrelevant", **rec})
            else:
                dis.append(rec)
        return ann, dis


def _counts(ids: np.ndarray, votes: dict[str, np.ndarray]) -> VoteCounts:
    """:class:`VoteCounts` of the items ``ids`` (sorted) from :meth:`Store.votes` arrays."""
    return VoteCounts.from_votes(np.searchsorted(ids, votes["item_id"]), votes["label"], ids.size)


def store_judgments(db_url: str, collection: Collection) -> Judgments:
    """The store's majority labels as :class:`Judgments` with source ``"human"``.

    Each item labels every caption id it lists that the collection knows (else every caption
    whose normalised text equals the item's) against its video; items whose video is not in
    the collection are ignored. Disagreements go to ``Judgments.unresolved`` (unjudged).
    Details per pair: annotator_ids, annotator_labels, response_ids, queue_ids, models.
    """
    store = Store(db_url, upgrade=False)
    try:
        ann, dis = store.fire_records()
        items = store.items_table()
    finally:
        store.close()
    cidx, vidx, nidx = collection.caption_index, collection.video_index, collection.normalised_index

    def rows_of(rec: dict[str, Any], caption_ids: Sequence[str] | None) -> list[int]:
        if caption_ids:
            got = [cidx[c] for c in caption_ids if c in cidx]
            if got:
                return got
        return list(nidx.get(normalise(rec["query"]), []))

    id_map = {(r["norm_caption"], r["video_id"]): json.loads(r["caption_ids"]) for r in items}
    rows, cols, grades = [], [], []
    details: dict[tuple[int, int], dict[str, Any]] = {}
    for rec in ann:
        if rec["video_id"] not in vidx:
            continue
        v = vidx[rec["video_id"]]
        for r in rows_of(rec, id_map.get((normalise(rec["query"]), rec["video_id"]))):
            rows.append(r)
            cols.append(v)
            grades.append(1.0 if rec["label"] == "relevant" else 0.0)
            details[(r, v)] = {
                k: rec[k]
                for k in ("annotator_ids", "annotator_labels", "response_ids", "queue_ids", "models")
            }
    unresolved = [
        (r, vidx[rec["video_id"]])
        for rec in dis
        if rec["video_id"] in vidx
        for r in rows_of(rec, id_map.get((normalise(rec["query"]), rec["video_id"])))
    ]
    return Judgments.from_arrays(
        collection.shape,
        rows,
        cols,
        grades,
        "human",
        details=details,
        unresolved=np.asarray(unresolved, np.int64).reshape(-1, 2),
        origin=db_url,
    )
