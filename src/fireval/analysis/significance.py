"""Paired significance tests between runs, multiple-comparison correction and effect sizes.

All tests work on the paired per-query differences ``d_i = a_i - b_i`` over the queries where
both runs have a defined value, with observed statistic ``t = mean(d)``.

* **Paired bootstrap** (Efron & Tibshirani 1993, §16.4; Sakai 2006): resample queries with
  replacement ``B`` times, ``t*_b = mean(d[I_b])``. Under H0 the centred statistic
  ``t*_b - t`` mimics the null, so ``p = (1 + #{b : |t*_b - t| >= |t|}) / (B + 1)``.
* **Randomisation (sign-flip permutation) test** (Fisher 1935; Smucker, Allan & Carterette
  2007): under H0 the labels A/B of each query are exchangeable, so each ``d_i`` keeps or
  flips its sign with probability 1/2: ``t*_b = mean(s_b * d)``, and
  ``p = (1 + #{b : |t*_b| >= |t|}) / (B + 1)``.

``+1`` in numerator and denominator keeps Monte-Carlo p-values valid (never 0; Phipson &
Smyth 2010). Comparisons use a relative tolerance of 1e-12 on ``|t|`` so that resamples
equal to the observed value up to rounding count as "at least as extreme".

* **Holm (1979)** step-down correction: with sorted p-values ``p_(1) <= ... <= p_(m)``,
  ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.
* **Interval of the difference**: the percentile bootstrap interval of ``mean(d)`` from the same
  resampled means ``t*_b`` as the bootstrap test (:func:`paired_bootstrap`).
* **Effect sizes** for paired data: the mean difference; Cohen's ``d_z = mean(d) / sd(d)``
  (sd with ``ddof=1``; Cohen 1988, Lakens 2013); and the probability of superiority
  ``PS = P(a > b) + P(a = b) / 2`` over queries (the common-language effect size for
  dependent samples, Grissom & Kim 2012).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.analysis.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_means,
    check_level,
    check_resamples,
    chunk_rows,
    distinct_values,
    rng_for,
)
from fireval.core.errors import FirevalError
from fireval.metrics.measures import parse_measure

_TOL = 1e-12


def paired_differences(
    a: npt.ArrayLike, b: npt.ArrayLike, *, empty_ok: bool = False
) -> npt.NDArray[np.float64]:
    """``a - b`` over the queries where both are defined (not NaN); none is an error unless ``empty_ok``."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise FirevalError(f"paired comparison needs the same queries: {x.size} vs {y.size} values")
    ok = ~(np.isnan(x) | np.isnan(y))
    d = x[ok] - y[ok]
    if d.size == 0 and not empty_ok:
        raise FirevalError("no query has a defined value in both runs")
    return np.ascontiguousarray(d)


def _threshold(t: float) -> float:
    return abs(t) * (1 - _TOL) - _TOL


def paired_bootstrap_p(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    chunk: int | None = None,
    method: str = "auto",
) -> float:
    """Two-sided paired bootstrap p-value for ``mean(a) != mean(b)`` (see module docstring).

    The resampled means ``t*_b`` are :func:`fireval.analysis.bootstrap.bootstrap_means` of the
    differences (``method`` as there).
    """
    return paired_bootstrap(a, b, n_resamples, seed, chunk=chunk, method=method)[0]


def paired_bootstrap(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    level: float = 0.95,
    chunk: int | None = None,
    method: str = "auto",
) -> tuple[float, float, float]:
    """``(p, low, high)``: the paired bootstrap p-value (:func:`paired_bootstrap_p`) and the
    percentile interval of the mean difference ``mean(a - b)`` at ``level``, both from the same
    ``n_resamples`` resampled means ``t*_b`` (``numpy.quantile``, type 7, at ``(1 - level) / 2``
    and ``(1 + level) / 2``; Efron & Tibshirani 1993, §13.3)."""
    check_level(level)
    d = paired_differences(a, b)
    t = float(d.mean())
    tb = bootstrap_means(d, n_resamples, seed, chunk=chunk, method=method)
    p = (1 + int(np.count_nonzero(np.abs(tb - t) >= _threshold(t)))) / (tb.size + 1)
    if d.min() == d.max():  # every resample has this mean (summing in another order must not move it)
        return p, t, t
    lo, hi = np.quantile(tb, [(1 - level) / 2, (1 + level) / 2])
    return p, float(lo), float(hi)


def randomisation_p(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    chunk: int | None = None,
    method: str = "auto",
) -> float:
    """Two-sided sign-flip randomisation test p-value for paired per-query values.

    With few distinct differences ``u_j`` (counts ``c_j``), the flipped sum is
    ``sum_j u_j (2 K_j - c_j)`` with ``K_j ~ Binomial(c_j, 1/2)`` independent, the same
    distribution as flipping each query's sign; ``method="indices"`` forces per-query flips.
    """
    n_resamples = check_resamples(n_resamples)
    d = paired_differences(a, b)
    n = d.size
    t = float(d.mean())
    thr = _threshold(t)
    rng = rng_for(seed)
    count = 0
    done = 0
    dv = distinct_values(d) if method != "indices" else None
    if dv is not None:
        # the flipped sum only depends on how many of each distinct value keep their sign
        u, c = dv
        step = chunk_rows(n_resamples, u.size * 64, chunk)
        while done < n_resamples:
            rows = min(step, n_resamples - done)
            kept = rng.binomial(c, 0.5, size=(rows, u.size))
            tb = ((2 * kept - c) * u).sum(axis=1) / n
            count += int(np.count_nonzero(np.abs(tb) >= thr))
            done += rows
        return (1 + count) / (n_resamples + 1)
    step = chunk_rows(n_resamples, n, chunk)
    while done < n_resamples:
        rows = min(step, n_resamples - done)
        signs = rng.integers(0, 2, size=(rows, n), dtype=np.int8) * np.int8(2) - np.int8(1)
        tb = (signs * d).sum(axis=1) / n
        count += int(np.count_nonzero(np.abs(tb) >= thr))
        done += rows
    return (1 + count) / (n_resamples + 1)


