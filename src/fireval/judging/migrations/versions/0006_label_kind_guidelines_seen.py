"""The kind of a label is stored (``vote`` | ``adjudication``); which guideline each annotator saw.

Revision ID: 0006
Revises: 0005

- ``labels.kind``: ``vote`` (an independent answer) or ``adjudication`` (an admin's decision,
  :meth:`fireval.judging.store.Store.adjudicate` or the resolution of a flag; it decides an item
  the votes leave undecided and is never a vote). ``NOT NULL DEFAULT 'vote'`` with a check.
  Until this revision the kind was inferred at read time by a rule: a ``relevant``/``irrelevant``
  label of an *admin* on an item whose labels by non-admins are ``relevant``/``irrelevant``
  votes that tie with at least two of them (``n >= 2`` and ``2r = n``). The data migration marks
  exactly the existing rows that rule selects (an admin's ``skip`` on such an item, which the
  rule also matched, is no vote under either reading and stays ``vote``), so every count, α and
  export is the same before and after the upgrade.
- ``annotators.guidelines_seen`` (sha256 of the guideline text the annotator last acknowledged,
  NULL: never) and ``guidelines_seen_at``: the guideline is shown at an annotator's first login
  ever and again once when the campaign's guideline changes (:mod:`fireval.judging.seen`).

SQLite adds the column with ``ALTER TABLE ... ADD COLUMN`` (a column check constraint is
allowed there; a batch table copy would drop the audit triggers of revision 0005). The audit
triggers only fire on a change of ``label``, so the data migration writes no audit events.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# the pre-0006 rule (fireval.judging.aggregate.adjudications until November 2026), in SQL
MARK_ADJUDICATIONS = """
UPDATE labels SET kind = 'adjudication'
WHERE label IN ('relevant', 'irrelevant')
  AND annotator_id IN (SELECT id FROM annotators WHERE role = 'admin')
  AND item_id IN (
    SELECT l.item_id FROM labels l JOIN annotators a ON a.id = l.annotator_id
    WHERE a.role <> 'admin' AND l.label IN ('relevant', 'irrelevant')
    GROUP BY l.item_id
    HAVING COUNT(*) >= 2 AND 2 * SUM(CASE WHEN l.label = 'relevant' THEN 1 ELSE 0 END) = COUNT(*)
  )
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.add_column(
            "labels", sa.Column("kind", sa.String(20), nullable=False, server_default=sa.text("'vote'"))
        )
        op.create_check_constraint("ck_labels_kind", "labels", "kind IN ('vote', 'adjudication')")
    else:
        op.execute(
            "ALTER TABLE labels ADD COLUMN kind VARCHAR(20) NOT NULL DEFAULT 'vote' "
            "CONSTRAINT ck_labels_kind CHECK (kind IN ('vote', 'adjudication'))"
        )
    op.execute(MARK_ADJUDICATIONS)
    op.add_column("annotators", sa.Column("guidelines_seen", sa.String(64), nullable=True))
    op.add_column("annotators", sa.Column("guidelines_seen_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("annotators", "guidelines_seen_at")
    op.drop_column("annotators", "guidelines_seen")
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("ck_labels_kind", "labels", type_="check")
        op.drop_column("labels", "kind")
    else:
        op.execute("ALTER TABLE labels DROP COLUMN kind")
