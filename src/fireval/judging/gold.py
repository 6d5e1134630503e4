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
annotator in runs of one caption (:func:`fireval.judging.pool.handout_order`), so gold items do
too. Gold pairs are grouped by normalised caption; :func:`plan_runs` fixes each annotator's
order (:meth:`Gold.plan`): for run ``r`` a length ``L`` is drawn (``HMAC(key, who:run:r)``)
uniformly among the pool's per-caption item counts (the run lengths a lone annotator sees),
and the run is the first ``L`` videos of the first unused gold caption with at least ``L``
pairs (every video a gold pair with a known answer: nothing is padded or invented), or, when
none has that many, the unused caption with the most pairs, whole (a shorter run: documented).
"First" is in the annotator's own order of the gold captions, sorted by ``HMAC(key,
who:caption:<normalised caption>)`` (load order without a key): annotators comparing notes do
not see the same gold captions in the same order. :func:`gold_fit` (:meth:`Gold.fit`) says
whether the gold set can hide at all: the expected share of gold runs shorter than drawn, and
the pairs per gold caption that would keep it at most :data:`FIT_THRESHOLD` (``fireval
judgments load`` and ``fireval serve`` print :meth:`GoldFit.warning`).
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

Per-annotator quality (:func:`annotator_quality`): gold accuracy (correct / answered, skips
excluded) and, from the store's votes (skips and adjudications excluded), the agreement of each
pair of annotators on the items both voted on (``agree / both``), computed as matrix products
of item × annotator indicator matrices (``R^T R + I^T I`` over ``(R + I)^T (R + I)``), and each
annotator's agreement with all others (pooled over pairs).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
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
    valid_id,
)

#: gold items are shown with ids above every pool item's id
GOLD_BASE = 2_000_000_000
DEFAULT_RATE = 0.1
#: the expected share of gold runs shorter than drawn above which the gold set is said not to
#: hide among the pool's runs (:meth:`GoldFit.warning`)
FIT_THRESHOLD = 0.1
ANSWERS = ("relevant", "irrelevant")


def is_gold_id(item_id: int) -> bool:
    """True for the ids gold items are shown with (ids no row can have are not gold: 404 as usual)."""
    return valid_id(item_id) and item_id > GOLD_BASE


@dataclass(frozen=True)
class GoldPair:
    caption: str
    video_id: str
    answer: str
    line: int = field(default=0, compare=False)  # its line in the gold file (0: not from a file)


#: the fields of one gold line
GOLD_KEYS = ("caption", "video_id", "answer")


def read_gold(path: str | Path) -> list[GoldPair]:
    """Gold pairs from a JSON-lines file; a bad line raises :class:`InputError` naming it."""
    from fireval.core import InputError
    from fireval.formats.textio import jsonl_records

    src = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read the gold file: {getattr(exc, 'strerror', None) or exc}", source=src
        ) from None
    out: list[GoldPair] = []
    first: dict[tuple[str, str], tuple[int, str]] = {}  # (normalised caption, video) -> (line, answer)
    for k, rec in jsonl_records(text, src, GOLD_KEYS):
        for key in GOLD_KEYS:
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise InputError(f"{key!r} missing or not a non-empty string", source=src, line=k)
        if rec["answer"] not in ANSWERS:
            raise InputError(
                f"answer must be 'relevant' or 'irrelevant', got {rec['answer']!r}", source=src, line=k
            )
        pair = GoldPair(rec["caption"].strip(), rec["video_id"].strip(), rec["answer"], line=k)
        key_ = (normalise(pair.caption), pair.video_id)
        if key_ in first and first[key_][1] != pair.answer:
            raise InputError(
                f"gold pair ({pair.caption!r}, {pair.video_id!r}) has two answers: {first[key_][1]!r} on "
                f"line {first[key_][0]} and {pair.answer!r} on line {k}; keep one",
                source=src,
            )
        first.setdefault(key_, (k, pair.answer))
        out.append(pair)
    if not out:
        raise InputError("no gold pairs in the file", source=src)
    return out


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


