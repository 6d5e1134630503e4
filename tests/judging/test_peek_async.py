"""PostgreSQL: the prefetch's one-statement peek (``Store.peek_next_async``, ``GET /api/peek``
on the event loop) answers what ``Store.peek_next`` answers, in every state a random session of
three annotators reaches (double items, ties, skips, undo, lease expiry; gold items mixed in at
several rates, at fixed or drawn positions, gold answers changed and undone, a vote undone
while a gold item is pending), writes nothing, and refuses a session that is not live.

The oracles: ``Store.peek_next`` (tested against the hand-out in tests/web/test_annotate_prefetch.py)
and, right before an answer, the item the hand-out then actually gives.
"""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

import pytest
import sqlalchemy as sa

from fireval.judging import schema as S
from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(store_url: str):
    if not store_url.startswith("postgresql"):
        pytest.skip("the one-statement peek is PostgreSQL's")
    st = Store(store_url)
    yield st
    st.close()


def _rows(st: Store) -> list:
    with st.db.reading() as conn:
        return [
            sorted(tuple(r) for r in conn.execute(sa.select(t))) for t in (S.items, S.assignments, S.labels)
        ]


@pytest.mark.parametrize(
    ("seed", "rate", "per_caption", "gold_per_caption"),
    [(0, 0.0, 1, 1), (1, 0.0, 1, 1), (2, 0.0, 1, 1), (3, 0.25, 1, 1), (4, 0.5, 1, 1), (5, 1.0, 1, 1)]
    + [(6, 0.4, 1, 1)]
    # several videos per caption: gold items wait for the next caption (gold.caption_boundary)
    + [(7, 0.25, 4, 1), (8, 0.5, 3, 1), (9, 0.5, 4, 1), (10, 1.0, 2, 1)]
    # gold captions with several pairs: gold runs as long as pool runs (gold.plan_runs)
    + [(11, 0.5, 3, 3), (12, 0.5, 4, 5), (13, 1.0, 2, 2), (14, 0.25, 3, 4)],
)
def test_one_statement_peek_equals_peek_next(
    pg_store: Store, seed: int, rate: float, per_caption: int, gold_per_caption: int
) -> None:
    st = pg_store
    rng = random.Random(seed)
    st.add_items(
        [
            PoolItem(f"caption {k // per_caption}", [f"c{k}"], f"v{k}", {"A": 1}, double=k % 3 == 0)
            for k in range(16)
        ],
        "T",
    )
    if rate > 0:
        n = 6 * gold_per_caption
        st.gold.load(
            [
                GoldPair(f"gold {k // gold_per_caption}", f"g{k}", ("relevant", "irrelevant")[k % 2])
                for k in range(n)
            ]
        )
    st.gold.rate = rate
    if seed % 2:  # gold positions drawn with a secret (the web app's), decided in Python
        st.gold.key = b"a secret of the drawn gold positions"
    people = [st.add_annotator(f"a{k}")[0].id for k in range(3)]
    sids = {a: st.open_session(a, timedelta(hours=1)) for a in people}
    assert st.can_peek_async()

    async def session() -> tuple[int, int]:
        compared = predicted = 0
        for _ in range(70):
            a = rng.choice(people)
            r = rng.random()
            if r < 0.08:
                st.undo(a)
                continue
            if r < 0.10 and rate > 0:  # a gold answer changed or undone by item (from the history)
                mine = [h for h in st.history.recent(a, 50) if h.item_id > GOLD_BASE]
                if mine:
                    h = rng.choice(mine)
                    if rng.random() < 0.5:
                        st.history.change(a, h.item_id, rng.choice(["relevant", "irrelevant", "skip"]))
                    else:
                        st.undo(a, h.item_id)
                continue
            if r < 0.11:
                st.release_stale(timedelta(0))
                continue
            for who in people:  # every annotator's peek, in whatever state they are
                before = _rows(st)
                live, video = await st.peek_next_async(sids[who])
                expected = st.peek_next(who)
                assert live and video == (expected.video_id if expected else None)
                assert _rows(st) == before  # read only
                compared += 1
            cur = st.next_item(a)
            if cur is None:
                continue
            _, video = await st.peek_next_async(sids[a])
            label = rng.choice(["relevant", "irrelevant", "relevant", "irrelevant", "skip"])
            res = st.submit(a, cur.id, label, claim_next=True)
            if video is not None and res.next is not None:
                # nobody else moved in between: the prediction is what the hand-out gave
                assert res.next.video_id == video
                predicted += 1
        return compared, predicted

    compared, predicted = asyncio.run(session())
    assert compared > 100 and predicted > 10
    if rate > 0:  # gold items were shown and answered
        with st.db.reading() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(S.gold_answers)).scalar_one() > 0
            if gold_per_caption > 1:  # runs of several gold videos of one caption were shown
                GA, G = S.gold_answers.c, S.gold_items.c
                per_run = sa.select(sa.func.count()).select_from(
                    S.gold_answers.join(S.gold_items, G.id == GA.gold_id)
                )
                longest = max(conn.execute(per_run.group_by(GA.annotator_id, G.caption)).scalars())
                assert longest >= 2


