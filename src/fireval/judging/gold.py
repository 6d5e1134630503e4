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

Mixing: an annotator is shown a gold item they have not seen when
``gold_shown + 1 <= rate * (answers + gold_shown + 1)``, so about ``rate`` of what they see is
gold (the first gold item comes after ``1/rate - 1`` answers). With :attr:`Gold.key` set (the
web app derives it from its session secret) the ``j``-th gold item is shown instead at a
position drawn (HMAC of the key, the annotator and ``j``) within the ``j``-th stretch of about
``1/rate`` items, never later than the rule above: a fixed spacing would tell the annotator
which items are gold (every tenth at rate 0.1; blind judging). **Gold only between captions**:
pool items come in runs of one caption (:func:`fireval.judging.pool.handout_order`), so a gold
item (a caption of its own) in the middle of a run would stand out. A gold item whose turn has
come is deferred until the annotator's next pool item would start a new caption (or no pool
item is left for them): :func:`caption_boundary`, applied in :meth:`Gold.turn`, the one rule
:meth:`Gold.due` (hand-out) and :meth:`Gold.peek` / the PostgreSQL prefetch apply. Both turn
rules only become true as answers grow and stay true, so a deferred gold item comes a little
later, never dropped; at the end of the pool every gold item whose turn has come is shown,
so a full session shows as many gold items as without deferral. ``rate`` is the web app's
setting (``fireval serve --gold-rate``, default :data:`DEFAULT_RATE`); 0 turns gold off. A gold
item is shown with the id :data:`GOLD_BASE` ``+ gold id`` (ids of pool items stay below it) and
looks like any other item: caption and video only.

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
from dataclasses import dataclass
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
ANSWERS = ("relevant", "irrelevant")


def is_gold_id(item_id: int) -> bool:
    """True for the ids gold items are shown with (ids no row can have are not gold: 404 as usual)."""
    return valid_id(item_id) and item_id > GOLD_BASE


