"""The whole trust analysis of a set of runs, as plain data for the report.

:func:`analyse` runs every analysis of this package on ``runs`` × ``label sets`` and returns a
:class:`TrustAnalysis` of tables (lists of row dicts) and raw arrays for the plots. Per-query
values come from :func:`fireval.metrics.query_values` (or any function with its signature).
Queries with no relevant document are NaN there and are left out of every mean, except in the
comparisons of label sets: with several label sets, the paper table (values, Δ, markers), the
``scores`` rows (original vs augmented) and the pool-bias drop average every label set over the
same queries, those with at least one relevant document under *any* of the sets
(:func:`common_queries`, as :func:`fireval.api.common_queries` does for ``fireval evaluate``); a
query in that set with no relevant document under one label set counts as a failure there
(:func:`fireval.metrics.evaluate.over_query_set`: 0, or rank ``n_docs + 1`` for MdR/MnR).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.analysis import breakdowns, budget, overlap, paper, poolbias, saturation
from fireval.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_table
from fireval.analysis.paper import DirectionSummary
from fireval.analysis.significance import compare_runs, comparisons_as_dicts
from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError, InputError
from fireval.core.judgments import Judgments
from fireval.core.run import Run
from fireval.metrics.evaluate import over_query_set
from fireval.metrics.measures import parse_measure, parse_measures

ValuesFn = Callable[[Run, Judgments, Direction, Sequence[str]], Mapping[str, npt.NDArray[np.float64]]]

DEFAULT_ANALYSIS_MEASURES = ("C@1", "C@5", "C@10", "nDCG@10")


def metrics_values(
    ties: str = "tie-aware",
    collection: Collection | None = None,
    unjudged: str = "lower",
    min_grade: float | None = None,
) -> ValuesFn:
    """Per-query values from :func:`fireval.metrics.query_values` (unjudged = irrelevant; ``upper``:
    relevant; with ``min_grade``, relevant = grade >= it for the binary measures, trec_eval's ``-l``)."""

    def fn(
        run: Run, judgments: Judgments, direction: Direction, measures: Sequence[str]
    ) -> Mapping[str, Any]:
        from fireval.metrics import query_values

        aggregates = [str(m) for m in parse_measures(list(measures)) if m.aggregate_only]
        if aggregates:  # query_values skips them, and every per-query analysis would miss them
            raise InputError(
                f"-m: {', '.join(aggregates)} {'is an aggregate' if len(aggregates) == 1 else 'are aggregates'} "
                "of C@1, C@5 and C@10 over all queries, with no per-query value to resample or test; "
                "use C@1,C@5,C@10 here (fireval evaluate reports meanR and geoC)"
            )
        return query_values(
            run,
            judgments,
            direction,
            list(measures),
            ties=ties,
            unjudged=unjudged,
            collection=collection,
            min_grade=min_grade,
        )

    return fn


def has_positive(judgments: Judgments, direction: Direction) -> npt.NDArray[np.bool_]:
    """Per query of ``direction``: whether it has at least one relevant document."""
    return np.diff(judgments.relevant().matrix(direction).indptr) > 0


def common_queries(label_sets: Mapping[str, Judgments], direction: Direction) -> npt.NDArray[np.bool_]:
    """The queries with at least one relevant document under any of ``label_sets``."""
    masks = [has_positive(j, direction) for j in label_sets.values()]
    return np.logical_or.reduce(masks) if masks else np.zeros(0, dtype=bool)


def on_query_set(
    values: Mapping[str, Mapping[str, Mapping[str, npt.ArrayLike]]],
    queries: npt.NDArray[np.bool_],
    n_docs: int,
) -> dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]]:
    """``labels -> run -> measure -> values`` restricted to ``queries`` (see the module docstring)."""
    return {
        ln: {
            r: {
                m: over_query_set(parse_measure(m), np.asarray(v, dtype=np.float64), queries, n_docs)
                for m, v in by_m.items()
            }
            for r, by_m in by_run.items()
        }
        for ln, by_run in values.items()
    }


