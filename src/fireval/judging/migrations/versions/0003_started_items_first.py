"""Hand out items someone else has started (second vote of a double, tie-breaker) first.

Revision 0002 put every item needing more than one vote first, so a lone annotator worked
through all double-annotation items (none of which they can complete) before any single one.
The priority index now covers only items that still need another person *and* already have a
vote or a claim (``open_slots < needed``); fresh double items wait their turn in pool order.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

STARTED = "open_slots > 0 AND open_slots < needed"
PRIORITY_0002 = "open_slots > 0 AND needed > 1"


def upgrade() -> None:
    op.drop_index("ix_items_priority_id", table_name="items")
    op.create_index(
        "ix_items_started_id",
        "items",
        ["id"],
        sqlite_where=sa.text(STARTED),
        postgresql_where=sa.text(STARTED),
    )


def downgrade() -> None:
    op.drop_index("ix_items_started_id", table_name="items")
    op.create_index(
        "ix_items_priority_id",
        "items",
        ["id"],
        sqlite_where=sa.text(PRIORITY_0002),
        postgresql_where=sa.text(PRIORITY_0002),
    )
