"""The checks on simulated runs: multi-caption collections, both directions, truncation, small inputs."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.checks import Status, run_checks, truncated_measures
from fireval.checks.scan import top_k
from fireval.checks.simulate import permuted, text_consistent_scores
from fireval.core import Collection, Run


@pytest.fixture(scope="module")
def vatex_small(vatex: Collection) -> Collection:
    """The first 300 VATEX videos with their 10 captions each (3000 x 300)."""
    keep = set(vatex.video_ids[:300])
    pairs = [
        (c, vatex.video_ids[v], t)
        for c, v, t in zip(vatex.caption_ids, vatex.caption_video, vatex.captions)
        if vatex.video_ids[v] in keep
    ]
    return Collection.from_pairs("vatex-300", pairs)


def test_multi_caption_aligned_passes_both_directions(vatex_small):
    scores = text_consistent_scores(vatex_small, signal=1.0, noise=0.1, seed=0)
    rep = run_checks(vatex_small, {"sim": Run("sim", scores=scores)})
    res = rep.runs["sim"]["alignment"]
    assert res.status is Status.PASS
    assert set(res.figures["directions"]) == {"t2v", "v2t"}
    assert rep.runs["sim"]["orientation"].figures["told_by"] == "shape"


@pytest.mark.parametrize("how", ["rows", "cols"])
def test_multi_caption_shuffled_fails_both_directions(vatex_small, how):
    scores = permuted(text_consistent_scores(vatex_small, signal=1.0, noise=0.1, seed=0), how, seed=1)
    res = run_checks(vatex_small, {"p": Run("p", scores=scores)}).runs["p"]["alignment"]
    assert res.status is Status.FAIL
    assert all(d["status"] == "fail" for d in res.figures["directions"].values())


def test_too_few_queries_is_inconclusive(vatex_small):
    pairs = [
        (c, vatex_small.video_ids[v], t)
        for c, v, t in zip(
            vatex_small.caption_ids[:20], vatex_small.caption_video[:20], vatex_small.captions[:20]
        )
    ]
    small = Collection.from_pairs("tiny", pairs, video_ids=list(vatex_small.video_ids[:40]))
    scores = np.random.default_rng(0).standard_normal(small.shape).astype(np.float32)
    res = run_checks(small, {"r": Run("r", scores=scores)}).runs["r"]["alignment"]
    assert res.figures["directions"]["t2v"]["status"] == "inconclusive"


def test_transposed_square_matrix_is_told_by_text(vatex_small):
    """Square but not one caption per video: 100 videos with 2 captions, 100 with none."""
    vids = list(vatex_small.video_ids[:200])
    pairs = []
    for v in range(100):
        caps = np.flatnonzero(vatex_small.caption_video == v)[:2]
        pairs += [(vatex_small.caption_ids[c], vids[v], vatex_small.captions[c]) for c in caps]
    coll = Collection.from_pairs("square", pairs, video_ids=vids)
    assert coll.shape == (200, 200)
    scores = text_consistent_scores(coll, signal=1.0, noise=0.05, seed=0)
    scores[:, 100:] = -1.0  # videos without captions (their text-free "embedding")
    good = run_checks(coll, {"r": Run("r", scores=scores)}).runs["r"]["orientation"]
    bad = run_checks(coll, {"r": Run("r", scores=np.ascontiguousarray(scores.T))}).runs["r"]["orientation"]
    assert good.status is Status.PASS, good.message
    assert bad.status is Status.FAIL and "transposed" in bad.message


def test_truncated_copy_of_an_aligned_run(vatex_small):
    scores = text_consistent_scores(vatex_small, signal=1.0, noise=0.1, seed=0)
    kth = np.partition(scores, scores.shape[1] - 20, axis=1)[:, -20][:, None]
    cut = np.where(scores >= kth, scores, 0.0).astype(np.float32)
    rep = run_checks(vatex_small, {"cut": Run("cut", scores=cut)})
    t = rep.runs["cut"]["truncation"].figures["directions"]["t2v"]
    assert t["truncated"] and t["k"] == 20
    assert rep.runs["cut"]["alignment"].status is Status.PASS  # truncation is not misalignment


def test_truncated_measures_rules():
    ms = [
        "C@1",
        "C@10",
        "C@100",
        "P@10",
        "nDCG@10",
        "nDCG@100",
        "nDCG",
        "AP",
        "AP@10",
        "R-Prec",
        "RR",
        "MnR",
        "MdR",
        "meanR",
        "judged@10",
        "not a measure",
    ]
    assert truncated_measures(ms, None) == []
    assert truncated_measures(ms, 50, 0.0) == ["C@100", "nDCG@100"]
    assert truncated_measures(ms, 50, 0.1) == ["C@100", "nDCG@100", "nDCG", "AP", "R-Prec", "RR", "MnR"]
    assert "MdR" in truncated_measures(ms, 50, 0.5)
    assert "meanR" in truncated_measures(ms, 5, 0.0) and "C@10" in truncated_measures(ms, 5, 0.0)


@pytest.mark.parametrize("shape", [(50, 300), (20, 9000)])
@pytest.mark.parametrize("ties, kept", [(False, 0), (True, 30), (True, 5)])
def test_top_k_matches_a_brute_force_oracle(shape, ties, kept):
    """top_k equals sorting each row (positives left out), up to the order inside tie groups."""
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    n, d = shape
    block = rng.standard_normal(shape).astype(np.float32)
    if ties:  # a truncated run: all but `kept` per row tie at 0, plus ties among the kept values
        kth = np.partition(block, d - kept, axis=1)[:, d - kept][:, None]
        block = np.where(block >= kth, np.round(block, 1), 0.0).astype(np.float32)
    block[0, :] = -np.inf  # a query that retrieved nothing
    pos = sp.csr_matrix((np.ones(n, bool), (np.arange(n), rng.integers(0, d, n))), shape=shape)
    idx, ok = top_k(block, pos, 10, np.random.default_rng(2))
    assert not ok[0].any()
    for q in range(1, n):
        row = block[q].astype(np.float64).copy()
        row[pos[q].indices] = -np.inf
        want = np.sort(row)[::-1][:10]
        got = row[idx[q]]
        np.testing.assert_array_equal(got, want)  # same values, best first
        assert len(set(idx[q])) == 10 and ok[q].all()


def test_ties_at_the_cutoff_are_broken_at_random_not_by_index():
    import scipy.sparse as sp

    block = np.zeros((200, 100), dtype=np.float32)  # every document ties
    pos = sp.csr_matrix((200, 100), dtype=bool)
    idx, _ = top_k(block, pos, 5, np.random.default_rng(0))
    assert idx.max() > 50  # index order would pick 0..4 in every row
    assert np.bincount(idx.ravel(), minlength=100).max() < 40
