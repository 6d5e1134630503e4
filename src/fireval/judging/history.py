"""An annotator's own answers: the last N, changing one, and the audit trail behind them.

Storage convention: ``labels`` holds each annotator's *current* answer per item (one row per
(item, annotator), see :mod:`fireval.judging.handout`); ``label_events`` is the append-only
audit of every change to ``labels``, written by database triggers (revision 0005) in the same
transaction as the change, whatever code path made it:

- ``answer``: a label row inserted (a submit, an adjudication);
- ``change``: its label updated by :meth:`History.change` (``previous`` keeps the old label);
- ``withdraw``: a label row deleted (undo; ``previous`` keeps the withdrawn label).

Each event also records the ``kind`` of its label (``vote`` | ``adjudication``, revision
0007; for a withdrawal the kind of the row withdrawn), so the trail stays right after the row
is gone (on SQLite a new label may even reuse a withdrawn row's id). ``NULL`` only for events
older than 0007 whose kind the migration could not infer.

So nothing is overwritten or lost: every answer ever given can be read back from the events.

Gold (known-answer) items are answered apart (:mod:`fireval.judging.gold`, never votes) but,
annotators judging blind, their answers appear here exactly like votes: :meth:`History.recent`
merges them in (``gold_events``, ordered with the vote events by ``after_event``),
:meth:`History.change` and :meth:`History.undo` apply the same rules and give the same results
and refusals, and gold accuracy keeps counting the first answer.
A change keeps the label's id (so the export's ``response_ids`` stay stable) and recomputes
the item's votes and open slots under the item's lock, exactly as an answer does (a change
that makes the votes tie asks for one more annotator). Only the annotator's own rows are read
or changed here: no other annotator's answers and no run, score or instance information.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.judging import schema as S
from fireval.judging.engine import Database, serialise_undos
from fireval.judging.errors import InvalidLabelError, NotAssignedError, UnknownItemError, valid_id
from fireval.judging.gold import Gold, is_gold_id

#: most answers one history request returns
MAX_HISTORY = 200


@dataclass(frozen=True)
class PastAnswer:
    """One of the annotator's current answers, as the annotator may see it (caption and video only)."""

    item_id: int
    label_id: int
    label: str
    caption: str
    video_id: str
    answered_at: datetime
    changes: int  # how many times the annotator changed their answer for this item

    def as_json(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "label_id": self.label_id,
            "label": self.label,
            "caption": self.caption,
            "video_id": self.video_id,
            "answered_at": self.answered_at.isoformat(timespec="milliseconds"),
            "changes": self.changes,
        }


@dataclass(frozen=True)
class ChangeResult:
    status: str  # "changed" | "unchanged"
    item_id: int
    label_id: int
    label: str
    previous: str