def holm(pvalues: Sequence[float] | npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm–Bonferroni adjusted p-values, in the input order."""
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adj_sorted = np.maximum.accumulate(scaled)
    out = np.empty(m)
    out[order] = adj_sorted
    return out


@dataclass(frozen=True)
class EffectSize:
    """Paired effect sizes of one run over another (see the module docstring)."""

    mean_difference: float
    cohens_dz: float
    prob_superiority: float
    n: int


def effect_size(a: npt.ArrayLike, b: npt.ArrayLike) -> EffectSize:
    """Paired effect sizes of ``a`` over ``b`` (see module docstring)."""
    d = paired_differences(a, b)
    sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
    mean = float(d.mean())
    dz = mean / sd if sd > 0 else (0.0 if mean == 0 else float(np.sign(mean)) * float("inf"))
    ps = float((np.count_nonzero(d > 0) + 0.5 * np.count_nonzero(d == 0)) / d.size)
    return EffectSize(mean, dz, ps, int(d.size))


@dataclass(frozen=True)
class Comparison:
    """One paired comparison of run ``a`` against run ``b`` on one measure."""

    measure: str
    a: str
    b: str
    mean_a: float
    mean_b: float
    mean_difference: float
    cohens_dz: float
    prob_superiority: float
    p_bootstrap: float
    p_randomisation: float
    p_bootstrap_holm: float
    p_randomisation_holm: float
    n: int
    #: percentile bootstrap interval of ``mean_difference`` (same resamples as ``p_bootstrap``)
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    level: float = 0.95
    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED


def compare_runs(
    per_query: Mapping[str, Mapping[str, npt.ArrayLike]],
    *,
    measures: Sequence[str] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> list[Comparison]:
    """All pairwise comparisons among runs (``run -> measure -> per-query values``).

    For each measure, the p-values of the ``m = R (R - 1) / 2`` pairs are Holm-corrected
    together (one family per measure and test). Each comparison carries the ``level`` percentile
    bootstrap interval of its mean difference (``ci_low``, ``ci_high``; not corrected for
    multiplicity), the seed and the number of resamples.

    The tests and effect sizes are of per-query *means*, so ``MdR`` (a median over queries) is
    refused: its per-query values are ranks, and their mean difference is the MnR difference,
    not the difference of the medians.
    """
    runs = list(per_query)
    if len(runs) < 2:
        return []
    if measures is None:
        measures = [m for m in per_query[runs[0]] if all(m in per_query[r] for r in runs)]
    medians = [m for m in measures if _is_median(m)]
    if medians:
        raise FirevalError(
            f"{medians[0]} is a median over queries; the paired tests compare per-query means (their "
            "mean difference would be the MnR difference), so leave MdR out or use MnR (the mean rank)"
        )
    out: list[Comparison] = []
    for measure in measures:
        rows: list[dict[str, Any]] = []
        for ra, rb in combinations(runs, 2):
            va = np.asarray(per_query[ra][measure], dtype=np.float64)
            vb = np.asarray(per_query[rb][measure], dtype=np.float64)
            es = effect_size(va, vb)
            ok = ~(np.isnan(va) | np.isnan(vb))
            p_boot, lo, hi = paired_bootstrap(va, vb, n_resamples, seed, level=level)
            rows.append(
                dict(
                    measure=measure,
                    a=ra,
                    b=rb,
                    mean_a=float(va[ok].mean()),
                    mean_b=float(vb[ok].mean()),
                    mean_difference=es.mean_difference,
                    cohens_dz=es.cohens_dz,
                    prob_superiority=es.prob_superiority,
                    p_bootstrap=p_boot,
                    p_randomisation=randomisation_p(va, vb, n_resamples, seed),
                    n=es.n,
                    ci_low=lo,
                    ci_high=hi,
                    level=level,
                    n_resamples=n_resamples,
                    seed=seed,
                )
            )
        hb = holm([r["p_bootstrap"] for r in rows])
        hr = holm([r["p_randomisation"] for r in rows])
        for r, x, y in zip(rows, hb, hr, strict=True):
            out.append(Comparison(**r, p_bootstrap_holm=float(x), p_randomisation_holm=float(y)))  # type: ignore[arg-type]
    return out


def _is_median(measure: str) -> bool:
    try:
        return parse_measure(measure).aggregate == "median"
    except FirevalError:
        return False


def comparisons_as_dicts(comparisons: Sequence[Comparison]) -> list[dict[str, object]]:
    """The comparisons as plain dicts (for JSON)."""
    return [asdict(c) for c in comparisons]
