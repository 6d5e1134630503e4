"""Revision 0006: the kind of a label is stored; a 0005 store is migrated by the old rule (both backends)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from fireval.judging.aggregate import IRRELEVANT, RELEVANT
from fireval.judging.engine import MIGRATIONS, current_revision, make_engine, migrate
from fireval.judging.pool import PoolItem
from fireval.judging.schema import SCHEMA_HEAD
from fireval.judging.store import Store

# (annotator id, role): 1-3 annotators, 9 an admin
PEOPLE = [(1, "a", "annotator"), (2, "b", "annotator"), (3, "c", "annotator"), (9, "boss", "admin")]
# item -> [(annotator, label)], in label-id order; the expected kind of each row after 0006
LABELS = {
    1: [(1, "relevant"), (2, "irrelevant"), (9, "relevant")],  # tie of two, admin decides: adjudication
    2: [(9, "relevant")],  # admin labels a fresh item: a vote
    3: [(1, "relevant"), (2, "relevant"), (9, "irrelevant")],  # no tie: the admin votes
    4: [(1, "relevant"), (2, "irrelevant"), (9, "skip")],  # a skip is no vote under either reading
    5: [(1, "relevant"), (2, "irrelevant"), (3, "relevant"), (9, "irrelevant")],  # 2-1: a vote
    6: [(1, "irrelevant"), (2, "relevant"), (3, "skip"), (9, "irrelevant")],  # tie (skip aside)
}
ADJUDICATION_ROWS = {(1, 9), (6, 9)}


def build_0005(url: str) -> None:
    eng = make_engine(url)
    assert migrate(eng, "0005") == "0005"
    with eng.begin() as conn:
        for aid, name, role in PEOPLE:
            conn.execute(
                sa.text(
                    "INSERT INTO annotators (id, name, token_hash, role, active, created_at) "
                    "VALUES (:id, :n, :h, :r, :t, CURRENT_TIMESTAMP)"
                ),
                {"id": aid, "n": name, "h": f"h{aid}", "r": role, "t": True},
            )
        lid = 0
        for item, votes in LABELS.items():
            conn.execute(
                sa.text(
                    "INSERT INTO items (id, dataset, caption, norm_caption, caption_ids, video_id, runs, "
                    "models, is_double, needed, open_slots, created_at) VALUES (:i, 'T', :c, :c, '[]', :v, "
                    "'{}', '[]', :f, 2, 0, CURRENT_TIMESTAMP)"
                ),
                {"i": item, "c": f"caption {item}", "v": f"v{item}", "f": False},
            )
            for aid, label in votes:
                lid += 1
                conn.execute(
                    sa.text(
                        "INSERT INTO assignments (id, item_id, annotator_id, done, created_at, updated_at) "
                        "VALUES (:id, :i, :a, :t, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                    ),
                    {"id": lid, "i": item, "a": aid, "t": True},
                )
                conn.execute(
                    sa.text(
                        "INSERT INTO labels (id, item_id, annotator_id, assignment_id, label, created_at) "
                        "VALUES (:id, :i, :a, :id, :l, CURRENT_TIMESTAMP)"
                    ),
                    {"id": lid, "i": item, "a": aid, "l": label},
                )
    eng.dispose()


def kinds(st: Store) -> dict[tuple[int, int], str]:
    with st.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT item_id, annotator_id, kind FROM labels")).all()
    return {(r.item_id, r.annotator_id): r.kind for r in rows}


def test_upgrade_from_0005_marks_adjudications_by_the_old_rule(store_url: str) -> None:
    build_0005(store_url)
    st = Store(store_url)  # upgrades to 0006 (and on to the head)
    try:
        assert st.revision == SCHEMA_HEAD
        got = kinds(st)
        assert {k for k, v in got.items() if v == "adjudication"} == ADJUDICATION_ROWS
        assert set(got.values()) == {"vote", "adjudication"}
        # the data migration wrote no audit event: one "answer" per label copied in by 0005
        events = st.history.events()
        assert len(events) == sum(map(len, LABELS.values())) and {e["action"] for e in events} == {"answer"}
        ids, counts = st.vote_counts()
        dec = dict(zip(ids.tolist(), counts.decisions().tolist()))
        # item 1 decided by the adjudication, 2 and 3 by votes (the admin votes there), 6 adjudicated
        assert dec[1] == RELEVANT and dec[2] == RELEVANT and dec[3] == RELEVANT and dec[6] == IRRELEVANT
        assert counts.n.tolist() == [2, 1, 3, 2, 4, 2]
        ann, dis = st.fire_records()
        by_video = {r["video_id"]: r for r in ann + dis}
        assert 9 not in by_video["v1"]["annotator_ids"] and 9 in by_video["v3"]["annotator_ids"]
        # the database refuses a kind outside the enum
        with pytest.raises(sa.exc.IntegrityError), st.engine.begin() as conn:
            conn.execute(sa.text("UPDATE labels SET kind = 'expert' WHERE id = 1"))
    finally:
        st.close()


def test_new_adjudications_and_flag_resolutions_are_stored_as_such(store_url: str) -> None:
    st = Store(store_url)
    try:
        st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}, i == 0) for i in range(3)], "T")
        a, b = (st.add_annotator(n)[0] for n in ("a", "b"))
        boss = st.add_annotator("boss", "admin")[0]
        first = st.next_item(a.id)
        st.submit(a.id, first.id, "relevant")
        assert st.next_item(b.id).id == first.id  # the double item's second vote
        st.submit(b.id, first.id, "irrelevant")
        st.adjudicate(boss.id, first.id, "irrelevant")
        other = st.next_item(a.id)
        st.flags.flag(a.id, other.id, "unsure")  # a's answer becomes a skip
        st.flags.resolve_flagged(boss.id, other.id, "relevant")
        got = kinds(st)
        assert got == {
            (first.id, a.id): "vote",
            (first.id, b.id): "vote",
            (first.id, boss.id): "adjudication",
            (other.id, a.id): "vote",
            (other.id, boss.id): "adjudication",
        }
        v = st.votes()
        assert v["adjudication"].tolist() == [False, False, True, False, True]
        ids, counts = st.vote_counts()
        dec = dict(zip(ids.tolist(), counts.decisions().tolist()))
        assert dec[first.id] == IRRELEVANT and dec[other.id] == RELEVANT
        assert counts.adjudicated().sum() == 2 and st.status()["agreement"]["adjudicated"] == 2
    finally:
        st.close()


def test_downgrade_to_0005_and_upgrade_again(store_url: str) -> None:
    from alembic import command
    from alembic.config import Config

    build_0005(store_url)
    Store(store_url).close()
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    eng = make_engine(store_url)
    with eng.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0005")
    assert current_revision(eng) == "0005"
    cols = {c["name"] for c in sa.inspect(eng).get_columns("labels")}
    assert "kind" not in cols
    assert "guidelines_seen" not in {c["name"] for c in sa.inspect(eng).get_columns("annotators")}
    with eng.begin() as conn:  # the audit triggers survived the column drop
        conn.execute(sa.text("UPDATE labels SET label = 'irrelevant' WHERE id = 1"))
        n = conn.execute(sa.text("SELECT count(*) FROM label_events WHERE action = 'change'")).scalar_one()
    assert n == 1
    eng.dispose()
    st = Store(store_url)
    try:
        # item 1's votes are now irrelevant, irrelevant: no tie, so the admin's label there is a vote
        got = kinds(st)
        assert {k for k, v in got.items() if v == "adjudication"} == {(6, 9)}
    finally:
        st.close()
