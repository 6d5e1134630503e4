"""Annotation budget planning (FIRE §4.3, Figs. 4, 9, 10).

How many queries must be annotated before a score estimated on them is close to the score on
all queries? For a sample size ``n`` we draw ``B`` samples of ``n`` queries with replacement
from the per-query values ``v`` (``N`` defined queries) and record the error
``e_b = |mean(v[I_b]) - mean(v)|``. The curve reported is the 95th percentile of ``e_b``:
with ``n`` annotated queries, the estimate is within that many points of the full-sample
score 95% of the time.

A *recommended n* for a target detectable difference ``delta`` is the smallest ``n`` in the
grid whose 95th-percentile error is ``<= delta``: a score measured on ``n`` annotated queries
is then within ``delta`` of the full-sample score 95% of the time, so a difference of
``delta`` is not an artefact of which queries were annotated. ``None`` when no ``n`` in the
grid suffices, and never more than the collection's queries (``n_max``): the curve is of
subsets of *these* queries, so a larger "sample" would plan to annotate queries that do not
exist (``fireval budget --n`` above the number of queries is refused).

**Power to tell two runs apart** (FIRE §5: are the differences between models real at the
budget?). For a paired comparison of runs A and B on the same ``n`` queries, with per-query
differences ``d = a - b`` of standard deviation ``sigma_d`` (estimated on all queries defined
for both, ``ddof=1``), a two-sided test at level ``alpha`` detects a true mean difference
``delta`` with probability ``power`` when (normal approximation to the mean of ``d``)

    ``MDD(n) = (z_{1-alpha/2} + z_{power}) * sigma_d / sqrt(n)``   (minimum detectable difference)
    ``n(delta) = ceil(((z_{1-alpha/2} + z_{power}) * sigma_d / delta)^2)``   (queries needed)

Assumptions, stated with every result: the annotated queries are a simple random sample of the
collection's queries; ``sigma_d`` of the sample is that of the population (it is the observed
one, not the one under the alternative); ``n`` is large enough for the normal approximation (it
is optimistic for small ``n``, where the t distribution is wider); no finite-population
correction (conservative as ``n`` approaches the number of queries). ``n(delta)`` above the
number of queries is reported as not reachable, never as a recommendation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from fireval.analysis.bootstrap import DEFAULT_SEED, bootstrap_means
from fireval.analysis.significance import paired_differences
from fireval.core.errors import FirevalError


def default_sizes(n_total: int, points: int = 12) -> list[int]:
    """A geometric grid of sample sizes from 10 (or fewer) up to ``n_total``."""
    lo = min(10, n_total)
    grid = np.unique(np.round(np.geomspace(lo, n_total, points)).astype(int))
    return [int(x) for x in grid]


def error_curve(
    values: npt.ArrayLike,
    sizes: Sequence[int] | None = None,
    *,
    n_resamples: int = 1000,
    quantile: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> list[dict[str, float]]:
    """``[{n, error}]``: the ``quantile`` of ``|sample mean − full mean|`` for each sample size."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        raise FirevalError("no query has a defined value for this measure; cannot plan a budget")
    full = float(v.mean())
    sizes = default_sizes(v.size) if sizes is None else check_sizes(sizes)
    out = []
    for i, n in enumerate(sizes):
        means = bootstrap_means(v, n_resamples, seed + i, size=n)
        out.append({"n": float(n), "error": float(np.quantile(np.abs(means - full), quantile))})
    return out


#: the largest sample size planned for: one resample of ``n`` queries is drawn as ``n`` indices
#: (8 bytes each), so a larger ``n`` would exhaust memory instead of planning anything
MAX_SAMPLE_SIZE = 1_000_000


def check_sizes(sizes: Sequence[int], option: str = "sample sizes") -> list[int]:
    """Sample sizes as ints, each in ``1..MAX_SAMPLE_SIZE``; else a one-line :class:`FirevalError`."""
    out = [int(s) for s in sizes]
    if not out:
        raise FirevalError(f"{option}: no sample size given")
    for n in out:
        if not 1 <= n <= MAX_SAMPLE_SIZE:
            raise FirevalError(f"{option} must be integers from 1 to {MAX_SAMPLE_SIZE:,}, got {n}")
    return out


def check_delta(delta: float, option: str = "the target difference delta") -> float:
    """``delta`` must be a fraction in (0, 1) (0.02 = 2 points); else a one-line :class:`FirevalError`."""
    if not delta > 0:  # also NaN
        raise FirevalError(f"{option} must be > 0 (a fraction, e.g. 0.02), got {delta:g}")
    if delta >= 1:
        raise FirevalError(
            f"{option} is a fraction of 1 (0.02 = 2 points), got {delta:g}; did you mean {delta / 100:g}?"
        )
    return float(delta)


