"""Pooling: top-k with ties, deduplication by caption text, skipping, sampling, provenance."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fireval.core import Collection, InputError, Judgments, Run
from fireval.judging.pool import (
    build_pool,
    read_pool,
    stratified_query_sample,
    topk_with_ties,
    write_pool,
)


def naive_topk(block: np.ndarray, k: int) -> set[tuple[int, int, int]]:
    """Reference: per row, every finite doc scoring >= the k-th largest finite score; rank = 1 + #greater."""
    out = set()
    for q, row in enumerate(block):
        finite = np.sort(row[np.isfinite(row)])[::-1]
        if finite.size == 0:
            continue
        kth = finite[min(k, finite.size) - 1]
        for d, s in enumerate(row):
            if np.isfinite(s) and s >= kth:
                out.add((q, d, 1 + int((row > s).sum())))
    return out


def test_topk_hand_example_with_tie_at_cutoff() -> None:
    block = np.array([[0.9, 0.5, 0.5, 0.1, 0.5], [3.0, 2.0, 1.0, 0.0, -np.inf]])
    rows, cols, ranks = topk_with_ties(block, 2)
    got = set(zip(rows.tolist(), cols.tolist(), ranks.tolist()))
    # row 0: 0.9 (rank 1) then the whole tie group of 0.5 at ranks 2-4 shares rank 2
    assert got == {(0, 0, 1), (0, 1, 2), (0, 2, 2), (0, 4, 2), (1, 0, 1), (1, 1, 2)}


