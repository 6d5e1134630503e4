"""Gold items come as caption runs that look like the pool's (blind judging, :mod:`fireval.judging.gold`).

A pool caption reaches a lone annotator as one run of videos (:func:`fireval.judging.pool.handout_order`);
a gold caption must do the same, with a run length drawn from the same distribution, and gold
runs must not come in bursts. Tested here:

- :func:`fireval.judging.gold.plan_runs`: run lengths drawn among the pool's per-caption run
  lengths; a gold caption too small for the drawn length gives a shorter run (never a pair
  without a known answer);
- whole sessions on both backends: each gold caption is one run of its videos, of a planned
  length, starting only between two pool captions, never right after another gold run; the
  prefetch (:meth:`~fireval.judging.store.Store.peek_next`) predicts every hand-out; gold
  answers are scored on the first answer;
- a statistical oracle (written from what an annotator observes, not from the code): over
  simulated lone-annotator sessions with a fixed seed and key, a classifier that sees only
  the hand-out (run length of an item's caption, the run lengths around it, the item's place
  in its run, runs directly after a run of the same kind) separates gold from pool no better
  than chance within a stated tolerance. On the hand-out before gold runs (one gold pair per
  caption, deferred gold items catching up together) the same check fails (AUC 0.0 on run
  length; bursts of gold runs).
"""

from __future__ import annotations

import random

import pytest

from fireval.core import normalise
from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store


class _Row:
    def __init__(self, i: int, caption: str) -> None:
        self.id, self.caption, self.video_id = i, caption, f"x{i}"


