from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from threadpoolctl import threadpool_limits

from fireval.analysis.bootstrap import bootstrap_means, percentile_ci, resample_indices
from fireval.core.errors import FirevalError


def _naive_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """One resample at a time, drawing from the same generator as a plain loop would."""
    rng = np.random.Generator(np.random.PCG64(seed))
    out = []
    for _ in range(n_resamples):
        idx = rng.integers(0, values.size, size=(1, values.size), dtype=np.int64)[0]
        total = 0.0
        for i in idx:
            total += values[i]
        out.append(total / values.size)
    return np.array(out)


def test_means_match_naive_loop_on_same_stream() -> None:
    v = np.random.default_rng(1).random(37)
    fast = bootstrap_means(v, 200, seed=5, chunk=7)
    slow = _naive_means(v, 200, seed=5)
    np.testing.assert_allclose(fast, slow, rtol=1e-12)


def test_chunk_size_does_not_change_indices() -> None:
    a = np.concatenate(list(resample_indices(50, 103, 9, chunk=10)))
    b = np.concatenate(list(resample_indices(50, 103, 9, chunk=1000)))
    assert a.shape == (103, 50)
    np.testing.assert_array_equal(a, b)


def test_same_seed_identical_whatever_threads() -> None:
    v = (np.random.default_rng(2).random(800) < 0.4).astype(float)
    with threadpool_limits(limits=1):
        one = percentile_ci(v, n_resamples=2000, seed=3)
    with threadpool_limits(limits=2):
        two = percentile_ci(v, n_resamples=2000, seed=3)
    three = percentile_ci(v, n_resamples=2000, seed=3, chunk=17)
    assert one == two == three
    other = percentile_ci(v, n_resamples=2000, seed=4)
    assert other.low != one.low or other.high != one.high


def test_interval_agrees_with_scipy_bootstrap() -> None:
    v = (np.random.default_rng(7).random(1000) < 0.45).astype(float)
    ours = percentile_ci(v, n_resamples=10_000, seed=11)
    ref = stats.bootstrap(
        (v,), np.mean, n_resamples=10_000, method="percentile", random_state=np.random.default_rng(99)
    ).confidence_interval
    assert ours.mean == pytest.approx(v.mean())
    # two independent Monte-Carlo estimates of the same quantiles
    assert ours.low == pytest.approx(ref.low, abs=0.004)
    assert ours.high == pytest.approx(ref.high, abs=0.004)
    # normal approximation: half width ~ 1.96 * sd / sqrt(n)
    se = v.std() / np.sqrt(v.size)
    assert ours.half_width == pytest.approx(1.96 * se, rel=0.05)


def test_nan_queries_are_dropped() -> None:
    v = np.array([1.0, np.nan, 0.0, 1.0, np.nan])
    ci = percentile_ci(v, n_resamples=500, seed=1)
    assert ci.n == 3 and ci.mean == pytest.approx(2 / 3)
    assert 0 <= ci.low <= ci.mean <= ci.high <= 1


def test_errors() -> None:
    with pytest.raises(FirevalError):
        percentile_ci([np.nan, np.nan])
    with pytest.raises(FirevalError):
        percentile_ci([1.0, 2.0], level=1.5)


def test_count_path_same_distribution_as_index_path() -> None:
    v = np.random.default_rng(5).choice([0.0, 0.5, 1.0], size=3000, p=[0.5, 0.1, 0.4])
    fast = bootstrap_means(v, 20_000, seed=1)
    slow = bootstrap_means(v, 20_000, seed=2, method="indices")
    assert fast.mean() == pytest.approx(slow.mean(), abs=3e-4)
    assert fast.std() == pytest.approx(slow.std(), rel=0.03)
    np.testing.assert_allclose(
        np.quantile(fast, [0.025, 0.5, 0.975]), np.quantile(slow, [0.025, 0.5, 0.975]), atol=0.002
    )
    # sub-samples of size 100 as in budget planning
    f100 = bootstrap_means(v, 20_000, seed=3, size=100)
    s100 = bootstrap_means(v, 20_000, seed=4, size=100, method="indices")
    assert f100.std() == pytest.approx(s100.std(), rel=0.03)
    # chunking does not change the count draws either
    np.testing.assert_array_equal(bootstrap_means(v, 999, seed=9, chunk=10), bootstrap_means(v, 999, seed=9))
