"""The work queue of the annotation store: loading items, handing them out, answers, undo.

Assignment follows FIRE's scheme: an item needs one vote, two if it was sampled for double
annotation, and one more whenever its votes tie (a disagreement gets a third annotator).
``items.open_slots`` counts the votes still to hand out (``needed - votes - open
assignments``), recomputed under the item's lock after every change (:meth:`Handout._recompute`).

Order: items are handed out in pool order, except that an item someone else has already
started and that still needs another person (the second vote of a double item, a
tie-breaker) comes first, so started items get completed; fresh double items are not
preferred, so a lone annotator is not fed a run of items that only a second person can
complete. A ``skip`` is not a vote, so a skipped item goes back to the queue for someone else.
The unique constraint on (item, annotator) for assignments and labels means nobody sees an
item twice and resubmitting a label has no second effect. Changing an answer goes through
:meth:`Handout.undo` (delete own label, reopen the assignment), an explicit update path. An
undo chooses the label and withdraws it in one transaction, and one annotator's undos take
turns (:func:`fireval.judging.engine.serialise_undos`), so undos sent at once withdraw
distinct answers, newest first.

Claims are serialised, so ``next_item`` answers ``None`` only when no item the annotator could
take exists at that moment:

- SQLite: every write of a process runs on the one writer thread, and ``BEGIN IMMEDIATE``
  orders the writers of several processes.
- PostgreSQL: a claim first takes a transaction-scoped advisory lock (one per database), then
  reads the candidates and takes a slot with ``UPDATE ... WHERE open_slots > 0``, which waits
  for a concurrent answer on that item and re-checks the row after it. The former
  ``SELECT ... FOR UPDATE SKIP LOCKED`` claim was wrong: it skipped an item whose row another
  transaction held (a claim of its first slot, an answer being recorded) even though the item
  would still have an open slot after that transaction, so every annotator could be told
  "nothing left" while a double item waited for its second vote. A submit that also claims
  the next item commits the answer first and claims in a second transaction, so no
  transaction waits for the claim lock while holding an item's row lock (no deadlock). The
  claim transaction commits with ``synchronous_commit = off``: the lock is held until the
  commit, so it must not wait for the disk; a claim lost in a crash only means the item is
  handed out again, while answers stay synchronous (acknowledged once on disk).
- PostgreSQL, the web app's answer (:meth:`Handout.submit_in_session_pg`): the session check,
  the answer and the next item in one statement, one transaction, one round trip
  (:data:`PG_SUBMIT_FUNCTION`, a ``pg_temp`` function each connection creates). Its claim takes
  no advisory lock and skips item rows other transactions hold (``FOR UPDATE SKIP LOCKED``), so
  it never waits while holding the answered item's row (no deadlock) and concurrent answers
  claim different items in parallel, each committed synchronously. Skipping is only used to
  find a free item: when it finds none, the answer is committed and the next item is claimed
  by the waiting claim above, so "nothing left" is still only ever said by a claim that waited
  for every held row. (A claim may take a fresh item while a started one is held by another
  answer at that instant; the started one goes to the next claimer.)

The statements and the PostgreSQL functions themselves live in :mod:`fireval.judging.handout_sql`
(re-exported here); this module holds :class:`Handout`, which runs them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, overload

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.core import normalise
from fireval.judging import schema as S
from fireval.judging.engine import Database, Driver, now, serialise_undos
from fireval.judging.errors import (
    InvalidLabelError,
    LabelConflictError,
    NotAssignedError,
    UnknownItemError,
    valid_id,
)
from fireval.judging.handout_sql import CLAIM_LOCK_KEY, PG_PEEK_FUNCTION, PG_SUBMIT_FUNCTION, _Statements
from fireval.judging.handout_sql import NOT_MINE as NOT_MINE
from fireval.judging.pool import PoolFile, PoolItem, handout_order, read_pool


@dataclass(frozen=True)
class ItemView:
    """What an annotator sees for one item."""

    id: int
    caption: str
    video_id: str
    dataset: str
    assignment_id: int


@dataclass(frozen=True)
class _Locked:
    """An item row read under its lock."""

    id: int
    is_double: bool


@dataclass(frozen=True)
class SubmitResult:
    status: str  # "created" | "duplicate"
    label_id: int
    item_id: int
    next: ItemView | None = None


class Handout:
    """Items, claims and answers over one :class:`~fireval.judging.engine.Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._sql = _Statements(db.is_postgres)
        if db.is_postgres:
            db.session_setup(PG_SUBMIT_FUNCTION)
            db.session_setup(PG_PEEK_FUNCTION)

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

        return self.db.write(op)

    def load_pool(self, pool: str | Path | PoolFile, dataset: str | None = None) -> tuple[int, int]:
        """Load a pool file written by :func:`fireval.judging.pool.write_pool` (or one already read),
        its items inserted in :func:`fireval.judging.pool.handout_order` for the pool's seed: item
        ids follow that order, and claims hand items out by id (no rank column, the claim's
        partial indexes unchanged)."""
        if not isinstance(pool, PoolFile):
            pool = read_pool(pool)
        # hand-out order (pool.handout_order): also for pool files written in another order
        try:
            seed = int(pool.header.get("seed", 0) or 0)
        except (TypeError, ValueError):
            seed = 0
        return self.add_items(handout_order(pool.items, seed), dataset or pool.dataset or "unknown")

    # ------------------------------------------------------------------ queue
    def _lock_item(self, conn: Connection, item_id: int) -> Any:
        """``(id, is_double)`` of the item, locked for this transaction on PostgreSQL; ``None`` if unknown."""
        if not valid_id(item_id):
            return None
        row = Driver(conn)(self._sql.lock_item, (item_id,)).fetchone()
        return None if row is None else _Locked(int(row[0]), bool(row[1]))

    def _recompute(self, conn: Connection | Driver, item_id: int, is_double: bool) -> None:
        """Recount an item's votes and open slots after a change (caller holds the item lock)."""
        x = conn if isinstance(conn, Driver) else Driver(conn)
        n, r, active = x(self._sql.item_counts, (item_id, False, item_id)).fetchone()
        n, r, active = int(n or 0), int(r or 0), int(active or 0)
        needed = 2 if is_double else 1
        if n >= 2 and 2 * r == n:
            needed = n + 1
        open_slots = max(0, needed - n - active)
        x(self._sql.set_slots, (needed, open_slots, item_id))

    def next_item(self, annotator_id: int) -> ItemView | None:
        """The annotator's open assignment, or a newly claimed item; ``None`` when none is left for them."""
        return self.db.write(lambda conn: self._next(conn, annotator_id))

    def _next(self, conn: Connection | Driver, annotator_id: int) -> ItemView | None:
        q = self._sql
        x = conn if isinstance(conn, Driver) else Driver(conn)
        if q.serialise_claims is not None:
            # PostgreSQL: the claim lock is held until the commit, so the commit must be short.
            # A claim lost in a crash only means the item is handed out again; answers stay
            # synchronous (acknowledged only once on disk).
            x(q.serialise_claims, (CLAIM_LOCK_KEY,)).fetchone()
        while True:
            row = x(q.next_candidate, (annotator_id, False, annotator_id, annotator_id)).fetchone()
            if row is None:
                return None
            src, item_id, caption, video_id, dataset, asg = row
            if src == 0:  # already assigned to them and not answered
                return ItemView(item_id, caption, video_id, dataset, asg)
            if x(q.take_slot, (item_id,)).rowcount == 1:
                break
            # the slot vanished after the read (an answer that broke a tie was withdrawn): look again
        t = self.db.param_time(now())
        aid = x(q.insert_assignment, (item_id, annotator_id, False, t, t)).fetchone()[0]
        return ItemView(item_id, caption, video_id, dataset, int(aid))

    def open_items(self, conn: Connection, annotator_id: int) -> list[ItemView]:
        """Read only: the annotator's open assignments in the order :meth:`next_item` gives them
        back (newest first), at most two: the one shown now and the one shown after it."""
        rows = Driver(conn)(self._sql.open_items, (annotator_id, False)).fetchall()
        return [ItemView(int(r[0]), r[1], r[2], r[3], int(r[4])) for r in rows]

    def last_answered_caption(self, conn: Connection, annotator_id: int) -> str | None:
        """Read only: the caption of the pool item the annotator answered last (their newest
        label row; label ids only grow), or ``None``."""
        row = Driver(conn)(self._sql.last_answered, (annotator_id,)).fetchone()
        return None if row is None else str(row[0])

    def peek_claimable(self, conn: Connection, annotator_id: int) -> ItemView | None:
        """Read only: the item :meth:`next_item` would claim for the annotator now if they held
        no open assignment (same order and rules; nothing is claimed, so the answer can be
        stale a moment later). ``assignment_id`` is 0: no assignment exists."""
        row = Driver(conn)(self._sql.peek_candidate, (annotator_id, annotator_id)).fetchone()
        return None if row is None else ItemView(int(row[1]), row[2], row[3], row[4], 0)

    async def peek_in_session_pg_async(self, token_hash: str, gold_rate: float = 0.0) -> tuple[Any, ...]:
        """PostgreSQL, from an event loop: the row :data:`PG_PEEK_FUNCTION` gives for the session
        whose token hashes to ``token_hash``, gold items mixed in at ``gold_rate`` (0: off), in
        one statement on a connection the loop drives: ``(annotator id or None, video, gold
        video, gold shown, pool captions answered, last caption, next caption, gold ids shown,
        vote since the newest gold item)``; :meth:`fireval.judging.store.Store.peek_next_async`
        makes the answer of it."""
        row = await self.db.fetch_async(
            "EXECUTE fireval_peek_p(%s, %s, %s)", (token_hash, now(), float(gold_rate))
        )
        return tuple(row)

    @overload
    def submit(
        self,
        annotator_id: int,
        item_id: int,
        label: str,
        time_spent_ms: int | None = None,
        *,
        claim_next: bool = False,
        who: None = None,
        kind: str = "vote",
    ) -> SubmitResult: ...

    @overload
    def submit(
        self,
        annotator_id: int,
        item_id: int,
        label: str,
        time_spent_ms: int | None = None,
        *,
        claim_next: bool = False,
        who: Callable[[Connection], int | None],
        kind: str = "vote",
    ) -> SubmitResult | None: ...

    def submit(
        self,
        annotator_id: int,
        item_id: int,
        label: str,
        time_spent_ms: int | None = None,
        *,
        claim_next: bool = False,
        who: Callable[[Connection], int | None] | None = None,
        kind: str = "vote",
    ) -> SubmitResult | None:
        """Record one answer in one transaction.

        ``who`` (optional) names the annotator inside that transaction instead of
        ``annotator_id`` (the web app passes its session check, so a request costs one
        transaction and a revoked session never writes); when it gives ``None`` nothing is
        written and ``None`` is returned. Without ``who`` the result is never ``None`` (the
        write operation returns ``None`` only for ``who``'s ``None``; every refusal raises), which
        the overloads state, so :meth:`adjudicate` returns a :class:`SubmitResult`.

        Raises :class:`InvalidLabelError` (label outside the enum), :class:`UnknownItemError`
        (also for ids no row can have: ≤ 0 or ≥ 2^31), :class:`NotAssignedError` (no assignment
        of this item to this annotator) and :class:`LabelConflictError` (a different answer
        exists; use :meth:`undo`). The same answer again returns ``status="duplicate"`` and
        changes nothing. With ``claim_next`` the annotator's next item is handed out too
        (``SubmitResult.next``): in the same transaction on SQLite, in the next one on PostgreSQL.
        """
        op, resolved, same_tx = self._submit_op(
            annotator_id, item_id, label, time_spent_ms, claim_next, who, kind
        )
        result = self.db.write(op)
        if result is not None and claim_next and not same_tx:
            result = dataclasses.replace(result, next=self.next_item(resolved[0]))
        return result

    def submit_in_session_pg(
        self, token_hash: str, item_id: int, label: str, time_spent_ms: int | None, *, claim_next: bool
    ) -> tuple[SubmitResult | None, int]:
        """PostgreSQL: :meth:`submit` of a vote as the annotator of the live session whose token
        hashes to ``token_hash``, with the session check, the answer and (``claim_next``) the
        next item in one statement and one transaction (``PG_SUBMIT_FUNCTION``). Returns the
        result (``None``: the session is not live, nothing written) and the annotator's id.
        Errors as :meth:`submit`. Only when no item was free without waiting, the next item is
        claimed in a second transaction by :meth:`next_item` (which waits for held rows)."""
        sql, params = self._pg_params(token_hash, item_id, label, time_spent_ms, claim_next)
        row = self.db.write(lambda conn: Driver(conn)(sql, params).fetchone())
        res, aid, fallback = self._pg_result(row, item_id, claim_next)
        if fallback:
            assert res is not None
            res = dataclasses.replace(res, next=self.next_item(aid))
        return res, aid

    async def submit_in_session_pg_async(
        self, token_hash: str, item_id: int, label: str, time_spent_ms: int | None, *, claim_next: bool
    ) -> tuple[SubmitResult | None, int]:
        """:meth:`submit_in_session_pg` from an event loop, on a connection the loop drives
        (:meth:`fireval.judging.engine.Database.fetch_async`: no worker thread); the rare
        waiting claim (nothing free without waiting) runs in a worker thread."""
        import asyncio

        sql, params = self._pg_params(token_hash, item_id, label, time_spent_ms, claim_next)
        row = await self.db.fetch_async(sql, params)
        res, aid, fallback = self._pg_result(row, item_id, claim_next)
        if fallback:
            assert res is not None
            nxt = await asyncio.get_running_loop().run_in_executor(None, self.next_item, aid)
            res = dataclasses.replace(res, next=nxt)
        return res, aid

    def _pg_params(
        self, token_hash: str, item_id: int, label: str, time_spent_ms: int | None, claim_next: bool
    ) -> tuple[str, tuple[Any, ...]]:
        """``pg_submit`` and its parameters (the answer checked first, as :meth:`submit` does)."""
        if self._sql.pg_submit is None:
            raise RuntimeError("the one-statement answer is PostgreSQL's")
        spent = _check_answer(label, time_spent_ms)
        item = item_id if valid_id(item_id) else None  # no row has it: "unknown item" after the session check
        return self._sql.pg_submit, (token_hash, now(), item, label, spent, "vote", bool(claim_next))

    @staticmethod
    def _pg_result(row: Any, item_id: int, claim_next: bool) -> tuple[SubmitResult | None, int, bool]:
        """``pg_submit``'s row as ``(result, annotator id, claim with next_item)``; its refusals raised."""
        status, label_id, aid, old, src, nid, caption, video_id, dataset, asg = row
        if status == "nosession":
            return None, 0, False
        if status == "unknown":
            raise UnknownItemError(f"unknown item {item_id}")
        if status == "unassigned":
            raise NotAssignedError(f"item {item_id} is not assigned to you")
        if status == "conflict":
            raise LabelConflictError(
                f"item {item_id} already labelled {old!r}; undo it first to change the answer"
            )
        nxt = None if src is None else ItemView(int(nid), caption, video_id, dataset, int(asg))
        return SubmitResult(status, int(label_id), item_id, nxt), int(aid), claim_next and src is None

    async def submit_async(
        self,
        item_id: int,
        label: str,
        time_spent_ms: int | None,
        *,
        claim_next: bool,
        who: Callable[[Connection], int | None],
    ) -> SubmitResult | None:
        """:meth:`submit` of a vote from an event loop, awaiting the SQLite group writer directly
        (no worker thread in between: the web app's hot path). SQLite stores only
        (:attr:`fireval.judging.engine.Database.can_write_async`)."""
        op, _, _ = self._submit_op(0, item_id, label, time_spent_ms, claim_next, who, "vote")
        return await self.db.write_async(op)

    def _submit_op(
        self,
        annotator_id: int,
        item_id: int,
        label: str,
        time_spent_ms: int | None,
        claim_next: bool,
        who: Callable[[Connection], int | None] | None,
        kind: str,
    ) -> tuple[Callable[[Connection], SubmitResult | None], list[int], bool]:
        """The write operation of :meth:`submit`, the annotator it resolved, and whether the
        next item is claimed in the same transaction."""
        time_spent_ms = _check_answer(label, time_spent_ms)
        same_tx = claim_next and not self.db.is_postgres
        resolved = [annotator_id]
        valid = valid_id(item_id)

        def op(conn: Connection) -> SubmitResult | None:
            q = self._sql
            x = Driver(conn)
            if who is not None:
                aid = who(conn)
                if aid is None:
                    return None
                resolved[0] = aid
            annotator_id = resolved[0]
            state = x(q.answer_state, (annotator_id, annotator_id, item_id)).fetchone() if valid else None
            if state is None:
                raise UnknownItemError(f"unknown item {item_id}")
            _, is_double, asg_id, old_id, old_label = state
            if asg_id is None:
                raise NotAssignedError(f"item {item_id} is not assigned to you")
            if old_id is not None:
                if old_label == label:
                    return SubmitResult(
                        "duplicate", int(old_id), item_id, self._next(x, annotator_id) if same_tx else None
                    )
                raise LabelConflictError(
                    f"item {item_id} already labelled {old_label!r}; undo it first to change the answer"
                )
            t = self.db.param_time(now())
            row = (item_id, annotator_id, asg_id, label, time_spent_ms, t, kind)
            label_id = x(q.insert_label, row).fetchone()[0]
            x(q.finish_assignment, (True, t, asg_id))
            self._recompute(x, item_id, bool(is_double))
            return SubmitResult(
                "created", int(label_id), item_id, self._next(x, annotator_id) if same_tx else None
            )

        return op, resolved, same_tx

    def undo(self, annotator_id: int, item_id: int | None = None) -> int | None:
        """Withdraw the annotator's answer for ``item_id`` (default: their latest answer), choosing
        it and withdrawing it in one transaction, after the annotator's other undos
        (:func:`~fireval.judging.engine.serialise_undos`).

        The assignment reopens, so the item is shown again next. Returns the item id, or
        ``None`` when there is nothing to undo. (Gold answers too: use
        :meth:`fireval.judging.history.History.undo`.)
        """
        if item_id is not None and not valid_id(item_id):
            raise UnknownItemError(f"unknown item {item_id}")

        def op(conn: Connection) -> int | None:
            serialise_undos(conn, annotator_id)
            return self.undo_in(conn, annotator_id, item_id)

        return self.db.write(op)

    def latest_label(self, conn: Connection, annotator_id: int, item_id: int | None = None) -> Any:
        """The annotator's newest current label row (``id, item_id, assignment_id``), or their
        label of ``item_id`` when given; ``None`` when there is none. Label ids only grow (an
        SQLite row id reused after a withdrawal is still above every current row's), so the
        newest row is the latest answer."""
        L = S.labels.c
        q = sa.select(L.id, L.item_id, L.assignment_id).where(L.annotator_id == annotator_id)
        q = q.where(L.item_id == item_id) if item_id is not None else q
        return conn.execute(q.order_by(L.id.desc()).limit(1)).first()

    def undo_in(self, conn: Connection, annotator_id: int, item_id: int | None = None) -> int | None:
        """:meth:`undo` inside the caller's write transaction (which has called
        :func:`~fireval.judging.engine.serialise_undos` for the annotator)."""
        row = self.latest_label(conn, annotator_id, item_id)
        if row is None:
            if item_id is not None and self._lock_item(conn, item_id) is None:
                raise UnknownItemError(f"unknown item {item_id}")
            return None
        return self.withdraw_label(conn, row)

    def withdraw_label(self, conn: Connection, row: Any) -> int:
        """Delete the label row ``row`` (from :meth:`latest_label`, read in this transaction),
        reopen its assignment and recount the item's slots under the item's lock; the item id.

        The row must still be there: undos of one annotator take turns, so none took it since
        it was read; if it is gone all the same, :class:`LabelConflictError` (nothing changed)
        rather than reporting a withdrawal that did not happen."""
        it = self._lock_item(conn, row.item_id)
        gone = conn.execute(S.labels.delete().where(S.labels.c.id == row.id)).rowcount
        if gone != 1:
            raise LabelConflictError(f"item {row.item_id}: the answer changed during the undo; retry")
        conn.execute(
            S.assignments.update()
            .where(S.assignments.c.id == row.assignment_id)
            .values(done=False, updated_at=now())
        )
        self._recompute(conn, row.item_id, bool(it.is_double))
        return int(row.item_id)

    def release_stale(self, older_than: timedelta) -> int:
        """Take back open assignments untouched for longer than ``older_than``; return how many.

        An annotator who claimed an item and left holds its slot; releasing the assignment puts
        the item back in the queue (the annotator may be given it again later). Items are
        locked in id order, so two releases never deadlock.
        """
        cutoff = now() - older_than

        def op(conn: Connection) -> int:
            a = S.assignments.c
            rows = conn.execute(
                sa.select(a.id, a.item_id)
                .where(a.done.is_(False), a.updated_at < cutoff)
                .order_by(a.item_id, a.id)
            ).all()
            for row in rows:
                it = self._lock_item(conn, row.item_id)
                conn.execute(S.assignments.delete().where(a.id == row.id))
                self._recompute(conn, row.item_id, bool(it.is_double))
            return len(rows)

        return self.db.write(op)

    def adjudicate(self, admin_id: int, item_id: int, label: str, kind: str = "adjudication") -> SubmitResult:
        """An admin's decision on an item: assign it to the admin, then submit with ``kind``
        (stored ``labels.kind``; ``"vote"`` assigns and answers as an ordinary vote).

        The caller checks that ``admin_id`` is an admin (:meth:`fireval.judging.store.Store.adjudicate`).
        """
        if label not in ("relevant", "irrelevant"):
            raise InvalidLabelError(f"adjudication must be 'relevant' or 'irrelevant', got {label!r}")

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
                self._recompute(conn, item_id, bool(it.is_double))  # the admin holds a slot now

        self.db.write(op)
        return self.submit(admin_id, item_id, label, kind=kind)


def _check_answer(label: str, time_spent_ms: int | None) -> int | None:
    """The answer's time spent, clamped to 0 .. 24 h; :class:`InvalidLabelError` for a label
    outside the enum."""
    if label not in S.LABELS:
        raise InvalidLabelError(f"label must be one of {', '.join(S.LABELS)}, got {label!r}")
    if time_spent_ms is not None:
        time_spent_ms = int(max(0, min(int(time_spent_ms), 24 * 3600 * 1000)))
    return time_spent_ms
