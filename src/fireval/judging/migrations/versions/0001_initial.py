"""Initial annotation store: annotators, items, assignments, labels.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "annotators",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IN ('annotator', 'admin')", name="ck_annotators_role"),
    )
    op.create_table(
        "items",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("dataset", sa.String(100), nullable=False),
        sa.Column("caption", sa.Text, nullable=False),
        sa.Column("norm_caption", sa.Text, nullable=False),
        sa.Column("caption_ids", sa.Text, nullable=False),
        sa.Column("video_id", sa.String(300), nullable=False),
        sa.Column("runs", sa.Text, nullable=False),
        sa.Column("models", sa.Text, nullable=False),
        sa.Column("is_double", sa.Boolean, nullable=False),
        sa.Column("needed", sa.Integer, nullable=False),
        sa.Column("open_slots", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("dataset", "norm_caption", "video_id", name="uq_items_pair"),
    )
    op.create_index("ix_items_open", "items", ["open_slots", "id"])
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "annotator_id", sa.Integer, sa.ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("done", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("item_id", "annotator_id", name="uq_assignments_pair"),
    )
    op.create_index("ix_assignments_annotator", "assignments", ["annotator_id", "done"])
    op.create_table(
        "labels",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "annotator_id", sa.Integer, sa.ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column(
            "assignment_id", sa.Integer, sa.ForeignKey("assignments.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("label", sa.String(20), nullable=False),
        sa.Column("time_spent_ms", sa.Integer, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("item_id", "annotator_id", name="uq_labels_pair"),
        sa.CheckConstraint("label IN ('relevant', 'irrelevant', 'skip')", name="ck_labels_label"),
    )
    op.create_index("ix_labels_item", "labels", ["item_id"])
    op.create_index("ix_labels_created", "labels", ["created_at"])


def downgrade() -> None:
    op.drop_table("labels")
    op.drop_table("assignments")
    op.drop_table("items")
    op.drop_table("annotators")