@dataclass(frozen=True)
class GoldPair:
    caption: str
    video_id: str
    answer: str


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
    for k, rec in jsonl_records(text, src, GOLD_KEYS):
        for key in GOLD_KEYS:
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise InputError(f"{key!r} missing or not a non-empty string", source=src, line=k)
        if rec["answer"] not in ANSWERS:
            raise InputError(
                f"answer must be 'relevant' or 'irrelevant', got {rec['answer']!r}", source=src, line=k
            )
        out.append(GoldPair(rec["caption"].strip(), rec["video_id"].strip(), rec["answer"]))
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

    def load(self, pairs: list[GoldPair]) -> tuple[int, int]:
        """Insert gold pairs (one transaction); return ``(added, already_present)``."""
        t = now()

        def op(conn: Connection) -> tuple[int, int]:
            G = S.gold_items.c
            seen = {(r.caption, r.video_id) for r in conn.execute(sa.select(G.caption, G.video_id))}
            rows = []
            for p in pairs:
                if (p.caption, p.video_id) in seen:
                    continue
                seen.add((p.caption, p.video_id))
                rows.append(
                    {"caption": p.caption, "video_id": p.video_id, "answer": p.answer, "created_at": t}
                )
            if rows:
                conn.execute(S.gold_items.insert(), rows)
            return len(rows), len(pairs) - len(rows)

        self._has_gold = None
        return self.db.write(op)

    def _any(self) -> bool:
        t = time.monotonic()
        if self._has_gold is None or t - self._has_gold[0] > self.recheck_seconds:
            with self.db.reading() as conn:
                has = conn.execute(sa.select(S.gold_items.c.id).limit(1)).first() is not None
            self._has_gold = (t, has)
        return self._has_gold[1]

    def due(self, annotator_id: int, captions: PoolCaptions | None = None) -> Any:
        """The gold item to show the annotator now (an ``ItemView``), or ``None``.

        ``captions(conn, False)`` gives ``(last, next)``: the caption of the annotator's last
        answered pool item and of the pool item they would be given next (``None``: none), read
        in this transaction (:meth:`fireval.judging.store.Store.pool_captions`); without it
        every position counts as a caption boundary."""
        if self.rate <= 0 or not self._any():
            return None
        rate = min(self.rate, 1.0)

        def op(conn: Connection) -> Any:
            from fireval.judging.handout import ItemView

            pending = _shown_unanswered(conn, annotator_id)
            if pending is None:
                shown, answers = _shown_and_votes(conn, annotator_id)
                if not _gold_turn(shown, answers, rate, self.key, annotator_id):
                    return None  # (position first: the caption reads only when it could be due)
                last, nxt = captions(conn, False) if captions is not None else (None, None)
                if not self.turn(shown, answers, annotator_id, last_caption=last, next_caption=nxt):
                    return None
                pending = _first_unanswered(conn, annotator_id)
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
        shown, answers = _shown_and_votes(conn, annotator_id)
        if now_item is None:
            answers += answers_before
        if not _gold_turn(int(shown), int(answers), min(self.rate, 1.0), self.key, annotator_id):
            return now_item, None, None  # (position first, as in due: the decision is turn's)
        last, after = captions(conn, now_item is None) if captions is not None else (None, None)
        if not self.turn(int(shown), int(answers), annotator_id, last_caption=last, next_caption=after):
            return now_item, None, None
        nxt = _first_unanswered(conn, annotator_id)
        if nxt is None:
            return now_item, None, None
        return now_item, None, ItemView(GOLD_BASE + int(nxt.id), nxt.caption, nxt.video_id, "gold", 0)

    def turn(
        self,
        shown: int,
        answers: int,
        annotator_id: int,
        *,
        last_caption: str | None,
        next_caption: str | None,
    ) -> bool:
        """Whether a new gold item is the next item the annotator sees, having been shown
        ``shown`` gold items and given ``answers`` votes (:func:`_gold_turn` at this store's
        rate and key), their last pool item's caption being ``last_caption`` and the next pool
        item's ``next_caption``: only between two captions' runs (:func:`caption_boundary`).
        The one rule :meth:`due` and :meth:`peek` apply, also used by the one-statement
        prefetch (:meth:`fireval.judging.store.Store.peek_next_async`)."""
        return _gold_turn(shown, answers, min(self.rate, 1.0), self.key, annotator_id) and caption_boundary(
            last_caption, next_caption
        )

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
        """Per annotator name: gold items answered (skips excluded), correct, accuracy."""
        GA, A = S.gold_answers.c, S.annotators.c
        with self.db.reading() as conn:
            rows = conn.execute(
                sa.select(A.name, GA.correct, sa.func.count())
                .select_from(S.gold_answers.join(S.annotators, A.id == GA.annotator_id))
                .where(GA.correct.is_not(None))
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


def _shown_and_votes(conn: Connection, annotator_id: int) -> tuple[int, int]:
    """How many gold pairs this annotator was shown, and how many labels they gave."""
    GA = S.gold_answers.c
    shown = conn.execute(
        sa.select(sa.func.count()).select_from(S.gold_answers).where(GA.annotator_id == annotator_id)
    ).scalar_one()
    votes = conn.execute(
        sa.select(sa.func.count()).select_from(S.labels).where(S.labels.c.annotator_id == annotator_id)
    ).scalar_one()
    return int(shown), int(votes)


def _first_unanswered(conn: Connection, annotator_id: int) -> Any:
    """The first gold pair (``id, caption, video_id``) this annotator has not answered, or None."""
    G, GA = S.gold_items.c, S.gold_answers.c
    return conn.execute(
        sa.select(G.id, G.caption, G.video_id)
        .where(~G.id.in_(sa.select(GA.gold_id).where(GA.annotator_id == annotator_id)))
        .order_by(G.id)
        .limit(1)
    ).first()


def _gold_turn(shown: int, answers: int, rate: float, key: bytes | None = None, who: int = 0) -> bool:
    """Whether the next item shown is gold: ``shown + 1 <= rate * (answers + shown + 1)``.

    With ``key``: gold item ``j = shown + 1`` is due from a position (``answers + shown``, the
    items seen before it) drawn by ``HMAC(key, who:j)`` among ``last(j - 1) + 1 .. last(j)``,
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
