"""Gold answers behave like votes from the annotator's side (blind judging), on both backends.

The rules tested here (:mod:`fireval.judging.gold`, :mod:`fireval.judging.history`):

- the history lists gold answers with votes, in one order (newest answer or change first);
- a gold answer can be changed and undone exactly like a vote (same results, same refusals),
  and "undo my last answer" withdraws the newest answer whichever kind it is;
- an undone vote is shown again before a pending gold item, as it would be without gold;
- the annotator's own progress moves alike after a gold answer and a vote;
- gold accuracy counts the first answer only, and no gold answer, change, undo or flag reaches
  the votes, the aggregation or the export;
- revision 0008 migrates existing gold answers (a current answer and an ``answer`` event each)
  and downgrades.
"""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from fireval.judging import schema as S
from fireval.judging.errors import LabelConflictError, NotAssignedError
from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store

GOLD = [GoldPair("gold one", "g1", "relevant"), GoldPair("gold two", "g2", "irrelevant")]
G1, G2 = GOLD_BASE + 1, GOLD_BASE + 2


def _fill(st: Store, n: int = 8) -> int:
    st.add_items([PoolItem(f"pool {i}", [f"c{i}"], f"v{i}", {"RUN": 1}) for i in range(n)], "T")
    st.gold.load(GOLD)
    st.gold.rate = 0.25
    return st.add_annotator("ann")[0].id


def _answer_until_gold(st: Store, a: int, label: str = "irrelevant") -> list[int]:
    """Answer pool items until a gold item is shown; the ids answered and, last, the gold id."""
    done = []
    while True:
        it = st.next_item(a)
        assert it is not None
        done.append(it.id)
        if it.id > GOLD_BASE:
            return done
        assert st.submit(a, it.id, label).status == "created"


def _hist(st: Store, a: int) -> list[tuple[int, str, int]]:
    return [(h.item_id, h.label, h.changes) for h in st.history.recent(a, 50)]


def _votes(st: Store) -> dict:
    v = st.votes()
    return {k: v[k].tolist() for k in ("label_id", "item_id", "annotator_id", "label")}


def test_history_lists_gold_answers_like_votes_in_one_order(store: Store) -> None:
    a = _fill(store)
    seen = _answer_until_gold(store, a)  # 3 votes, then gold 1
    assert seen[-1] == G1 and len(seen) == 4
    g = store.submit(a, G1, "irrelevant")  # wrong: gold 1 is relevant
    assert g.status == "created"
    it = store.next_item(a)
    store.submit(a, it.id, "relevant")
    assert _hist(store, a) == [(it.id, "relevant", 0), (G1, "irrelevant", 0)] + [
        (i, "irrelevant", 0) for i in reversed(seen[:3])
    ]
    # every entry has the same fields and types, gold or not
    entries = store.history.recent(a, 50)
    shapes = {tuple((k, type(v).__name__) for k, v in e.as_json().items()) for e in entries}
    assert len(shapes) == 1
    times = [e.as_json()["answered_at"] for e in entries]  # milliseconds for both kinds
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", t) for t in times), times
    before = (_votes(store), store.fire_records(), store.status()["votes"])
    # a change moves the answer to the top, whichever kind; the gold answer keeps its answer id
    ch = store.history.change(a, G1, "relevant")
    assert (ch.status, ch.item_id, ch.label_id, ch.label, ch.previous) == (
        "changed",
        G1,
        g.label_id,
        "relevant",
        "irrelevant",
    )
    assert _hist(store, a)[:2] == [(G1, "relevant", 1), (it.id, "relevant", 0)]
    assert store.history.change(a, G1, "relevant").status == "unchanged"
    store.history.change(a, seen[0], "skip")  # a vote changed after the gold change
    assert _hist(store, a)[:3] == [(seen[0], "skip", 1), (G1, "relevant", 1), (it.id, "relevant", 0)]
    assert store.history.recent(a, 2)[1].item_id == G1  # the limit applies to the merged list
    # the first gold answer counts; the gold change reached no vote, record or count
    assert store.gold.accuracy()["ann"] == {"answered": 1, "correct": 0, "accuracy": 0.0}
    after_votes = _votes(store)
    assert G1 not in after_votes["item_id"]
    i0 = before[0]["item_id"].index(seen[0])
    before[0]["label"][i0] = "skip"  # the vote change is the only difference
    assert after_votes == before[0]


