"""Server-side login sessions: a session ends when its row is deleted (logout, revocation).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column(
            "annotator_id", sa.Integer, sa.ForeignKey("annotators.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_sessions_annotator", "sessions", ["annotator_id"])


def downgrade() -> None:
    op.drop_index("ix_sessions_annotator", table_name="sessions")
    op.drop_table("sessions")
