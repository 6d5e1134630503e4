"""The stratified estimator against its definition, by enumerating every sample of small populations.

Each test lists every stratified simple random sample without replacement (the product of the
strata's combinations, all equally likely) and checks: the estimator's expectation equals the
true mean exactly, and the variance estimator's expectation equals the enumerated variance of
the estimator (the design-unbiasedness of Cochran 1977 §5.3), through the code path ``fireval
estimate`` runs (:func:`fireval.estimation.estimate.estimate_part`).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from fireval.core.direction import Direction
from fireval.estimation.estimate import estimate_part
from fireval.estimation.plan import Part
from fireval.estimation.stratified import stratified_estimate


def _samples(strata: list[list[int]], n_h: list[int]):
    return itertools.product(*(itertools.combinations(qs, n) for qs, n in zip(strata, n_h, strict=True)))


def _part(strata: list[list[int]], sample: tuple[tuple[int, ...], ...], n_queries: int) -> Part:
    return Part(
        run="r",
        direction=Direction.T2V,
        measure="C@1",
        mode="budget",
        run_digest="",
        n_queries=n_queries,
        excluded=[],
        strata_queries=strata,
        strata_labels=[f"h{i}" for i in range(len(strata))],
        strata_cost=[1] * len(strata),
        sampled=[list(s) for s in sample],
    )


CASES = [
    # (true values of every query, strata (query indices), sample sizes); the other queries are decided
    ([1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1], [[0, 1, 2, 3], [4, 5, 6, 7, 8]], [2, 3]),
    ([0.5, 0.25, 1, 0, 0.2, 1, 0, 0.75, 0.1, 0.9], [[0, 1, 2], [3, 4, 5, 6], [7, 8]], [2, 2, 2]),
    ([3, 1, 7, 2, 2, 5, 9, 4], [[0, 1, 2, 3, 4, 5]], [3]),
    ([1, 1, 0, 0, 1, 0], [[0, 1, 2], [3, 4, 5]], [2, 3]),  # a stratum taken whole
]


@pytest.mark.parametrize("with_aux", [False, True])
@pytest.mark.parametrize(("truth", "strata", "n_h"), CASES)
def test_expectation_and_variance_equal_the_enumeration(truth, strata, n_h, with_aux) -> None:
    y = np.asarray(truth, np.float64)
    # a fixed lower bound of every value (the difference estimator's x), or none (x = 0)
    aux = np.floor(y * np.linspace(0.2, 1.0, y.size)) if with_aux else None
    n = y.size
    inside = {q for s in strata for q in s}
    # at "estimate time" the sampled queries are decided (lower = upper = truth); the others in a
    # stratum are not (bounds 0 .. 10), the decided ones outside every stratum are known
    ests, variances = [], []
    for sample in _samples(strata, n_h):
        chosen = {q for s in sample for q in s}
        undecided = np.array([q in inside and q not in chosen for q in range(n)])
        lo = np.where(undecided, 0.0, y)
        hi = np.where(undecided, 10.0, y)
        e = estimate_part(lo, hi, _part(strata, sample, n), np.ones(n, bool), aux, adjust=False)
        conservative = estimate_part(lo, hi, _part(strata, sample, n), np.ones(n, bool), aux)
        assert conservative.estimate == e.estimate and conservative.variance >= e.variance - 1e-15
        assert e.method == "stratified-ht"
        assert e.est_low == e.est_high
        ests.append(e.estimate)
        variances.append(e.variance)
    ests_a = np.asarray(ests)
    # exact expectation (fractions: no rounding in the check itself)
    expected = sum(Fraction(v) for v in ests) / len(ests)
    assert float(expected) == pytest.approx(float(y.mean()), abs=1e-12)
    var_enum = float(((ests_a - ests_a.mean()) ** 2).mean())
    assert float(np.mean(variances)) == pytest.approx(var_enum, rel=1e-9, abs=1e-15)
    # the formula sum N_h^2 (1 - n_h/N_h) S_h^2 / n_h / N^2 with the population S_h^2
    formula = 0.0
    resid = y - (aux if aux is not None else 0.0)
    for qs, k in zip(strata, n_h, strict=True):
        big = len(qs)
        s2 = float(np.var(resid[qs], ddof=1)) if big > 1 else 0.0
        formula += big * big * (1 - k / big) * s2 / k
    assert formula / n**2 == pytest.approx(var_enum, rel=1e-9, abs=1e-15)


def test_unsampled_stratum_gives_its_bounds_not_a_guess() -> None:
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    lo = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
    hi = np.array([1.0, 0.0, 1.0, 1.0, 1.0])
    part = _part([[2, 3, 4]], ((),), 5)
    e = estimate_part(lo, hi, part, np.ones(5, bool))
    assert e.est_low == pytest.approx(lo.mean()) and e.est_high == pytest.approx(hi.mean())
    assert e.ci_low <= y.mean() <= e.ci_high


def test_undecided_sampled_query_widens_the_interval() -> None:
    # stratum [0..3], sample (0, 1); query 1's labels came back incomplete: bounds 0..1
    lo = np.array([1.0, 0.0, 0.0, 0.0])
    hi = np.array([1.0, 1.0, 1.0, 1.0])
    e = estimate_part(lo, hi, _part([[0, 1, 2, 3]], ((0, 1),), 4), np.ones(4, bool))
    assert e.est_low == pytest.approx(0.5) and e.est_high == pytest.approx(1.0)
    assert e.ci_low <= 0.5 and e.ci_high >= 1.0 - 1e-12


def test_decided_population_is_exact_with_zero_width() -> None:
    y = np.array([0.0, 1.0, 1.0, 0.5])
    e = estimate_part(y, y, _part([[0, 1]], ((0, 1),), 4), np.ones(4, bool))
    assert e.method == "exact" and e.estimate == pytest.approx(0.625) and e.ci_low == e.ci_high


def test_single_sample_uses_popoviciu_bound() -> None:
    e = stratified_estimate(
        4,
        (0.0, 0.0),
        np.array([4]),
        np.array([0]),
        np.array([1.0]),
        np.array([1.0]),
        np.zeros(1),
        np.zeros(1),
        np.array([0.25]),
        adjust=False,
    )
    assert e.estimate == pytest.approx(1.0)
    assert e.variance == pytest.approx(16 * (1 - 1 / 4) * 0.25 / 1 / 16)


def test_known_members_leave_the_stratum_conditionally_unbiased() -> None:
    """Members known without the part's own sample (another sample decided them) enter with their
    value; the rest of the stratum is estimated from the sampled ones among them. Given how many
    sampled queries fall among the unknown ones (>= 1 in every stratum), the estimate's expectation
    is the truth exactly."""
    y = np.array([1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0], np.float64)
    strata = [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]
    n_h = [3, 3]
    known = np.zeros(y.size, bool)
    known[[1, 2, 4, 5, 8]] = True  # decided by another part's sample, independently of this one
    aux = np.where(known, y, 0.0)
    aux_high = np.where(known, y, 1.0)
    groups: dict[tuple[int, ...], list[float]] = {}
    for sample in _samples(strata, n_h):
        chosen = {q for s in sample for q in s}
        undecided = np.array(
            [q in {i for s in strata for i in s} and q not in chosen and not known[q] for q in range(y.size)]
        )
        lo, hi = np.where(undecided, 0.0, y), np.where(undecided, 1.0, y)
        m = tuple(sum(1 for q in s if not known[q]) for s in sample)
        e = estimate_part(
            lo, hi, _part(strata, sample, y.size), np.ones(y.size, bool), aux, aux_high, adjust=False
        )
        groups.setdefault(m, []).append(e.estimate)
    assert any(0 in m for m in groups)  # some samples miss the unknown members of a stratum
    for m, ests in groups.items():
        if min(m) >= 1:
            assert float(np.mean(ests)) == pytest.approx(float(y.mean()), abs=1e-12), m