def test_undo_and_change_of_a_gold_answer_follow_the_rules_of_a_vote(store: Store) -> None:
    a = _fill(store)
    seen = _answer_until_gold(store, a)
    first = store.submit(a, G1, "relevant")  # correct
    assert store.undo(a) == G1  # the newest answer is the gold one
    assert store.next_item(a).id == G1  # shown again, as an undone vote is
    assert all(h[0] != G1 for h in _hist(store, a))  # withdrawn: not in the history, as a vote
    with pytest.raises(NotAssignedError, match=f"you have no answer for item {G1} to change"):
        store.history.change(a, G1, "irrelevant")
    again = store.submit(a, G1, "irrelevant")  # answered afresh
    assert again.status == "created"
    # numbered as a vote is: undo and answer the newest vote again; the numbers repeat (SQLite
    # gives the next id after the largest) or not (PostgreSQL's sequence) alike
    v_rows = store.votes()
    v_first = int(v_rows["label_id"][v_rows["item_id"] == seen[2]][0])
    assert store.undo(a, seen[2]) == seen[2]
    v_again = store.submit(a, seen[2], "irrelevant")
    assert v_again.status == "created"
    assert (again.label_id == first.label_id) == (v_again.label_id == v_first)
    assert (v_again.label_id == v_first) is (not store.is_postgres)
    assert store.submit(a, G1, "irrelevant").status == "duplicate"
    assert store.submit(a, G1, "irrelevant").label_id == again.label_id
    with pytest.raises(LabelConflictError, match=f"item {G1} already labelled 'irrelevant'; undo it first"):
        store.submit(a, G1, "relevant")
    assert _hist(store, a)[:2] == [(seen[2], "irrelevant", 0), (G1, "irrelevant", 0)]
    # a vote after it is the newest answer: undo takes the vote
    it = store.next_item(a)
    assert it.id < GOLD_BASE
    store.submit(a, it.id, "relevant")
    assert store.undo(a) == it.id and store.next_item(a).id == it.id
    # undo by item: the item, then nothing (None) for both kinds
    assert store.undo(a, G1) == G1 and store.undo(a, G1) is None
    assert store.undo(a, seen[0]) == seen[0] and store.undo(a, seen[0]) is None
    # the same refusal for both kinds after an undo
    for item in (G1, seen[0]):
        with pytest.raises(NotAssignedError, match=f"you have no answer for item {item} to change"):
            store.history.change(a, item, "skip")
    # accuracy: the first answer (correct) counts, not the later wrong one
    assert store.gold.accuracy()["ann"] == {"answered": 1, "correct": 1, "accuracy": 1.0}
    # the audit trail of the gold answer
    with store.db.reading() as conn:
        E = S.gold_events.c
        trail = conn.execute(
            sa.select(E.action, E.label, E.previous).where(E.gold_id == 1).order_by(E.id)
        ).all()
    assert [tuple(r) for r in trail] == [
        ("shown", None, None),
        ("answer", "relevant", None),
        ("withdraw", None, "relevant"),
        ("answer", "irrelevant", None),
        ("withdraw", None, "irrelevant"),
    ]
    assert G1 not in _votes(store)["item_id"]


def test_an_undone_vote_comes_before_a_pending_gold_item(store: Store) -> None:
    """Without gold items an undone vote is shown next; a pending gold item must not get in
    between (the annotator would see that the item on screen survived an undo)."""
    a = _fill(store)
    seen = _answer_until_gold(store, a)  # gold 1 is shown now, not answered
    last_vote = seen[-2]
    assert store.undo(a) == last_vote
    assert store.next_item(a).id == last_vote  # the undone vote, as without gold
    assert store.peek_next(a).id == G1  # and the gold item after it
    res = store.submit(a, last_vote, "relevant", claim_next=True)
    assert res.next is not None and res.next.id == G1
    assert store.next_item(a).id == G1


