"""Gold answers can be withdrawn and changed like votes, with an audit trail (``gold_events``).

Revision ID: 0008
Revises: 0007

Blind judging: an annotator's undo and change of an answer must behave the same for a gold
(known-answer) item as for a pool item, so a gold answer needs what a vote has: a *current*
answer that undo withdraws and a change replaces, and an append-only record of each step.

- ``gold_answers.current`` (new, nullable): the annotator's current answer; ``NULL`` while the
  item is shown and not answered, or after the answer was withdrawn (the item is then shown
  again, as an undone pool item is). ``gold_answers.label`` / ``correct`` / ``answered_at`` /
  ``time_spent_ms`` keep meaning the *first* answer, the one gold accuracy counts
  (:mod:`fireval.judging.gold`); no fireval code changes them once set.
- ``gold_events`` (new, append-only, written by :mod:`fireval.judging.gold` in the same
  transaction as the change): ``shown`` (the item was handed to the annotator) / ``answer`` /
  ``change`` (``previous`` holds the old answer) / ``withdraw`` (``previous`` holds the
  withdrawn answer), with the gold answer row, gold item,
  annotator, time, and ``after_event``: the id of the annotator's latest ``label_events`` row
  when the event was written (0: none), which places gold and pool events of one annotator in
  one order without comparing clocks (the history and "undo my last answer" merge the two).
- ``gold_current`` (new): one row per current gold answer, inserted by the answer and deleted
  by its undo, whose ``id`` numbers the answer (the annotator sees it only as an opaque answer
  handle, :mod:`fireval.web.handles`). A vote is numbered by its ``labels`` row, which undo
  deletes too: the two numberings follow the same rule on each backend (SQLite gives a new row
  the next id after the largest, so an undone and re-given answer may get its old number back;
  PostgreSQL's sequence never repeats), so whether a re-given answer's handle repeats does not
  tell a gold item from a pool item.

Data migration: ``current`` = ``label`` (and a ``gold_current`` row, in answer order); one ``shown`` event per gold row (time ``shown_at``)
and one ``answer`` event per answered one (time ``answered_at``), in time order, each with
``after_event`` from the annotator's audit events up to its time. Downgrade drops both (the first answers stay in ``gold_answers``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("gold_answers", sa.Column("current", sa.String(20), nullable=True))
    op.create_table(
        "gold_events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "answer_id", sa.Integer, sa.ForeignKey("gold_answers.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("gold_id", sa.Integer, nullable=False),
        sa.Column("annotator_id", sa.Integer, nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("label", sa.String(20), nullable=True),
        sa.Column("previous", sa.String(20), nullable=True),
        sa.Column("after_event", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "action IN ('shown', 'answer', 'change', 'withdraw')", name="ck_gold_events_action"
        ),
    )
    op.create_index("ix_gold_events_annotator", "gold_events", ["annotator_id", "id"])
    op.create_index("ix_gold_events_answer", "gold_events", ["answer_id"])
    op.create_table(
        "gold_current",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "answer_id", sa.Integer, sa.ForeignKey("gold_answers.id", ondelete="CASCADE"), nullable=False
        ),
        sa.UniqueConstraint("answer_id", name="uq_gold_current_answer"),
    )
    op.execute("UPDATE gold_answers SET current = label")
    op.execute(
        "INSERT INTO gold_current (answer_id) SELECT id FROM gold_answers "
        "WHERE label IS NOT NULL ORDER BY answered_at, id"
    )
    after = (
        "COALESCE((SELECT MAX(e.id) FROM label_events e "
        "WHERE e.annotator_id = ga.annotator_id AND e.created_at <= {t}), 0)"
    )
    op.execute(
        "INSERT INTO gold_events "
        "(answer_id, gold_id, annotator_id, action, label, previous, after_event, created_at) "
        "SELECT answer_id, gold_id, annotator_id, action, label, NULL, after_event, t FROM ("
        "SELECT ga.id AS answer_id, ga.gold_id, ga.annotator_id, 'shown' AS action, NULL AS label, "
        f"{after.format(t='ga.shown_at')} AS after_event, ga.shown_at AS t, 0 AS o FROM gold_answers ga "
        "UNION ALL "
        "SELECT ga.id, ga.gold_id, ga.annotator_id, 'answer', ga.label, "
        f"{after.format(t='ga.answered_at')}, ga.answered_at, 1 FROM gold_answers ga "
        "WHERE ga.label IS NOT NULL AND ga.answered_at IS NOT NULL"
        ") ev ORDER BY t, o, answer_id"
    )


def downgrade() -> None:
    op.drop_table("gold_current")
    op.drop_index("ix_gold_events_answer", table_name="gold_events")
    op.drop_index("ix_gold_events_annotator", table_name="gold_events")
    op.drop_table("gold_events")
    with op.batch_alter_table("gold_answers") as batch:
        batch.drop_column("current")