def test_plan_runs_draw_lengths_from_the_pool_and_never_invent_pairs() -> None:
    from fireval.judging.gold import plan_runs

    groups = [[_Row(10 * g + k, f"gold {g}") for k in range(size)] for g, size in enumerate([9, 2, 9, 9, 1])]
    lengths = [3, 3, 4, 7]
    plan = plan_runs(groups, lengths, b"key", 5)
    runs: dict[int, list[int]] = {}
    for gid, r in zip(plan.ids, plan.run):
        runs.setdefault(r, []).append(gid)
    assert len(runs) == len(groups)  # one run per gold caption
    every = {x.id for g in groups for x in g}
    assert set(plan.ids) <= every and len(plan.ids) == len(set(plan.ids))  # known pairs only, once
    for ids in runs.values():
        assert len({i // 10 for i in ids}) == 1  # one caption per run, its videos in id order
        assert ids == sorted(ids)
    sizes = [len(ids) for ids in runs.values()]
    # the three large captions give drawn lengths; the small ones (2 and 1 videos) fall short
    assert sorted(sizes)[-3:] == sorted(s for s in sizes if s >= 3) and all(
        s in lengths for s in sizes if s >= 3
    )
    # deterministic in the key and annotator; another annotator draws otherwise (somewhere)
    assert plan_runs(groups, lengths, b"key", 5).ids == plan.ids
    assert any(plan_runs(groups, lengths, b"key", w).run != plan.run for w in range(6, 16))
    # no pool: whole captions
    assert plan_runs(groups, [], None, 1).ids == [x.id for g in groups for x in g]


def _plan_by_definition(groups, lengths, key, who):  # type: ignore[no-untyped-def]
    """plan_runs' docstring, step by step, in the plainest O(m^2) form: the annotator's caption
    order (keyed HMAC of the normalised caption), then per run r a drawn length (keyed HMAC of
    ``run:r``), the first unused caption with at least that many videos, else the first of the
    largest unused ones."""
    import hashlib
    import hmac

    def draw(what: str) -> int:
        mac = hmac.new(key or b"", f"{int(who)}:{what}".encode(), hashlib.sha256).digest()
        return int.from_bytes(mac[:8], "big")

    left = list(range(len(groups)))
    if key is not None:
        left.sort(key=lambda g: (draw("caption:" + normalise(str(groups[g][0].caption))), g))
    ids, runs, r = [], [], 0
    while left:
        want = lengths[draw(f"run:{r}") % len(lengths)] if lengths else None
        fit = [g for g in left if want is None or len(groups[g]) >= want]
        pick = fit[0] if fit else max(left, key=lambda g: len(groups[g]))
        left.remove(pick)
        take = groups[pick] if want is None else groups[pick][:want]
        ids += [x.id for x in take]
        runs += [r] * len(take)
        r += 1
    return ids, runs


@pytest.mark.parametrize("seed", range(40))
def test_plan_runs_equals_its_definition(seed: int) -> None:
    """The cursor-based plan_runs (near-linear in the gold captions) gives exactly the plan of
    the definition, with sizes that tie, captions too small for every length, repeated lengths,
    no pool, and no key."""
    from fireval.judging.gold import plan_runs

    rng = random.Random(seed)
    m = rng.randint(1, 60)
    groups = [
        [
            _Row(1000 * g + k, f"gold {g} {rng.random():.3f}")
            for k in range(rng.choice([1, 1, 2, 3, 5, 8, 20]))
        ]
        for g in range(m)
    ]
    lengths = (
        [] if seed % 7 == 0 else sorted(rng.choice([1, 2, 3, 4, 6, 9, 21]) for _ in range(rng.randint(1, 12)))
    )
    key = None if seed % 5 == 0 else f"key {seed}".encode()
    who = rng.randint(1, 10**6)
    plan = plan_runs(groups, lengths, key, who)
    assert (plan.ids, plan.run) == _plan_by_definition(groups, lengths, key, who)


def _caption_order(plan) -> list[str]:  # type: ignore[no-untyped-def]
    """The gold captions of a plan in the order they are used."""
    out: list[str] = []
    for row in plan.rows:
        if not out or out[-1] != row.caption:
            out.append(row.caption)
    return out


def test_each_annotator_has_their_own_keyed_order_of_gold_captions() -> None:
    from fireval.judging.gold import plan_runs

    groups = [[_Row(100 * g + k, f"gold {g}") for k in range(6)] for g in range(8)]
    lengths = [2, 3, 5]
    orders = {who: _caption_order(plan_runs(groups, lengths, b"fixed secret", who)) for who in range(1, 7)}
    for order in orders.values():  # every gold caption once, as one run
        assert sorted(order) == sorted(f"gold {g}" for g in range(8))
    assert orders[1] != orders[2]  # two annotators: two orders
    assert len({tuple(o) for o in orders.values()}) >= 5  # (8! orders: nearly all differ)
    # not load order for most annotators (load order is what every annotator had before)
    assert sum(o == [f"gold {g}" for g in range(8)] for o in orders.values()) <= 1
    # stable for one annotator and secret; another secret gives another order
    assert _caption_order(plan_runs(groups, lengths, b"fixed secret", 1)) == orders[1]
    assert _caption_order(plan_runs(groups, lengths, b"another secret", 1)) != orders[1]
    # keyed by the caption, not by load position: loading more captions keeps the others' order
    more = groups + [[_Row(9000 + k, "gold extra") for k in range(6)]]
    assert [c for c in _caption_order(plan_runs(more, [6], b"fixed secret", 1)) if c != "gold extra"] == (
        _caption_order(plan_runs(groups, [6], b"fixed secret", 1))
    )
    # no key (no server secret): load order
    assert _caption_order(plan_runs(groups, lengths, None, 1)) == [f"gold {g}" for g in range(8)]


def test_annotators_are_shown_gold_captions_in_different_orders(store: Store) -> None:
    """Both backends: the hand-out follows each annotator's keyed order; recomputed (another
    server process with the same secret) the order is the same."""
    from fireval.judging.gold import Gold

    st = store
    rng = random.Random(5)
    st.add_items(_pool(rng, 24, 2, 4), "T")
    st.gold.load(_gold(10, 3))
    st.gold.rate = 0.5
    st.gold.key = b"fixed secret of the gold order"
    people = [st.add_annotator(f"a{k}")[0].id for k in range(2)]
    shown: dict[int, list[str]] = {a: [] for a in people}
    cur = {a: st.next_item(a) for a in people}
    while any(cur.values()):  # the two annotators take turns at random over one pool
        a = rng.choice([p for p in people if cur[p] is not None])
        item = cur[a]
        assert item is not None
        if item.id > GOLD_BASE and (not shown[a] or shown[a][-1] != item.caption):
            shown[a].append(item.caption)
        cur[a] = st.submit(a, item.id, "relevant", claim_next=True).next
    for a in people:
        assert len(shown[a]) >= 3, shown
        plan_order = _caption_order(st.gold.plan(a))
        assert shown[a] == plan_order[: len(shown[a])]  # the hand-out follows the plan's order
        other = Gold(st.gold.db)  # a fresh instance (another process): the same plan
        other.key = st.gold.key
        assert _caption_order(other.plan(a)) == plan_order
    n = min(len(v) for v in shown.values())  # the same order would give a common prefix
    assert shown[people[0]][:n] != shown[people[1]][:n], shown


def _runs(seq: list[tuple[bool, str]]) -> list[tuple[bool, str, int]]:
    """Maximal runs of consecutive items with the same caption: ``(gold, caption, length)``."""
    out: list[list] = []
    for g, c in seq:
        if out and out[-1][1] == c:
            assert out[-1][0] == g, "a run mixes gold and pool items"
            out[-1][2] += 1
        else:
            out.append([g, c, 1])
    return [tuple(r) for r in out]  # type: ignore[misc]


def _pool(rng: random.Random, n_captions: int, lo: int, hi: int) -> list[PoolItem]:
    return [
        PoolItem(f"pool caption {c}", [f"c{c}"], f"v{c}_{v}", {"A": 1})
        for c in range(n_captions)
        for v in range(rng.randint(lo, hi))
    ]


def _gold(n_captions: int, size: int) -> list[GoldPair]:
    return [
        GoldPair(f"gold caption {c}", f"g{c}_{v}", ("relevant", "irrelevant")[(c + v) % 2])
        for c in range(n_captions)
        for v in range(size)
    ]


@pytest.mark.parametrize("rate", [0.2, 0.5])
def test_gold_captions_come_as_whole_planned_runs(store: Store, rate: float) -> None:
    st = store
    rng = random.Random(int(rate * 10))
    items = _pool(rng, 14, 1, 6)
    st.add_items(items, "T")
    st.gold.load(_gold(12, 7))
    st.gold.rate = rate
    st.gold.key = b"a secret of the gold positions"
    people = [st.add_annotator(f"a{k}")[0].id for k in range(2)]
    seen: dict[int, list[tuple[bool, str]]] = {a: [] for a in people}
    cur = {a: st.next_item(a) for a in people}
    while any(cur.values()):
        a = rng.choice([p for p in people if cur[p] is not None])
        item = cur[a]
        assert item is not None
        seen[a].append((item.id > GOLD_BASE, normalise(item.caption)))
        expected = st.peek_next(a)
        res = st.submit(a, item.id, "relevant", claim_next=True)
        assert (res.next.video_id if res.next else None) == (expected.video_id if expected else None)
        cur[a] = res.next
    pool_lengths = {
        n for n in (sum(1 for it in items if it.caption == f"pool caption {c}") for c in range(14)) if n
    }
    for a, seq in seen.items():
        runs = _runs(seq)
        gold_runs = [r for r in runs if r[0]]
        assert gold_runs, a
        caps = [c for g, c, _ in runs if g]
        assert len(caps) == len(set(caps))  # each gold caption once, as one run
        plan = st.gold.plan(a)
        for k, (g, c, n) in enumerate(runs):
            if not g:
                continue
            assert k == 0 or not runs[k - 1][0], "a gold run right after another"
            assert n in pool_lengths or n == 7  # a drawn pool length (or the whole caption, 7)
            assert plan.run.count(plan.run[plan.ids.index(_first_gold(st, a, c))]) == n  # the planned run
        pool_caps = [c for g, c, _ in runs if not g]
        assert len(pool_caps) == len(set(pool_caps)) or len(people) > 1
    # accuracy counts the first answers: all "relevant", half the gold answers are right
    acc = st.gold.accuracy()
    assert {n for n in acc} == {"a0", "a1"} and all(d["answered"] > 0 for d in acc.values())


def _first_gold(st: Store, annotator: int, caption: str) -> int:
    plan = st.gold.plan(annotator)
    return next(g for g, row in zip(plan.ids, plan.rows) if normalise(row.caption) == caption)


# ---------------------------------------------------------------- the statistical oracle


def _auc(pos: list[float], neg: list[float]) -> float:
    """Mann-Whitney AUC: P(score of a gold case > a pool case) + P(tie) / 2 (brute force)."""
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def _session(tmp_path, k: int, rate: float) -> list[tuple[bool, str]]:  # type: ignore[no-untyped-def]
    """One lone annotator's whole hand-out (SQLite), a pool with runs of 2..8 videos per caption
    and a gold set whose captions have more videos than any pool run."""
    rng = random.Random(1000 + k)
    st = Store(f"sqlite:///{tmp_path / f'session{k}.db'}")
    try:
        st.add_items(_pool(rng, 30, 2, 8), "T")
        st.gold.load(_gold(30, 10))
        st.gold.rate = rate
        st.gold.key = f"session secret {k}".encode()
        a = st.add_annotator(f"ann{k}")[0].id
        seq = []
        cur = st.next_item(a)
        while cur is not None:
            seq.append((cur.id > GOLD_BASE, normalise(cur.caption)))
            cur = st.submit(a, cur.id, rng.choice(["relevant", "irrelevant"]), claim_next=True).next
        return seq
    finally:
        st.close()


#: |AUC - 0.5| allowed: about 3 standard deviations of the AUC of two samples of this size
#: from one distribution (sqrt((n1 + n2 + 1) / (12 n1 n2)) ~ 0.045 for ~55 gold and ~120 pool runs)
TOLERANCE = 0.15


def observe(tmp_path, sessions: range, rate: float = 0.3) -> dict:  # type: ignore[no-untyped-def]
    """What an observer of the hand-out can measure over ``sessions`` (one store each): gold and
    pool run counts, the gold share of items, the AUC of each feature, runs right after a run of
    the same kind."""
    runs: list[tuple[bool, int, int, int]] = []  # gold, length, previous run's, next run's
    items: list[tuple[bool, int, int]] = []  # gold, its run's length, place in the run
    after_same = {True: 0, False: 0}
    for k in sessions:
        rs = _runs(_session(tmp_path, k, rate))
        for j, (g, _, n) in enumerate(rs):
            prev = rs[j - 1][2] if j else 0
            nxt = rs[j + 1][2] if j + 1 < len(rs) else 0
            runs.append((g, n, prev, nxt))
            items += [(g, n, p) for p in range(n)]
            if j and rs[j - 1][0] == g:
                after_same[g] += 1
    gold = [r for r in runs if r[0]]
    pool = [r for r in runs if not r[0]]
    gi = [i for i in items if i[0]]
    pi = [i for i in items if not i[0]]
    aucs = {
        "run length": _auc([r[1] for r in gold], [r[1] for r in pool]),
        "shorter neighbour run": _auc([min(r[2], r[3]) for r in gold], [min(r[2], r[3]) for r in pool]),
        "previous run": _auc([r[2] for r in gold], [r[2] for r in pool]),
        "next run": _auc([r[3] for r in gold], [r[3] for r in pool]),
        "item's run length": _auc([i[1] for i in gi], [i[1] for i in pi]),
        "place in run": _auc([i[2] for i in gi], [i[2] for i in pi]),
        "place from the run's end": _auc([i[1] - 1 - i[2] for i in gi], [i[1] - 1 - i[2] for i in pi]),
    }
    return {
        "gold runs": len(gold),
        "pool runs": len(pool),
        "gold share": len(gi) / len(items),
        "aucs": aucs,
        "after same": after_same,
    }


def test_run_lengths_order_and_bursts_do_not_tell_gold_from_pool(tmp_path) -> None:  # type: ignore[no-untyped-def]
    got = observe(tmp_path, range(4))
    assert got["gold runs"] >= 40 and got["pool runs"] >= 100, got
    assert 0.15 <= got["gold share"] <= 0.35, got  # about the rate (0.3) of what is shown is gold
    off = {name: round(v, 3) for name, v in got["aucs"].items() if abs(v - 0.5) > TOLERANCE}
    assert not off, f"separable beyond chance: {off} ({got})"
    # bursts: a gold run never directly follows a gold run (pool runs do follow pool runs)
    assert got["after same"][True] == 0 and got["after same"][False] > 0, got