def test_own_progress_moves_alike_for_gold_and_votes(store: Store) -> None:
    a = _fill(store)
    seen = _answer_until_gold(store, a)
    steps = []

    def step(fn) -> None:  # type: ignore[no-untyped-def]
        p0 = store.progress(a)
        fn()
        p1 = store.progress(a)
        steps.append({k: p1[k] - p0[k] for k in p0})

    step(lambda: store.submit(a, G1, "relevant"))  # gold answer
    it = store.next_item(a)
    step(lambda: store.submit(a, it.id, "relevant"))  # vote
    step(lambda: store.undo(a, G1))
    step(lambda: store.undo(a, it.id))
    step(lambda: store.submit(a, G1, "skip"))
    step(lambda: store.submit(a, it.id, "skip"))
    assert steps == [
        {"needed": 0, "done": 1, "mine": 1},
        {"needed": 0, "done": 1, "mine": 1},
        {"needed": 0, "done": -1, "mine": -1},
        {"needed": 0, "done": -1, "mine": -1},
        {"needed": 0, "done": 0, "mine": 1},
        {"needed": 0, "done": 0, "mine": 1},
    ], steps
    assert len(seen) == 4


def test_flagging_an_answered_item_leaves_the_answer_standing_for_both_kinds(store: Store) -> None:
    a = _fill(store)
    seen = _answer_until_gold(store, a)
    store.submit(a, G1, "relevant")
    _, gold_res = store.flags.flag(a, G1, "from the history")
    _, pool_res = store.flags.flag(a, seen[0], "from the history")
    assert gold_res is None and pool_res is None
    assert _hist(store, a)[0][:2] == (G1, "relevant")


def test_migration_0008_keeps_gold_answers_and_their_order(store_url: str) -> None:
    from test_migration_0007 import downgrade

    from fireval.judging.engine import current_revision, make_engine

    st = Store(store_url)
    try:
        a = _fill(st)
        seen = _answer_until_gold(st, a)
        st.submit(a, G1, "irrelevant")
        it = st.next_item(a)
        st.submit(a, it.id, "relevant")
        expected = _hist(st, a)
        assert [h[0] for h in expected[:2]] == [it.id, G1] and len(expected) == len(seen) + 1
    finally:
        st.close()
    downgrade(store_url, "0007")
    eng = make_engine(store_url)
    try:
        assert current_revision(eng) == "0007"
        assert "gold_events" not in sa.inspect(eng).get_table_names()
        assert "current" not in {c["name"] for c in sa.inspect(eng).get_columns("gold_answers")}
        with eng.connect() as conn:  # the first answer is still there
            got = conn.execute(sa.text("SELECT label, correct FROM gold_answers")).all()
        assert [tuple(r) for r in got] == [("irrelevant", False)]
    finally:
        eng.dispose()
    st = Store(store_url)  # upgraded again: the data migration fills current and the trail
    st.gold.rate = 0.25
    try:
        assert st.revision == "0010"  # the head, past 0008
        assert _hist(st, a) == expected
        with st.db.reading() as conn:
            E = S.gold_events.c
            trail = conn.execute(sa.select(E.action, E.label).order_by(E.id)).all()
        assert [tuple(r) for r in trail] == [("shown", None), ("answer", "irrelevant")]
        assert st.undo(a) == it.id and st.undo(a) == G1  # newest first, across kinds
        assert st.next_item(a).id == G1
        assert st.gold.accuracy()["ann"]["answered"] == 1
    finally:
        st.close()


@pytest.mark.parametrize("labels", [("relevant", "relevant"), ("relevant", "irrelevant")])
def test_two_answers_to_one_gold_item_at_once_are_taken_in_turn(store: Store, labels) -> None:
    """As two answers to one vote sent at once: one is created, the other a duplicate (same
    answer) or a 409 (another one); never a storage error, one current answer, one number."""
    from concurrent.futures import ThreadPoolExecutor

    a = _fill(store)
    _answer_until_gold(store, a)

    def send(label: str) -> str:
        try:
            return store.submit(a, G1, label).status
        except LabelConflictError:
            return "conflict"

    for _ in range(5):
        with ThreadPoolExecutor(2) as pool:
            got = sorted(pool.map(send, labels))
        assert got == (["created", "duplicate"] if labels[0] == labels[1] else ["conflict", "created"])
        with store.db.reading() as conn:
            n = conn.execute(sa.select(sa.func.count()).select_from(S.gold_current)).scalar_one()
        assert n == 1
        assert store.undo(a, G1) == G1