def test_topk_never_takes_minus_inf() -> None:
    block = np.array([[1.0, -np.inf, -np.inf, -np.inf]])
    rows, cols, ranks = topk_with_ties(block, 3)
    assert cols.tolist() == [0] and ranks.tolist() == [1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_topk_matches_naive_on_tied_random_scores(seed: int) -> None:
    rng = np.random.default_rng(seed)
    block = rng.integers(0, 6, size=(40, 30)).astype(float)
    block[rng.random(block.shape) < 0.1] = -np.inf
    for k in (1, 3, 10):
        rows, cols, ranks = topk_with_ties(block, k)
        assert set(zip(rows.tolist(), cols.tolist(), ranks.tolist())) == naive_topk(block, k)


def small_collection() -> Collection:
    # captions c0 and c2 have the same text after normalisation
    pairs = [
        ("c0", "v0", "A dog runs!"),
        ("c1", "v1", "a cat sleeps"),
        ("c2", "v2", "a dog  runs"),
        ("c3", "v3", "x"),
    ]
    return Collection.from_pairs("toy", pairs)


def test_dedup_by_normalised_caption_and_provenance() -> None:
    coll = small_collection()
    s1 = np.array(
        [[0.0, 0.9, 0.1, 0.2], [0.9, 0.0, 0.1, 0.2], [0.1, 0.8, 0.0, 0.2], [0.0, 0.1, 0.2, 0.9]],
        dtype=np.float32,
    )
    s2 = np.array(
        [[0.0, 0.1, 0.2, 0.9], [0.1, 0.9, 0.3, 0.0], [0.0, 0.2, 0.1, 0.9], [0.9, 0.1, 0.2, 0.0]],
        dtype=np.float32,
    )
    res = build_pool(coll, [Run("A", scores=s1), Run("B", scores=s2)], depth=1, double_fraction=0.0)
    items = {(i.caption_ids[0], i.video_id): i for i in res.items}
    # the dog captions c0/c2 share items: A proposes v1 for both (ranks 1 and 1), B proposes v3 for both
    assert set(items) == {("c0", "v1"), ("c0", "v3"), ("c1", "v0"), ("c1", "v1"), ("c3", "v3"), ("c3", "v0")}
    assert items[("c0", "v1")].caption_ids == ["c0", "c2"]
    assert items[("c0", "v1")].runs == {"A": 1}
    assert items[("c0", "v3")].runs == {"B": 1}
    assert items[("c3", "v3")].runs == {"A": 1}
    per = {c.run: c for c in res.per_run}
    assert per["A"].proposed == 4 and per["B"].proposed == 4
    assert per["A"].contributed == 3  # (dog,v1), (cat,v0), (x,v3)
    assert per["B"].contributed == 3  # (dog,v3), (cat,v1), (x,v0)
    assert per["A"].unique == 3 and per["A"].overlap == 0


def test_skip_judged_pairs_by_text_group() -> None:
    coll = small_collection()
    scores = np.array([[0.1, 0.9, 0.0, 0.0]] * 4, dtype=np.float32)
    # c2 (same text as c0) judged with v1: the dog item for v1 must be skipped
    judged = Judgments.from_arrays(coll.shape, [2], [1], [0.0], "human")
    res = build_pool(coll, [Run("A", scores=scores)], depth=1, judged=[judged], double_fraction=0)
    keys = {(i.norm_caption, i.video_id) for i in res.items}
    assert ("a dog runs", "v1") not in keys
    assert ("a cat sleeps", "v1") in keys and ("x", "v1") in keys
    assert res.skipped_judged == 1


def test_ties_whole_group_and_extra_count() -> None:
    coll = small_collection()
    scores = np.zeros((4, 4), dtype=np.float32)  # all tied
    res = build_pool(coll, [Run("A", scores=scores)], depth=2, double_fraction=0)
    assert res.tie_extra == 4 * 2  # 4 docs taken per query instead of 2
    assert len(res.items) == 3 * 4  # 3 distinct texts x 4 videos
    assert all(r == 1 for i in res.items for r in i.runs.values())


def test_msrvtt_pool_counts_against_naive(msrvtt) -> None:
    coll, runs = msrvtt
    res = build_pool(coll, runs, depth=10, judged=[coll.instance_judgments()], double_fraction=0.1, seed=3)
    # naive reference with Python sets on full argsorts (no ties in clip4clip; GRAM/VAST top-10 are nonzero)
    norm = {}
    for i, t in enumerate(coll.captions):
        norm[i] = " ".join("".join(ch if ch.isalnum() else " " for ch in t.lower()).split())
    # the instance pairs are judged at text level: a text is judged for every video one of its captions was written for
    instance = {(norm[q], coll.video_ids[int(coll.caption_video[q])]) for q in range(coll.n_captions)}
    sets = []
    for r in runs:
        s = np.asarray(r.scores)
        top = np.argsort(-s, axis=1, kind="stable")[:, :10]
        sets.append({(norm[q], coll.video_ids[d]) for q in range(s.shape[0]) for d in top[q]} - instance)
    union = set().union(*sets)
    assert {(i.norm_caption, i.video_id) for i in res.items} == union
    for c, ref in zip(res.per_run, sets):
        others = set().union(*[s for s in sets if s is not ref])
        assert c.contributed == len(ref)
        assert c.unique == len(ref - others)
    # the 3 repeats of "a man playing video games" collapse into shared items
    games = [i for i in res.items if i.norm_caption == "a man playing video games"]
    assert games and all(len(i.caption_ids) == 3 for i in games)
    assert sum(i.double for i in res.items) == round(0.1 * len(res.items))


def test_double_sample_is_seeded() -> None:
    coll = small_collection()
    rng = np.random.default_rng(0)
    run = Run("A", scores=rng.random((4, 4)).astype(np.float32))
    a = build_pool(coll, [run], depth=4, double_fraction=0.5, seed=7)
    b = build_pool(coll, [run], depth=4, double_fraction=0.5, seed=7)
    c = build_pool(coll, [run], depth=4, double_fraction=0.5, seed=8)
    da, db, dc = ([i.double for i in p.items] for p in (a, b, c))
    assert da == db and sum(da) == round(0.5 * len(a.items))
    assert da != dc or len(a.items) < 4


def test_stratified_sample_proportional() -> None:
    lengths = np.array([3] * 50 + [8] * 30 + [15] * 20)
    idx = stratified_query_sample(lengths, 10, seed=1, n_strata=3)
    assert idx.size == 10 and np.unique(idx).size == 10
    got = np.bincount(lengths[idx])[[3, 8, 15]]
    assert got.tolist() == [5, 3, 2]
    assert np.array_equal(idx, stratified_query_sample(lengths, 10, seed=1, n_strata=3))


def test_budget_mode_limits_queries(msrvtt) -> None:
    coll, runs = msrvtt
    res = build_pool(coll, runs[:1], depth=5, budget=50, double_fraction=0)
    texts = {i.norm_caption for i in res.items}
    assert res.queries == 50 and 45 <= len(texts) <= 50


def test_v2t_pool_orientation() -> None:
    coll = small_collection()
    s = np.array(
        [[0.1, 0.2, 0.3, 0.4], [0.9, 0.1, 0.1, 0.1], [0.0, 0.0, 0.0, 0.0], [0.5, 0.3, 0.2, 0.1]], np.float32
    )
    res = build_pool(coll, [Run("A", scores=s)], depth=1, direction="v2t", double_fraction=0)
    # per video (column) the best caption: v0->c1, v1->c3, v2->c0, v3->c0
    pairs = {(i.caption_ids[0], i.video_id) for i in res.items}
    assert pairs == {("c1", "v0"), ("c3", "v1"), ("c0", "v2"), ("c0", "v3")}


def test_write_read_roundtrip_and_bad_files(tmp_path) -> None:
    coll = small_collection()
    res = build_pool(coll, [Run("A", scores=np.eye(4, dtype=np.float32))], depth=2, double_fraction=0.5)
    p = tmp_path / "pool.jsonl"
    write_pool(p, res)
    back = read_pool(p)
    assert back.header["depth"] == 2 and back.dataset == "toy"
    assert [i.to_json() for i in back.items] == [i.to_json() for i in res.items]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"format": "fireval-pool"}) + '\n{"caption": 3}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        read_pool(bad)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(InputError, match="empty"):
        read_pool(tmp_path / "empty.jsonl")


def test_bad_arguments() -> None:
    coll = small_collection()
    run = Run("A", scores=np.eye(4, dtype=np.float32))
    with pytest.raises(InputError, match="depth"):
        build_pool(coll, [run], depth=0)
    with pytest.raises(InputError, match="distinct"):
        build_pool(coll, [run, run])
    with pytest.raises(InputError, match="shape"):
        build_pool(coll, [Run("B", scores=np.eye(3, dtype=np.float32))])
