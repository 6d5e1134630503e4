"""Power of a paired comparison in ``budget`` (FIRE §5) against the textbook formula and a simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from fireval.analysis.budget import (
    check_sizes_within,
    min_detectable_difference,
    n_for_difference,
    power_table,
    recommend_n,
)
from fireval.core.errors import FirevalError


def oracle_mdd(d: list[float], n: int, alpha: float, power: float) -> float:
    """Paired z-test: MDD = (z_{1-α/2} + z_{1-β}) σ_d / √n, σ_d the sample sd of the differences."""
    mean = sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
    return (norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / math.sqrt(n)


def test_mdd_and_n_match_the_formula() -> None:
    rng = np.random.default_rng(3)
    a = (rng.random(500) < 0.55).astype(float)
    b = (rng.random(500) < 0.5).astype(float)
    a[:7] = np.nan  # undefined queries leave the pairs
    d = [float(x - y) for x, y in zip(a, b, strict=True) if not (np.isnan(x) or np.isnan(y))]
    for alpha, power, n in ((0.05, 0.8, 100), (0.01, 0.9, 493), (0.1, 0.5, 20)):
        assert min_detectable_difference(a, b, n, alpha=alpha, power=power) == pytest.approx(
            oracle_mdd(d, n, alpha, power), rel=1e-12
        )
    for delta in (0.02, 0.05, 0.1):
        need = n_for_difference(a, b, delta)
        # the smallest n whose MDD is at most delta
        assert oracle_mdd(d, need, 0.05, 0.8) <= delta + 1e-12 < oracle_mdd(d, need - 1, 0.05, 0.8)


def test_power_at_the_mdd_by_simulation() -> None:
    """Drawing n queries from a population whose mean difference is MDD(n): the z-test rejects ~80%."""
    rng = np.random.default_rng(11)
    pop = rng.normal(0.0, 0.4, size=20_000)
    n = 200
    mdd = min_detectable_difference(pop, np.zeros_like(pop), n)
    shifted = pop - pop.mean() + mdd
    draws = shifted[rng.integers(0, pop.size, size=(4000, n))]
    z = draws.mean(axis=1) / (draws.std(axis=1, ddof=1) / math.sqrt(n))
    rejected = np.mean(np.abs(z) > norm.ppf(0.975))
    assert rejected == pytest.approx(0.8, abs=0.03)  # 4000 draws: sd of the share 0.0063


def test_never_recommends_more_queries_than_the_collection() -> None:
    curve = [{"n": 100.0, "error": 0.08}, {"n": 1000.0, "error": 0.04}, {"n": 3000.0, "error": 0.01}]
    assert recommend_n(curve, 0.02) == 3000
    assert recommend_n(curve, 0.02, n_max=1000) is None
    assert recommend_n(curve, 0.05, n_max=1000) == 1000
    with pytest.raises(FirevalError, match="more than the 1,000 queries"):
        check_sizes_within([500, 3000], 1000, "--n")
    rng = np.random.default_rng(0)
    vals = {
        "x": {"C@1": (rng.random(50) < 0.6).astype(float)},
        "y": {"C@1": (rng.random(50) < 0.5).astype(float)},
    }
    (row,) = power_table(vals, sizes=[10, 50], delta=0.02, n_queries=50)
    assert row["n_needed"] > 50 and row["reachable"] is False
    assert set(row["mdd"]) == {10, 50}


def test_budget_cli_power_and_cap(shared_data, capsys) -> None:  # type: ignore[no-untyped-def]
    from tests.cli_helpers import exit_code

    d = shared_data / "msrvtt"
    common = [str(d / "sims" / "GRAM_msrvtt.npy"), str(d / "sims" / "VAST_msrvtt.npy")]
    common += ["-c", str(d / "MSRVTT_JSFUSION_test.csv"), "-m", "C@1", "--resamples", "200", "-q"]

    # the README's old example: 3,000 queries of a 1,000-query collection
    assert exit_code(["budget", *common, "--n", "500,1000,3000"]) == 2
    assert "3000 is more than the 1,000 queries" in capsys.readouterr().err
    assert exit_code(["budget", *common, "--n", "100,1000", "--delta", "0.05"]) == 0
    out = capsys.readouterr().out
    lines = [ln.split("\t") for ln in out.splitlines() if ln.startswith("GRAM_msrvtt\tVAST_msrvtt\tC@1\t")]
    mdd = {int(x[3]): float(x[4]) for x in lines if x[3].isdigit()}
    assert set(mdd) == {100, 1000} and mdd[100] == pytest.approx(mdd[1000] * math.sqrt(10), abs=0.03)
    (need,) = [x[3] for x in lines if x[3].startswith("n needed")]
    assert need.endswith(": 414; observed difference +3.70 points")
    assert exit_code(["budget", *common, "--power", "1.5"]) == 2
    assert "--power must be in (0, 1)" in capsys.readouterr().err


def test_budget_marks_pairs_the_checks_find_not_comparable(shared_data, capsys) -> None:  # type: ignore[no-untyped-def]
    from tests.cli_helpers import exit_code

    d = shared_data / "msrvtt"
    argv = ["budget", str(d / "sims" / "clip4clip_msrvtt.npy"), str(d / "sims" / "GRAM_msrvtt.npy")]
    argv += ["-c", str(d / "MSRVTT_JSFUSION_test.csv"), "-m", "C@1", "--n", "100", "--resamples", "50", "-q"]
    assert exit_code(argv) == 0
    out = capsys.readouterr().out
    power = [ln for ln in out.splitlines() if ln.startswith("clip4clip_msrvtt\tGRAM_msrvtt\t")]
    assert power and all(ln.endswith("\t!") for ln in power)
    assert "! clip4clip_msrvtt vs GRAM_msrvtt: not comparable per query" in out
