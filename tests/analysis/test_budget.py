from __future__ import annotations

import numpy as np
import pytest

from fireval.analysis.budget import budget_table, default_sizes, error_curve, recommend_n


def test_error_matches_naive_and_theory() -> None:
    v = (np.random.default_rng(0).random(1000) < 0.4).astype(float)
    curve = error_curve(v, [50, 400], n_resamples=4000, seed=1)
    # naive estimate with an independent generator: |mean of n draws - full mean|, 95th pct
    rng = np.random.default_rng(123)
    for row in curve:
        n = int(row["n"])
        errs = [abs(v[rng.integers(0, v.size, n)].mean() - v.mean()) for _ in range(4000)]
        assert row["error"] == pytest.approx(np.quantile(errs, 0.95), abs=0.012)
        # normal theory: 1.96 * sd / sqrt(n)
        assert row["error"] == pytest.approx(1.96 * v.std() / np.sqrt(n), rel=0.12)
    assert curve[0]["error"] > curve[1]["error"]


def test_recommend_n() -> None:
    curve = [{"n": 10.0, "error": 0.3}, {"n": 100.0, "error": 0.08}, {"n": 1000.0, "error": 0.02}]
    assert recommend_n(curve, 0.1) == 100
    assert recommend_n(curve, 0.08) == 100
    assert recommend_n(curve, 0.05) == 1000
    assert recommend_n(curve, 0.01) is None


def test_grid_and_table() -> None:
    g = default_sizes(1000)
    assert g[0] == 10 and g[-1] == 1000 and g == sorted(set(g))
    rows = budget_table({"r": {"C@1": np.arange(20) % 2}}, sizes=[5, 20], n_resamples=100)
    assert [(r["n"], r["measure"]) for r in rows] == [(5, "C@1"), (20, "C@1")]