def recommend_n(
    curve: Sequence[Mapping[str, float]], delta: float, *, n_max: int | None = None
) -> int | None:
    """Smallest ``n`` of the curve whose error is ``<= delta`` (see module docstring).

    ``n_max`` (the number of queries of the collection) caps it: a row with ``n > n_max`` is
    never recommended.

    ``delta`` is a fraction of 1, as the per-query values of percentage measures are (0.02 = 2
    points); 1 or more is refused, since no error of a mean of values in [0, 1] exceeds 1 (a
    value in points, ``--delta 2``, would recommend the smallest n for any run).
    """
    check_delta(delta)
    for row in sorted(curve, key=lambda r: r["n"]):
        if n_max is not None and row["n"] > n_max:
            break
        if row["error"] <= delta:
            return int(row["n"])
    return None


def budget_table(
    per_query: Mapping[str, Mapping[str, npt.ArrayLike]],
    *,
    sizes: Sequence[int] | None = None,
    n_resamples: int = 1000,
    seed: int = DEFAULT_SEED,
) -> list[dict[str, object]]:
    """Long table ``run, measure, n, error`` over ``run -> measure -> per-query values``."""
    rows: list[dict[str, object]] = []
    for run, measures in per_query.items():
        for measure, vals in measures.items():
            for r in error_curve(vals, sizes, n_resamples=n_resamples, seed=seed):
                rows.append({"run": run, "measure": measure, "n": int(r["n"]), "error": r["error"]})
    return rows


def check_sizes_within(sizes: Sequence[int], n_queries: int, option: str = "sample sizes") -> list[int]:
    """Sample sizes no larger than the collection's ``n_queries``; else a one-line :class:`FirevalError`."""
    out = check_sizes(sizes, option)
    over = [n for n in out if n > n_queries]
    if over:
        raise FirevalError(
            f"{option}: {', '.join(str(n) for n in over)} is more than the {n_queries:,} queries of the "
            f"collection; a budget plans which of its queries to annotate (use at most {n_queries:,})"
        )
    return out


def check_power(
    power: float, alpha: float, names: tuple[str, str] = ("power", "alpha")
) -> tuple[float, float]:
    """``power`` and ``alpha`` in (0, 1) (NaN refused); else a one-line :class:`FirevalError` naming them."""
    if not 0 < alpha < 1:
        raise FirevalError(f"{names[1]} must be in (0, 1), got {alpha:g}")
    if not 0 < power < 1:
        raise FirevalError(f"{names[0]} must be in (0, 1), got {power:g}")
    return float(power), float(alpha)


def _z_sum(alpha: float, power: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2) + norm.ppf(power))


def min_detectable_difference(
    a: npt.ArrayLike, b: npt.ArrayLike, n: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """``MDD(n)`` of the paired comparison of runs ``a`` and ``b`` (module docstring), a fraction of 1."""
    check_power(power, alpha)
    if n < 1:
        raise FirevalError(f"n must be >= 1, got {n}")
    d = paired_differences(a, b, empty_ok=True)
    if d.size < 2:
        raise FirevalError(
            "fewer than 2 queries defined for both runs; cannot estimate the spread of differences"
        )
    return _z_sum(alpha, power) * float(d.std(ddof=1)) / float(np.sqrt(n))


def n_for_difference(
    a: npt.ArrayLike, b: npt.ArrayLike, delta: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """``n(delta)``: queries needed to detect a mean difference ``delta`` (module docstring); >= 2."""
    check_delta(delta)
    check_power(power, alpha)
    d = paired_differences(a, b, empty_ok=True)
    if d.size < 2:
        raise FirevalError(
            "fewer than 2 queries defined for both runs; cannot estimate the spread of differences"
        )
    need = (_z_sum(alpha, power) * float(d.std(ddof=1)) / delta) ** 2
    return max(2, int(np.ceil(need - 1e-9)))


def power_table(
    per_query: Mapping[str, Mapping[str, npt.ArrayLike]],
    *,
    sizes: Sequence[int],
    delta: float,
    n_queries: int,
    alpha: float = 0.05,
    power: float = 0.8,
) -> list[dict[str, object]]:
    """For every pair of runs and measure: ``MDD(n)`` at each size, ``n(delta)`` and whether it is reachable.

    Rows: ``a, b, measure, observed`` (mean of ``a - b``), ``sd``, ``n_pairs`` (queries defined
    for both), ``mdd`` (``{n: MDD(n)}``), ``n_needed`` and ``reachable`` (``n_needed <=
    n_queries``).
    """
    names = list(per_query)
    rows: list[dict[str, object]] = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for m in per_query[a]:
                if m not in per_query[b]:
                    continue
                d = paired_differences(per_query[a][m], per_query[b][m], empty_ok=True)
                if d.size < 2:
                    continue
                need = n_for_difference(per_query[a][m], per_query[b][m], delta, alpha=alpha, power=power)
                rows.append(
                    {
                        "a": a,
                        "b": b,
                        "measure": m,
                        "observed": float(d.mean()),
                        "sd": float(d.std(ddof=1)),
                        "n_pairs": int(d.size),
                        "mdd": {
                            int(n): min_detectable_difference(
                                per_query[a][m], per_query[b][m], int(n), alpha=alpha, power=power
                            )
                            for n in sizes
                        },
                        "n_needed": need,
                        "reachable": need <= n_queries,
                    }
                )
    return rows