#: ``(conn, after_current) -> (last caption, next caption)``: the caption of the annotator's last
#: answered pool item and of the pool item they would be given next (``None``: none), now
#: (``after_current`` False) or once the pool item shown now is answered (True)
PoolCaptions = Callable[[Connection, bool], tuple[str | None, str | None]]


def caption_boundary(last_caption: str | None, next_caption: str | None) -> bool:
    """Whether a gold item may come between the annotator's last pool item (caption
    ``last_caption``) and their next one (``next_caption``): not in the middle of one caption's
    run, i.e. when the captions differ after :func:`fireval.core.normalise` (how pool items
    are grouped), or either is ``None`` (nothing answered yet, or no pool item left)."""
    if last_caption is None or next_caption is None:
        return True
    return normalise(last_caption) != normalise(next_caption)


def _shown_unanswered(conn: Connection, annotator_id: int) -> Any:
    """The gold pair (``id, caption, video_id``) shown to this annotator and not answered (or
    its answer withdrawn), or None: the first of :func:`_pending`."""
    got = _pending(conn, annotator_id, 1)
    return got[0] if got else None


def _pending(conn: Connection, annotator_id: int, n: int) -> list[Any]:
    """The first ``n`` gold pairs (``id, caption, video_id``) shown to this annotator and not
    answered (or their answer withdrawn), the newest to become pending first."""
    GA, G = S.gold_answers.c, S.gold_items.c
    return list(
        conn.execute(
            sa.select(G.id, G.caption, G.video_id)
            .select_from(S.gold_answers.join(S.gold_items, G.id == GA.gold_id))
            .where(GA.annotator_id == annotator_id, GA.current.is_(None))
            .order_by(_pending_since(GA.id).desc(), GA.id.desc())
            .limit(n)
        ).all()
    )


def _pending_since(answer_id: Any) -> Any:
    """SQL: the id of the newest event (``shown`` or ``withdraw``) of a gold answer row: when it
    became pending (the newest pending item is shown first, as the newest open assignment is)."""
    E = S.gold_events.c
    return sa.select(sa.func.coalesce(sa.func.max(E.id), 0)).where(E.answer_id == answer_id).scalar_subquery()


def pool_reopened_first(
    conn: Connection, annotator_id: int, *, except_gold: int | None = None, except_item: int | None = None
) -> bool:
    """Whether an undo of one of the annotator's *votes* came after their pending gold item
    became pending (and that item is still open): then the undone pool item is the newest open
    item and is shown first, as it would be without gold items. Compares ``label_events`` ids
    with the pending gold row's newest event's ``after_event`` (no clocks).

    The prefetch asks it about the state after the next answer: ``except_gold`` (a gold id)
    leaves that pending gold item out (answered by then), ``except_item`` that pool item's
    undo (its assignment done by then)."""
    GA, E, L, A = S.gold_answers.c, S.gold_events.c, S.label_events.c, S.assignments.c
    q = (
        sa.select(E.after_event)
        .select_from(S.gold_events.join(S.gold_answers, GA.id == E.answer_id))
        .where(GA.annotator_id == annotator_id, GA.current.is_(None), E.annotator_id == annotator_id)
    )
    if except_gold is not None:
        q = q.where(GA.gold_id != except_gold)
    since = conn.execute(q.order_by(E.id.desc()).limit(1)).scalar()
    if since is None:
        return False
    undone = (
        sa.select(L.id)
        .select_from(
            S.label_events.join(S.assignments, (A.item_id == L.item_id) & (A.annotator_id == annotator_id))
        )
        .where(
            L.annotator_id == annotator_id,
            L.action == "withdraw",
            L.id > int(since),
            A.done.is_(False),
        )
    )
    if except_item is not None:
        undone = undone.where(L.item_id != except_item)
    return conn.execute(undone.limit(1)).first() is not None