class History:
    """Reads and changes one annotator's answers over a :class:`~fireval.judging.engine.Database`.

    ``handout`` is the store's :class:`~fireval.judging.handout.Handout`; its item lock and
    slot recount are reused so a change follows the same rules as an answer.
    """

    def __init__(self, db: Database, handout: Any, gold: Gold | None = None) -> None:
        self.db = db
        self.handout = handout
        self.gold = gold if gold is not None else Gold(db)

    def recent(self, annotator_id: int, limit: int = 10) -> list[PastAnswer]:
        """The annotator's ``limit`` most recently given or changed answers, newest first,
        gold answers included exactly like votes (blind judging).

        Ordered by the answer's latest audit event (an answer or a change: a changed answer moves
        to the top); reads the annotator's events (index ``ix_label_events_annotator``) and
        looks their current labels up by (item, annotator). Gold answers come from
        ``gold_events`` (:meth:`fireval.judging.gold.Gold.recent`) and are merged by their
        ``after_event``: a gold event written after vote event ``e`` sorts after ``e`` and
        before the next one. Times are given to the millisecond for both kinds (the audit
        triggers' own resolution on SQLite).
        """
        limit = max(1, min(int(limit), MAX_HISTORY))
        L, E, It = S.labels.c, S.label_events.c, S.items.c
        last_ev = S.label_events.alias("last_ev")
        last = (
            sa.select(
                E.item_id,
                sa.func.max(E.id).label("last_event"),
                sa.func.sum(sa.case((E.action == "change", 1), else_=0)).label("n"),
            )
            .where(E.annotator_id == annotator_id, E.action.in_(("answer", "change")))
            .group_by(E.item_id)
            .subquery()
        )
        q = (
            sa.select(L.id, L.item_id, L.label, It.caption, It.video_id, last.c.n, last_ev.c.created_at)
            .select_from(
                last.join(S.labels, (L.item_id == last.c.item_id) & (L.annotator_id == annotator_id))
                .join(S.items, It.id == L.item_id)
                .join(last_ev, last_ev.c.id == last.c.last_event)
            )
            .order_by(last.c.last_event.desc())
            .limit(limit)
        )
        q = q.add_columns(last.c.last_event)
        with self.db.reading() as conn:
            rows = conn.execute(q).all()
            gold = self.gold.recent(conn, annotator_id, limit)
        merged = [
            (
                (int(r.last_event), 0, 0),
                PastAnswer(
                    int(r.item_id),
                    int(r.id),
                    str(r.label),
                    str(r.caption),
                    str(r.video_id),
                    _aware(r.created_at),
                    int(r.n or 0),
                ),
            )
            for r in rows
        ]
        merged += [
            (
                g["key"],
                PastAnswer(
                    g["item_id"],
                    g["label_id"],
                    g["label"],
                    g["caption"],
                    g["video_id"],
                    _aware(g["at"]),
                    g["changes"],
                ),
            )
            for g in gold
        ]
        merged.sort(key=lambda kv: kv[0], reverse=True)
        return [a for _, a in merged[:limit]]

    def events(self, annotator_id: int | None = None, item_id: int | None = None) -> list[dict[str, Any]]:
        """The audit trail (oldest first), optionally for one annotator and/or one item: each
        event's id, label id, item, annotator, action, label, previous label, kind and time."""
        E = S.label_events.c
        q = sa.select(S.label_events).order_by(E.id)
        if annotator_id is not None:
            q = q.where(E.annotator_id == annotator_id)
        if item_id is not None:
            q = q.where(E.item_id == item_id)
        with self.db.reading() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def change(self, annotator_id: int, item_id: int, label: str) -> ChangeResult:
        """Change the annotator's answer for ``item_id`` to ``label`` (one transaction).

        Raises :class:`InvalidLabelError` (label outside the enum), :class:`UnknownItemError`
        and :class:`NotAssignedError` (the annotator has not answered this item). The same
        label again changes nothing (``status="unchanged"``).
        """
        if label not in S.LABELS:
            raise InvalidLabelError(f"label must be one of {', '.join(S.LABELS)}, got {label!r}")
        if not valid_id(item_id):
            raise UnknownItemError(f"unknown item {item_id}")
        if is_gold_id(item_id):  # the same rules; the first gold answer keeps counting (gold.py)
            status, answer_id, new, previous = self.gold.change(annotator_id, item_id, label)
            return ChangeResult(status, item_id, answer_id, new, previous)

        def op(conn: Connection) -> ChangeResult:
            it = self.handout._lock_item(conn, item_id)
            if it is None:
                raise UnknownItemError(f"unknown item {item_id}")
            L = S.labels.c
            row = conn.execute(
                sa.select(L.id, L.label).where(L.item_id == item_id, L.annotator_id == annotator_id)
            ).first()
            if row is None:
                raise NotAssignedError(f"you have no answer for item {item_id} to change")
            if row.label == label:
                return ChangeResult("unchanged", item_id, int(row.id), label, label)
            conn.execute(S.labels.update().where(L.id == row.id).values(label=label))
            self.handout._recompute(conn, item_id, bool(it.is_double))
            return ChangeResult("changed", item_id, int(row.id), label, str(row.label))

        return self.db.write(op)

    def undo(self, annotator_id: int, item_id: int | None = None) -> int | None:
        """Withdraw the annotator's answer for ``item_id``, gold or pool alike; without
        ``item_id`` their latest answer (the newest ``answer`` event of a current answer, gold
        and vote events placed in one order by ``after_event``). Returns the item id, or
        ``None`` when there is nothing to undo; the item is shown again next.

        Choosing the answer and withdrawing it are one write transaction, and the annotator's
        undos take turns (:func:`~fireval.judging.engine.serialise_undos`: a PostgreSQL advisory
        lock per annotator; SQLite writes one transaction at a time): ``n`` undos sent at once
        withdraw the ``n`` latest answers, newest first, each once, whatever the backend.
        Pool items: :meth:`fireval.judging.handout.Handout.withdraw_label`; gold items:
        :meth:`fireval.judging.gold.Gold.withdraw_in` (the first answer keeps counting for
        accuracy).
        """
        if item_id is not None and not valid_id(item_id):
            raise UnknownItemError(f"unknown item {item_id}")

        def op(conn: Connection) -> int | None:
            serialise_undos(conn, annotator_id)
            if item_id is not None:
                if is_gold_id(item_id):
                    return self.gold.withdraw_in(conn, annotator_id, item_id)
                return self.handout.undo_in(conn, annotator_id, item_id)  # type: ignore[no-any-return]
            gold = self.gold.latest_answer(conn, annotator_id)
            vote = self.handout.latest_label(conn, annotator_id)
            if gold is not None and (vote is None or self._answer_event(conn, annotator_id, vote) <= gold[0]):
                return self.gold.withdraw_in(conn, annotator_id, gold[1])
            return None if vote is None else int(self.handout.withdraw_label(conn, vote))

        return self.db.write(op)

    @staticmethod
    def _answer_event(conn: Connection, annotator_id: int, vote: Any) -> int:
        """The id of the ``answer`` event of the label row ``vote`` (0 if none: then a gold
        answer is taken as newer), comparable with a gold event's ``after_event``."""
        E = S.label_events.c
        got = conn.execute(
            sa.select(sa.func.max(E.id)).where(
                E.label_id == vote.id,
                E.item_id == vote.item_id,
                E.annotator_id == annotator_id,
                E.action == "answer",
            )
        ).scalar()
        return int(got or 0)


def _aware(t: datetime) -> datetime:
    """SQLite hands back naive datetimes (stored in UTC): make them aware."""
    from datetime import UTC

    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)
