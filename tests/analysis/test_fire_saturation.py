"""Saturation (FIRE §5): label error rate from agreement, ceiling and headroom, against a simulation."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.analysis.saturation import label_error_rate, saturation_table
from fireval.core.errors import FirevalError


def test_error_rate_solves_the_agreement_equation() -> None:
    for eps in (0.0, 0.03, 0.1, 0.25, 0.49):
        p_o = (1 - eps) ** 2 + eps**2
        assert label_error_rate(p_o) == pytest.approx(eps, abs=1e-12)
        roots = np.roots([2.0, -2.0, 1.0 - p_o])  # 2 e^2 - 2 e + (1 - P_o) = 0
        assert label_error_rate(p_o) == pytest.approx(float(min(roots.real)), abs=1e-7)
    for bad in (0.5, 0.2, 1.01, float("nan")):
        with pytest.raises(FirevalError, match="agreement"):
            label_error_rate(bad)


def test_a_perfect_ranking_scores_the_ceiling_under_noisy_labels() -> None:
    """Simulate annotators with error eps: agreement gives eps back, a perfect C@1 lands at 1 - eps."""
    rng = np.random.default_rng(5)
    eps, q = 0.08, 200_000
    truth = np.ones(q, dtype=bool)  # the perfect run's top document is truly relevant for every query
    vote1 = truth ^ (rng.random(q) < eps)
    vote2 = truth ^ (rng.random(q) < eps)
    p_o = float(np.mean(vote1 == vote2))
    est = label_error_rate(p_o)
    assert est == pytest.approx(eps, abs=0.004)
    c_at_1 = vote1.astype(float)  # measured against one annotator's labels
    (row,) = saturation_table(
        {"perfect": {"C@1": c_at_1}}, {"perfect": {"C@1": c_at_1}}, pairwise_agreement=p_o
    )
    assert row["ceiling"] == pytest.approx(c_at_1.mean(), abs=0.004)
    assert row["within_noise"] is True


def test_headroom_between_the_bounds() -> None:
    lo = np.array([1, 0, 0, 1, np.nan, 0.5])
    hi = np.array([1, 1, 0, 1, 1.0, 1.0])
    (row,) = saturation_table({"r": {"C@10": lo}}, {"r": {"C@10": hi}}, pairwise_agreement=0.82)
    eps = (1 - np.sqrt(2 * 0.82 - 1)) / 2
    ok = ~np.isnan(lo)
    assert row["n"] == 5 and row["eps"] == pytest.approx(eps)
    assert row["headroom_min"] == pytest.approx(max(0.0, 1 - eps - hi[ok].mean()))
    assert row["headroom_max"] == pytest.approx(1 - eps - lo[ok].mean())
    assert row["within_noise"] is False
    (none,) = saturation_table({"r": {"C@10": lo}}, {"r": {"C@10": hi}})
    assert none["eps"] == 0.0 and none["ceiling"] == 1.0 and none["agreement"] is None
