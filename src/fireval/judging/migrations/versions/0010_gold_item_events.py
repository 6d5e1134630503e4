"""Audit of changes to gold items' known answers (``gold_item_events``).

Revision ID: 0010
Revises: 0009

A gold item's known answer decides every annotator's gold accuracy, so it must not change
silently. ``fireval judgments load --gold`` refuses a file that gives a pair already in the
store another answer, unless ``--replace`` is given; each answer so replaced is recorded here:
``gold_id``, ``action`` (``replace``), the new ``answer``, the ``previous`` one, the ``source``
(the gold file's name) and ``created_at``. Append-only; nothing to migrate (before this revision
answers could not be replaced).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gold_item_events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("gold_id", sa.Integer, sa.ForeignKey("gold_items.id", ondelete="CASCADE"), nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("answer", sa.String(20), nullable=False),
        sa.Column("previous", sa.String(20), nullable=True),
        sa.Column("source", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("action IN ('replace')", name="ck_gold_item_events_action"),
    )
    op.create_index("ix_gold_item_events_gold", "gold_item_events", ["gold_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_gold_item_events_gold", table_name="gold_item_events")
    op.drop_table("gold_item_events")
