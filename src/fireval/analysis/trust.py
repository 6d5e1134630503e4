"""The whole trust analysis of a set of runs, as plain data for the report.

:func:`analyse` runs every analysis of this package on ``runs`` × ``label sets`` and returns a
:class:`TrustAnalysis` of tables (lists of row dicts) and raw arrays for the plots. Per-query
values come from :func:`fireval.metrics.query_values` (or any function with its signature).
Queries with no relevant document are NaN there and are left out of every mean.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.analysis import breakdowns, budget, overlap, poolbias
from fireval.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_table
from fireval.analysis.significance import compare_runs, comparisons_as_dicts
from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.core.judgments import Judgments
from fireval.core.run import Run

ValuesFn = Callable[[Run, Judgments, Direction, Sequence[str]], Mapping[str, npt.NDArray[np.float64]]]

DEFAULT_ANALYSIS_MEASURES = ("C@1", "C@5", "C@10", "nDCG@10")


def metrics_values(ties: str = "tie-aware", collection: Collection | None = None) -> ValuesFn:
    """Per-query values from :func:`fireval.metrics.query_values` (unjudged = irrelevant)."""

    def fn(
        run: Run, judgments: Judgments, direction: Direction, measures: Sequence[str]
    ) -> Mapping[str, Any]:
        from fireval.metrics import query_values

        return query_values(
            run, judgments, direction, list(measures), ties=ties, unjudged="lower", collection=collection
        )

    return fn


def _mean(v: npt.ArrayLike) -> float:
    a = np.asarray(v, dtype=np.float64)
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else float("nan")


@dataclass
class TrustAnalysis:
    """Results of :func:`analyse`; every table is a list of row dicts."""

    settings: dict[str, Any]
    runs: list[str]
    label_sets: list[str]
    main_labels: str
    measures: list[str]
    per_query: dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]]  # labels -> run -> measure -> values
    label_sources: list[dict[str, Any]] = field(default_factory=list)  # labels, source, relevant, irrelevant
    unresolved: dict[str, int] = field(default_factory=dict)  # labels -> pairs left unjudged by disagreement
    scores: list[dict[str, Any]] = field(default_factory=list)  # original vs augmented
    intervals: list[dict[str, Any]] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    overlap: list[dict[str, Any]] = field(default_factory=list)
    pool_bias: list[dict[str, Any]] = field(default_factory=list)
    judged: list[dict[str, Any]] = field(default_factory=list)
    correctness: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # "A vs B" -> rows
    positives: npt.NDArray[np.int64] | None = None
    lengths: npt.NDArray[np.int64] | None = None
    length_positives: dict[str, Any] = field(default_factory=dict)
    positive_ranks: dict[str, dict[str, npt.NDArray[np.float64]]] = field(default_factory=dict)
    train_overlap: npt.NDArray[np.float64] | None = None
    train_overlap_stats: dict[str, float] = field(default_factory=dict)
    budget: list[dict[str, Any]] = field(default_factory=list)
    recommended: list[dict[str, Any]] = field(default_factory=list)


def analyse(
    collection: Collection,
    runs: Mapping[str, Run],
    label_sets: Mapping[str, Judgments],
    *,
    measures: Sequence[str] = DEFAULT_ANALYSIS_MEASURES,
    direction: Direction | str = Direction.T2V,
    values_fn: ValuesFn | None = None,
    k: int = 10,
    rbo_p: float = 0.9,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    pool_depth: int = 10,
    correct_k: int = 1,
    train_captions: Sequence[str] | None = None,
    budget_resamples: int = 1000,
    budget_deltas: Sequence[float] = (0.02, 0.05, 0.10),
    provenance: poolbias.Provenance | None = None,
    run_models: Mapping[str, str] | None = None,
) -> TrustAnalysis:
    """Run every analysis (see the module docstring) and collect the results.

    The *main* label set (CIs, tests, budget, breakdowns) is the last one of ``label_sets``
    (``augmented`` when extra labels are given, else ``original``). Pool bias is computed
    when some label set holds non-instance labels; their provenance is ``provenance``, else the
    labels' own ``models`` provenance when ``run_models`` maps run names to those model names
    (FIRE JSON), else the runs' own top-``pool_depth`` (assuming these runs made the pool).
    """
    if not runs:
        raise FirevalError("no runs to analyse")
    if not label_sets:
        raise FirevalError("no label sets to analyse")
    d = Direction.parse(direction)
    for name, run in runs.items():
        for lname, j in label_sets.items():
            if run.shape != j.shape:
                raise FirevalError(f"run {name!r} has shape {run.shape} but labels {lname!r} cover {j.shape}")
    values_fn = values_fn or metrics_values(collection=collection)
    corr_measure = f"C@{correct_k}"
    all_measures = list(dict.fromkeys([*measures, corr_measure]))
    names = list(runs)
    lnames = list(label_sets)
    main = lnames[-1]
    per_query: dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]] = {}
    for lname, j in label_sets.items():
        per_query[lname] = {
            r: {m: np.asarray(v, dtype=np.float64) for m, v in values_fn(run, j, d, all_measures).items()}
            for r, run in runs.items()
        }
    res = TrustAnalysis(
        settings={
            "direction": d.value,
            "k": k,
            "rbo_p": rbo_p,
            "n_resamples": n_resamples,
            "seed": seed,
            "level": level,
            "pool_depth": pool_depth,
            "correct_k": correct_k,
            "collection": collection.name,
            "n_captions": collection.n_captions,
            "n_videos": collection.n_videos,
        },
        runs=names,
        label_sets=lnames,
        main_labels=main,
        measures=list(measures),
        per_query=per_query,
    )
    # what each label set is made of
    for lname, j in label_sets.items():
        for src, c in j.counts_by_source().items():
            res.label_sources.append({"labels": lname, "source": src, **c})
        res.unresolved[lname] = int(np.unique(j.unresolved, axis=0).shape[0])
    # original vs augmented (means of the per-query values)
    for r in names:
        for m in measures:
            row: dict[str, Any] = {"run": r, "measure": m}
            for lname in lnames:
                row[lname] = _mean(per_query[lname][r][m])
            if len(lnames) > 1:
                row["delta"] = row[lnames[-1]] - row[lnames[0]]
            res.scores.append(row)
    # bootstrap intervals on every label set
    for lname in lnames:
        vals = {r: {m: per_query[lname][r][m] for m in measures} for r in names}
        res.intervals += [
            {"labels": lname, **row}
            for row in bootstrap_table(vals, level=level, n_resamples=n_resamples, seed=seed)
        ]
    # paired significance on the main labels
    main_vals = {r: {m: per_query[main][r][m] for m in measures} for r in names}
    res.comparisons = comparisons_as_dicts(compare_runs(main_vals, n_resamples=n_resamples, seed=seed))
    # overlap and RBO of the top-K
    tops = {r: overlap.topk(run, d, k) for r, run in runs.items()}
    res.overlap = overlap.pairwise_overlap(tops, p=rbo_p)
    # pool bias and judged@K
    labelled = [ln for ln in lnames if any(not s.startswith("instance") for s in label_sets[ln].sources)]
    for lname in lnames:
        for r in names:
            jk = poolbias.judged_at_k(tops[r], label_sets[lname], d)
            res.judged.append({"labels": lname, "run": r, "k": k, "judged": float(jk.mean())})
    if labelled:
        pool_tops = (
            tops if pool_depth == k else {r: overlap.topk(run, d, pool_depth) for r, run in runs.items()}
        )
        lname = labelled[-1]
        if provenance is not None:
            prov = provenance
        elif run_models:
            prov = poolbias.Provenance.from_details(label_sets[lname], run_models)
        else:
            prov = poolbias.provenance_from_topk(pool_tops, collection.shape, d)
        res.settings["pool_provenance"] = (
            "given" if provenance is not None else ("labels" if run_models else "top-k")
        )
        pool_runs = [r for r in names if r in prov.runs]

        def scorer(run_name: str, j: Judgments) -> dict[str, float]:
            vals = values_fn(runs[run_name], j, d, list(measures))
            return {m: _mean(vals[m]) for m in measures}

        full = {r: {m: _mean(per_query[lname][r][m]) for m in measures} for r in pool_runs}
        for row in poolbias.pool_bias_table(pool_runs, label_sets[lname], prov, scorer, full_scores=full):
            row["labels"] = lname
            res.pool_bias.append(row)
    # breakdowns
    lengths = collection.caption_lengths() if d is Direction.T2V else None
    main_j = label_sets[main]
    res.positives = breakdowns.positives_per_query(main_j, d)
    if lengths is not None:
        res.lengths = lengths
        res.length_positives = breakdowns.length_vs_positives(lengths, res.positives)
        for a, b in combinations(names, 2):
            ca = per_query[main][a][corr_measure]
            cb = per_query[main][b][corr_measure]
            ok = ~(np.isnan(ca) | np.isnan(cb))
            res.correctness[f"{a} vs {b}"] = breakdowns.correctness_by_length(ca[ok], cb[ok], lengths[ok])
    for r, run in runs.items():
        res.positive_ranks[r] = breakdowns.positive_ranks_by_source(run, main_j, d)
    if train_captions and d is Direction.T2V and lengths is not None:
        res.train_overlap = breakdowns.train_test_overlap(collection.captions, train_captions)
        res.train_overlap_stats = breakdowns.overlap_length_correlation(res.train_overlap, lengths)
    # annotation budget
    for r in names:
        for m in measures:
            curve = budget.error_curve(per_query[main][r][m], n_resamples=budget_resamples, seed=seed)
            for row in curve:
                res.budget.append({"run": r, "measure": m, "n": int(row["n"]), "error": row["error"]})
            rec: dict[str, Any] = {"run": r, "measure": m}
            for delta in budget_deltas:
                rec[f"n for Δ={delta:g}"] = budget.recommend_n(curve, delta)
            res.recommended.append(rec)
    return res