def gold_answered(db: Database, annotator_id: int, item_id: int) -> bool:
    """Whether the annotator has a current answer to the gold item shown as ``item_id`` (a flag
    from the history then leaves the answer standing, as for a vote: :mod:`.flags`)."""
    GA = S.gold_answers.c
    with db.reading() as conn:
        got = conn.execute(
            sa.select(GA.id).where(
                GA.gold_id == item_id - GOLD_BASE,
                GA.annotator_id == annotator_id,
                GA.current.is_not(None),
            )
        ).first()
    return got is not None


def _current(conn: Connection, gold_id: int, annotator_id: int, item_id: int) -> Any:
    """The annotator's gold answer row (``id, current``) for ``gold_id`` or None; unknown gold
    item: :class:`UnknownItemError`."""
    GA, G = S.gold_answers.c, S.gold_items.c
    if conn.execute(sa.select(G.id).where(G.id == gold_id)).first() is None:
        raise UnknownItemError(f"unknown item {item_id}")
    return conn.execute(  # locked on PostgreSQL (SQLite writers take turns anyway)
        sa.select(GA.id, GA.current)
        .where(GA.gold_id == gold_id, GA.annotator_id == annotator_id)
        .with_for_update()
    ).first()


def _number(conn: Connection, answer_id: int) -> int:
    """The number of a current gold answer (its ``gold_current`` row: what its answer handle
    names, as a vote's handle names its ``labels`` row)."""
    got = conn.execute(sa.select(S.gold_current.c.id).where(S.gold_current.c.answer_id == answer_id)).scalar()
    return int(got or 0)


def _event(
    conn: Connection,
    answer_id: int,
    gold_id: int,
    annotator_id: int,
    action: str,
    label: str | None,
    previous: str | None,
    t: Any,
) -> int:
    """Append one ``gold_events`` row (in the caller's transaction); its id. ``after_event``
    is the annotator's newest ``label_events`` id: gold and pool events of one annotator in
    one order (:mod:`fireval.judging.history`)."""
    E = S.label_events.c
    after = conn.execute(sa.select(sa.func.max(E.id)).where(E.annotator_id == annotator_id)).scalar()
    return new_id(
        conn.execute(
            S.gold_events.insert().values(
                answer_id=int(answer_id),
                gold_id=gold_id,
                annotator_id=annotator_id,
                action=action,
                label=label,
                previous=previous,
                after_event=int(after or 0),
                created_at=t,
            )
        )
    )


def _seen(conn: Connection, annotator_id: int) -> list[int]:
    """The gold ids shown to this annotator, in the order they were first shown."""
    GA = S.gold_answers.c
    q = sa.select(GA.gold_id).where(GA.annotator_id == annotator_id).order_by(GA.id)
    return [int(g) for g in conn.execute(q).scalars()]


def _captions_done(conn: Connection, annotator_id: int) -> int:
    """How many pool captions the annotator answered (distinct normalised captions of their
    current labels): the clock gold runs are placed on (:meth:`Gold.decide`)."""
    L, It = S.labels.c, S.items.c
    q = (
        sa.select(sa.func.count(sa.distinct(It.norm_caption)))
        .select_from(S.labels.join(S.items, It.id == L.item_id))
        .where(L.annotator_id == annotator_id)
    )
    return int(conn.execute(q).scalar_one())


def _caption_answered(conn: Connection, annotator_id: int, norm_caption: str) -> bool:
    """Whether the annotator has a label on a pool item of this (normalised) caption."""
    L, It = S.labels.c, S.items.c
    q = (
        sa.select(L.id)
        .select_from(S.labels.join(S.items, It.id == L.item_id))
        .where(L.annotator_id == annotator_id, It.norm_caption == norm_caption)
        .limit(1)
    )
    return conn.execute(q).first() is not None


