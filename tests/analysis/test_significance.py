from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fireval.analysis.significance import (
    compare_runs,
    effect_size,
    holm,
    paired_bootstrap_p,
    randomisation_p,
)
from fireval.core.errors import FirevalError


def test_holm_hand_computed() -> None:
    # sorted: 0.01*4=0.04, 0.02*3=0.06, 0.03*2=0.06, 0.5*1=0.5 -> in input order
    p = [0.03, 0.01, 0.5, 0.02]
    np.testing.assert_allclose(holm(p), [0.06, 0.04, 0.5, 0.06])
    # monotonicity enforcement and capping at 1
    np.testing.assert_allclose(holm([0.4, 0.3]), [0.6, 0.6])
    np.testing.assert_allclose(holm([0.9, 0.8]), [1.0, 1.0])


def test_randomisation_matches_exact_enumeration() -> None:
    rng = np.random.default_rng(0)
    a = rng.random(12)
    b = a - rng.normal(0.1, 0.2, 12)
    d = a - b
    t = abs(d.mean())
    signs = np.array(np.meshgrid(*[[-1, 1]] * 12)).reshape(12, -1).T
    exact = np.mean(np.abs((signs * d).mean(axis=1)) >= t - 1e-12)
    p = randomisation_p(a, b, n_resamples=20_000, seed=1)
    assert p == pytest.approx(exact, abs=0.01)


def test_randomisation_close_to_scipy_permutation_test() -> None:
    rng = np.random.default_rng(3)
    a = (rng.random(300) < 0.5).astype(float)
    b = (rng.random(300) < 0.42).astype(float)
    ref = stats.permutation_test(
        (a, b),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=20_000,
        random_state=np.random.default_rng(5),
    ).pvalue
    p = randomisation_p(a, b, n_resamples=20_000, seed=2)
    assert p == pytest.approx(ref, abs=0.01)


def test_bootstrap_p_close_to_normal_theory_and_ttest() -> None:
    rng = np.random.default_rng(4)
    a = rng.normal(0.5, 1, 2000)
    b = a - rng.normal(0.05, 1, 2000)
    d = a - b
    z = d.mean() / (d.std() / np.sqrt(d.size))
    normal_p = 2 * stats.norm.sf(abs(z))
    p = paired_bootstrap_p(a, b, n_resamples=10_000, seed=6)
    assert p == pytest.approx(normal_p, abs=0.02)
    assert p == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=0.02)


def test_identical_runs_not_significant_and_deterministic() -> None:
    a = np.random.default_rng(9).random(100)
    assert randomisation_p(a, a, 1000, 1) == 1.0
    assert paired_bootstrap_p(a, a, 1000, 1) == 1.0
    b = a + 0.05
    assert paired_bootstrap_p(a, b, 999, 7) == paired_bootstrap_p(a, b, 999, 7, chunk=13)
    assert randomisation_p(a, b, 999, 7) == randomisation_p(a, b, 999, 7, chunk=13)
    assert randomisation_p(a, b, 999, 7) == pytest.approx(1 / 1000)


def test_effect_size_hand_computed() -> None:
    a = np.array([1.0, 0.0, 1.0, 1.0, np.nan])
    b = np.array([0.0, 0.0, 1.0, 0.0, 1.0])
    es = effect_size(a, b)
    d = np.array([1.0, 0.0, 0.0, 1.0])
    assert es.n == 4
    assert es.mean_difference == pytest.approx(0.5)
    assert es.cohens_dz == pytest.approx(0.5 / np.std(d, ddof=1))
    assert es.prob_superiority == pytest.approx((2 + 0.5 * 2) / 4)


def test_compare_runs_holm_family() -> None:
    rng = np.random.default_rng(11)
    base = rng.random(400)
    runs = {
        "a": {"C@1": (base < 0.5).astype(float)},
        "b": {"C@1": (base < 0.45).astype(float)},
        "c": {"C@1": (rng.random(400) < 0.3).astype(float)},
    }
    rows = compare_runs(runs, n_resamples=2000, seed=1)
    assert [(r.a, r.b) for r in rows] == [("a", "b"), ("a", "c"), ("b", "c")]
    np.testing.assert_allclose(
        [r.p_randomisation_holm for r in rows], holm([r.p_randomisation for r in rows])
    )
    assert rows[0].mean_difference == pytest.approx(runs["a"]["C@1"].mean() - runs["b"]["C@1"].mean())


def test_binary_fast_paths_match_per_query_paths() -> None:
    rng = np.random.default_rng(21)
    a = (rng.random(2000) < 0.50).astype(float)
    b = np.where(rng.random(2000) < 0.8, a, (rng.random(2000) < 0.45).astype(float))
    for fn in (randomisation_p, paired_bootstrap_p):
        fast = fn(a, b, 20_000, 1)
        slow = fn(a, b, 20_000, 2, method="indices")
        assert fast == pytest.approx(slow, abs=0.012)
    # exact McNemar (binomial on the discordant pairs) is the exact sign-flip test for 0/1 data
    n01, n10 = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
    assert randomisation_p(a, b, 20_000, 3) == pytest.approx(
        stats.binomtest(n01, n01 + n10).pvalue, abs=0.012
    )


def test_pvalues_identical_across_thread_settings() -> None:
    import json
    import os
    import subprocess
    import sys

    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(8)
    a, b = rng.random(500), rng.random(500) - 0.03
    with threadpool_limits(limits=1):
        one = (paired_bootstrap_p(a, b, 3000, 4), randomisation_p(a, b, 3000, 4))
    with threadpool_limits(limits=2):
        two = (paired_bootstrap_p(a, b, 3000, 4), randomisation_p(a, b, 3000, 4))
    assert one == two
    code = (
        "import json, numpy as np\n"
        "from fireval.analysis.significance import paired_bootstrap_p, randomisation_p\n"
        "from fireval.analysis.bootstrap import percentile_ci\n"
        "rng = np.random.default_rng(8); a, b = rng.random(500), rng.random(500) - 0.03\n"
        "ci = percentile_ci(a, n_resamples=3000, seed=4)\n"
        "print(json.dumps([paired_bootstrap_p(a, b, 3000, 4), randomisation_p(a, b, 3000, 4), ci.low, ci.high]))\n"
    )
    outs = []
    for threads in ("1", "2"):
        env = {
            **os.environ,
            "OMP_NUM_THREADS": threads,
            "OPENBLAS_NUM_THREADS": threads,
            "MKL_NUM_THREADS": threads,
        }
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True
        )
        outs.append(json.loads(proc.stdout))
    assert outs[0] == outs[1]
    assert outs[0][:2] == list(one)


def test_compare_runs_refuses_the_median_rank() -> None:
    """`fireval compare -m MdR` printed the mean rank difference (the MnR difference) as MdR's A−B."""
    a = np.array([1.0, 2.0, 3.0, 50.0, 60.0])
    b = np.array([1.0, 2.0, 4.0, 5.0, 6.0])
    assert np.median(a) - np.median(b) == -1.0 and (a - b).mean() != -1.0  # what it would have mixed up
    per_query = {"a": {"MdR": a, "MnR": a}, "b": {"MdR": b, "MnR": b}}
    with pytest.raises(FirevalError, match=r"MdR is a median over queries.*use MnR"):
        compare_runs(per_query)
    with pytest.raises(FirevalError, match="MdR is a median"):
        compare_runs(per_query, measures=["MnR", "MdR"])
    (c,) = compare_runs(per_query, measures=["MnR"], n_resamples=200)
    assert c.mean_difference == pytest.approx((a - b).mean())
