"""Annotation store: FIRE assignment scheme, idempotence, undo, adjudication, concurrency, migrations.

Runs on SQLite and, with FIREVAL_PG_URL set (marker ``postgres``), on PostgreSQL.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import sqlalchemy as sa

from fireval.core import Collection
from fireval.judging.pool import PoolItem
from fireval.judging.schema import SCHEMA_HEAD
from fireval.judging.store import (
    InvalidLabelError,
    LabelConflictError,
    NotAssignedError,
    Store,
    UnknownItemError,
    current_revision,
    hash_token,
    make_engine,
    migrate,
    store_judgments,
)


def items(n: int, double: set[int] = frozenset()) -> list[PoolItem]:
    return [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}, i in double) for i in range(n)]


@pytest.fixture
def store(store_url: str):
    st = Store(store_url)
    yield st
    st.close()


def test_migration_and_token_hash(store: Store) -> None:
    assert store.revision == SCHEMA_HEAD == "0003" and current_revision(store.engine) == "0003"
    ann, token = store.add_annotator("alice")
    with store.engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT token_hash FROM annotators")).scalar_one()
    assert stored == hash_token(token) and token not in stored
    assert store.authenticate(token) == ann and store.authenticate(token + "x") is None
    # migrating again is a no-op
    again = Store(store.url)
    assert again.revision == "0003"
    again.close()


def test_upgrade_from_first_revision_keeps_data(store_url: str) -> None:
    eng = make_engine(store_url)
    assert migrate(eng, "0001") is not None and current_revision(eng) == "0001"
    with eng.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO items (id, dataset, caption, norm_caption, caption_ids, video_id, runs, models, "
                "is_double, needed, open_slots, created_at) VALUES (1, 'T', 'A b', 'a b', '[]', 'v', '{}', '[]', "
                ":f, 1, 1, CURRENT_TIMESTAMP)"
            ),
            {"f": False},
        )
    eng.dispose()
    st = Store(store_url)
    assert st.revision == "0003"
    names = {ix["name"] for ix in sa.inspect(st.engine).get_indexes("items")}
    assert {"ix_items_open_id", "ix_items_started_id"} <= names
    assert "ix_items_open" not in names and "ix_items_priority_id" not in names
    a, _ = st.add_annotator("a")
    assert st.next_item(a.id).caption == "A b"
    st.close()


def test_unmigrated_store_is_refused_without_upgrade(tmp_path) -> None:
    from fireval.core import FirevalError

    with pytest.raises(FirevalError, match="schema revision None"):
        Store(f"sqlite:///{tmp_path / 'new.db'}", upgrade=False)


def test_submit_claims_next_in_same_call(store: Store) -> None:
    store.add_items(items(3), "T")
    a, _ = store.add_annotator("a")
    first = store.next_item(a.id)
    res = store.submit(a.id, first.id, "relevant", claim_next=True)
    assert res.next is not None and res.next.id != first.id
    assert store.next_item(a.id).id == res.next.id  # it is now the open assignment


def test_single_double_and_tie_breaker(store: Store) -> None:
    store.add_items(items(2, double={1}), "T")
    a, _ = store.add_annotator("a")
    b, _ = store.add_annotator("b")
    c, _ = store.add_annotator("c")
    got_a = store.next_item(a.id)
    assert got_a.id == 1  # pool order: a fresh double item is not preferred
    assert store.next_item(a.id).id == 1  # the open assignment is shown again, not a new one
    store.submit(a.id, 1, "irrelevant")
    assert store.next_item(a.id).id == 2
    store.submit(a.id, 2, "relevant")
    assert store.next_item(a.id) is None  # nobody sees an item twice
    assert store.next_item(b.id).id == 2
    store.submit(b.id, 2, "irrelevant")  # tie -> a third vote is needed
    assert store.next_item(b.id) is None
    third = store.next_item(c.id)
    assert third.id == 2
    store.submit(c.id, 2, "relevant")
    assert store.next_item(c.id) is None
    ann, dis = store.fire_records()
    assert {(r["query"], r["label"]) for r in ann} == {("caption 0", "irrelevant"), ("caption 1", "relevant")}
    assert dis == []
    rec = next(r for r in ann if r["query"] == "caption 1")
    assert rec["annotator_ids"] == [a.id, b.id, c.id]
    assert rec["annotator_labels"] == ["relevant", "irrelevant", "relevant"]
    assert len(set(rec["queue_ids"])) == 3 and rec["models"] == ["A"]


def test_lone_annotator_gets_pool_order_and_started_items_come_first(store: Store) -> None:
    # pool of 6 items; ids 2 and 4 were sampled for double annotation
    store.add_items(items(6, double={1, 3}), "T")
    a, _ = store.add_annotator("a")
    b, _ = store.add_annotator("b")
    c, _ = store.add_annotator("c")

    def work(user_id: int, n: int, label: str = "relevant") -> list[int]:
        seen = []
        for _ in range(n):
            it = store.next_item(user_id)
            seen.append(it.id)
            store.submit(user_id, it.id, label)
        return seen

    # a lone annotator works in pool order: fresh double items do not jump the queue
    assert work(a.id, 3) == [1, 2, 3]
    assert store.status()["complete"] == 2  # items 1 and 3; item 2 waits for a second person
    # the next annotator first finishes what a started (item 2), then goes on in pool order
    assert work(b.id, 3, "irrelevant") == [2, 4, 5]
    # item 2 now ties: its tie-breaker (and b's double item 4) come before the fresh item 6
    assert store.next_item(c.id).id == 2
    assert store.next_item(a.id).id == 4  # a cannot break the tie on item 2, but can finish item 4


def test_skip_returns_item_to_queue(store: Store) -> None:
    store.add_items(items(1), "T")
    a, _ = store.add_annotator("a")
    b, _ = store.add_annotator("b")
    store.next_item(a.id)
    assert store.next_item(b.id) is None  # the single slot is taken
    store.submit(a.id, 1, "skip")
    assert store.next_item(b.id).id == 1


def test_idempotent_conflict_undo(store: Store) -> None:
    store.add_items(items(2), "T")
    a, _ = store.add_annotator("a")
    it = store.next_item(a.id)
    first = store.submit(a.id, it.id, "relevant", 1200)
    again = store.submit(a.id, it.id, "relevant", 1300)
    assert first.status == "created" and again.status == "duplicate" and again.label_id == first.label_id
    assert store.votes()["label_id"].size == 1
    with pytest.raises(LabelConflictError):
        store.submit(a.id, it.id, "irrelevant")
    assert store.undo(a.id) == it.id
    assert store.votes()["label_id"].size == 0
    assert store.next_item(a.id).id == it.id  # the undone item is shown again
    store.submit(a.id, it.id, "irrelevant")
    assert store.votes()["label"].tolist() == ["irrelevant"]


def test_rejections_change_nothing(store: Store) -> None:
    store.add_items(items(2), "T")
    a, _ = store.add_annotator("a")
    b, _ = store.add_annotator("b")
    it = store.next_item(a.id)
    with pytest.raises(InvalidLabelError):
        store.submit(a.id, it.id, "maybe")
    with pytest.raises(UnknownItemError):
        store.submit(a.id, 999, "relevant")
    with pytest.raises(NotAssignedError):
        store.submit(b.id, it.id, "relevant")
    assert store.votes()["label_id"].size == 0


def test_adjudication(store: Store) -> None:
    store.add_items(items(1, double={0}), "T")
    a, _ = store.add_annotator("a")
    b, _ = store.add_annotator("b")
    boss, _ = store.add_annotator("boss", "admin")
    for u, lab in ((a, "relevant"), (b, "irrelevant")):
        store.submit(u.id, store.next_item(u.id).id, lab)
    assert [d["item_id"] for d in store.disagreements()] == [1]
    assert store.fire_records()[1][0]["annotator_labels"] == ["relevant", "irrelevant"]
    with pytest.raises(NotAssignedError):
        store.adjudicate(a.id, 1, "relevant")
    store.adjudicate(boss.id, 1, "irrelevant")
    assert store.disagreements() == []
    ann, dis = store.fire_records()
    assert ann[0]["label"] == "irrelevant" and dis == []
    st = store.status()
    assert st["agreement"]["irrelevant"] == 1 and st["complete"] == 1


def test_concurrent_claims_never_overassign(store: Store) -> None:
    n_items, n_users = 30, 8
    store.add_items(items(n_items, double=set(range(0, n_items, 3))), "T")
    users = [store.add_annotator(f"u{i}")[0] for i in range(n_users)]
    errors: list[BaseException] = []

    def work(uid: int) -> None:
        try:
            for _ in range(n_items):
                it = store.next_item(uid)
                if it is None:
                    return
                store.submit(uid, it.id, "relevant")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(u.id,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    v = store.votes()
    per_item = np.bincount(v["item_id"], minlength=n_items + 1)[1:]
    expected = np.array([2 if i % 3 == 0 else 1 for i in range(n_items)])
    assert np.array_equal(per_item, expected)
    pairs = set(zip(v["item_id"].tolist(), v["annotator_id"].tolist()))
    assert len(pairs) == v["item_id"].size  # nobody labelled an item twice


def test_store_judgments_maps_repeated_texts(store_url: str) -> None:
    coll = Collection.from_pairs(
        "toy", [("q0", "v0", "A dog!"), ("q1", "v1", "a dog"), ("q2", "v2", "a cat"), ("q3", "v3", "x")]
    )
    st = Store(store_url)
    st.add_items(
        [
            PoolItem("A dog!", ["q0", "q1"], "v2", {"A": 1}),
            PoolItem("a cat", ["q2"], "v0", {"A": 2, "B": 1}, double=True),
            PoolItem("x", [], "v1", {"B": 3}),
            PoolItem("a cat", ["q2"], "v9", {"B": 3}),  # video not in the collection
        ],
        "toy",
    )
    a, _ = st.add_annotator("a")
    b, _ = st.add_annotator("b")
    labels = {1: "relevant", 2: "relevant", 3: "irrelevant", 4: "relevant"}
    while (it := st.next_item(a.id)) is not None:
        st.submit(a.id, it.id, labels[it.id])
    st.submit(b.id, st.next_item(b.id).id, "irrelevant")  # item 2 becomes a tie
    st.close()
    j = store_judgments(store_url, coll)
    got = {(int(r), int(c), float(g)) for r, c, g in zip(j.rows, j.cols, j.grades)}
    assert got == {(0, 2, 1.0), (1, 2, 1.0), (3, 1, 0.0)}  # x has no ids: joined by text
    assert j.sources == ("human",)
    assert j.unresolved.tolist() == [[2, 0]]
    assert j.details[(0, 2)]["models"] == ["A"]


def test_group_commit_isolates_a_failing_operation(tmp_path) -> None:
    """Two operations committed in one group: the one that raises after writing leaves no trace."""
    st = Store(f"sqlite:///{tmp_path / 'g.db'}")
    gate, started = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def insert(name: str, fail: bool):
        def op(conn):
            conn.execute(
                sa.text(
                    "INSERT INTO annotators (name, token_hash, role, active, created_at) "
                    "VALUES (:n, :h, 'annotator', 1, CURRENT_TIMESTAMP)"
                ),
                {"n": name, "h": hash_token(name)},
            )
            if fail:
                raise ValueError("boom")
            return name

        return op

    def blocker(conn):
        started.set()
        gate.wait(10)
        return "first"

    def call(key, op):
        try:
            results[key] = st._write(op)
        except ValueError as exc:
            results[key] = exc

    t0 = threading.Thread(target=call, args=("first", blocker))
    t0.start()
    started.wait(10)  # the writer is now busy inside the first group
    ta = threading.Thread(target=call, args=("bad", insert("bad", True)))
    tb = threading.Thread(target=call, args=("good", insert("good", False)))
    ta.start()
    tb.start()
    time.sleep(0.3)  # both are queued behind the first group
    gate.set()
    for t in (t0, ta, tb):
        t.join(10)
    assert results["first"] == "first" and results["good"] == "good"
    assert isinstance(results["bad"], ValueError)
    assert [a.name for a in st.annotators()] == ["good"]
    st.close()


def test_release_stale_assignments(store: Store) -> None:
    from datetime import timedelta

    store.add_items(items(1), "T")
    a, _ = store.add_annotator("a")
    b, _ = store.add_annotator("b")
    assert store.next_item(a.id).id == 1
    assert store.next_item(b.id) is None
    assert store.release_stale(timedelta(hours=1)) == 0  # still fresh
    assert store.release_stale(timedelta(seconds=-1)) == 1
    assert store.next_item(b.id).id == 1
    store.submit(b.id, 1, "relevant")
    assert store.release_stale(timedelta(seconds=-1)) == 0  # answered assignments stay
    assert store.votes()["label_id"].size == 1


def test_status_survives_an_item_added_between_its_reads(store: Store, monkeypatch) -> None:
    """The admin page reads votes, then items; an item queued in between (explorer) must not
    make the per-item arrays disagree in length."""
    store.add_items(items(2), "T")
    a, _ = store.add_annotator("a")
    store.submit(a.id, store.next_item(a.id).id, "relevant")
    real_votes = store.votes

    def votes_then_a_concurrent_add() -> dict:
        v = real_votes()
        store.add_items([PoolItem("late", ["cl"], "vl", {"A": 1})], "T")
        return v

    monkeypatch.setattr(store, "votes", votes_then_a_concurrent_add)
    st = store.status()
    assert (st["items"], st["complete"], st["votes"], st["votes_needed"]) == (3, 1, 1, 3)
    ann, dis = store.fire_records()
    assert [r["query"] for r in ann] == ["caption 0"] and dis == []
