"""A claim's cost does not grow with the annotator's history.

The claim must skip items the annotator already has an assignment for. Written as
``id NOT IN (SELECT item_id FROM assignments WHERE annotator_id = ?)`` it read every assignment
the annotator ever had on each claim (PostgreSQL: a hashed subplan over all of them; SQLite: a
list built from all of them), about 1.8 ms at 5,000 assignments and growing. Written as a
correlated ``NOT EXISTS`` on the unique (item_id, annotator_id) index, each candidate item costs
one index probe, whatever the history.

Measured here as work, not time: on PostgreSQL the assignment rows and index entries the
claim's transaction read (``pg_stat_xact_*``, this transaction's own counters), on SQLite the
virtual machine instructions the claim statement ran (``set_progress_handler``), each for a
history of a few assignments and of several thousand.
"""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from fireval.judging.annotators import hash_token
from fireval.judging.engine import Driver, now
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store

LONG = 4000  # assignments in the long history
FRESH = 50  # items nobody has touched, after the history


def _annotators_with_history(store: Store) -> tuple[int, int]:
    """Two annotators, one who has answered 3 items and one who has answered ``LONG``, all of
    them closed, with ``FRESH`` open items after them in pool order; their ids."""
    n = LONG + FRESH
    store.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}) for i in range(n)], "B")
    short, _ = store.add_annotator("short")
    long, _ = store.add_annotator("long")
    with store.engine.begin() as conn:
        ids = [r[0] for r in conn.exec_driver_sql("SELECT id FROM items ORDER BY id")]
        for who, history in ((short.id, 3), (long.id, LONG)):
            conn.execute(
                sa.text(
                    "INSERT INTO assignments (item_id, annotator_id, done, created_at, updated_at) "
                    "SELECT id, :a, :done, created_at, created_at FROM items WHERE id <= :cut"
                ),
                {"a": who, "done": True, "cut": ids[history - 1]},
            )
        conn.execute(sa.text("UPDATE items SET open_slots = 0 WHERE id <= :cut"), {"cut": ids[LONG - 1]})
    if store.is_postgres:
        with store.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE items")
            conn.exec_driver_sql("ANALYZE assignments")
    return short.id, long.id


_PG_ASSIGNMENT_READS = """
SELECT COALESCE(pg_stat_get_xact_tuples_returned('assignments'::regclass), 0)
     + COALESCE((SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index
                  WHERE indrelid = 'assignments'::regclass), 0)
"""


def _claim_work(store: Store, aid: int) -> int:
    """Work of one claim for ``aid``: PostgreSQL, assignment rows and index entries read by the
    web app's one-statement answer + claim (``PG_SUBMIT_FUNCTION``), less those read by the same
    answer without a claim; SQLite, VM instructions of the claim statement."""
    h = store.handout
    if not store.is_postgres:
        count = [0]

        def tick() -> int:
            count[0] += 1
            return 0

        with store.db.reading() as conn:
            raw = conn.connection.dbapi_connection
            raw.set_progress_handler(tick, 1)  # type: ignore[union-attr]
            try:
                row = Driver(conn)(h._sql.next_candidate, (aid, False, aid, aid)).fetchone()
            finally:
                raw.set_progress_handler(None, 1)  # type: ignore[union-attr]
        assert row is not None and row[0] == 2  # a fresh item: the claim ran to its last branch
        return count[0]
    sid = store.open_session(aid, timedelta(hours=1))
    reads = []
    for claim in (False, True):
        first = h.next_item(aid)  # an item to answer (the first fresh one, then the next)
        assert first is not None
        with store.engine.begin() as conn:
            x = Driver(conn)
            row = x(
                h._sql.pg_submit, (hash_token(sid), now(), first.id, "relevant", 1, "vote", claim)
            ).fetchone()
            assert row[0] == "created"
            if claim:
                assert row[4] == 2  # claimed a fresh item
            reads.append(int(x(_PG_ASSIGNMENT_READS).fetchone()[0]))
    return reads[1] - reads[0]


def test_claim_cost_does_not_grow_with_the_annotators_history(store: Store) -> None:
    short, long = _annotators_with_history(store)
    small, big = _claim_work(store, short), _claim_work(store, long)
    if store.is_postgres:
        assert big < 40, f"a claim read {big} assignment entries with a history of {LONG:,}"
    else:  # the NOT IN claim: several instructions more per assignment of the history
        assert big < small + 400, f"claim: {small} VM instructions with 3 assignments, {big} with {LONG:,}"
