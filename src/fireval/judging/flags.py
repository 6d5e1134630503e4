"""Flags for review and reasons for skips: the admin's review queue.

Two kinds of rows in the ``flags`` table (revision 0005), one module over the store's
:class:`~fireval.judging.engine.Database`:

- ``flag``: an annotator is unsure about a pair (with an optional reason, at most
  :data:`MAX_REASON` characters). The row is ``open`` and the item is in the admin's review
  queue; the annotator's own answer for it is a ``skip`` (recorded by the caller through the
  handout), so the item goes on to other annotators as any skipped item does (FIRE's campaign
  escalated such jobs to experts; it did not hold them back). The admin resolves every open
  flag of the item at once with a label (``relevant``/``irrelevant``: the admin's vote on the
  item, recorded by the caller as an adjudication) or ``discard`` (the flag is dismissed, no
  label is added).
- ``skip``: why an item was skipped (e.g. ``video failed`` when the player could not load the
  video); ``noted``, never in the review queue, counted in the status.

A gold (known-answer) item is flagged as any item (annotators cannot tell them apart, and are
told the same thing): the flag and its reason are kept (``gold_flags``, revision 0009) and shown
in the review queue with the known answer; the annotator's answer is a ``skip`` unless they
already answered, and a gold answer its annotator flagged is not counted in gold accuracy
(:meth:`fireval.judging.gold.Gold.accuracy`). The admin dismisses a gold item's flags
(``discard``); a wrong known answer is corrected by loading a corrected gold file.

Only the item's caption and video, the flagging annotator's name and reason are shown to the
admin; annotators never read flags. Flags are reported by :meth:`Flags.summary` (``fireval
judgments status`` and the admin page). They are not written to the FIRE JSON export: its
records follow the authors' data model, which has no field for them.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.judging import schema as S
from fireval.judging.engine import Database, new_id, now
from fireval.judging.errors import InvalidLabelError, NotAssignedError, StoreError, UnknownItemError, valid_id
from fireval.judging.gold import GOLD_BASE, gold_answered, is_gold_id

MAX_REASON = 500
RESOLUTIONS = ("relevant", "irrelevant", "discard")
#: the reason recorded when the player could not load the video
VIDEO_FAILED = "video failed"


def _aware(t: Any) -> Any:
    """A stored time comparable with others (SQLite gives naive UTC times, PostgreSQL aware ones)."""
    from datetime import UTC, datetime

    if isinstance(t, str):
        t = datetime.fromisoformat(t)
    return t.replace(tzinfo=UTC) if t is not None and t.tzinfo is None else t


def _require_shown(conn: Connection, item_id: int, exists: Any, shown: Any) -> None:
    """Refuse a flag on an item that does not exist (``exists`` selects no row) or that the
    annotator was not handed (``shown`` selects no row), with the messages a pool item gets."""
    if conn.execute(exists).first() is None:
        raise UnknownItemError(f"unknown item {item_id}")
    if conn.execute(shown).first() is None:
        raise NotAssignedError(f"item {item_id} is not assigned to you")


class UnknownFlagError(StoreError):
    status = 404


def clean_reason(reason: str | None) -> str:
    """The reason as stored: stripped, control characters removed, at most :data:`MAX_REASON` chars."""
    text = "".join(ch if ch.isprintable() else " " for ch in (reason or ""))
    return " ".join(text.split())[:MAX_REASON]


class Flags:
    """The review queue over one :class:`~fireval.judging.engine.Database`."""

    def __init__(self, db: Database, handout: Any, submit: Any = None) -> None:
        self.db = db
        self.handout = handout  # the store's Handout (adjudication)
        self.submit = submit or handout.submit  # answers go through the store (gold items included)

    def flag(
        self, annotator_id: int, item_id: int, reason: str | None = None, *, claim_next: bool = False
    ) -> Any:
        """Flag an item for review; the annotator's answer becomes ``skip`` unless they already answered.

        Returns ``(flag_id, SubmitResult or None)``; with ``claim_next`` the result carries the
        annotator's next item.
        """
        if is_gold_id(item_id):  # kept as a gold flag (its reason too), in the review queue
            self.add_gold(annotator_id, item_id, reason)
            if gold_answered(self.db, annotator_id, item_id):  # as below: the answer stands
                return None, None
            return None, self.submit(annotator_id, item_id, "skip", claim_next=claim_next)
        flag_id = self.add(annotator_id, item_id, reason, "flag")
        with self.db.reading() as conn:
            answered = conn.execute(
                sa.select(S.labels.c.id).where(
                    S.labels.c.item_id == item_id, S.labels.c.annotator_id == annotator_id
                )
            ).first()
        if answered is not None:  # flagged from the history: the answer stands
            return flag_id, None
        return flag_id, self.submit(annotator_id, item_id, "skip", claim_next=claim_next)

    def skip(
        self,
        annotator_id: int,
        item_id: int,
        reason: str,
        time_spent_ms: int | None = None,
        *,
        claim_next: bool = False,
    ) -> Any:
        """Answer ``skip`` and record why (e.g. :data:`VIDEO_FAILED`; nothing for an empty reason).

        Returns the handout's ``SubmitResult``.
        """
        res = self.submit(annotator_id, item_id, "skip", time_spent_ms, claim_next=claim_next)
        if res.status == "created" and clean_reason(reason) and not is_gold_id(item_id):
            self.add(annotator_id, item_id, reason, "skip")
        return res

    def resolve_flagged(self, admin_id: int, item_id: int, resolution: str) -> int:
        """An admin resolves an item's open flags: with a label (the admin's vote) or ``discard``."""
        if resolution not in RESOLUTIONS:
            raise InvalidLabelError(f"resolution must be one of {', '.join(RESOLUTIONS)}, got {resolution!r}")
        if not valid_id(item_id):
            raise UnknownItemError(f"unknown item {item_id}")
        with self.db.reading() as conn:
            role = conn.execute(sa.select(S.annotators.c.role).where(S.annotators.c.id == admin_id)).scalar()
        if role != "admin":
            raise NotAssignedError("only an admin can resolve flags")
        if is_gold_id(item_id):  # a known answer is not voted on: its flags can only be dismissed
            if resolution != "discard":
                raise InvalidLabelError(
                    f"item {item_id} is a gold item (its answer is known): dismiss its flags with "
                    "'discard', or load a corrected gold file (`fireval judgments load --gold`)"
                )
            return self.resolve(admin_id, item_id, resolution)
        if resolution != "discard":
            self.handout.adjudicate(admin_id, item_id, resolution)
        return self.resolve(admin_id, item_id, resolution)

    def add(self, annotator_id: int, item_id: int, reason: str | None = None, kind: str = "flag") -> int:
        """Record a flag (``kind="flag"``) or a skip reason (``kind="skip"``); return its id.

        The item must have been handed to the annotator (:class:`NotAssignedError` otherwise).
        """
        if kind not in ("flag", "skip"):
            raise InvalidLabelError(f"flag kind must be 'flag' or 'skip', got {kind!r}")
        if not valid_id(item_id):
            raise UnknownItemError(f"unknown item {item_id}")
        text = clean_reason(reason)

        def op(conn: Connection) -> int:
            A = S.assignments.c
            _require_shown(
                conn,
                item_id,
                sa.select(S.items.c.id).where(S.items.c.id == item_id),
                sa.select(A.id).where(A.item_id == item_id, A.annotator_id == annotator_id),
            )
            res = conn.execute(
                S.flags.insert().values(
                    item_id=item_id,
                    annotator_id=annotator_id,
                    kind=kind,
                    reason=text,
                    status="open" if kind == "flag" else "noted",
                    created_at=now(),
                )
            )
            return new_id(res)

        return self.db.write(op)

    def add_gold(self, annotator_id: int, item_id: int, reason: str | None = None) -> int:
        """Record a flag on the gold item ``item_id`` (``GOLD_BASE + gold id``); return its id.

        The gold item must have been shown to the annotator (:class:`NotAssignedError`, with the
        message a pool item gets, otherwise)."""
        if not valid_id(item_id):
            raise UnknownItemError(f"unknown item {item_id}")
        gold_id, text = item_id - GOLD_BASE, clean_reason(reason)

        def op(conn: Connection) -> int:
            GA = S.gold_answers.c
            _require_shown(
                conn,
                item_id,
                sa.select(S.gold_items.c.id).where(S.gold_items.c.id == gold_id),
                sa.select(GA.id).where(GA.gold_id == gold_id, GA.annotator_id == annotator_id),
            )
            res = conn.execute(
                S.gold_flags.insert().values(
                    gold_id=gold_id, annotator_id=annotator_id, reason=text, status="open", created_at=now()
                )
            )
            return new_id(res)

        return self.db.write(op)

    def item_of(self, flag_id: int) -> int:
        """The item a flag is about (:class:`UnknownFlagError` if there is no such flag)."""
        if not valid_id(flag_id):
            raise UnknownFlagError(f"unknown flag {flag_id}")
        with self.db.reading() as conn:
            item = conn.execute(sa.select(S.flags.c.item_id).where(S.flags.c.id == flag_id)).scalar()
        if item is None:
            raise UnknownFlagError(f"unknown flag {flag_id}")
        return int(item)

    def review_queue(self) -> list[dict[str, Any]]:
        """Open flags grouped by item (oldest first): caption, video, and who flagged it why."""
        F, It, A = S.flags.c, S.items.c, S.annotators.c
        with self.db.reading() as conn:
            rows = conn.execute(
                sa.select(F.id, F.item_id, F.reason, F.created_at, It.caption, It.video_id, A.name)
                .select_from(
                    S.flags.join(S.items, It.id == F.item_id).join(S.annotators, A.id == F.annotator_id)
                )
                .where(F.kind == "flag", F.status == "open")
                .order_by(F.id)
            ).all()
        out: dict[int, dict[str, Any]] = {}
        for r in rows:
            d = out.setdefault(
                r.item_id,
                {
                    "flag_id": r.id,
                    "item_id": r.item_id,
                    "caption": r.caption,
                    "video_id": r.video_id,
                    "flags": [],
                },
            )
            d["flags"].append({"flag_id": r.id, "annotator": r.name, "reason": r.reason})
            d.setdefault("first", r.created_at)
        G, GF = S.gold_items.c, S.gold_flags.c
        with self.db.reading() as conn:
            gold_rows = conn.execute(
                sa.select(
                    GF.id, GF.gold_id, GF.reason, GF.created_at, G.caption, G.video_id, G.answer, A.name
                )
                .select_from(
                    S.gold_flags.join(S.gold_items, G.id == GF.gold_id).join(
                        S.annotators, A.id == GF.annotator_id
                    )
                )
                .where(GF.status == "open")
                .order_by(GF.id)
            ).all()
        for g in gold_rows:
            d = out.setdefault(
                GOLD_BASE + int(g.gold_id),
                {
                    "flag_id": None,
                    "item_id": GOLD_BASE + int(g.gold_id),
                    "caption": g.caption,
                    "video_id": g.video_id,
                    "gold": True,
                    "gold_answer": g.answer,
                    "flags": [],
                    "first": g.created_at,
                },
            )
            d["flags"].append({"flag_id": None, "annotator": g.name, "reason": g.reason})
        queue = sorted(out.values(), key=lambda d: (_aware(d["first"]), d["item_id"]))
        for d in queue:
            d.pop("first")
            d.setdefault("gold", False)
            d.setdefault("gold_answer", None)
        return queue

    def resolve(self, admin_id: int, item_id: int, resolution: str) -> int:
        """Close every open flag of ``item_id`` with ``resolution``; return how many were open.

        The caller records the admin's label first for ``relevant``/``irrelevant``.
        """
        if resolution not in RESOLUTIONS:
            raise InvalidLabelError(f"resolution must be one of {', '.join(RESOLUTIONS)}, got {resolution!r}")

        def op(conn: Connection) -> int:
            if is_gold_id(item_id):
                GF = S.gold_flags.c
                res = conn.execute(
                    S.gold_flags.update()
                    .where(GF.gold_id == item_id - GOLD_BASE, GF.status == "open")
                    .values(status="resolved", resolution=resolution, resolved_by=admin_id, resolved_at=now())
                )
                return int(res.rowcount)
            F = S.flags.c
            res = conn.execute(
                S.flags.update()
                .where(F.item_id == item_id, F.kind == "flag", F.status == "open")
                .values(status="resolved", resolution=resolution, resolved_by=admin_id, resolved_at=now())
            )
            return int(res.rowcount)

        return self.db.write(op)

    def summary(self) -> dict[str, Any]:
        """Counts for the status: open / resolved flags (by resolution), skip reasons, flags per annotator."""
        F, A = S.flags.c, S.annotators.c
        with self.db.reading() as conn:
            by_state = conn.execute(
                sa.select(F.kind, F.status, F.resolution, F.reason, sa.func.count()).group_by(
                    F.kind, F.status, F.resolution, F.reason
                )
            ).all()
            per_ann = conn.execute(
                sa.select(A.name, sa.func.count())
                .select_from(S.flags.join(S.annotators, A.id == F.annotator_id))
                .where(F.kind == "flag")
                .group_by(A.name)
                .order_by(A.name)
            ).all()
            open_items = conn.execute(
                sa.select(sa.func.count(sa.distinct(F.item_id))).where(F.kind == "flag", F.status == "open")
            ).scalar_one()
            GF = S.gold_flags.c
            gold_state = conn.execute(
                sa.select(GF.status, GF.resolution, sa.func.count()).group_by(GF.status, GF.resolution)
            ).all()
            gold_open_items = conn.execute(
                sa.select(sa.func.count(sa.distinct(GF.gold_id))).where(GF.status == "open")
            ).scalar_one()
            gold_per_ann = conn.execute(
                sa.select(A.name, sa.func.count())
                .select_from(S.gold_flags.join(S.annotators, A.id == GF.annotator_id))
                .group_by(A.name)
            ).all()
        resolved: dict[str, int] = {}
        skips: dict[str, int] = {}
        n_open = 0
        for kind, status, resolution, reason, n in by_state:
            if kind == "flag" and status == "open":
                n_open += int(n)
            elif kind == "flag":
                resolved[str(resolution)] = resolved.get(str(resolution), 0) + int(n)
            else:
                key = reason or "(no reason)"
                skips[key] = skips.get(key, 0) + int(n)
        gold_open = 0
        for status, resolution, n in gold_state:  # gold flags count as flags (annotators flag alike)
            if status == "open":
                gold_open += int(n)
            else:
                resolved[str(resolution)] = resolved.get(str(resolution), 0) + int(n)
        flaggers = {str(name): int(n) for name, n in per_ann}
        for name, n in gold_per_ann:
            flaggers[str(name)] = flaggers.get(str(name), 0) + int(n)
        return {
            "open": n_open + gold_open,
            "open_items": int(open_items) + int(gold_open_items),
            "gold_open": gold_open,
            "resolved": dict(sorted(resolved.items())),
            "skip_reasons": dict(sorted(skips.items())),
            "per_annotator": dict(sorted(flaggers.items())),
        }
