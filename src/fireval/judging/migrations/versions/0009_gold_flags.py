"""Flags for review raised on gold items (``gold_flags``).

Revision ID: 0009
Revises: 0008

Blind judging: an annotator cannot tell a gold (known-answer) item from a pool item, so they
flag both alike. A flag on a pool item is a ``flags`` row, whose ``item_id`` references
``items``; a gold item is not an item of the pool, so its flag gets a table of its own with the
same fields: ``gold_id``, ``annotator_id``, ``reason``, ``status`` (``open`` | ``resolved``),
``resolution`` (``discard``: the admin dismissed it, the known answer stands), ``resolved_by``,
``resolved_at``, ``created_at``. Until this revision a gold item's flag was recorded as a skip
only and its reason was lost: there is nothing to migrate.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gold_flags",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("gold_id", sa.Integer, sa.ForeignKey("gold_items.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "annotator_id", sa.Integer, sa.ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("resolution", sa.String(20), nullable=True),
        sa.Column("resolved_by", sa.Integer, nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('open', 'resolved')", name="ck_gold_flags_status"),
    )
    op.create_index("ix_gold_flags_status", "gold_flags", ["status", "id"])
    op.create_index("ix_gold_flags_pair", "gold_flags", ["gold_id", "annotator_id"])


def downgrade() -> None:
    op.drop_index("ix_gold_flags_pair", table_name="gold_flags")
    op.drop_index("ix_gold_flags_status", table_name="gold_flags")
    op.drop_table("gold_flags")