def split_pair(pair: str, runs: Sequence[str]) -> tuple[str, str]:
    """The two run names of a ``"A vs B"`` key of :attr:`TrustAnalysis.correctness`.

    Run names are file stems and may contain ``" vs "`` themselves, so the split is the one whose
    both sides are runs of the analysis (else the first ``" vs "``).
    """
    names = set(runs)
    parts = pair.split(" vs ")
    for i in range(1, len(parts)):
        a, b = " vs ".join(parts[:i]), " vs ".join(parts[i:])
        if a in names and b in names:
            return a, b
    a, _, b = pair.partition(" vs ")
    return a, b


def budget_rows(
    values: Mapping[str, Mapping[str, npt.ArrayLike]], n_resamples: int, seed: int
) -> list[dict[str, Any]]:
    """``[{run, measure, n, error}]``: the budget curve (:func:`fireval.analysis.budget.error_curve`)
    of each run's per-query ``values`` of each measure."""
    return [
        {"run": r, "measure": m, "n": int(row["n"]), "error": row["error"]}
        for r, by_m in values.items()
        for m, v in by_m.items()
        for row in budget.error_curve(v, n_resamples=n_resamples, seed=seed)
    ]


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
    char_lengths: npt.NDArray[np.int64] | None = None
    correctness_chars: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # Fig. 3, characters
    train_similarity: npt.NDArray[np.float64] | None = None  # max TF-IDF cosine to training (Fig. 8)
    correctness_similarity: list[dict[str, Any]] = field(default_factory=list)  # Fig. 8 rows
    caption_examples: list[dict[str, Any]] = field(default_factory=list)  # Tables 5/6
    paper: dict[str, DirectionSummary] = field(default_factory=dict)  # direction -> paper table numbers
    # FIRE as published (docs/analysis.md, "FIRE as published"): Fig. 3 on every label set
    correctness_by_labels: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    correctness_chars_by_labels: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    train_overlap_table: list[dict[str, Any]] = field(
        default_factory=list
    )  # Table 7: words and characters rows
    rank_histogram: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # run -> Fig. 12 count rows
    pool_bias_sizes: list[dict[str, Any]] = field(default_factory=list)  # §4.2: drop vs number of pooled runs
    saturation: list[dict[str, Any]] = field(default_factory=list)  # §5: headroom after noise and bounds
    #: direction -> the bootstrap intervals of the main labels for each paper direction other than
    #: ``settings["direction"]`` (whose intervals are ``intervals``), for the figures of ``-d both``
    direction_intervals: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: the same for the figures of ``-d both`` drawn per direction: top-K overlap and RBO rows
    #: (``overlap``), rank of positives by label source (``positive_ranks``) and budget curves
    #: (``budget``) of each paper direction other than ``settings["direction"]``. Correctness by
    #: caption length and train similarity are of captions as queries (t2v) only.
    direction_overlap: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    direction_ranks: dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]] = field(default_factory=dict)
    direction_budget: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


#: the name of each :func:`analyse` setting in its own signature (messages of :func:`check_settings`)
SETTING_NAMES = {
    "k": "k",
    "rbo_p": "rbo_p",
    "level": "level",
    "alpha": "alpha",
    "test": "test",
    "pool_depth": "pool_depth",
    "n_resamples": "n_resamples",
}


