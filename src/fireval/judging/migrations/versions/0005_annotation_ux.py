"""Audit log of answers (``label_events``, filled by triggers), flags for review (``flags``),
gold items and answers (``gold_items``, ``gold_answers``).

Revision ID: 0005
Revises: 0004

``label_events`` is append-only: a database trigger on ``labels`` adds one row for every
answer inserted (``answer``), changed (``change``, with the previous label) and withdrawn
(``withdraw``, e.g. by undo), in the same transaction as the change itself, whichever code path
made it. Existing labels are copied in as ``answer`` events.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_SQLITE_TRIGGERS = (
    """CREATE TRIGGER trg_labels_audit_insert AFTER INSERT ON labels BEGIN
      INSERT INTO label_events (label_id, item_id, annotator_id, action, label, previous, created_at)
      VALUES (NEW.id, NEW.item_id, NEW.annotator_id, 'answer', NEW.label, NULL, NEW.created_at);
    END""",
    """CREATE TRIGGER trg_labels_audit_update AFTER UPDATE OF label ON labels
    WHEN NEW.label IS NOT OLD.label BEGIN
      INSERT INTO label_events (label_id, item_id, annotator_id, action, label, previous, created_at)
      VALUES (NEW.id, NEW.item_id, NEW.annotator_id, 'change', NEW.label, OLD.label,
              strftime('%Y-%m-%d %H:%M:%f000', 'now'));
    END""",
    """CREATE TRIGGER trg_labels_audit_delete AFTER DELETE ON labels BEGIN
      INSERT INTO label_events (label_id, item_id, annotator_id, action, label, previous, created_at)
      VALUES (OLD.id, OLD.item_id, OLD.annotator_id, 'withdraw', NULL, OLD.label,
              strftime('%Y-%m-%d %H:%M:%f000', 'now'));
    END""",
)

_PG_FUNCTION = """CREATE OR REPLACE FUNCTION fireval_labels_audit() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO label_events (label_id, item_id, annotator_id, action, label, previous, created_at)
    VALUES (NEW.id, NEW.item_id, NEW.annotator_id, 'answer', NEW.label, NULL, NEW.created_at);
  ELSIF TG_OP = 'UPDATE' THEN
    IF NEW.label IS DISTINCT FROM OLD.label THEN
      INSERT INTO label_events (label_id, item_id, annotator_id, action, label, previous, created_at)
      VALUES (NEW.id, NEW.item_id, NEW.annotator_id, 'change', NEW.label, OLD.label, clock_timestamp());
    END IF;
  ELSE
    INSERT INTO label_events (label_id, item_id, annotator_id, action, label, previous, created_at)
    VALUES (OLD.id, OLD.item_id, OLD.annotator_id, 'withdraw', NULL, OLD.label, clock_timestamp());
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql"""


def upgrade() -> None:
    op.create_table(
        "label_events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("label_id", sa.Integer, nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("annotator_id", sa.Integer, nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("label", sa.String(20), nullable=True),
        sa.Column("previous", sa.String(20), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_label_events_annotator", "label_events", ["annotator_id", "id"])
    op.create_index("ix_label_events_item", "label_events", ["item_id"])
    op.create_table(
        "flags",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "annotator_id", sa.Integer, sa.ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("resolution", sa.String(20), nullable=True),
        sa.Column("resolved_by", sa.Integer, nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('flag', 'skip')", name="ck_flags_kind"),
        sa.CheckConstraint("status IN ('open', 'resolved', 'noted')", name="ck_flags_status"),
    )
    op.create_index("ix_flags_status", "flags", ["status", "id"])
    op.create_index("ix_flags_item", "flags", ["item_id"])
    op.create_table(
        "gold_items",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("caption", sa.Text, nullable=False),
        sa.Column("video_id", sa.String(300), nullable=False),
        sa.Column("answer", sa.String(20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("caption", "video_id", name="uq_gold_pair"),
        sa.CheckConstraint("answer IN ('relevant', 'irrelevant')", name="ck_gold_answer"),
    )
    op.create_table(
        "gold_answers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("gold_id", sa.Integer, sa.ForeignKey("gold_items.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "annotator_id", sa.Integer, sa.ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("label", sa.String(20), nullable=True),
        sa.Column("correct", sa.Boolean, nullable=True),
        sa.Column("time_spent_ms", sa.Integer, nullable=True),
        sa.Column("shown_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("gold_id", "annotator_id", name="uq_gold_answers_pair"),
    )
    op.create_index("ix_gold_answers_annotator", "gold_answers", ["annotator_id"])
    op.execute(
        "INSERT INTO label_events (label_id, item_id, annotator_id, action, label, previous, created_at) "
        "SELECT id, item_id, annotator_id, 'answer', label, NULL, created_at FROM labels ORDER BY id"
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        op.execute(
            "CREATE TRIGGER trg_labels_audit AFTER INSERT OR UPDATE OR DELETE ON labels "
            "FOR EACH ROW EXECUTE FUNCTION fireval_labels_audit()"
        )
    else:
        for stmt in _SQLITE_TRIGGERS:
            op.execute(stmt)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS trg_labels_audit ON labels")
        op.execute("DROP FUNCTION IF EXISTS fireval_labels_audit()")
    else:
        for name in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS trg_labels_audit_{name}")
    op.drop_index("ix_gold_answers_annotator", table_name="gold_answers")
    op.drop_table("gold_answers")
    op.drop_table("gold_items")
    op.drop_index("ix_flags_item", table_name="flags")
    op.drop_index("ix_flags_status", table_name="flags")
    op.drop_table("flags")
    op.drop_index("ix_label_events_item", table_name="label_events")
    op.drop_index("ix_label_events_annotator", table_name="label_events")
    op.drop_table("label_events")
