from __future__ import annotations

import numpy as np
import pytest

from fireval.analysis.overlap import overlap_at_k, pairwise_overlap, rbo_ext, topk, topk_block
from fireval.core.run import Run


def naive_rbo_ext(s: list[int], t: list[int], p: float) -> float:
    """Webber et al. 2010 Eq. 32 (s = l = k), written directly with sets."""
    k = len(s)
    total = 0.0
    x_k = 0
    for d in range(1, k + 1):
        x_d = len(set(s[:d]) & set(t[:d]))
        total += x_d / d * p**d
        x_k = x_d
    return x_k / k * p**k + (1 - p) / p * total


def test_topk_tie_order_and_padding() -> None:
    s = np.array([[0.5, 0.9, 0.5, -np.inf, 0.1], [1.0, 1.0, 1.0, 1.0, 1.0], [-np.inf] * 4 + [2.0]])
    np.testing.assert_array_equal(topk_block(s, 3), [[1, 0, 2], [0, 1, 2], [4, -1, -1]])
    np.testing.assert_array_equal(topk_block(s[:1], 7), [[1, 0, 2, 4, -1, -1, -1]])


def test_topk_run_matches_argsort_and_direction() -> None:
    rng = np.random.default_rng(0)
    m = rng.random((40, 30))
    run = Run("r", scores=m)
    np.testing.assert_array_equal(topk(run, "t2v", 5), np.argsort(-m, axis=1, kind="stable")[:, :5])
    np.testing.assert_array_equal(topk(run, "v2t", 5), np.argsort(-m.T, axis=1, kind="stable")[:, :5])


def test_rbo_matches_naive_on_random_lists() -> None:
    rng = np.random.default_rng(1)
    q, k = 200, 10
    a = np.array([rng.choice(25, k, replace=False) for _ in range(q)])
    b = np.array([rng.choice(25, k, replace=False) for _ in range(q)])
    for p in (0.5, 0.9, 0.98):
        fast = rbo_ext(a, b, p)
        slow = [naive_rbo_ext(list(x), list(y), p) for x, y in zip(a, b)]
        np.testing.assert_allclose(fast, slow, rtol=1e-12)
    ov = overlap_at_k(a, b)
    np.testing.assert_allclose(ov, [len(set(x) & set(y)) / k for x, y in zip(a, b)])


def test_rbo_extremes_and_hand_value() -> None:
    a = np.array([[1, 2, 3]])
    assert rbo_ext(a, a, 0.9)[0] == pytest.approx(1.0)
    assert rbo_ext(a, np.array([[4, 5, 6]]), 0.9)[0] == 0.0
    # [1,2,3] vs [2,1,4], p=0.5: X = 0, 2, 2 -> 2/3*0.125 + 1*(0 + 0.25 + 2/3*0.125)
    assert rbo_ext(a, np.array([[2, 1, 4]]), 0.5)[0] == pytest.approx(2 / 3 * 0.125 + 0.25 + 2 / 3 * 0.125)
    # padding never matches
    pad = np.array([[7, -1, -1]])
    assert rbo_ext(pad, pad, 0.9)[0] == pytest.approx(naive_rbo_ext([7, -2, -3], [7, -4, -5], 0.9))


def test_rbo_against_rbo_package() -> None:
    rbo = pytest.importorskip("rbo")
    rng = np.random.default_rng(2)
    for _ in range(30):
        x = list(rng.choice(30, 10, replace=False))
        y = list(rng.choice(30, 10, replace=False))
        ref = rbo.RankingSimilarity(x, y).rbo_ext(p=0.9)
        assert rbo_ext(np.array([x]), np.array([y]), 0.9)[0] == pytest.approx(ref, abs=1e-9)


def test_pairwise_rows() -> None:
    tops = {"a": np.array([[1, 2]]), "b": np.array([[2, 3]]), "c": np.array([[1, 2]])}
    rows = pairwise_overlap(tops, p=0.9)
    assert [(r["a"], r["b"]) for r in rows] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert rows[1]["overlap"] == 1.0 and rows[0]["overlap"] == 0.5
