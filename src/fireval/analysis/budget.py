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
grid suffices. (Sample sizes above the number of queries are allowed: the bootstrap then
extrapolates to a larger query set drawn from the same distribution.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from fireval.analysis.bootstrap import DEFAULT_SEED, bootstrap_means
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


def recommend_n(curve: Sequence[Mapping[str, float]], delta: float) -> int | None:
    """Smallest ``n`` of the curve whose error is ``<= delta`` (see module docstring).

    ``delta`` is a fraction of 1, as the per-query values of percentage measures are (0.02 = 2
    points); 1 or more is refused, since no error of a mean of values in [0, 1] exceeds 1 (a
    value in points, ``--delta 2``, would recommend the smallest n for any run).
    """
    check_delta(delta)
    for row in sorted(curve, key=lambda r: r["n"]):
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
