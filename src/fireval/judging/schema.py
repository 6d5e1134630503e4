"""Tables of the annotation store (SQLAlchemy Core). Migrations in ``migrations/`` create them.

- ``annotators``: name, sha256 hash of the login token, role ``annotator`` | ``admin``;
  ``guidelines_seen`` (revision 0006): sha256 of the guideline text the annotator last
  acknowledged (NULL: never), see :mod:`fireval.judging.seen`.
- ``items``: one (caption text, video) pair to judge, with its pool provenance (runs and
  ranks, models), the number of votes it ``needs`` (1, 2 for the double-annotation sample,
  one more after a tie) and the number of ``open_slots`` still to hand out.
- ``assignments``: item handed to an annotator (unique per pair: nobody sees an item twice);
  ``done`` once labelled.
- ``labels``: one answer per (annotator, item) — the unique constraint makes resubmission
  idempotent. ``label`` is ``relevant`` | ``irrelevant`` | ``skip`` (checked by the DB).
  ``kind`` (revision 0006) is ``vote`` (an independent answer) or ``adjudication`` (an admin's
  decision: :meth:`fireval.judging.store.Store.adjudicate`, a resolved flag); an adjudication
  decides an item its votes leave undecided and is never counted as a vote
  (:mod:`fireval.judging.aggregate`).
- ``sessions``: server-side login sessions (revision 0004): the sha256 hash of the random
  session id held in the browser's cookie, its annotator and expiry. A request is logged in only
  while its row exists; logout, token rotation and disabling the annotator delete the rows.
- ``label_events`` (revision 0005): append-only audit of ``labels``, written by database
  triggers: ``answer`` (insert), ``change`` (label updated; ``previous`` holds the old one),
  ``withdraw`` (delete, e.g. undo). See :mod:`fireval.judging.history`. ``kind`` (revision
  0007): the kind of the label the event is about, copied by the triggers (``NEW.kind``, for a
  withdrawal ``OLD.kind``); ``NULL`` only for an event older than 0007 whose kind could not be
  known (see the migration's docstring).
- ``flags`` (revision 0005): ``kind`` ``flag`` (unsure: an admin reviews it; ``status``
  ``open`` until ``resolved`` with ``resolution`` ``relevant`` | ``irrelevant`` | ``discard``)
  or ``skip`` (why an item was skipped, e.g. the video failed; ``status`` ``noted``). See
  :mod:`fireval.judging.flags`.
- ``gold_items`` / ``gold_answers`` (revision 0005): pairs with known answers and each
  annotator's answers to them (never votes). See :mod:`fireval.judging.gold`. Revision 0008:
  ``gold_answers.current`` (the current answer; ``label`` stays the first, counted for
  accuracy) and ``gold_events`` (shown / answer / change / withdraw of gold answers, append-only),
  ``gold_current`` (numbers a current gold answer; deleted by undo, as a ``labels`` row is).
  Revision 0009: ``gold_flags`` (flags for review raised on gold items, with their reasons;
  :mod:`fireval.judging.flags`).
- ``gold_item_events`` (revision 0010): each known answer replaced by ``judgments load --gold
  --replace`` (new answer, previous, source file, time), append-only.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

LABELS = ("relevant", "irrelevant", "skip")
LABEL_KINDS = ("vote", "adjudication")
ROLES = ("annotator", "admin")
SCHEMA_HEAD = "0010"

metadata = MetaData()

annotators = Table(
    "annotators",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("role", String(20), nullable=False),
    Column("active", Boolean, nullable=False, default=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("guidelines_seen", String(64), nullable=True),
    Column("guidelines_seen_at", DateTime(timezone=True), nullable=True),
    CheckConstraint("role IN ('annotator', 'admin')", name="ck_annotators_role"),
)

items = Table(
    "items",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("dataset", String(100), nullable=False),
    Column("caption", Text, nullable=False),
    Column("norm_caption", Text, nullable=False),
    Column("caption_ids", Text, nullable=False),  # JSON list
    Column("video_id", String(300), nullable=False),
    Column("runs", Text, nullable=False),  # JSON {run: best rank}
    Column("models", Text, nullable=False),  # JSON list
    Column("is_double", Boolean, nullable=False),
    Column("needed", Integer, nullable=False),
    Column("open_slots", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("dataset", "norm_caption", "video_id", name="uq_items_pair"),
)
Index(
    "ix_items_open_id",
    items.c.id,
    sqlite_where=items.c.open_slots > 0,
    postgresql_where=items.c.open_slots > 0,
)
Index(  # items another annotator has started that still need someone: handed out first
    "ix_items_started_id",
    items.c.id,
    sqlite_where=(items.c.open_slots > 0) & (items.c.open_slots < items.c.needed),
    postgresql_where=(items.c.open_slots > 0) & (items.c.open_slots < items.c.needed),
)

assignments = Table(
    "assignments",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("item_id", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("annotator_id", Integer, ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False),
    Column("done", Boolean, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("item_id", "annotator_id", name="uq_assignments_pair"),
)
Index("ix_assignments_annotator", assignments.c.annotator_id, assignments.c.done)

labels = Table(
    "labels",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("item_id", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("annotator_id", Integer, ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False),
    Column("assignment_id", Integer, ForeignKey("assignments.id", ondelete="CASCADE"), nullable=False),
    Column("label", String(20), nullable=False),
    Column("time_spent_ms", Integer, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("kind", String(20), nullable=False, default="vote", server_default="vote"),
    UniqueConstraint("item_id", "annotator_id", name="uq_labels_pair"),
    CheckConstraint("label IN ('relevant', 'irrelevant', 'skip')", name="ck_labels_label"),
    CheckConstraint("kind IN ('vote', 'adjudication')", name="ck_labels_kind"),
)
Index("ix_labels_item", labels.c.item_id)
Index("ix_labels_created", labels.c.created_at)

sessions = Table(
    "sessions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("annotator_id", Integer, ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
)
Index("ix_sessions_annotator", sessions.c.annotator_id)

label_events = Table(
    "label_events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("label_id", Integer, nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("annotator_id", Integer, nullable=False),
    Column("action", String(20), nullable=False),
    Column("label", String(20), nullable=True),
    Column("previous", String(20), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("kind", String(20), nullable=True),  # revision 0007; NULL: an older event, kind not known
    CheckConstraint("kind IN ('vote', 'adjudication')", name="ck_label_events_kind"),
)
Index("ix_label_events_annotator", label_events.c.annotator_id, label_events.c.id)
Index("ix_label_events_item", label_events.c.item_id)

flags = Table(
    "flags",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("item_id", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("annotator_id", Integer, ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("reason", Text, nullable=False),
    Column("status", String(20), nullable=False),
    Column("resolution", String(20), nullable=True),
    Column("resolved_by", Integer, nullable=True),
    Column("resolved_at", DateTime(timezone=True), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("kind IN ('flag', 'skip')", name="ck_flags_kind"),
    CheckConstraint("status IN ('open', 'resolved', 'noted')", name="ck_flags_status"),
)
Index("ix_flags_status", flags.c.status, flags.c.id)
Index("ix_flags_item", flags.c.item_id)

gold_items = Table(
    "gold_items",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("caption", Text, nullable=False),
    Column("video_id", String(300), nullable=False),
    Column("answer", String(20), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("caption", "video_id", name="uq_gold_pair"),
    CheckConstraint("answer IN ('relevant', 'irrelevant')", name="ck_gold_answer"),
)

gold_answers = Table(
    "gold_answers",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("gold_id", Integer, ForeignKey("gold_items.id", ondelete="CASCADE"), nullable=False),
    Column("annotator_id", Integer, ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False),
    Column("label", String(20), nullable=True),  # NULL: shown, not answered yet
    Column("correct", Boolean, nullable=True),  # NULL: pending or skipped
    Column("time_spent_ms", Integer, nullable=True),
    Column("shown_at", DateTime(timezone=True), nullable=False),
    Column("answered_at", DateTime(timezone=True), nullable=True),
    Column("current", String(20), nullable=True),  # revision 0008; NULL: not answered or withdrawn
    UniqueConstraint("gold_id", "annotator_id", name="uq_gold_answers_pair"),
)
Index("ix_gold_answers_annotator", gold_answers.c.annotator_id)

gold_events = Table(  # revision 0008: append-only audit of gold answers (see judging/gold.py)
    "gold_events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("answer_id", Integer, ForeignKey("gold_answers.id", ondelete="CASCADE"), nullable=False),
    Column("gold_id", Integer, nullable=False),
    Column("annotator_id", Integer, nullable=False),
    Column("action", String(20), nullable=False),
    Column("label", String(20), nullable=True),
    Column("previous", String(20), nullable=True),
    Column("after_event", Integer, nullable=False),  # the annotator's latest label_events id then
    Column("created_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("action IN ('shown', 'answer', 'change', 'withdraw')", name="ck_gold_events_action"),
)
Index("ix_gold_events_annotator", gold_events.c.annotator_id, gold_events.c.id)

gold_item_events = Table(  # revision 0009: audit of replaced known answers (judgments load --replace)
    "gold_item_events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("gold_id", Integer, ForeignKey("gold_items.id", ondelete="CASCADE"), nullable=False),
    Column("action", String(20), nullable=False),
    Column("answer", String(20), nullable=False),
    Column("previous", String(20), nullable=True),
    Column("source", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("action IN ('replace')", name="ck_gold_item_events_action"),
)
Index("ix_gold_item_events_gold", gold_item_events.c.gold_id, gold_item_events.c.id)

gold_current = Table(  # revision 0008: a current gold answer's number (deleted by undo, as a label row)
    "gold_current",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("answer_id", Integer, ForeignKey("gold_answers.id", ondelete="CASCADE"), nullable=False),
    UniqueConstraint("answer_id", name="uq_gold_current_answer"),
)
Index("ix_gold_events_answer", gold_events.c.answer_id)

gold_flags = Table(  # revision 0009: flags for review on gold items (see judging/flags.py)
    "gold_flags",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("gold_id", Integer, ForeignKey("gold_items.id", ondelete="CASCADE"), nullable=False),
    Column("annotator_id", Integer, ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False),
    Column("reason", Text, nullable=False),
    Column("status", String(20), nullable=False),
    Column("resolution", String(20), nullable=True),
    Column("resolved_by", Integer, nullable=True),
    Column("resolved_at", DateTime(timezone=True), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("status IN ('open', 'resolved')", name="ck_gold_flags_status"),
)
Index("ix_gold_flags_status", gold_flags.c.status, gold_flags.c.id)
Index("ix_gold_flags_pair", gold_flags.c.gold_id, gold_flags.c.annotator_id)
