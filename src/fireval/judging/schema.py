"""Tables of the annotation store (SQLAlchemy Core). Migrations in ``migrations/`` create them.

- ``annotators``: name, sha256 hash of the login token, role ``annotator`` | ``admin``.
- ``items``: one (caption text, video) pair to judge, with its pool provenance (runs and
  ranks, models), the number of votes it ``needs`` (1, 2 for the double-annotation sample,
  one more after a tie) and the number of ``open_slots`` still to hand out.
- ``assignments``: item handed to an annotator (unique per pair: nobody sees an item twice);
  ``done`` once labelled.
- ``labels``: one answer per (annotator, item) — the unique constraint makes resubmission
  idempotent. ``label`` is ``relevant`` | ``irrelevant`` | ``skip`` (checked by the DB).
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
ROLES = ("annotator", "admin")
SCHEMA_HEAD = "0003"

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
    UniqueConstraint("item_id", "annotator_id", name="uq_labels_pair"),
    CheckConstraint("label IN ('relevant', 'irrelevant', 'skip')", name="ck_labels_label"),
)
Index("ix_labels_item", labels.c.item_id)
Index("ix_labels_created", labels.c.created_at)
