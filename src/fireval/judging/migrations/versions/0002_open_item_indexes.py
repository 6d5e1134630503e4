"""Partial indexes over open items so handing out work stays O(log n) as the queue drains.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

OPEN = "open_slots > 0"
PRIORITY = "open_slots > 0 AND needed > 1"


def upgrade() -> None:
    op.drop_index("ix_items_open", table_name="items")
    op.create_index(
        "ix_items_open_id", "items", ["id"], sqlite_where=sa.text(OPEN), postgresql_where=sa.text(OPEN)
    )
    op.create_index(
        "ix_items_priority_id",
        "items",
        ["id"],
        sqlite_where=sa.text(PRIORITY),
        postgresql_where=sa.text(PRIORITY),
    )


def downgrade() -> None:
    op.drop_index("ix_items_priority_id", table_name="items")
    op.drop_index("ix_items_open_id", table_name="items")
    op.create_index("ix_items_open", "items", ["open_slots", "id"])