def test_one_statement_peek_with_a_pending_gold_item_and_an_undone_vote(pg_store: Store) -> None:
    """The states of ``Store._peek``'s gold rules, built on purpose: a pending gold item shown
    now (the newest open item follows), a vote undone after it became pending (the undone item
    is shown now, the gold item next), and a gold item due after the next answer."""
    st = pg_store
    st.add_items([PoolItem(f"caption {k}", [f"c{k}"], f"v{k}", {"A": 1}) for k in range(8)], "T")
    st.gold.load([GoldPair(f"gold {k}", f"g{k}", "relevant") for k in range(3)])
    st.gold.rate = 0.5
    a = st.add_annotator("a")[0].id
    sid = st.open_session(a, timedelta(hours=1))

    async def peek() -> str | None:
        live, video = await st.peek_next_async(sid)
        assert live
        return video

    def same() -> str | None:
        want = st.peek_next(a)
        got = asyncio.run(peek())
        assert got == (want.video_id if want else None)
        return got

    assert same() is None  # shown nothing yet
    first = st.next_item(a)
    assert first is not None and first.id < GOLD_BASE
    assert same() == "g0"  # the first gold item is due after one answer
    st.submit(a, first.id, "relevant")
    gold = st.next_item(a)
    assert gold is not None and gold.id > GOLD_BASE
    assert same() == "v1"  # a pending gold item shown now: the next pool item follows
    assert st.undo(a) == first.id  # a vote undone while the gold item is pending
    assert st.next_item(a).id == first.id  # the undone item comes first ...
    assert same() == "g0"  # ... and the pending gold item after it
    st.submit(a, first.id, "irrelevant")
    assert st.next_item(a).id == gold.id
    st.submit(a, gold.id, "relevant")
    assert st.undo(a) == gold.id  # the gold answer undone: pending again, shown next
    assert same() == st.peek_next(a).video_id


def test_one_statement_peek_refuses_a_session_that_is_not_live(pg_store: Store) -> None:
    st = pg_store
    st.add_items([PoolItem("caption", ["c"], "v", {"A": 1})], "T")
    a, _ = st.add_annotator("a")
    sid = st.open_session(a.id, timedelta(hours=1))
    st.next_item(a.id)

    async def peek(s: str) -> tuple[bool, str | None]:
        return await st.peek_next_async(s)

    assert asyncio.run(peek(sid)) == (True, None)  # shown the only item: nothing follows
    assert asyncio.run(peek("not-a-session")) == (False, None)
    assert asyncio.run(peek("")) == (False, None)
    assert asyncio.run(peek("x" * 10_000)) == (False, None)
    st.end_session(sid)
    assert asyncio.run(peek(sid)) == (False, None)


@pytest.mark.parametrize("gold_rate", [0.0, 0.5])
def test_the_page_prefetch_uses_the_one_statement_peek(pg_store: Store, gold_rate: float) -> None:
    """``GET /api/peek`` on PostgreSQL, with or without gold items, through the one-statement
    peek (the thread-pool path is made to fail here) with what ``peek_next`` says, and 401 for
    a session that has ended."""
    import re

    from fastapi.testclient import TestClient

    from fireval.web.app import WebConfig, create_app

    st = pg_store
    st.add_items([PoolItem(f"caption {k}", [f"c{k}"], f"v{k}", {"A": 1}) for k in range(3)], "T")
    if gold_rate:
        st.gold.load([GoldPair("gold", "g0", "relevant")])
    ann, token = st.add_annotator("ann")
    app = create_app(
        WebConfig(db_url=st.url, dataset="T", video_url_template="/media/{video_id}.mp4", gold_rate=gold_rate)
    )
    st.gold.rate = gold_rate  # this test's own store object predicts as the app's does
    with TestClient(app) as c:
        page = c.get("/login").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        c.post("/login", data={"token": token, "csrf_token": csrf}, follow_redirects=False)
        shown = c.get("/api/next").json()["item"]
        expected = st.peek_next(ann.id)
        assert shown is not None and expected is not None
        # with gold items, one of the two is the gold item (rate 0.5: every other item)
        assert ("/media/g0.mp4" in (shown["video_url"], f"/media/{expected.video_id}.mp4")) == bool(gold_rate)

        def no_thread_path(*_args: object, **_kw: object) -> None:
            raise AssertionError("the peek went through the thread pool")

        app.state.store.peek_next = no_thread_path
        app.state.store.peek_in_session = no_thread_path
        r = c.get("/api/peek")
        assert r.status_code == 200 and r.json() == {"video_url": f"/media/{expected.video_id}.mp4"}
        st.revoke_sessions(ann.id)
        assert c.get("/api/peek").status_code == 401


def test_one_statement_peek_with_two_votes_undone_while_a_gold_item_is_pending(pg_store: Store) -> None:
    """Two votes undone after a gold item became pending: both undone items come before it,
    the newest first; the peek predicts each step (the hand-out is the oracle)."""
    st = pg_store
    st.add_items([PoolItem(f"caption {k}", [f"c{k}"], f"v{k}", {"A": 1}) for k in range(8)], "T")
    st.gold.load([GoldPair(f"gold {k}", f"g{k}", "relevant") for k in range(2)])
    st.gold.rate = 0.25  # fixed positions: the first gold item after three answers
    a = st.add_annotator("a")[0].id
    sid = st.open_session(a, timedelta(hours=1))

    def peek() -> str | None:
        live, video = asyncio.run(st.peek_next_async(sid))
        assert live
        want = st.peek_next(a)
        assert video == (want.video_id if want else None)
        return video

    for k in range(3):
        it = st.next_item(a)
        assert it is not None and it.video_id == f"v{k}"
        st.submit(a, it.id, "relevant")
    assert st.next_item(a).video_id == "g0"  # pending now
    assert st.undo(a) == 3 and st.undo(a) == 2  # two votes undone while g0 is pending
    shown = []
    for _ in range(4):
        predicted = peek()
        it = st.next_item(a)
        assert it is not None
        shown.append(it.video_id)
        st.submit(a, it.id, "irrelevant")
        after = st.next_item(a)
        assert predicted == (after.video_id if after else None)
    assert shown == ["v1", "v2", "g0", "v3"]
