"""Bad resample counts and deltas are user errors, not numpy IndexErrors (found by QA: ``--resamples 0``)."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.analysis.bootstrap import bootstrap_means, percentile_ci
from fireval.analysis.budget import error_curve, recommend_n
from fireval.analysis.significance import paired_bootstrap_p, randomisation_p
from fireval.core.errors import FirevalError

VALS = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.5])


@pytest.mark.parametrize("n", [0, -1, 2.5])
def test_resample_count_must_be_a_positive_integer(n) -> None:  # type: ignore[no-untyped-def]
    for call in (
        lambda: bootstrap_means(VALS, n),
        lambda: percentile_ci(VALS, n_resamples=n),
        lambda: paired_bootstrap_p(VALS, VALS[::-1], n),
        lambda: randomisation_p(VALS, VALS[::-1], n),
        lambda: error_curve(VALS, [2, 3], n_resamples=n),
    ):
        with pytest.raises(FirevalError, match="resamples must be a positive integer"):
            call()


def test_one_resample_still_works() -> None:
    assert bootstrap_means(VALS, 1, seed=3).shape == (1,)


@pytest.mark.parametrize("delta", [0.0, -0.02, float("nan")])
def test_recommend_n_needs_a_positive_delta(delta: float) -> None:
    curve = [{"n": 10.0, "error": 0.1}, {"n": 20.0, "error": 0.01}]
    with pytest.raises(FirevalError, match="delta must be > 0"):
        recommend_n(curve, delta)
    assert recommend_n(curve, 0.05) == 20  # smallest n whose error is within delta


@pytest.mark.parametrize("delta", [1.0, 2.0, 5.0])
def test_recommend_n_refuses_a_delta_in_points(delta: float) -> None:
    """`budget --delta 2` was read as 200 points and recommended the smallest n for any run."""
    curve = [{"n": 10.0, "error": 0.1}, {"n": 20.0, "error": 0.01}]
    with pytest.raises(FirevalError, match=rf"fraction of 1 .*did you mean {delta / 100:g}\?"):
        recommend_n(curve, delta)
