"""The audit table records the kind of the label each event is about (``label_events.kind``).

Revision ID: 0007
Revises: 0006

Until this revision an audit event (``answer`` / ``change`` / ``withdraw``, revision 0005) did
not say whether its label was a ``vote`` or an ``adjudication`` (``labels.kind``, revision
0006); a reader had to join the *current* ``labels`` row, which is wrong for history: a
withdrawn label has no row any more, and on SQLite a new label may even reuse the withdrawn
row's id. From this revision on the audit triggers copy the kind into every event, in the same
transaction as the change, whichever code path made it (the ORM, the plain-SQL answer path of
:mod:`fireval.judging.handout`, the web's fast label path): ``answer`` and ``change`` record
``NEW.kind``, ``withdraw`` records ``OLD.kind``. A label's kind is set when it is inserted and
no fireval code updates it; the update trigger still fires on a change of ``label`` only.

Data migration (existing events), as well as it can be known, in this order:

1. An event whose label row still exists, is the same row (same id, item and annotator) and has
   not been withdrawn since (no ``withdraw`` event of that label id at or after the event) takes
   that row's kind: exact, since a kind never changes after the insert (for labels older than
   revision 0006 it is the kind 0006 inferred by its rule).
2. Other events (the label was withdrawn, or its item deleted) of an annotator whose role is
   ``annotator`` are ``vote``: only admins can write adjudications (``Store.adjudicate`` and the
   resolution of a flag check the role, and a role never changes).
3. The rest (an admin's label that no longer exists; an annotator no longer in the store) stay
   ``NULL``: not known. Readers show ``null``.

``kind`` is therefore nullable, with a check (``vote`` | ``adjudication``); events written from
this revision on always carry it. Downgrade drops the column and restores 0005's triggers.
SQLite: the triggers are dropped and recreated around the column change (SQLite refuses to drop
a column a trigger names); PostgreSQL replaces the trigger function.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_SQLITE_DROP = [f"DROP TRIGGER IF EXISTS trg_labels_audit_{name}" for name in ("insert", "update", "delete")]


def _sqlite_triggers(kind: bool) -> tuple[str, str, str]:
    """0005's triggers; with ``kind`` they also copy the label's kind into the event."""
    col, new, old = (", kind", ", NEW.kind", ", OLD.kind") if kind else ("", "", "")
    cols = f"label_id, item_id, annotator_id, action, label, previous, created_at{col}"
    return (
        f"""CREATE TRIGGER trg_labels_audit_insert AFTER INSERT ON labels BEGIN
      INSERT INTO label_events ({cols})
      VALUES (NEW.id, NEW.item_id, NEW.annotator_id, 'answer', NEW.label, NULL, NEW.created_at{new});
    END""",
        f"""CREATE TRIGGER trg_labels_audit_update AFTER UPDATE OF label ON labels
    WHEN NEW.label IS NOT OLD.label BEGIN
      INSERT INTO label_events ({cols})
      VALUES (NEW.id, NEW.item_id, NEW.annotator_id, 'change', NEW.label, OLD.label,
              strftime('%Y-%m-%d %H:%M:%f000', 'now'){new});
    END""",
        f"""CREATE TRIGGER trg_labels_audit_delete AFTER DELETE ON labels BEGIN
      INSERT INTO label_events ({cols})
      VALUES (OLD.id, OLD.item_id, OLD.annotator_id, 'withdraw', NULL, OLD.label,
              strftime('%Y-%m-%d %H:%M:%f000', 'now'){old});
    END""",
    )


def _pg_function(kind: bool) -> str:
    """0005's trigger function; with ``kind`` it also copies the label's kind into the event."""
    col, new, old = (", kind", ", NEW.kind", ", OLD.kind") if kind else ("", "", "")
    cols = f"label_id, item_id, annotator_id, action, label, previous, created_at{col}"
    return f"""CREATE OR REPLACE FUNCTION fireval_labels_audit() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO label_events ({cols})
    VALUES (NEW.id, NEW.item_id, NEW.annotator_id, 'answer', NEW.label, NULL, NEW.created_at{new});
  ELSIF TG_OP = 'UPDATE' THEN
    IF NEW.label IS DISTINCT FROM OLD.label THEN
      INSERT INTO label_events ({cols})
      VALUES (NEW.id, NEW.item_id, NEW.annotator_id, 'change', NEW.label, OLD.label, clock_timestamp(){new});
    END IF;
  ELSE
    INSERT INTO label_events ({cols})
    VALUES (OLD.id, OLD.item_id, OLD.annotator_id, 'withdraw', NULL, OLD.label, clock_timestamp(){old});
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql"""


# step 1 of the data migration: the kind of the same, still existing, never since withdrawn row
FILL_FROM_LABELS = """
UPDATE label_events SET kind = (
  SELECT l.kind FROM labels l
  WHERE l.id = label_events.label_id
    AND l.item_id = label_events.item_id
    AND l.annotator_id = label_events.annotator_id
)
WHERE NOT EXISTS (
  SELECT 1 FROM label_events w
  WHERE w.label_id = label_events.label_id AND w.action = 'withdraw' AND w.id >= label_events.id
)
"""

# step 2: a label of an annotator who is no admin was a vote
FILL_VOTES = """
UPDATE label_events SET kind = 'vote'
WHERE kind IS NULL AND annotator_id IN (SELECT id FROM annotators WHERE role <> 'admin')
"""


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.add_column("label_events", sa.Column("kind", sa.String(20), nullable=True))
        op.create_check_constraint("ck_label_events_kind", "label_events", "kind IN ('vote', 'adjudication')")
    else:
        for stmt in _SQLITE_DROP:
            op.execute(stmt)
        op.execute(
            "ALTER TABLE label_events ADD COLUMN kind VARCHAR(20) "
            "CONSTRAINT ck_label_events_kind CHECK (kind IN ('vote', 'adjudication'))"
        )
    op.execute(FILL_FROM_LABELS)
    op.execute(FILL_VOTES)
    if postgres:
        op.execute(_pg_function(kind=True))
    else:
        for stmt in _sqlite_triggers(kind=True):
            op.execute(stmt)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_pg_function(kind=False))
        op.drop_constraint("ck_label_events_kind", "label_events", type_="check")
        op.drop_column("label_events", "kind")
    else:
        for stmt in _SQLITE_DROP:
            op.execute(stmt)
        op.execute("ALTER TABLE label_events DROP COLUMN kind")
        for stmt in _sqlite_triggers(kind=False):
            op.execute(stmt)
