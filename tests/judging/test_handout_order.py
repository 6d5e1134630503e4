"""Annotators judge blind: the hand-out order does not reveal gold items.

- Order: pool items are handed out with captions in a seeded pseudo-random order (not
  alphabetical), the items of one caption consecutive, their videos in a seeded order; the
  same for a given seed and pool on SQLite and PostgreSQL, whatever order the pool file lists
  its items in (a pool written alphabetically by an older fireval is handed out shuffled too).
- Gold items only between two captions' runs: in whole sessions at gold rates 0.25 and 0.5
  (fixed and drawn positions), no gold item is handed out between two pool items of the same
  caption, and no gold run directly follows another (no catch-up burst: the oracle below
  replays the position rule, :func:`fireval.judging.gold._gold_turn`, over the session's pool
  captions and checks each gold run starts where it says, at the first caption change
  after its turn that does not follow a gold run); the prefetch (``peek_next``) keeps
  predicting what the hand-out gives. (Gold captions as runs of several videos:
  ``test_gold_runs.py``.)
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from fireval.core import normalise
from fireval.judging.gold import GOLD_BASE, GoldPair, _gold_turn
from fireval.judging.pool import PoolItem, build_pool, read_pool, write_pool
from fireval.judging.store import Store


def _runs(seq: list[str]) -> list[int]:
    """Lengths of the runs of equal consecutive values."""
    out: list[int] = []
    for k, x in enumerate(seq):
        if k and x == seq[k - 1]:
            out[-1] += 1
        else:
            out.append(1)
    return out


def _first_seen(seq: list[str]) -> list[str]:
    return list(dict.fromkeys(seq))


@pytest.fixture(scope="module")
def small_pool(msrvtt):
    coll, runs = msrvtt
    return lambda seed: build_pool(coll, runs, depth=8, budget=60, seed=seed)


def test_pool_order_is_seeded_not_alphabetical_and_captions_stay_together(small_pool) -> None:
    pool = small_pool(3)
    caps = [normalise(it.caption) for it in pool.items]
    order = _first_seen(caps)
    assert len(order) == 60
    assert len(_runs(caps)) == len(order)  # each caption's items are consecutive
    assert order != sorted(order)  # not alphabetical
    # nor in some other fixed order of the captions: another seed gives another order
    other = small_pool(4)
    assert _first_seen([normalise(it.caption) for it in other.items]) != order
    # videos within a caption: not sorted in every caption (seeded order)
    by_cap: dict[str, list[str]] = {}
    for it in pool.items:
        by_cap.setdefault(normalise(it.caption), []).append(it.video_id)
    assert any(v != sorted(v) for v in by_cap.values() if len(v) > 2)
    # deterministic: the same seed, the same pool, the same order
    again = small_pool(3)
    assert [(it.caption, it.video_id) for it in again.items] == [
        (it.caption, it.video_id) for it in pool.items
    ]


def _handed_out(st: Store) -> list[tuple[str, str]]:
    """The whole pool as one annotator is given it (no gold items)."""
    a = st.add_annotator("order")[0].id
    out = []
    cur = st.next_item(a)
    while cur is not None:
        out.append((normalise(cur.caption), cur.video_id))
        cur = st.submit(a, cur.id, "relevant", claim_next=True).next
    return out


def test_loaded_pool_is_handed_out_in_seeded_order_on_each_backend(
    small_pool, store: Store, tmp_path: Path
) -> None:
    """A pool file listing its items alphabetically (as fireval wrote them before) is handed
    out in the seeded order all the same: the order is fixed by the seed and the items."""
    pool = small_pool(5)
    path = tmp_path / "pool.jsonl"
    write_pool(path, pool)
    lines = path.read_text(encoding="utf-8").splitlines()
    items = sorted(lines[1:], key=lambda s: (normalise(json.loads(s)["caption"]), json.loads(s)["video_id"]))
    path.write_text("\n".join([lines[0], *items]) + "\n", encoding="utf-8")
    assert [normalise(it.caption) for it in read_pool(path).items] == sorted(
        normalise(it.caption) for it in pool.items
    )
    st = store
    st.load_pool(path)
    got = _handed_out(st)
    assert got == [(normalise(it.caption), it.video_id) for it in pool.items]
    caps = [c for c, _ in got]
    assert len(_runs(caps)) == len(set(caps))
    assert _first_seen(caps) != sorted(set(caps))


def _gold_places(caps: list[str], rate: float, key: bytes | None, who: int, n_gold: int) -> list[int]:
    """Oracle: after how many of the session's pool items (captions ``caps``, in the order the
    annotator answered them) each gold run (here one item each) comes: at a place between two
    captions (or before the first, or after the last) where it is the run's turn by the position
    rule over gold runs and pool captions answered (:func:`_gold_turn`); at most one per place,
    so never two gold runs in a row."""
    places: list[int] = []
    for k in range(len(caps) + 1):
        boundary = k in (0, len(caps)) or caps[k] != caps[k - 1]
        if boundary and len(places) < n_gold and _gold_turn(len(places), len(set(caps[:k])), rate, key, who):
            places.append(k)
    return places


@pytest.mark.parametrize("rate", [0.25, 0.5])
@pytest.mark.parametrize("drawn", [False, True])
def test_gold_items_come_only_between_captions(store: Store, rate: float, drawn: bool) -> None:
    st = store
    rng = random.Random(int(rate * 100) + drawn)
    items = []
    for c in range(12):  # captions with 1 to 6 videos, some items double
        for v in range(rng.randint(1, 6)):
            items.append(PoolItem(f"a caption number {c}", [f"c{c}"], f"v{c}_{v}", {"A": 1}, double=v == 2))
    st.add_items(items, "T")
    n_gold = 40
    st.gold.load([GoldPair(f"gold {k}", f"g{k}", "relevant") for k in range(n_gold)])
    st.gold.rate = rate
    st.gold.key = b"the secret of the drawn positions" if drawn else None
    people = [st.add_annotator(f"a{k}")[0].id for k in range(2)]
    seen: dict[int, list[tuple[bool, str]]] = {a: [] for a in people}
    cur = {a: st.next_item(a) for a in people}
    predicted = 0
    while any(cur.values()):
        a = rng.choice([p for p in people if cur[p] is not None])
        item = cur[a]
        assert item is not None
        seen[a].append((item.id > GOLD_BASE, normalise(item.caption)))
        expected = st.peek_next(a)
        res = st.submit(a, item.id, rng.choice(["relevant", "irrelevant"]), claim_next=True)
        # the prefetch predicts the hand-out (nobody else moved in between)
        assert (res.next.video_id if res.next else None) == (expected.video_id if expected else None)
        predicted += res.next is not None
        cur[a] = res.next
    assert predicted > 0
    total_pool = 0
    for a, seq in seen.items():
        pool_caps = [(k, c) for k, (g, c) in enumerate(seq) if not g]
        total_pool += len(pool_caps)
        for (i, ci), (j, cj) in zip(pool_caps, pool_caps[1:]):
            if j > i + 1:  # gold items between two pool items: never within one caption's run
                assert ci != cj, f"annotator {a}: gold item between two items of {ci!r}"
        places = [sum(not g for g, _ in seq[:k]) for k, (g, _) in enumerate(seq) if g]
        assert places, a
        assert all(p2 > p1 for p1, p2 in zip(places, places[1:]))  # never two gold items in a row
        assert places == _gold_places([c for _, c in pool_caps], rate, st.gold.key, a, n_gold)
    assert total_pool == len(items) + sum(it.double for it in items)


def test_a_gold_item_due_mid_caption_waits_for_the_next_caption(store: Store) -> None:
    """Fixed rule at rate 0.5 (one gold run per pool caption): within a caption's run it
    waits, and comes as the next caption starts; the next one waits for another pool caption
    (no catch-up burst); the prefetch says so."""
    st = store
    st.add_items([PoolItem("first caption", ["c1"], f"v1_{k}", {"A": 1}) for k in range(3)], "T")
    st.add_items([PoolItem("second caption", ["c2"], f"v2_{k}", {"A": 1}) for k in range(2)], "T")
    st.gold.load([GoldPair(f"gold {k}", f"g{k}", "relevant") for k in range(5)])
    st.gold.rate = 0.5
    a = st.add_annotator("a")[0].id
    got = []
    cur = st.next_item(a)
    while cur is not None:
        got.append(cur.video_id)
        peek = st.peek_next(a)
        cur = st.submit(a, cur.id, "relevant", claim_next=True).next
        assert (peek.video_id if peek else None) == (cur.video_id if cur else None)
    # before: v1_0 v1_1 v1_2 g0 g1 g2 v2_0 v2_1 g3 g4 (deferred gold items caught up together)
    assert got == ["v1_0", "v1_1", "v1_2", "g0", "v2_0", "v2_1", "g1"]
