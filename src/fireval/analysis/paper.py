"""The numbers of a paper's results table: runs × measures per direction and label set.

:func:`summarise` turns per-query values (``labels -> run -> measure -> values``) into what a
TVR paper prints: each run's aggregate per measure and label set, the Δ between the last and
the first label set (augmented − original), the best run per column, and which runs are
significantly worse than that best run.

Conventions:

* aggregate: the mean over the queries with a defined value (NaN = no relevant document), except
  ``MdR``, the median over queries of the first relevant rank. ``MdR`` and ``MnR`` are better when
  lower (:attr:`fireval.metrics.measures.Measure.lower_is_better`), the others when higher.
* best: the run(s) with the best aggregate in the column (exact ties are all best).
* significantly worse: the Holm-adjusted p-value of the paired test between the run and a best
  run, from :func:`fireval.analysis.significance.compare_runs` (all run pairs of one measure are
  one Holm family, as in ``fireval compare``), is below ``alpha`` and the run's aggregate is
  worse. ``test`` picks the sign-flip randomisation test (default) or the paired bootstrap. The
  tests compare per-query means, so ``MdR`` (a median) gets no marker.
* Δ: computed per query over the queries defined under both label sets, then averaged (the same
  query set on both sides); for ``MdR`` the difference of the two medians over that set.
  ``delta_n`` holds the number of those queries. Pass values already restricted to a common
  query set (:func:`fireval.analysis.trust.on_query_set`, as :func:`fireval.analysis.trust.analyse`
  does) so that a query that lost every relevant document under one label set counts as a failure
  there instead of leaving the Δ.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from fireval.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from fireval.analysis.significance import compare_runs
from fireval.core.errors import FirevalError
from fireval.metrics.measures import parse_measure

TESTS = {
    "randomisation": ("p_randomisation_holm", "two-sided paired randomisation (sign-flip) test"),
    "bootstrap": ("p_bootstrap_holm", "two-sided paired bootstrap test"),
}


def aggregate(measure: str, values: npt.ArrayLike) -> float:
    """Mean over defined queries (median for ``MdR``); NaN when no query is defined."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return float("nan")
    return float(np.median(v)) if parse_measure(measure).aggregate == "median" else float(v.mean())


def lower_is_better(measure: str) -> bool:
    """``MdR`` and ``MnR``."""
    return parse_measure(measure).lower_is_better


@dataclass
class DirectionSummary:
    """A paper table's numbers for one direction (see the module docstring)."""

    direction: str
    label_sets: list[str]
    runs: list[str]
    measures: list[str]
    values: dict[str, dict[str, dict[str, float]]]  # labels -> run -> measure -> aggregate
    n: dict[str, dict[str, int]]  # labels -> measure -> queries (max over runs)
    delta: dict[str, dict[str, float]] = field(default_factory=dict)  # run -> measure -> Δ
    delta_n: dict[str, int] = field(default_factory=dict)  # measure -> queries in the Δ (max over runs)
    best: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # labels -> measure -> runs
    #: labels -> measure -> run -> Holm-adjusted p against the best run (only the significant ones)
    worse: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    alpha: float = 0.05
    test: str = "randomisation"

    @property
    def test_description(self) -> str:
        return TESTS[self.test][1]


def _best(measure: str, scores: Mapping[str, float]) -> list[str]:
    finite = {r: v for r, v in scores.items() if not np.isnan(v)}
    if not finite:
        return []
    target = min(finite.values()) if lower_is_better(measure) else max(finite.values())
    return [r for r, v in finite.items() if v == target]


def summarise(
    per_query: Mapping[str, Mapping[str, Mapping[str, npt.ArrayLike]]],
    *,
    direction: str,
    measures: Sequence[str],
    alpha: float = 0.05,
    test: str = "randomisation",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    excluded: Mapping[str, Collection[str]] | None = None,
) -> DirectionSummary:
    """Aggregates, Δ, best runs and significance markers for ``labels -> run -> measure -> values``.

    ``excluded``: label set -> runs whose values under it are not comparable (a run failing the
    alignment check, :meth:`fireval.checks.ChecksReport.not_comparable`): never best, never marked.
    """
    if test not in TESTS:
        raise FirevalError(f"unknown test {test!r}; expected one of {sorted(TESTS)}")
    if not 0 < alpha < 1:
        raise FirevalError(f"alpha must be in (0, 1), got {alpha}")
    lnames = list(per_query)
    if not lnames:
        raise FirevalError("no label sets to summarise")
    runs = list(per_query[lnames[0]])
    ms = list(measures)
    out = DirectionSummary(direction, lnames, runs, ms, {}, {}, alpha=alpha, test=test)
    key = TESTS[test][0]
    for ln in lnames:
        vals = per_query[ln]
        out.values[ln] = {r: {m: aggregate(m, vals[r][m]) for m in ms} for r in runs}
        out.n[ln] = {
            m: max(int((~np.isnan(np.asarray(vals[r][m], dtype=np.float64))).sum()) for r in runs) for m in ms
        }
        off = set((excluded or {}).get(ln, ()))
        out.best[ln] = {m: _best(m, {r: out.values[ln][r][m] for r in runs if r not in off}) for m in ms}
        out.worse[ln] = {m: {} for m in ms}
        tested = [m for m in ms if parse_measure(m).aggregate != "median"]
        if len(runs) < 2 or not tested:
            continue
        comps = compare_runs(
            {r: {m: vals[r][m] for m in tested} for r in runs},
            measures=tested,
            n_resamples=n_resamples,
            seed=seed,
        )
        vs_best: dict[str, dict[str, list[float]]] = {m: {} for m in tested}
        for c in comps:
            best = out.best[ln][c.measure]
            for run, other in ((c.a, c.b), (c.b, c.a)):
                if other in best and run not in best and run not in off:
                    vs_best[c.measure].setdefault(run, []).append(float(getattr(c, key)))
        for m, by_run in vs_best.items():  # worse than every best run
            out.worse[ln][m] = {r: max(ps) for r, ps in by_run.items() if max(ps) < alpha}
    if len(lnames) > 1:
        first, last = per_query[lnames[0]], per_query[lnames[-1]]
        for r in runs:
            out.delta[r] = {}
            for m in ms:
                a = np.asarray(first[r][m], dtype=np.float64)
                b = np.asarray(last[r][m], dtype=np.float64)
                ok = ~(np.isnan(a) | np.isnan(b))
                out.delta[r][m] = aggregate(m, b[ok]) - aggregate(m, a[ok]) if ok.any() else float("nan")
                out.delta_n[m] = max(out.delta_n.get(m, 0), int(ok.sum()))
    return out