def check_settings(
    *,
    k: int = 10,
    rbo_p: float = 0.9,
    level: float = 0.95,
    alpha: float = 0.05,
    test: str = "randomisation",
    pool_depth: int = 10,
    n_resamples: int = DEFAULT_RESAMPLES,
    names: Mapping[str, str] | None = None,
) -> None:
    """Refuse a setting of :func:`analyse` outside its range before any work is done.

    One :class:`FirevalError` naming the setting by ``names`` (the CLI passes its option names,
    ``{"k": "--k", ...}``; default :data:`SETTING_NAMES`): ``k`` and ``pool_depth`` are depths
    >= 1, ``rbo_p``, ``level`` and ``alpha`` lie strictly between 0 and 1 (NaN is refused),
    ``test`` is one of :data:`fireval.analysis.paper.TESTS`, ``n_resamples`` a positive count.
    """
    from fireval.analysis.bootstrap import check_level, check_resamples

    nm = {**SETTING_NAMES, **(names or {})}
    for key, value in (("k", k), ("pool_depth", pool_depth)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise FirevalError(f"{nm[key]} must be an integer >= 1, got {value}")
    for key, frac in (("rbo_p", rbo_p), ("alpha", alpha)):
        if not 0 < frac < 1:
            raise FirevalError(f"{nm[key]} must be in (0, 1), got {frac}")
    check_level(level, nm["level"])
    if test not in paper.TESTS:
        raise FirevalError(f"{nm['test']}: unknown test {test!r}; expected one of {sorted(paper.TESTS)}")
    check_resamples(n_resamples, nm["n_resamples"])


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
    paper_directions: Sequence[Direction | str] = (),
    alpha: float = 0.05,
    test: str = "randomisation",
    progress: Callable[[int, int], None] | None = None,
    tfidf_fit: str = "all",
    fig8_similarity: str = "mean10",
    fig8_k: int = 5,
    examples_by: str = "words",
    examples_per_group: int = 10,
    rank_histogram_max: int = 50,
    pool_max_subsets: int = 20,
    label_agreement: float | None = None,
    unaligned: Sequence[str] | frozenset[str] = (),
) -> TrustAnalysis:
    """Run every analysis (see the module docstring) and collect the results.

    The *main* label set (CIs, tests, budget, breakdowns) is the last one of ``label_sets``
    (``augmented`` when extra labels are given, else ``original``). Pool bias is computed
    when some label set holds non-instance labels; their provenance is ``provenance``, else the
    labels' own ``models`` provenance when ``run_models`` maps run names to those model names
    (FIRE JSON), else the runs' own top-``pool_depth`` (assuming these runs made the pool).

    ``paper`` holds the paper table's numbers (:func:`fireval.analysis.paper.summarise`) for
    ``direction`` and each of ``paper_directions`` (Holm-corrected ``test`` at ``alpha``).
    ``progress(done, total)`` is called after each step (values, intervals, tests, ... budget).

    FIRE as published (each default is the paper's; the other value keeps fireval's earlier
    variant): ``tfidf_fit`` ``all`` (TF-IDF fitted on training and test captions) or ``train``;
    ``fig8_similarity`` ``mean10`` (mean of the 10 highest train cosines) or ``max``, with C@``fig8_k``
    (5; the earlier variant used ``correct_k``); Tables 5/6 ranked ``examples_by`` ``words`` with
    ``examples_per_group`` 10 (or ``chars`` and 3). Fig. 3 is computed on every label set, Table
    7 in words and characters, Fig. 12's count by rank up to ``rank_histogram_max``, pool bias
    for every number of pooled runs (at most ``pool_max_subsets`` subsets per size, seeded by
    ``seed``; 0 skips it), and saturation with the label noise of ``label_agreement`` (pairwise agreement of
    the annotators; ``None``: no noise term) when the default ``values_fn`` is used.
    ``unaligned``: runs that fail the alignment check
    (:meth:`fireval.checks.ChecksReport.unaligned_runs`): the paper table never makes them best nor
    marks them under a label set beyond the instance positives (their values there are not comparable).
    """
    check_settings(
        k=k, rbo_p=rbo_p, level=level, alpha=alpha, test=test, pool_depth=pool_depth, n_resamples=n_resamples
    )
    if tfidf_fit not in breakdowns.TFIDF_FITS:
        raise FirevalError(f"tfidf_fit must be one of {', '.join(breakdowns.TFIDF_FITS)}, got {tfidf_fit!r}")
    if fig8_similarity not in ("mean10", "max"):
        raise FirevalError(f"fig8_similarity must be 'mean10' or 'max', got {fig8_similarity!r}")
    for key, value in (("fig8_k", fig8_k), ("examples_per_group", examples_per_group)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise FirevalError(f"{key} must be an integer >= 1, got {value}")
    if label_agreement is not None:
        saturation.label_error_rate(label_agreement)  # refuse an agreement no better than chance early
    default_values = values_fn is None
    if not runs:
        raise FirevalError("no runs to analyse")
    if not label_sets:
        raise FirevalError("no label sets to analyse")
    d = Direction.parse(direction)
    extra_dirs = [x for x in dict.fromkeys(Direction.parse(x) for x in paper_directions) if x is not d]
    n_steps, step = 9 + len(extra_dirs), 0

    def tick() -> None:
        nonlocal step
        step += 1
        if progress is not None:
            progress(step, n_steps)

    for name, run in runs.items():
        for lname, j in label_sets.items():
            if run.shape != j.shape:
                raise FirevalError(f"run {name!r} has shape {run.shape} but labels {lname!r} cover {j.shape}")
    values_fn = values_fn or metrics_values(collection=collection)
    corr_measure = f"C@{correct_k}"
    fig8_measure = f"C@{fig8_k}"
    fig8 = (
        bool(train_captions) and Direction.parse(direction) is Direction.T2V
    )  # Fig. 8 needs training captions
    all_measures = list(dict.fromkeys([*measures, corr_measure, *([fig8_measure] if fig8 else [])]))
    names = list(runs)
    lnames = list(label_sets)
    main = lnames[-1]
    per_query: dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]] = {}
    for lname, j in label_sets.items():
        per_query[lname] = {
            r: {m: np.asarray(v, dtype=np.float64) for m, v in values_fn(run, j, d, all_measures).items()}
            for r, run in runs.items()
        }
    tick()
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
            "fig8_k": fig8_k,
            "fig8_similarity": fig8_similarity,
            "tfidf_fit": tfidf_fit,
            "examples_by": examples_by,
            "examples_per_group": examples_per_group,
            "label_agreement": label_agreement,
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
            res.label_sources.append(
                {
                    "labels": lname,
                    "source": src,
                    **c,
                    "overruled": j.overruled.get(src, 0),
                    "regraded": j.regraded.get(src, 0),
                }
            )
        res.unresolved[lname] = int(np.unique(j.unresolved, axis=0).shape[0])

    # original vs augmented: with several label sets, every set over the same (common) queries
    def n_docs(dd: Direction) -> int:
        return collection.shape[1] if dd is Direction.T2V else collection.shape[0]

    def compared(
        dd: Direction, values: Mapping[str, Mapping[str, Mapping[str, npt.ArrayLike]]]
    ) -> dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]]:
        if len(lnames) < 2:
            return {
                ln: {r: {m: np.asarray(values[ln][r][m], dtype=np.float64) for m in measures} for r in names}
                for ln in lnames
            }
        q = common_queries(label_sets, dd)
        res.settings.setdefault("common_queries", {})[dd.value] = int(q.sum())
        return on_query_set(
            {ln: {r: {m: values[ln][r][m] for m in measures} for r in names} for ln in lnames}, q, n_docs(dd)
        )

    cmp_values = compared(d, per_query)
    for r in names:
        for m in measures:
            row: dict[str, Any] = {"run": r, "measure": m}
            for lname in lnames:
                row[lname] = paper.aggregate(m, cmp_values[lname][r][m])
            row["n"] = max(int((~np.isnan(cmp_values[ln][r][m])).sum()) for ln in lnames)
            if len(lnames) > 1:
                row["delta"] = row[lnames[-1]] - row[lnames[0]]
            res.scores.append(row)
    # bootstrap intervals on every label set
    # MdR is a median over queries: intervals, paired tests and budget curves are of means, so it
    # is left out of them (its value is in the scores and the paper table)
    means = [m for m in measures if parse_measure(m).aggregate != "median"]
    for lname in lnames:
        vals = {r: {m: per_query[lname][r][m] for m in means} for r in names}
        res.intervals += [
            {"labels": lname, **row}
            for row in bootstrap_table(vals, level=level, n_resamples=n_resamples, seed=seed)
        ]
    tick()
    # paired significance on the main labels
    main_vals = {r: {m: per_query[main][r][m] for m in means} for r in names}
    res.comparisons = comparisons_as_dicts(compare_runs(main_vals, n_resamples=n_resamples, seed=seed))
    tick()
    # the paper table: this direction from the values above, the others computed here
    off = {
        ln: set(unaligned)
        for ln in lnames
        if any(not s.startswith("instance") for s in label_sets[ln].sources)
    }
    psum = dict(
        measures=list(measures), alpha=alpha, test=test, n_resamples=n_resamples, seed=seed, excluded=off
    )
    res.paper[d.value] = paper.summarise(
        cmp_values,
        direction=d.value,
        **psum,  # type: ignore[arg-type]
    )
    tick()
    for xd in extra_dirs:
        pq = {
            ln: {r: dict(values_fn(run, j, xd, list(measures))) for r, run in runs.items()}
            for ln, j in label_sets.items()
        }
        res.paper[xd.value] = paper.summarise(compared(xd, pq), direction=xd.value, **psum)  # type: ignore[arg-type]
        xvals = {r: {m: pq[main][r][m] for m in means} for r in names}
        res.direction_intervals[xd.value] = [
            {"labels": main, **row}
            for row in bootstrap_table(xvals, level=level, n_resamples=n_resamples, seed=seed)
        ]
        # the figures drawn per direction (overlap, ranks, budget), from the same values
        res.direction_overlap[xd.value] = overlap.pairwise_overlap(
            {r: overlap.topk(run, xd, k) for r, run in runs.items()}, p=rbo_p
        )
        res.direction_ranks[xd.value] = {
            r: breakdowns.positive_ranks_by_source(run, label_sets[main], xd) for r, run in runs.items()
        }
        res.direction_budget[xd.value] = budget_rows(xvals, budget_resamples, seed)
        tick()
    res.settings["alpha"] = alpha
    res.settings["test"] = test
    # overlap and RBO of the top-K
    tops = {r: overlap.topk(run, d, k) for r, run in runs.items()}
    res.overlap = overlap.pairwise_overlap(tops, p=rbo_p)
    tick()
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

        # the drop is over the full labels' queries: a query that loses every positive when the
        # run's own pool is left out counts as a failure instead of leaving the mean
        pool_q = has_positive(label_sets[lname], d)

        def scorer(run_name: str, j: Judgments) -> dict[str, float]:
            vals = values_fn(runs[run_name], j, d, list(measures))
            return {
                m: paper.aggregate(
                    m,
                    over_query_set(
                        parse_measure(m), np.asarray(vals[m], dtype=np.float64), pool_q, n_docs(d)
                    ),
                )
                for m in measures
            }

        full = {r: {m: paper.aggregate(m, per_query[lname][r][m]) for m in measures} for r in pool_runs}
        for row in poolbias.pool_bias_table(pool_runs, label_sets[lname], prov, scorer, full_scores=full):
            row["labels"] = lname
            res.pool_bias.append(row)
        # at most R x 2^(R-1) scorings (max_subsets per size); pool_max_subsets=0 skips them
        sized = (
            poolbias.pool_bias_by_size(
                pool_runs,
                label_sets[lname],
                prov,
                scorer,
                full_scores=full,
                max_subsets=pool_max_subsets,
                seed=seed,
            )
            if pool_max_subsets > 0
            else []
        )
        for row in sized:
            row["labels"] = lname
            res.pool_bias_sizes.append(row)
    tick()
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
        chars = breakdowns.caption_char_lengths(collection.captions)
        res.char_lengths = chars
        for a, b in combinations(names, 2):
            ca = per_query[main][a][corr_measure]
            cb = per_query[main][b][corr_measure]
            ok = ~(np.isnan(ca) | np.isnan(cb))
            res.correctness_chars[f"{a} vs {b}"] = breakdowns.correctness_by_length(
                ca[ok], cb[ok], chars[ok], edges=breakdowns.CHAR_EDGES
            )
        res.caption_examples = breakdowns.caption_examples(
            collection.captions, main_j, collection.video_ids, by=examples_by, per_group=examples_per_group
        )
        # Fig. 3 on every label set (original vs augmented), in words and in characters
        for ln in lnames:
            for lens, edges, out in (
                (lengths, None, res.correctness_by_labels),
                (chars, breakdowns.CHAR_EDGES, res.correctness_chars_by_labels),
            ):
                out[ln] = {}
                for a, b in combinations(names, 2):
                    ca = per_query[ln][a][corr_measure]
                    cb = per_query[ln][b][corr_measure]
                    ok = ~(np.isnan(ca) | np.isnan(cb))
                    out[ln][f"{a} vs {b}"] = breakdowns.correctness_by_length(ca[ok], cb[ok], lens[ok], edges)
    for r, run in runs.items():
        res.positive_ranks[r] = breakdowns.positive_ranks_by_source(run, main_j, d)
        res.rank_histogram[r] = breakdowns.rank_histogram(res.positive_ranks[r], max_rank=rank_histogram_max)
    tick()
    if train_captions and d is Direction.T2V and lengths is not None:
        # one TF-IDF pass gives both (the costly step of a report with --train-captions)
        res.train_overlap, res.train_similarity = breakdowns.train_similarities(
            collection.captions, train_captions, fit=tfidf_fit
        )
        res.train_overlap_stats = breakdowns.overlap_length_correlation(res.train_overlap, lengths)
        res.train_overlap_table = breakdowns.overlap_length_table(
            res.train_overlap, lengths, breakdowns.caption_char_lengths(collection.captions)
        )
        # Fig. 8: FIRE bins queries by the mean of the top-10 train similarities and plots C@5
        axis = res.train_overlap if fig8_similarity == "mean10" else res.train_similarity
        res.correctness_similarity = breakdowns.correctness_by_similarity(
            {r: per_query[main][r][fig8_measure] for r in names}, axis
        )
    tick()
    # annotation budget
    res.budget = budget_rows(
        {r: {m: per_query[main][r][m] for m in means} for r in names}, budget_resamples, seed
    )
    for r in names:
        for m in means:
            if parse_measure(m).lower_is_better:  # MnR is in ranks: a target in points means nothing
                continue
            curve = [row for row in res.budget if row["run"] == r and row["measure"] == m]
            rec: dict[str, Any] = {"run": r, "measure": m}
            for delta in budget_deltas:
                rec[f"n for Δ = {100 * delta:g} points"] = budget.recommend_n(curve, delta)
            res.recommended.append(rec)
    # saturation: headroom of each percentage measure after the unjudged bounds and label noise
    pct = [
        m for m in measures if not parse_measure(m).lower_is_better and parse_measure(m).aggregate != "median"
    ]
    if default_values and pct:
        upper_fn = metrics_values(collection=collection, unjudged="upper")
        upper = {r: dict(upper_fn(run, label_sets[main], d, pct)) for r, run in runs.items()}
        res.saturation = saturation.saturation_table(
            {r: {m: per_query[main][r][m] for m in pct} for r in names},
            upper,
            pairwise_agreement=label_agreement,
        )
        for row in res.saturation:
            row["labels"] = main
    tick()
    return res
