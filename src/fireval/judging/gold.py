"""Gold items (pairs with known answers) mixed into annotators' queues, and per-annotator quality.

Gold items live in their own tables (revision 0005), never in ``items``/``labels``: a gold
answer is not a vote, so it can never reach the majority labels, the status's vote counts,
agreement or the export.

- ``gold_items``: caption, video id, the known ``answer`` (``relevant``/``irrelevant``).
  Loaded by :func:`read_gold` / :meth:`Gold.load` (``fireval judgments load --gold gold.jsonl``;
  one JSON object per line: ``{"caption": ..., "video_id": ..., "answer": ...}``).
- ``gold_answers``: one row per (gold item, annotator): created when the item is shown
  (``current`` NULL: pending, shown again until answered). ``label`` / ``correct`` /
  ``answered_at`` / ``time_spent_ms`` record the *first* answer ever given (``correct`` is NULL
  for a skip) and are never changed afterwards; ``current`` (revision 0008) is the annotator's
  answer now.
- ``gold_events`` (revision 0008): append-only trail of each row: ``shown``, ``answer``,
  ``change`` (with ``previous``), ``withdraw``; each with ``after_event``, the annotator's newest
  ``label_events`` id at the time, which orders gold and vote events of one annotator together.
- ``gold_current`` (revision 0008): one row per current answer, deleted by its undo; its id
  numbers the answer (the answer handle), allocated by the same rule as a vote's ``labels`` row
  on each backend (see the migration), so a re-given answer's handle repeats, or not, alike.

Blind judging (what the annotator sees must not tell a gold item from a pool item): a gold
answer is treated exactly like a vote from the annotator's side. The same answer again is a
duplicate, another one a 409 naming the current answer; the history lists it (same fields,
same order: :meth:`fireval.judging.history.History.recent`); it can be changed from the
history (``changed`` / ``unchanged``), undone by item or as "my last answer" (the item is then
shown again next, and answered afresh with a new answer id), and flagging an answered item
leaves the answer standing. An annotator's own progress counts gold answers as answers.

**Accuracy counts the first answer** (the rule a cheating-averse operator expects): a gold
item measures the annotator's independent judgment when first shown; a change or an undo and
re-answer is recorded (``current``, ``gold_events``) but never improves or worsens accuracy,
so nothing an annotator does after answering, including second-guessing an item they suspect
is gold, changes their score. The annotator is never told which rule applies, since they are
never told an item is gold. Gold answers stay out of ``labels``, so no change, undo or skip of
one reaches votes, aggregation, agreement or the export.

Mixing, as caption runs that look like the pool's (blind judging): pool items reach an
annotator in runs of one caption, so gold items do too: each annotator's gold runs are planned
by :func:`plan_runs` (:meth:`Gold.plan`; lengths drawn among the pool's run lengths, captions in
a keyed order per annotator) and :func:`gold_fit` (:meth:`Gold.fit`) says whether the gold set
can hide at all (both in :mod:`fireval.judging.gold_runs`, with the details).
:meth:`Gold.decide` is the one rule of the hand-out (:meth:`Gold.due`), the prefetch
(:meth:`Gold.peek`) and the PostgreSQL one-statement prefetch (:meth:`Gold.peek_row`):

1. a run in progress goes on: when the newest gold item shown is followed in the plan by an
   unseen one of the same run, that one is next;
2. never a run right after a run: a new run needs a vote given after the newest gold item was
   shown (:func:`_vote_since`), so at least one pool caption comes between two gold runs (the
   former rule let deferred gold items catch up together at a caption change);
3. a new run starts when :func:`_gold_turn` says so over *runs and captions*: ``shown`` = gold
   runs shown (gold captions), ``answers`` = pool captions answered (:func:`_captions_done`).
   Counting items made a run likelier right after a long pool caption (the turn fell inside
   long runs more often), which told gold apart; counting captions does not. With
   :attr:`Gold.key` the ``j``-th run comes at a place drawn (HMAC of the key, the annotator
   and ``j``) within the ``j``-th stretch of about ``1/rate`` captions; without it, by the
   fixed rule ``j <= rate * (captions + j)``. Since gold runs are as long as pool runs, about
   ``rate`` of the items shown are gold;
4. only between two captions' runs (:func:`caption_boundary`): the annotator's last answered
   pool caption and their next pool item's caption differ (or either is ``None``).

``rate`` is the web app's setting (``fireval serve --gold-rate``, default :data:`DEFAULT_RATE`); 0
turns gold off. The gold set and the pool's run lengths are read at most every
:attr:`Gold.recheck_seconds` (and after :meth:`Gold.load`), the plans with them. A gold item is
shown with the id :data:`GOLD_BASE` ``+ gold id`` (ids of pool items stay below it) and looks like
any other item: caption and video only. ``tests/judging/test_gold_runs.py`` checks with a
statistical observer that run lengths, neighbouring runs, places in runs and bursts do not tell
gold from pool.

Per-annotator quality: gold accuracy (correct / answered, skips excluded: :meth:`Gold.accuracy`)
and, from the store's votes, the agreement of each pair of annotators
(:func:`fireval.judging.pair_agreement.pair_agreement`).

Where the pieces live (all re-exported here): the gold file and item ids,
:mod:`fireval.judging.gold_items`; the run plan, the fit and the position rule (pure),
:mod:`fireval.judging.gold_runs`; the SQL helpers over the gold tables,
:mod:`fireval.judging.gold_rows`; pair agreement, :mod:`fireval.judging.pair_agreement`. This
module holds :class:`Gold`, which applies them to the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.core import normalise
from fireval.judging import schema as S
from fireval.judging.engine import Database, new_id, now, serialise_undos
from fireval.judging.errors import (
    InvalidLabelError,
    LabelConflictError,
    NotAssignedError,
    UnknownItemError,
)
from fireval.judging.gold_items import ANSWERS, GOLD_BASE
from fireval.judging.gold_items import DEFAULT_RATE as DEFAULT_RATE
from fireval.judging.gold_items import GOLD_KEYS as GOLD_KEYS
from fireval.judging.gold_items import GoldPair as GoldPair
from fireval.judging.gold_items import is_gold_id as is_gold_id
from fireval.judging.gold_items import read_gold as read_gold
from fireval.judging.gold_rows import (
    PoolCaptions,
    _caption_answered,
    _captions_done,
    _current,
    _event,
    _number,
    _pending,
    _seen,
    _shown_unanswered,
    _vote_since,
)
from fireval.judging.gold_rows import _pending_since as _pending_since
from fireval.judging.gold_rows import gold_answered as gold_answered
from fireval.judging.gold_rows import pool_reopened_first as pool_reopened_first
from fireval.judging.gold_runs import (
    FIT_THRESHOLD,
    GoldFit,
    GoldPlan,
    _gold_turn,
    _ids,
    caption_boundary,
    gold_fit,
    plan_runs,
)
from fireval.judging.gold_runs import _draw as _draw
from fireval.judging.pair_agreement import pair_agreement as pair_agreement


class Gold:
    """Gold items and answers over one :class:`~fireval.judging.engine.Database`.

    ``rate`` is set by the web app; :meth:`due` answers quickly when it is 0 or no gold item
    exists (the latter is re-checked at most every :attr:`recheck_seconds`).
    """

    recheck_seconds = 10.0

    def __init__(self, db: Database) -> None:
        self.db = db
        self.rate = 0.0
        self.key: bytes | None = None  # secret of the drawn gold positions (None: the fixed rule)
        self._has_gold: tuple[float, bool] | None = None
        self._snap: tuple[float, list[list[Any]], list[int]] | None = None
        self._plans: dict[tuple[int, bytes | None], GoldPlan] = {}  # (annotator, key) -> plan
        self._norm: dict[int, str] = {}  # gold id -> normalised caption (of the snapshot)
        self.last_replaced = 0  # answers replaced by the last load(replace=True)

    def load(
        self, pairs: list[GoldPair], *, replace: bool = False, source: str | None = None
    ) -> tuple[int, int]:
        """Insert gold pairs (one transaction); return ``(added, already_present)``.

        A pair already in the store with another answer is refused (:class:`InputError` naming
        the pair, both answers and the file's line), unless ``replace``: then its answer is
        replaced and the change recorded in ``gold_item_events`` (new answer, previous one,
        ``source``, time), and the annotators' answers to it are scored against the new answer.
        :attr:`last_replaced` counts the answers replaced. Nothing is written when a pair is refused.
        """
        from fireval.core import InputError

        t = now()

        def op(conn: Connection) -> tuple[int, int, int]:
            G = S.gold_items.c
            known = {
                (r.caption, r.video_id): (int(r.id), str(r.answer))
                for r in conn.execute(sa.select(G.id, G.caption, G.video_id, G.answer))
            }
            rows, events = [], []
            for p in pairs:
                got = known.get((p.caption, p.video_id))
                if got is not None:
                    gid, answer = got
                    if answer != p.answer:
                        if not replace:
                            where = f" (line {p.line})" if p.line else ""
                            raise InputError(
                                f"gold pair ({p.caption!r}, {p.video_id!r}) is {answer!r} in the store but "
                                f"{p.answer!r} in the file{where}; reload with --replace to change its "
                                "answer (the change is audited)",
                                source=source,
                            )
                        conn.execute(S.gold_items.update().where(G.id == gid).values(answer=p.answer))
                        GA = S.gold_answers.c  # accuracy is scored against the corrected answer
                        conn.execute(
                            S.gold_answers.update()
                            .where(GA.gold_id == gid, GA.label.in_(ANSWERS))
                            .values(correct=GA.label == p.answer)
                        )
                        events.append(
                            {
                                "gold_id": gid,
                                "action": "replace",
                                "answer": p.answer,
                                "previous": answer,
                                "source": source,
                                "created_at": t,
                            }
                        )
                        known[(p.caption, p.video_id)] = (gid, p.answer)
                    continue
                known[(p.caption, p.video_id)] = (0, p.answer)
                rows.append(
                    {"caption": p.caption, "video_id": p.video_id, "answer": p.answer, "created_at": t}
                )
            if rows:
                conn.execute(S.gold_items.insert(), rows)
            if events:
                conn.execute(S.gold_item_events.insert(), events)
            return len(rows), len(pairs) - len(rows), len(events)

        added, present, self.last_replaced = self.db.write(op)
        self._has_gold = self._snap = None  # after the commit: a read in between re-caches the old set
        return added, present

    def _any(self) -> bool:
        t = time.monotonic()
        if self._has_gold is None or t - self._has_gold[0] > self.recheck_seconds:
            with self.db.reading() as conn:
                has = conn.execute(sa.select(S.gold_items.c.id).limit(1)).first() is not None
            self._has_gold = (t, has)
        return self._has_gold[1]

    def _snapshot(self) -> tuple[list[list[Any]], list[int]]:
        """The gold captions' groups (each a list of ``(id, caption, video_id)`` rows in id order,
        the groups in the order of their first id) and the pool's per-caption run lengths (the
        number of pool items of each caption, sorted): read at most every
        :attr:`recheck_seconds` (and after :meth:`load`), the plans of :meth:`plan` with them."""
        t = time.monotonic()
        if self._snap is None or t - self._snap[0] > self.recheck_seconds:
            G, It = S.gold_items.c, S.items.c
            with self.db.reading() as conn:
                rows = conn.execute(sa.select(G.id, G.caption, G.video_id).order_by(G.id)).all()
                counts = conn.execute(
                    sa.select(sa.func.count()).select_from(S.items).group_by(It.dataset, It.norm_caption)
                ).scalars()
                lengths = sorted(int(n) for n in counts)
            groups: dict[str, list[Any]] = {}
            for r in rows:
                groups.setdefault(normalise(str(r.caption)), []).append(r)
            old, new = self._snap, list(groups.values())
            if old is None or lengths != old[2] or _ids(new) != _ids(old[1]):
                self._plans = {}  # the plans hold while the gold set and the run lengths do
            self._snap = (t, new, lengths)
            self._norm = {int(r.id): key for key, rows_ in groups.items() for r in rows_}
        return self._snap[1], self._snap[2]

    def plan(self, annotator_id: int) -> GoldPlan:
        """The annotator's :class:`GoldPlan` (:func:`plan_runs` over :meth:`_snapshot`)."""
        groups, lengths = self._snapshot()
        got = self._plans.get((annotator_id, self.key))
        if got is None:
            got = self._plans[(annotator_id, self.key)] = plan_runs(groups, lengths, self.key, annotator_id)
        return got

    def fit(self, threshold: float = FIT_THRESHOLD) -> GoldFit | None:
        """:func:`gold_fit` of the stored gold captions (pairs per normalised caption) and the
        pool's per-caption run lengths; ``None`` without gold items or pool items."""
        groups, lengths = self._snapshot()
        return gold_fit([len(g) for g in groups], lengths, threshold)

    def fit_warning(self) -> str | None:
        """The operator's one line when gold runs cannot look like the pool's (:meth:`fit`),
        else ``None`` (also without gold or pool)."""
        fit = self.fit()
        return None if fit is None else fit.warning()

    def decide(
        self,
        annotator_id: int,
        *,
        seen: list[int],
        captions_done: Callable[[], int],
        since: Callable[[], bool],
        captions: Callable[[], tuple[str | None, str | None]],
    ) -> Any:
        """The gold row (``id, caption, video_id``) to show the annotator next, or ``None``: the
        one rule :meth:`due` (hand-out), :meth:`peek` and the PostgreSQL prefetch
        (:meth:`peek_row`) apply (module docstring, "Mixing").

        ``seen``: the gold ids shown to the annotator, in the order shown; ``captions_done()``:
        the pool captions they answered (distinct normalised captions of their labels);
        ``since()``: whether they gave a vote after the newest gold item was shown;
        ``captions()``: ``(last, next)`` pool captions around their place (the callables are
        read only when they decide: ``since`` when no gold run goes on, the others when a new
        gold run could start: :func:`caption_boundary`)."""
        plan = self.plan(annotator_id)
        done = set(seen)
        k = next((i for i, g in enumerate(plan.ids) if g not in done), None)
        if k is None:
            return None
        if seen:
            j = plan.index.get(seen[-1])
            if j is not None and j + 1 == k and plan.run[j] == plan.run[k]:
                return plan.rows[k]  # the gold run goes on: the next video of its caption
            if not since():
                return None  # never one gold caption's run right after another's
        runs = len({self._norm.get(g, str(g)) for g in seen})  # gold captions shown: gold runs
        if not _gold_turn(runs, captions_done(), min(self.rate, 1.0), self.key, annotator_id):
            return None  # (position first: the captions are read only when a run could start)
        last, nxt = captions()
        return plan.rows[k] if caption_boundary(last, nxt) else None

    def due(self, annotator_id: int, captions: PoolCaptions | None = None) -> Any:
        """The gold item to show the annotator now (an ``ItemView``), or ``None``.

        ``captions(conn, False)`` gives ``(last, next)``: the caption of the annotator's last
        answered pool item and of the pool item they would be given next (``None``: none), read
        in this transaction (:meth:`fireval.judging.store.Store.pool_captions`); without it
        every position counts as a caption boundary."""
        if self.rate <= 0 or not self._any():
            return None
        self._snapshot()  # (outside the write transaction)

        def op(conn: Connection) -> Any:
            from fireval.judging.handout import ItemView

            pending = _shown_unanswered(conn, annotator_id)
            if pending is None:
                seen = _seen(conn, annotator_id)
                pending = self.decide(
                    annotator_id,
                    seen=seen,
                    captions_done=lambda: _captions_done(conn, annotator_id),
                    since=lambda: _vote_since(conn, annotator_id),
                    captions=lambda: captions(conn, False) if captions is not None else (None, None),
                )
                if pending is None:
                    return None
                t = now()
                made = conn.execute(
                    S.gold_answers.insert().values(
                        gold_id=pending.id, annotator_id=annotator_id, label=None, shown_at=t
                    )
                )
                _event(conn, new_id(made), int(pending.id), annotator_id, "shown", None, None, t)
            return ItemView(GOLD_BASE + int(pending.id), pending.caption, pending.video_id, "gold", 0)

        return self.db.write(op)

    def peek(
        self, conn: Connection, annotator_id: int, answers_before: int, captions: PoolCaptions | None = None
    ) -> tuple[Any, Any, Any]:
        """Read only (the page's prefetch): ``(pending, then, next)``: the gold item shown to the
        annotator now and not yet answered (or ``None``); another gold item pending besides it
        (an answer withdrawn while one was pending, the next in :meth:`due`'s order), which
        :meth:`due` shows once ``pending`` is answered (or ``None``); and, when there is no such
        one, the gold item :meth:`due` would newly show once ``pending``, or ``answers_before``
        more votes, are answered (or ``None``), ``captions(conn, pending is None)`` giving the
        captions around the annotator's position after that answer (as for :meth:`due`).
        Nothing is written: no gold item counts as shown."""
        from fireval.judging.handout import ItemView

        if self.rate <= 0 or not self._any():
            return None, None, None
        pend = [
            ItemView(GOLD_BASE + int(r.id), r.caption, r.video_id, "gold", 0)
            for r in _pending(conn, annotator_id, 2)
        ]
        now_item = pend[0] if pend else None
        if len(pend) > 1:
            return now_item, pend[1], None
        seen = _seen(conn, annotator_id)
        read: list[tuple[str | None, str | None]] = []  # the captions, read once if decide needs them

        def around() -> tuple[str | None, str | None]:
            if not read:
                read.append(captions(conn, now_item is None) if captions is not None else (None, None))
            return read[0]

        def done() -> int:
            n = _captions_done(conn, annotator_id)
            if now_item is None and answers_before and around()[0] is not None:
                # a pool item shown now (caption around()[0]): answered, it adds a pool caption
                # if none of that caption was answered yet (and is a vote after every gold item)
                n += not _caption_answered(conn, annotator_id, normalise(str(around()[0])))
            return n

        nxt = self.decide(
            annotator_id,
            seen=seen,
            captions_done=done,
            since=lambda: now_item is None or _vote_since(conn, annotator_id),
            captions=around,
        )
        if nxt is None:
            return now_item, None, None
        return now_item, None, ItemView(GOLD_BASE + int(nxt.id), nxt.caption, nxt.video_id, "gold", 0)

    def peek_row(
        self,
        annotator_id: int,
        *,
        seen: list[int] | None,
        captions_done: int,
        since: bool,
        last_caption: str | None,
        next_caption: str | None,
    ) -> str | None:
        """The video of the gold item :meth:`decide` would show next, from the counts the
        one-statement PostgreSQL prefetch read (:data:`fireval.judging.handout.PG_PEEK_FUNCTION`:
        ``o_seen``, ``o_votes`` (pool captions answered), ``o_since``, ``o_last``, ``o_next``),
        or ``None``."""
        got = self.decide(
            annotator_id,
            seen=[int(g) for g in seen or ()],
            captions_done=lambda: int(captions_done),
            since=lambda: bool(since),
            captions=lambda: (last_caption, next_caption),
        )
        return None if got is None else str(got.video_id)

    def answer(
        self, annotator_id: int, item_id: int, label: str, time_spent_ms: int | None = None
    ) -> tuple[str, int]:
        """Record the annotator's answer to a gold item shown to them; ``(status, answer number)``.

        As :meth:`fireval.judging.handout.Handout.submit` answers a pool item (annotators judge
        blind): the same answer as the current one is ``"duplicate"`` (nothing changes), a
        different one raises :class:`LabelConflictError` (409, naming the current answer). After
        an undo (:meth:`withdraw`) the item is answered afresh (``"created"``, a new
        ``gold_current`` row, numbered as a pool item's new label row is); only the *first* answer ever fills ``label`` /
        ``correct`` / ``answered_at`` / ``time_spent_ms``, the ones accuracy counts."""
        from fireval.judging.handout import _check_answer

        time_spent_ms = _check_answer(label, time_spent_ms)  # as a vote's: blind judging
        gold_id = item_id - GOLD_BASE

        def op(conn: Connection) -> tuple[str, int]:
            GA, G = S.gold_answers.c, S.gold_items.c
            known = conn.execute(sa.select(G.answer).where(G.id == gold_id)).scalar()
            if known is None:
                raise UnknownItemError(f"unknown item {item_id}")
            row = conn.execute(  # locked (PostgreSQL): two answers sent at once are taken in turn
                sa.select(GA.id, GA.label, GA.current)
                .where(GA.gold_id == gold_id, GA.annotator_id == annotator_id)
                .with_for_update()
            ).first()
            if row is None:
                raise NotAssignedError(f"item {item_id} is not assigned to you")
            if row.current is not None:  # as for a pool item (handout.submit):
                if row.current == label:  # the same answer again is a duplicate, another one a conflict
                    return "duplicate", _number(conn, int(row.id))
                raise LabelConflictError(
                    f"item {item_id} already labelled {row.current!r}; undo it first to change the answer"
                )
            t = now()
            values: dict[str, Any] = {"current": label}
            if row.label is None:  # the first answer: the one gold accuracy counts
                correct = None if label == "skip" else label == known
                values.update(label=label, correct=correct, time_spent_ms=time_spent_ms, answered_at=t)
            conn.execute(S.gold_answers.update().where(GA.id == row.id).values(**values))
            _event(conn, int(row.id), gold_id, annotator_id, "answer", label, None, t)
            return "created", new_id(conn.execute(S.gold_current.insert().values(answer_id=int(row.id))))

        return self.db.write(op)

    def change(self, annotator_id: int, item_id: int, label: str) -> tuple[str, int, str, str]:
        """Change the annotator's current answer to a gold item (history): ``(status, answer
        event id, label, previous)``, as :meth:`fireval.judging.history.History.change` for a
        pool item: the same label is ``"unchanged"``; no current answer raises
        :class:`NotAssignedError`. Accuracy keeps the first answer."""
        if label not in S.LABELS:
            raise InvalidLabelError(f"label must be one of {', '.join(S.LABELS)}, got {label!r}")
        gold_id = item_id - GOLD_BASE

        def op(conn: Connection) -> tuple[str, int, str, str]:
            row = _current(conn, gold_id, annotator_id, item_id)
            if row is None or row.current is None:
                raise NotAssignedError(f"you have no answer for item {item_id} to change")
            ev = _number(conn, int(row.id))
            if row.current == label:
                return "unchanged", ev, label, label
            conn.execute(S.gold_answers.update().where(S.gold_answers.c.id == row.id).values(current=label))
            _event(conn, int(row.id), gold_id, annotator_id, "change", label, str(row.current), now())
            return "changed", ev, label, str(row.current)

        return self.db.write(op)

    def withdraw(self, annotator_id: int, item_id: int) -> int | None:
        """Undo the annotator's current answer to a gold item, as
        :meth:`fireval.judging.handout.Handout.undo` for a pool item: the item is shown again
        next (it is pending once more); returns ``item_id``, or ``None`` when there is no
        current answer. Accuracy keeps the first answer. One transaction, after the annotator's
        other undos (:func:`~fireval.judging.engine.serialise_undos`)."""

        def op(conn: Connection) -> int | None:
            serialise_undos(conn, annotator_id)
            return self.withdraw_in(conn, annotator_id, item_id)

        return self.db.write(op)

    def withdraw_in(self, conn: Connection, annotator_id: int, item_id: int) -> int | None:
        """:meth:`withdraw` inside the caller's write transaction (which has called
        :func:`~fireval.judging.engine.serialise_undos` for the annotator)."""
        gold_id = item_id - GOLD_BASE
        row = _current(conn, gold_id, annotator_id, item_id)
        if row is None or row.current is None:
            return None
        conn.execute(S.gold_answers.update().where(S.gold_answers.c.id == row.id).values(current=None))
        conn.execute(S.gold_current.delete().where(S.gold_current.c.answer_id == row.id))
        _event(conn, int(row.id), gold_id, annotator_id, "withdraw", None, str(row.current), now())
        return item_id

    def latest_answer(self, conn: Connection, annotator_id: int) -> tuple[int, int] | None:
        """``(after_event, item id)`` of the annotator's newest current gold answer (by its
        ``answer`` event), or ``None``: what "undo my last answer" compares with the newest vote."""
        E, GA = S.gold_events.c, S.gold_answers.c
        row = conn.execute(
            sa.select(E.after_event, GA.gold_id)
            .select_from(S.gold_events.join(S.gold_answers, GA.id == E.answer_id))
            .where(E.annotator_id == annotator_id, E.action == "answer", GA.current.is_not(None))
            .order_by(E.id.desc())
            .limit(1)
        ).first()
        return None if row is None else (int(row.after_event), GOLD_BASE + int(row.gold_id))

    def recent(self, conn: Connection, annotator_id: int, limit: int) -> list[dict[str, Any]]:
        """The annotator's ``limit`` newest current gold answers (by their latest ``answer`` or
        ``change`` event), as :meth:`fireval.judging.history.History.recent` reads votes: item id
        (as shown), answer number (``gold_current``), current label, caption, video, time and number of changes
        of the latest event, and its order key ``(after_event, event id)``."""
        E, GA, G = S.gold_events.c, S.gold_answers.c, S.gold_items.c
        last_ev = S.gold_events.alias("last_ev")
        last = (
            sa.select(
                E.answer_id,
                sa.func.max(E.id).label("last_event"),
                sa.func.sum(sa.case((E.action == "change", 1), else_=0)).label("n"),
            )
            .where(E.annotator_id == annotator_id, E.action.in_(("answer", "change")))
            .group_by(E.answer_id)
            .subquery()
        )
        q = (
            sa.select(
                GA.gold_id,
                GA.current,
                G.caption,
                G.video_id,
                last.c.n,
                S.gold_current.c.id.label("number"),
                last_ev.c.created_at,
                last_ev.c.after_event,
                last_ev.c.id,
            )
            .select_from(
                last.join(S.gold_answers, GA.id == last.c.answer_id)
                .join(S.gold_items, G.id == GA.gold_id)
                .join(S.gold_current, S.gold_current.c.answer_id == GA.id)
                .join(last_ev, last_ev.c.id == last.c.last_event)
            )
            .where(GA.current.is_not(None))
            .order_by(last_ev.c.after_event.desc(), last_ev.c.id.desc())
            .limit(limit)
        )
        return [
            {
                "item_id": GOLD_BASE + int(r.gold_id),
                "label_id": int(r.number),
                "label": str(r.current),
                "caption": str(r.caption),
                "video_id": str(r.video_id),
                "at": r.created_at,
                "changes": int(r.n or 0),
                "key": (int(r.after_event), 1, int(r.id)),
            }
            for r in conn.execute(q)
        ]

    def own_progress(self, conn: Connection, annotator_id: int) -> tuple[int, int]:
        """``(current answers, current answers other than skip)`` of the annotator on gold items:
        what their own progress adds, so it moves alike for gold and pool answers."""
        GA = S.gold_answers.c
        row = conn.execute(
            sa.select(
                sa.func.count(GA.current),
                sa.func.sum(sa.case((GA.current.in_(ANSWERS), 1), else_=0)),
            ).where(GA.annotator_id == annotator_id)
        ).first()
        return (0, 0) if row is None else (int(row[0] or 0), int(row[1] or 0))

    def accuracy(self) -> dict[str, dict[str, Any]]:
        """Per annotator name: gold items answered (skips excluded, and answers to gold items the
        annotator flagged for review: they said they were unsure), correct, accuracy."""
        GA, A, GF = S.gold_answers.c, S.annotators.c, S.gold_flags.c
        flagged = sa.exists().where(GF.gold_id == GA.gold_id, GF.annotator_id == GA.annotator_id)
        with self.db.reading() as conn:
            rows = conn.execute(
                sa.select(A.name, GA.correct, sa.func.count())
                .select_from(S.gold_answers.join(S.annotators, A.id == GA.annotator_id))
                .where(GA.correct.is_not(None), ~flagged)
                .group_by(A.name, GA.correct)
            ).all()
        out: dict[str, dict[str, Any]] = {}
        for name, correct, n in rows:
            d = out.setdefault(str(name), {"answered": 0, "correct": 0})
            d["answered"] += int(n)
            d["correct"] += int(n) if correct else 0
        for d in out.values():
            d["accuracy"] = d["correct"] / d["answered"] if d["answered"] else None
        return dict(sorted(out.items()))

    def annotator_names(self) -> dict[int, str]:
        with self.db.reading() as conn:
            return {
                int(i): str(n) for i, n in conn.execute(sa.select(S.annotators.c.id, S.annotators.c.name))
            }

    def count(self) -> int:
        with self.db.reading() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(S.gold_items)).scalar_one())