def _vote_since(conn: Connection, annotator_id: int) -> bool:
    """Whether the annotator answered a pool item after the newest gold item was shown to them
    (a ``label_events`` answer after that ``shown`` event's ``after_event``)."""
    E, L = S.gold_events.c, S.label_events.c
    since = (
        sa.select(E.after_event)
        .where(E.annotator_id == annotator_id, E.action == "shown")
        .order_by(E.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    q = sa.select(L.id).where(L.annotator_id == annotator_id, L.action == "answer", L.id > since).limit(1)
    return conn.execute(q).first() is not None


@dataclass(frozen=True)
class GoldPlan:
    """The order in which one annotator is shown gold items: ``rows`` (gold rows ``id, caption,
    video_id``), ``ids`` their ids, ``run`` the run (gold caption) each belongs to, ``index``
    gold id -> position."""

    rows: list[Any]
    ids: list[int]
    run: list[int]
    index: dict[int, int]


def _ids(groups: list[list[Any]]) -> list[list[int]]:
    """The gold ids of each caption group."""
    return [[int(r.id) for r in g] for g in groups]


def _draw(key: bytes | None, who: int, what: str) -> int:
    """A keyed pseudo-random 64-bit number (HMAC-SHA256 of ``who:what``; key ``b""`` when unset)."""
    return int.from_bytes(
        hmac.new(key or b"", f"{int(who)}:{what}".encode(), hashlib.sha256).digest()[:8], "big"
    )


def plan_runs(groups: list[list[Any]], lengths: list[int], key: bytes | None, who: int) -> GoldPlan:
    """The annotator's gold runs: for run ``r`` a length ``L`` is drawn (keyed: ``HMAC(key,
    who:run:r)``) uniformly among ``lengths`` (the pool's per-caption run lengths, so gold runs
    are as long as pool runs); the run is the first ``L`` videos (in id order) of the first
    gold caption not used yet with at least ``L`` videos, or, when none has that many, all the
    videos of the unused caption with the most (the first of those): a run shorter than drawn.
    No ``lengths`` (no pool): whole captions. Every gold caption gives one run; the videos of a
    caption beyond its run are not shown to this annotator.

    "First" is in the annotator's order of the captions: with ``key``, sorted by ``HMAC(key,
    who:caption:<normalised caption of the group's first row>)`` (a keyed permutation per
    annotator, stable when other captions are added); without it, ``groups`` order (load order).

    Cost O(m log m + m·W) for m gold captions and W distinct drawn lengths: for each length a
    cursor walks the captions (in order) that are large enough, for the fallback one walks them
    by size, largest first; each cursor skips used captions and only moves forward."""
    order = list(range(len(groups)))
    if key is not None:  # each annotator's own order of the gold captions
        order.sort(key=lambda g: (_draw(key, who, "caption:" + normalise(str(groups[g][0].caption))), g))
    size = [len(groups[g]) for g in order]  # by position in the annotator's order
    used = [False] * len(order)
    fits: dict[int, tuple[list[int], list[int]]] = {}  # length -> (positions large enough, cursor)
    largest = sorted(range(len(order)), key=lambda i: (-size[i], i))  # the fallback's order
    cursor_l = 0
    rows: list[Any] = []
    run: list[int] = []
    for r in range(len(order)):
        want = lengths[_draw(key, who, f"run:{r}") % len(lengths)] if lengths else None
        pick = None
        if want is None:
            pick = r  # whole captions, in order (every earlier one is used)
        else:
            if want not in fits:
                fits[want] = ([i for i in range(len(order)) if size[i] >= want], [0])
            cand, cur = fits[want]
            while cur[0] < len(cand) and used[cand[cur[0]]]:
                cur[0] += 1
            if cur[0] < len(cand):
                pick = cand[cur[0]]
        if pick is None:  # no unused caption is large enough: the first of the largest, in order
            while used[largest[cursor_l]]:
                cursor_l += 1
            pick = largest[cursor_l]
        used[pick] = True
        group = groups[order[pick]]
        take = group if want is None else group[:want]
        rows += take
        run += [r] * len(take)
    ids = [int(x.id) for x in rows]
    return GoldPlan(rows, ids, run, {g: k for k, g in enumerate(ids)})


@dataclass(frozen=True)
class GoldFit:
    """Whether a gold set's captions are large enough to come in runs like the pool's
    (:func:`gold_fit`): pairs per gold caption (``gold_min``..``gold_max`` over
    ``gold_captions``), the pool's items per caption (``pool_min``, ``pool_median``,
    ``pool_max`` over ``pool_captions``), ``short_share``: the expected share of an
    annotator's gold runs shorter than their drawn length, and ``need``: the pairs per gold
    caption with which that share is at most ``threshold`` (the smallest pool caption size
    that at most ``threshold`` of the pool's captions exceed)."""

    gold_captions: int
    gold_min: int
    gold_max: int
    pool_captions: int
    pool_min: int
    pool_median: int
    pool_max: int
    short_share: float
    need: int
    threshold: float

    @property
    def hides(self) -> bool:
        return self.short_share <= self.threshold

    def warning(self) -> str | None:
        """One line for the operator when the gold set cannot hide (``None`` when it can)."""
        if self.hides:
            return None
        if self.gold_min == self.gold_max:
            sizes = f"{self.gold_min} pair{'s' if self.gold_min > 1 else ''} each"
        else:
            sizes = f"{self.gold_min} to {self.gold_max} pairs"
        return (
            f"warning: gold items can be told from pool items: {self.short_share:.0%} of gold caption "
            f"runs would be shorter than drawn (gold captions have {sizes}, pool captions "
            f"{self.pool_min} to {self.pool_max} items, median {self.pool_median}); use gold captions "
            f"with at least {self.need} pairs each (at most {self.threshold:.0%} short runs then)"
        )


def gold_fit(
    gold_sizes: list[int], pool_lengths: list[int], threshold: float = FIT_THRESHOLD, seed: int = 0
) -> GoldFit | None:
    """How well gold captions of ``gold_sizes`` pairs fit the pool's per-caption run lengths
    ``pool_lengths`` (:class:`GoldFit`); ``None`` without gold or without a pool.

    ``short_share`` is estimated by simulating :func:`plan_runs` on the sizes alone over whole
    plans (every gold caption used once): the captions in a random order (as the keyed order
    is), each run draws ``L`` uniformly among ``pool_lengths`` and takes the first unused
    caption with at least ``L`` pairs, or, when none has, the first of the largest (a short
    run). The first unused caption of a size is always the earliest of its size class, so each
    class is a queue of positions and a step compares the classes' heads. (Picking uniformly
    among the large-enough captions instead is not the same: a caption passed over once
    tends to come late, and the estimate was 0.02 too high.) Seeded (``seed``): the same
    answer every time; about 20,000 runs in all (at least one whole plan, at most 200 plans)."""
    if not gold_sizes or not pool_lengths:
        return None
    lengths = np.sort(np.asarray(pool_lengths, np.int64))
    sizes = np.asarray(gold_sizes, np.int64)
    vals, cls = np.unique(sizes, return_inverse=True)
    m, d = int(sizes.size), int(vals.size)
    rng = np.random.default_rng(seed)
    trials = min(200, max(1, 20_000 // m))
    short = 0
    for _ in range(trials):
        pos = rng.permutation(m)  # each caption's place in the annotator's order
        order = np.lexsort((pos, cls))  # by class, then place
        start = np.searchsorted(cls[order], np.arange(d + 1))  # each class's slice of ``order``
        queue = pos[order].astype(np.float64)
        ptr = start[:-1].copy()
        head = queue[ptr]  # the earliest unused caption of each class (inf: none left)
        want = np.searchsorted(vals, rng.choice(lengths, size=m))  # first class with >= L pairs
        for i in want.tolist():
            tail = head[i:]
            if i < d and tail.min() < np.inf:
                c = i + int(np.argmin(tail))
            else:  # no unused caption is large enough: the largest left, whole
                short += 1
                c = int(np.flatnonzero(head < np.inf)[-1])
            ptr[c] += 1
            head[c] = queue[ptr[c]] if ptr[c] < start[c + 1] else np.inf
    uniq = np.unique(lengths)
    above = 1.0 - np.searchsorted(lengths, uniq, side="right") / lengths.size
    need = int(uniq[np.flatnonzero(above <= threshold + 1e-12)[0]])
    return GoldFit(
        gold_captions=m,
        gold_min=int(sizes.min()),
        gold_max=int(sizes.max()),
        pool_captions=int(lengths.size),
        pool_min=int(lengths[0]),
        pool_median=int(np.median(lengths)),
        pool_max=int(lengths[-1]),
        short_share=short / (trials * m),
        need=need,
        threshold=float(threshold),
    )


def _gold_turn(shown: int, answers: int, rate: float, key: bytes | None = None, who: int = 0) -> bool:
    """Whether the next one is gold: ``shown + 1 <= rate * (answers + shown + 1)``. The hand-out
    applies it to runs (:meth:`Gold.decide`): ``shown`` gold runs, ``answers`` pool captions
    answered; with one video per caption that is gold items and answers.

    With ``key``: gold run ``j = shown + 1`` is due from a position (``answers + shown``, the
    runs seen before it) drawn by ``HMAC(key, who:j)`` among ``last(j - 1) + 1 .. last(j)``,
    ``last(j) = ceil(j / rate) - 1`` being the position the fixed rule gives it."""
    if key is None:
        return shown + 1 <= rate * (answers + shown + 1)
    j = shown + 1
    last = math.ceil(j / rate - 1e-9) - 1
    first = math.ceil((j - 1) / rate - 1e-9)
    draw = hmac.new(key, f"{int(who)}:{j}".encode(), hashlib.sha256).digest()
    return answers + shown >= first + int.from_bytes(draw[:8], "big") % max(1, last - first + 1)


def pair_agreement(
    item_ids: np.ndarray, annotator_ids: np.ndarray, labels: np.ndarray, names: dict[int, str]
) -> dict[str, Any]:
    """Agreement of each annotator pair on the items both voted on, and of each annotator with the others.

    Inputs are parallel arrays of votes (``relevant``/``irrelevant`` only). Returns
    ``{"annotators": [names], "both": n×n counts, "agree": n×n counts, "matrix": n×n share or
    None, "with_others": {name: share or None}}`` (the diagonal is None).
    """
    keep = np.isin(labels.astype(str), ANSWERS)
    items, ann, lab = item_ids[keep], annotator_ids[keep], labels[keep].astype(str)
    ids = np.asarray(sorted(names), np.int64)
    order = [names[int(i)] for i in ids]
    n = ids.size
    if n == 0 or items.size == 0:
        empty = [[0] * n for _ in range(n)]
        return {
            "annotators": order,
            "both": empty,
            "agree": empty,
            "matrix": [[None] * n for _ in range(n)],
            "with_others": {name: None for name in order},
        }
    uniq, row = np.unique(items, return_inverse=True)
    col = np.searchsorted(ids, ann)
    R = np.zeros((uniq.size, n), np.float64)
    Irr = np.zeros((uniq.size, n), np.float64)
    rel = lab == "relevant"
    R[row[rel], col[rel]] = 1.0
    Irr[row[~rel], col[~rel]] = 1.0
    V = R + Irr
    both = (V.T @ V).round().astype(np.int64)
    agree = (R.T @ R + Irr.T @ Irr).round().astype(np.int64)
    np.fill_diagonal(both, 0)
    np.fill_diagonal(agree, 0)
    matrix = [
        [(int(agree[a, b]) / int(both[a, b]) if both[a, b] else None) for b in range(n)] for a in range(n)
    ]
    tot_both, tot_agree = both.sum(axis=1), agree.sum(axis=1)
    with_others = {
        order[a]: (int(tot_agree[a]) / int(tot_both[a]) if tot_both[a] else None) for a in range(n)
    }
    return {
        "annotators": order,
        "both": both.tolist(),
        "agree": agree.tolist(),
        "matrix": matrix,
        "with_others": with_others,
    }
