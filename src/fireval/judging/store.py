"""The annotation store: one facade over its rooms (SQLite by default, PostgreSQL by URL).

:class:`Store` is what the web app and the ``fireval judgments`` verbs use. The work is done by
one module per role, each over the same :class:`~fireval.judging.engine.Database`:

- :mod:`fireval.judging.engine`: URL checks, engines, migrations, the SQLite group writer,
  storage errors (every state change is committed before it is acknowledged);
- :mod:`fireval.judging.annotators`: accounts, login tokens, server-side sessions;
- :mod:`fireval.judging.handout`: items, the FIRE assignment scheme (claims, answers, undo,
  release, adjudication), race-free on SQLite and PostgreSQL;
- this module: read-only views (votes, progress, status, disagreements, FIRE records) and
  :func:`store_judgments`.

The schema is versioned with Alembic; the store migrates to the head revision when it opens
(``fireval judgments init`` does the same explicitly). Names formerly defined here (errors,
``Annotator``, ``ItemView``, ``make_engine``, ``migrate``...) are re-exported.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.core import Collection, Judgments, normalise
from fireval.judging import schema as S
from fireval.judging.aggregate import (
    DISAGREEMENT,
    IRRELEVANT,
    RELEVANT,
    VoteCounts,
    agreement_report,
)
from fireval.judging.annotators import MAX_TOKEN_CHARS, Accounts, Annotator, AnnotatorInfo, hash_token
from fireval.judging.engine import (
    MIGRATIONS,
    Database,
    current_revision,
    make_engine,
    migrate,
    normalise_url,
    now,
)
from fireval.judging.errors import (
    InvalidLabelError,
    LabelConflictError,
    NotAssignedError,
    StoreError,
    StoreUnavailableError,
    UnknownAnnotatorError,
    UnknownItemError,
)
from fireval.judging.flags import Flags
from fireval.judging.gold import (
    GOLD_BASE,
    Gold,
    PoolCaptions,
    is_gold_id,
    pair_agreement,
    pool_reopened_first,
)
from fireval.judging.handout import Handout, ItemView, SubmitResult
from fireval.judging.history import History
from fireval.judging.pool import PoolFile, PoolItem

__all__ = [
    "MIGRATIONS",
    "Annotator",
    "AnnotatorInfo",
    "InvalidLabelError",
    "ItemView",
    "LabelConflictError",
    "NotAssignedError",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "SubmitResult",
    "UnknownAnnotatorError",
    "UnknownItemError",
    "current_revision",
    "hash_token",
    "make_engine",
    "migrate",
    "normalise_url",
    "store_judgments",
]

T = TypeVar("T")


class Store:
    """The annotation store behind the web app and the ``fireval judgments`` verbs.

    ``accounts`` (:class:`~fireval.judging.annotators.Accounts`) and ``handout``
    (:class:`~fireval.judging.handout.Handout`) are the rooms; the methods below delegate to
    them so callers need only the store.
    """

    def __init__(
        self,
        url: str,
        *,
        upgrade: bool = True,
        sqlite_sync: str | None = None,
        shared: bool = False,
        create: bool = True,
    ) -> None:
        # shared: one of several server processes on this store; create: make a missing store
        # (only `fireval judgments init` does; every other verb passes False): see Database.open
        self.db = Database.open(url, upgrade=upgrade, sqlite_sync=sqlite_sync, shared=shared, create=create)
        self.url = self.db.url
        self.engine = self.db.engine  # writes (and reads on PostgreSQL)
        self.read_engine = self.db.read_engine
        self.is_postgres = self.db.is_postgres
        self.revision = self.db.revision
        self.accounts = Accounts(self.db)
        self.handout = Handout(self.db)
        self.gold = Gold(self.db)  # known-answer items, never votes (gold.py)
        self.history = History(self.db, self.handout, self.gold)  # own answers, changes, undo (history.py)
        self.flags = Flags(self.db, self.handout, self.submit)  # flags for review, skip reasons (flags.py)

    def close(self) -> None:
        self.db.close()

    def _write(self, op: Callable[[Connection], T]) -> T:
        """Run ``op`` in a write transaction and return its result once it is committed."""
        return self.db.write(op)

    # ------------------------------------------------------------------ annotators and sessions
    def add_annotator(self, name: str, role: str = "annotator") -> tuple[Annotator, str]:
        """Create an annotator; return it and its new random login token (only the hash is stored)."""
        return self.accounts.add(name, role)

    def authenticate(self, token: str) -> Annotator | None:
        """The enabled annotator whose login token this is, else ``None``."""
        return self.accounts.authenticate(token)

    def annotator(self, annotator_id: int) -> Annotator | None:
        """The enabled annotator with this id, else ``None``."""
        return self.accounts.get(annotator_id)

    def annotators(self) -> list[Annotator]:
        return self.accounts.all()

    def annotator_info(self) -> list[AnnotatorInfo]:
        """Name, role, enabled, answers given and live sessions of every annotator."""
        return self.accounts.info()

    def rotate_token(self, who: int | str) -> tuple[Annotator, str]:
        """A new login token for the annotator (id or name); all their sessions end."""
        return self.accounts.rotate_token(who)

    def set_enabled(self, who: int | str, enabled: bool) -> Annotator:
        """Enable or disable the annotator (id or name); disabling ends all their sessions."""
        return self.accounts.set_enabled(who, enabled)

    def open_session(self, annotator_id: int, max_age: timedelta) -> str:
        return self.accounts.open_session(annotator_id, max_age)

    def session_user(self, sid: str) -> Annotator | None:
        return self.accounts.session_user(sid)

    def end_session(self, sid: str) -> None:
        self.accounts.end_session(sid)

    def revoke_sessions(self, who: int | str) -> int:
        return self.accounts.revoke_sessions(who)

    # ------------------------------------------------------------------ work queue
    def add_items(self, items: Iterable[PoolItem], dataset: str) -> tuple[int, int]:
        """Insert pool items (one transaction); return ``(added, already_present)``."""
        return self.handout.add_items(items, dataset)

    def load_pool(self, pool: str | Path | PoolFile, dataset: str | None = None) -> tuple[int, int]:
        """Load a pool file written by :func:`fireval.judging.pool.write_pool` (or one already read)."""
        return self.handout.load_pool(pool, dataset)

    def next_item(self, annotator_id: int) -> ItemView | None:
        """The annotator's open assignment, or a newly claimed item; ``None`` when none is left for them.

        A gold item comes first when one is due (:meth:`fireval.judging.gold.Gold.due`), unless
        a vote was undone after it was shown: the undone item comes first, as without gold.
        """
        gold = self.gold.due(annotator_id, self._captions(annotator_id))
        if gold is not None and not self._pool_undone_since(annotator_id):
            return gold
        return self.handout.next_item(annotator_id)

    def _captions(self, annotator_id: int) -> PoolCaptions:
        """The annotator's :data:`fireval.judging.gold.PoolCaptions` (where a gold item may come)."""
        return lambda conn, after_current: self.pool_captions(conn, annotator_id, after_current)

    def pool_captions(
        self, conn: Connection, annotator_id: int, after_current: bool
    ) -> tuple[str | None, str | None]:
        """Read only: ``(last, next)``, the caption of the annotator's last answered pool item
        and of the pool item :meth:`next_item` would give them next (their newest open
        assignment, else the item it would claim), now, or (``after_current``) once the pool
        item shown now (their newest open assignment) is answered; ``None``: none. A gold item
        comes only where they differ (:func:`fireval.judging.gold.caption_boundary`)."""
        mine = self.handout.open_items(conn, annotator_id)
        if after_current and mine:
            last: str | None = mine[0].caption
            mine = mine[1:]
        else:
            last = self.handout.last_answered_caption(conn, annotator_id)
        nxt = mine[0] if mine else self.handout.peek_claimable(conn, annotator_id)
        return last, (nxt.caption if nxt is not None else None)

    def _pool_undone_since(self, annotator_id: int) -> bool:
        """A vote undone after the pending gold item was shown: the undone item comes first, as
        without gold items (blind judging; :func:`fireval.judging.gold.pool_reopened_first`)."""
        with self.db.reading() as conn:
            return pool_reopened_first(conn, annotator_id)

    def peek_next(self, annotator_id: int) -> ItemView | None:
        """Read only (the annotation page's prefetch): the item :meth:`next_item` would give the
        annotator once they answer the item they are shown now; ``None`` when they are shown
        nothing or nothing would follow. Nothing is claimed or marked shown, so the hand-out is
        unchanged and the answer may be stale a moment later (another annotator takes the item):
        the page always shows what :meth:`next_item` actually hands out.
        """
        with self.db.reading() as conn:
            return self._peek(conn, annotator_id)

    def _peek(self, conn: Connection, annotator_id: int) -> ItemView | None:
        """What :meth:`next_item` gives after the item it gives now is answered (the rules of
        :meth:`next_item` applied to the state after that answer, read from the state now)."""
        gold_now, gold_then, gold_next = self.gold.peek(
            conn, annotator_id, answers_before=1, captions=self._captions(annotator_id)
        )
        mine = self.handout.open_items(conn, annotator_id)
        if gold_now is None and not mine:
            return None
        if gold_now is not None and mine and pool_reopened_first(conn, annotator_id):
            # an undone vote is shown now; the pending gold item after it, unless another vote
            # undone after that item became pending is still open (the newest open item then)
            if len(mine) > 1 and pool_reopened_first(conn, annotator_id, except_item=mine[0].id):
                return mine[1]
            return gold_now
        if gold_now is not None and gold_then is not None:
            # the pending gold item is shown now, another pending one next, unless a vote undone
            # after that one became pending is open (then the newest open item comes first)
            if mine and pool_reopened_first(conn, annotator_id, except_gold=gold_now.id - GOLD_BASE):
                return mine[0]
            return gold_then
        if gold_next is not None:
            return gold_next
        after = mine if gold_now is not None else mine[1:]
        return after[0] if after else self.handout.peek_claimable(conn, annotator_id)

    def can_peek_on_loop(self) -> bool:
        """Whether :meth:`peek_in_session` may run on the event loop itself (``on_loop=True``):
        SQLite, whose reads are short and never wait for a writer (:meth:`.Database.loop_reading`)."""
        return self.db.can_read_on_loop

    def peek_in_session(self, sid: str, on_loop: bool = False) -> tuple[bool, str | None]:
        """:meth:`peek_next` for the live session ``sid``, checked in the same read transaction
        (one call from the web app's fast path: on the event loop for SQLite, ``on_loop``, else
        in a worker thread): ``(live, video id)``, ``live`` False when the session is not live."""
        with self.db.loop_reading() if on_loop else self.db.reading() as conn:
            annotator_id = self.accounts.session_annotator_id(conn, sid)
            if annotator_id is None:
                return False, None
            item = self._peek(conn, annotator_id)
        return True, (item.video_id if item else None)

    def can_peek_async(self) -> bool:
        """Whether :meth:`peek_next_async` can answer: PostgreSQL with connections the event
        loop drives (:meth:`.Database.fetch_async`), gold items mixed in or not."""
        return self.db.can_fetch_async

    async def peek_next_async(self, sid: str) -> tuple[bool, str | None]:
        """:meth:`peek_next` for the live session ``sid`` from an event loop, in one statement
        (:meth:`.Handout.peek_in_session_pg_async`, with the gold rate): ``(live, video id)``,
        ``live`` False when the session is not live. Only when :meth:`can_peek_async` says so."""
        if not sid or len(sid) > MAX_TOKEN_CHARS:
            return False, None
        # gold off, or no gold item yet as far as the hand-out knows (Gold.due): no gold predicted
        rate = self.gold.rate if self.gold.rate > 0 and self.gold._any() else 0.0
        row = await self.handout.peek_in_session_pg_async(hash_token(sid), rate)
        aid, video, gold, _, votes, last, nxt, seen, since = row
        if aid is None:
            return False, None
        if gold is not None:  # an unseen gold item exists: is one due (Gold.decide)?
            due = self.gold.peek_row(
                int(aid),
                seen=seen,
                captions_done=int(votes),
                since=bool(since),
                last_caption=last,
                next_caption=nxt,
            )
            if due is not None:
                return True, due
        return True, video

    def submit(
        self,
        annotator_id: int,
        item_id: int,
        label: str,
        time_spent_ms: int | None = None,
        *,
        claim_next: bool = False,
    ) -> SubmitResult:
        """Record one answer (see :meth:`fireval.judging.handout.Handout.submit`; gold items: :mod:`.gold`)."""
        if is_gold_id(item_id):  # a known-answer item: recorded apart, never a vote
            status, row = self.gold.answer(annotator_id, item_id, label, time_spent_ms)
            return SubmitResult(status, row, item_id, self.next_item(annotator_id) if claim_next else None)
        res = self.handout.submit(annotator_id, item_id, label, time_spent_ms, claim_next=claim_next)
        out = self._gold_next(res, annotator_id, claim_next)
        assert out is not None  # no ``who``: always a result
        return out

    def submit_in_session(
        self,
        sid: str,
        item_id: int,
        label: str,
        time_spent_ms: int | None = None,
        *,
        claim_next: bool = False,
    ) -> SubmitResult | None:
        """:meth:`submit` as the annotator of the live session ``sid``; ``None`` (nothing written)
        when the session is not live (logged out, revoked, expired, annotator disabled).

        The session is checked inside the answer's own write transaction (one transaction per
        request instead of a read and a write): a revocation committed before it takes effect.
        """
        if is_gold_id(item_id):  # rare: gold answers keep the two-step path
            user = self.session_user(sid)
            return (
                None
                if user is None
                else self.submit(user.id, item_id, label, time_spent_ms, claim_next=claim_next)
            )
        if self.is_postgres:  # one statement: the session check, the answer and the next item
            if not sid or len(sid) > MAX_TOKEN_CHARS:
                return None
            res, aid = self.handout.submit_in_session_pg(
                hash_token(sid), item_id, label, time_spent_ms, claim_next=claim_next
            )
            return self._gold_next(res, aid, claim_next)
        who = [0]

        def resolve(conn: Connection) -> int | None:
            aid = self.accounts.session_annotator_id(conn, sid)
            who[0] = aid or 0
            return aid

        res = self.handout.submit(0, item_id, label, time_spent_ms, claim_next=claim_next, who=resolve)
        return self._gold_next(res, who[0], claim_next)

    def _gold_next(
        self, res: SubmitResult | None, annotator_id: int, claim_next: bool
    ) -> SubmitResult | None:
        """``res`` with the known-answer item due for the annotator as its next item, when one is
        due (gold items are mixed in after an answer, on every path)."""
        if res is None or not claim_next:
            return res
        gold = self.gold.due(annotator_id, self._captions(annotator_id))
        if gold is None or self._pool_undone_since(annotator_id):
            return res
        return dataclasses.replace(res, next=gold)

    def can_submit_async(self, item_id: int) -> bool:
        """Whether :meth:`submit_in_session_async` can record this answer: an SQLite store (its
        group writer is awaited directly) or a PostgreSQL one (:meth:`.Database.fetch_async`),
        not a gold item, and no gold item can be due."""
        return (
            (self.db.can_write_async or self.db.can_fetch_async)
            and not is_gold_id(item_id)
            and (self.gold.rate <= 0 or not self.gold._any())  # gold off: never a gold item next
        )

    async def submit_in_session_async(
        self,
        sid: str,
        item_id: int,
        label: str,
        time_spent_ms: int | None = None,
        *,
        claim_next: bool = False,
    ) -> SubmitResult | None:
        """:meth:`submit_in_session` from an event loop, without a worker thread (the web app's
        hot path); only when :meth:`can_submit_async` says so. PostgreSQL: one statement on a
        connection the event loop drives (:meth:`.Handout.submit_in_session_pg_async`)."""
        if self.db.can_fetch_async:
            if not sid or len(sid) > MAX_TOKEN_CHARS:
                return None
            res, _ = await self.handout.submit_in_session_pg_async(
                hash_token(sid), item_id, label, time_spent_ms, claim_next=claim_next
            )
            return res

        def resolve(conn: Connection) -> int | None:
            return self.accounts.session_annotator_id(conn, sid)

        return await self.handout.submit_async(
            item_id, label, time_spent_ms, claim_next=claim_next, who=resolve
        )

    def undo(self, annotator_id: int, item_id: int | None = None) -> int | None:
        """Withdraw the annotator's answer for ``item_id`` (default: their latest, gold or pool
        alike); the item is shown again (:meth:`fireval.judging.history.History.undo`)."""
        return self.history.undo(annotator_id, item_id)

    def release_stale(self, older_than: timedelta) -> int:
        """Take back open assignments untouched for longer than ``older_than``; return how many."""
        return self.handout.release_stale(older_than)

    def adjudicate(self, admin_id: int, item_id: int, label: str) -> SubmitResult:
        """An admin breaks a tie: a vote by the admin on a disagreement item (FIRE's third label)."""
        if label not in ("relevant", "irrelevant"):
            raise InvalidLabelError(f"adjudication must be 'relevant' or 'irrelevant', got {label!r}")
        adm = self.annotator(admin_id)
        if adm is None or not adm.is_admin:
            raise NotAssignedError("only an admin can adjudicate")
        return self.handout.adjudicate(admin_id, item_id, label)

    # ------------------------------------------------------------------ reading
    def votes(self) -> dict[str, np.ndarray]:
        """All labels as parallel arrays: label_id, item_id, annotator_id, assignment_id, label,
        created_at, and ``adjudication`` (the stored ``kind`` is ``adjudication``: an admin's
        decision, never a vote)."""
        L = S.labels.c
        with self.db.reading() as conn:
            rows = conn.execute(
                sa.select(
                    L.id, L.item_id, L.annotator_id, L.assignment_id, L.label, L.created_at, L.kind
                ).order_by(L.id)
            ).all()
        cols: list[Sequence[Any]] = list(zip(*rows)) if rows else [()] * 7
        return {
            "adjudication": np.asarray(cols[6], dtype=object) == "adjudication",
            "label_id": np.asarray(cols[0], dtype=np.int64),
            "item_id": np.asarray(cols[1], dtype=np.int64),
            "annotator_id": np.asarray(cols[2], dtype=np.int64),
            "assignment_id": np.asarray(cols[3], dtype=np.int64),
            "label": np.asarray(cols[4], dtype=object),
            "created_at": np.asarray(cols[5], dtype=object),
        }

    def items_table(self) -> list[dict[str, Any]]:
        with self.db.reading() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.select(S.items).order_by(S.items.c.id))]

    def vote_counts(self) -> tuple[np.ndarray, VoteCounts]:
        """Item ids (sorted) and their :class:`VoteCounts`."""
        v = self.votes()  # votes before items: items are never deleted, so every voted item is listed
        with self.db.reading() as conn:
            ids = np.asarray(
                conn.execute(sa.select(S.items.c.id).order_by(S.items.c.id)).scalars().all(), np.int64
            )
        return ids, _counts(ids, v)

    def progress(self, annotator_id: int | None = None) -> dict[str, int]:
        """Votes done / votes needed over the whole queue, and the annotator's own count.

        For an annotator (``annotator_id``) with gold items mixed in, their own current gold
        answers count as answers (``mine``; ``done`` unless skips) and every gold item as needed,
        so the figures move the same way after a gold answer as after a vote (blind judging).
        For an annotator ``needed`` is the planned votes (1 per item, 2 per double item) and
        ``done`` at most that: ``items.needed`` grows by one when the votes tie, so showing it
        would tell an annotator, after their answer or a change of it, whether the other
        annotator of the item answered otherwise (blind judging; the admin's view keeps it)."""
        with self.db.reading() as conn:
            it = S.items.c
            need = sa.case((it.is_double, 2), else_=1) if annotator_id is not None else it.needed
            needed = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(need), 0))).scalar_one()
            done = conn.execute(
                sa.select(sa.func.count()).select_from(S.labels).where(S.labels.c.label != "skip")
            ).scalar_one()
            mine = 0
            if annotator_id is not None:
                done = min(int(done), int(needed))  # tie-breaking votes beyond the plan
                mine = conn.execute(
                    sa.select(sa.func.count()).where(S.labels.c.annotator_id == annotator_id)
                ).scalar_one()
                if self.gold.rate > 0:  # blind judging: gold answers move it as votes do (gold.py)
                    g_all, g_votes = self.gold.own_progress(conn, annotator_id)
                    gold_items = conn.execute(sa.select(sa.func.count()).select_from(S.gold_items))
                    mine, done = mine + g_all, done + g_votes
                    needed += gold_items.scalar_one()
        return {"needed": int(needed), "done": int(done), "mine": int(mine)}

    def status(self) -> dict[str, Any]:
        """Queue status, throughput and agreement for the admin view and ``fireval judgments status``."""
        v = self.votes()  # votes before items (see vote_counts)
        with self.db.reading() as conn:
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
            "flags": self.flags.summary(),
            "gold": {"items": self.gold.count(), "per_annotator": self.gold.accuracy()},
            "pair_agreement": pair_agreement(
                v["item_id"][~v["adjudication"]],
                v["annotator_id"][~v["adjudication"]],
                v["label"][~v["adjudication"]],
                self.gold.annotator_names(),
            ),
        }

    def disagreements(self) -> list[dict[str, Any]]:
        """Items whose votes tie, with their votes (annotator name, label)."""
        ids, counts = self.vote_counts()
        dis = set(ids[counts.decisions() == DISAGREEMENT].tolist())
        if not dis:
            return []
        with self.db.reading() as conn:
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
        dataset (or ``dataset`` if given). Skips and adjudications are not votes and are left
        out; an item without a vote is exported only when an adjudication decided it (an
        annotation with empty vote lists).
        """
        v = self.votes()  # votes before items (see vote_counts)
        items = {r["id"]: r for r in self.items_table()}
        is_vote = (v["label"] != "skip") & ~v["adjudication"]  # an adjudication decides, it is no vote
        order = np.lexsort((v["label_id"], v["item_id"]))
        order = order[is_vote[order]]
        ids = np.fromiter(items, np.int64, len(items))
        dec = dict(zip(ids.tolist(), _counts(ids, v).decisions().tolist()))
        grouped: dict[int, list[int]] = {}
        for k in order:
            grouped.setdefault(int(v["item_id"][k]), []).append(int(k))
        for item_id, d in dec.items():  # decided by an adjudication alone (e.g. a resolved flag)
            if d in (RELEVANT, IRRELEVANT) and item_id not in grouped:
                grouped[item_id] = []
        ann, dis = [], []
        for item_id, ks in sorted(grouped.items()):
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
    return VoteCounts.from_votes(
        np.searchsorted(ids, votes["item_id"]), votes["label"], ids.size, votes.get("adjudication")
    )


def store_judgments(db_url: str, collection: Collection) -> Judgments:
    """The store's majority labels as :class:`Judgments` with source ``"human"``.

    Each item labels every caption id it lists that the collection knows (else every caption
    whose normalised text equals the item's) against its video; items whose video is not in
    the collection are ignored. Disagreements go to ``Judgments.unresolved`` (unjudged).
    Details per pair: annotator_ids, annotator_labels, response_ids, queue_ids, models.
    """
    store = Store(db_url, upgrade=False, create=False)
    try:
        return store_labels(store, collection, origin=db_url)
    finally:
        store.close()


def labels_version(store: Store) -> int:
    """A number that changes whenever any label of ``store`` does (its newest audit event id:
    database triggers write one per vote, adjudication, change and undo)."""
    with store.db.reading() as conn:
        last = conn.execute(sa.select(sa.func.coalesce(sa.func.max(S.label_events.c.id), 0))).scalar_one()
    return int(last)


def store_labels(store: Store, collection: Collection, origin: str | None = None) -> Judgments:
    """:func:`store_judgments` of an open ``store`` (the web app's explorer reads its own store)."""
    ann, dis = store.fire_records()
    items = store.items_table()
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
        origin=origin,  # None for an open store: its URL may hold a password
    )
