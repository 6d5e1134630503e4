"""Truncated vs extrapolated RBO (FIRE Table 3) against the ``rbo`` package and a definition oracle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fireval.analysis.overlap import overlap_at_k, pairwise_overlap, rbo_ext, rbo_truncated, topk


def oracle_truncated(s: list[int], t: list[int], p: float) -> float:
    """Webber et al. 2010 Eq. 7 cut at depth k: (1 - p) sum_{d=1..k} p^(d-1) |S:d ∩ T:d| / d."""
    k = len(s)
    return (1 - p) * sum(p ** (d - 1) * len(set(s[:d]) & set(t[:d])) / d for d in range(1, k + 1))


def test_truncated_rbo_matches_definition_and_rbo_package() -> None:
    rbo = pytest.importorskip("rbo")
    rng = np.random.default_rng(7)
    a = np.stack([rng.permutation(20)[:10] for _ in range(60)])
    b = np.stack([rng.permutation(20)[:10] for _ in range(60)])
    b[:10] = a[:10]  # identical lists
    for p in (0.5, 0.9, 0.98):
        ours = rbo_truncated(a, b, p)
        for q in range(a.shape[0]):
            s, t = [int(x) for x in a[q]], [int(x) for x in b[q]]
            assert ours[q] == pytest.approx(oracle_truncated(s, t, p), abs=1e-12)
            assert ours[q] == pytest.approx(rbo.RankingSimilarity(s, t).rbo(p=p), abs=1e-9)
    # identical lists of depth k reach 1 - p^k, never 1: the unseen tail's weight is left out
    np.testing.assert_allclose(rbo_truncated(a[:10], b[:10], 0.9), 1 - 0.9**10)
    assert np.all(rbo_truncated(a, b, 0.9) <= rbo_ext(a, b, 0.9) + 1e-12)


def test_pairwise_rows_name_both_variants() -> None:
    rng = np.random.default_rng(1)
    tops = {
        "x": np.stack([rng.permutation(30)[:10] for _ in range(5)]),
        "y": np.stack([rng.permutation(30)[:10] for _ in range(5)]),
    }
    (row,) = pairwise_overlap(tops, p=0.9)
    assert row["rbo"] == row["rbo_ext"] == pytest.approx(float(rbo_ext(tops["x"], tops["y"]).mean()))
    assert row["rbo_truncated"] == pytest.approx(float(rbo_truncated(tops["x"], tops["y"]).mean()))


def test_gram_vast_figures(shared_data: Path) -> None:
    """The issue's GRAM–VAST numbers on 1k-A: overlap@10 49.6, RBO_ext 52.2, truncated RBO 34.9."""
    from fireval.formats import read_msrvtt_jsfusion, read_scores

    d = shared_data / "msrvtt"
    coll = read_msrvtt_jsfusion(d / "MSRVTT_JSFUSION_test.csv")
    g = topk(read_scores(d / "sims" / "GRAM_msrvtt.npy", coll, name="GRAM"), "t2v", 10)
    v = topk(read_scores(d / "sims" / "VAST_msrvtt.npy", coll, name="VAST"), "t2v", 10)
    assert 100 * overlap_at_k(g, v).mean() == pytest.approx(49.6, abs=0.05)
    assert 100 * rbo_ext(g, v, 0.9).mean() == pytest.approx(52.2, abs=0.05)
    assert 100 * rbo_truncated(g, v, 0.9).mean() == pytest.approx(34.9, abs=0.05)
