"""SQL helpers over the gold tables (``gold_items``, ``gold_answers``, ``gold_events``,
``gold_current``), each in the caller's transaction: pending gold items, the answer rows and
their events, and the annotator-side counts the hand-out reads (captions answered, votes since
the last gold run, undone votes since a gold item became pending).

Used by :class:`fireval.judging.gold.Gold` (which re-exports these names) and by the store;
the tables and their rules are described in :mod:`fireval.judging.gold`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.judging import schema as S
from fireval.judging.engine import Database, new_id
from fireval.judging.errors import UnknownItemError
from fireval.judging.gold_items import GOLD_BASE

#: ``(conn, after_current) -> (last caption, next caption)``: the caption of the annotator's last
#: answered pool item and of the pool item they would be given next (``None``: none), now
#: (``after_current`` False) or once the pool item shown now is answered (True)
PoolCaptions = Callable[[Connection, bool], tuple[str | None, str | None]]


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
    """How many pool captions the annotator answered (distinct normalised captions of their current
    labels): the clock gold runs are placed on (:meth:`~fireval.judging.gold.Gold.decide`)."""
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
