from __future__ import annotations

import numpy as np

from fireval.core.run import Run
from fireval.proxies.ivr import extreme_ranks, ivr_bounds


def test_extreme_ranks_hand_computed() -> None:
    s = np.array([[0.9, 0.5, 0.7, 0.1], [0.2, 0.2, 0.2, 0.3], [1, 2, 3, 4]], dtype=float)
    pos = np.array([[False, True, True, False], [True, False, True, False], [False] * 4])
    best, worst = extreme_ranks(s, pos)
    # row 0: positives 0.5 (rank 3) and 0.7 (rank 2)
    assert best[0] == 2 and worst[0] == 3
    # row 1: positives tied at 0.2 with a third 0.2 doc; 0.3 above: optimistic 2, pessimistic 4
    assert best[1] == 2 and worst[1] == 4
    assert np.isnan(best[2]) and np.isnan(worst[2])


def test_ivr_bounds_both_directions() -> None:
    scores = np.array([[0.9, 0.1, 0.5], [0.2, 0.8, 0.1], [0.3, 0.6, 0.4], [0.1, 0.2, 0.7]])
    rel = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.95, 0.0], [0.0, 0.0, 1.0]])
    b = ivr_bounds(Run("r", scores=scores), rel, threshold=0.9, ks=(1, 2))
    t = b["t2v"]
    # t2v best ranks: q0 {v0 r1, v2 r2} -> 1/2; q1 {v1 r1}; q2 {v0 r3, v1 r1} -> 1/3; q3 {v2 r1}
    np.testing.assert_array_equal(t.best_rank, [1, 1, 1, 1])
    np.testing.assert_array_equal(t.worst_rank, [2, 1, 3, 1])
    assert t.upper[1] == 1.0 and t.lower[1] == 0.5 and t.lower[2] == 0.75
    v = b["v2t"]
    # v0 column scores (0.9,0.2,0.3,0.1), positives q0,q2 -> ranks 1,2
    assert v.best_rank[0] == 1 and v.worst_rank[0] == 2
    assert v.geo_upper >= v.geo_lower
    assert abs(t.geo_lower - np.sqrt(0.5 * 0.75)) < 1e-12


def test_ivr_bounds_shape_mismatch_is_a_user_error() -> None:
    import pytest

    from fireval.core.errors import FirevalError

    with pytest.raises(FirevalError, match=r"run 'r' is \(2, 3\)"):
        ivr_bounds(Run("r", scores=np.zeros((2, 3))), np.zeros((3, 2)))
