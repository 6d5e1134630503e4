"""``evaluate()``: every measure, both directions, each unjudged bound, as a tidy table.

The work is row-parallel: :mod:`fireval.metrics.driver` runs each direction chunk by chunk of
query rows (the dense score block is read once, ``run.block``) and the kernel
(:mod:`fireval.metrics.kernel`) derives all measures from the positions of the marked docs;
memory is bounded by the chunk size. This module assembles the result: the presets' values,
the query sets of the means, the aggregates (mean, or median for MdR; meanR and geoC from
C@1/5/10), the tie report and the warnings, as an :class:`Evaluation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError, InputError, InternalError
from fireval.core.judgments import Judgments
from fireval.core.run import Run
from fireval.metrics.bounds import BOUND_MODES, aggregate_bound
from fireval.metrics.driver import (
    CHUNK_ELEMS,
    CHUNK_ELEMS_UPPER,
    THREADS,
    UNJUDGED_MODES,
    check_bound_options,
    check_inputs,
    parse_modes,
    query_values,
    run_split,
)
from fireval.metrics.incomplete import bpref_note, check_bound_measures, infndcg_pooled_note
from fireval.metrics.measures import CUT_R, DEFAULT_MEASURES, Measure, parse_measures
from fireval.metrics.presets import (
    PRESET_MEASURES,
    check_preset,
    check_zero_relevant,
    clip4clip_values,
    clip4clip_warnings,
)
from fireval.metrics.threshold import check_min_grade
from fireval.metrics.ties import check_ties

if TYPE_CHECKING:  # pandas loads when a table is first asked for (the CLI prints from records)
    import pandas as pd

#: aggregates over both directions (direction ``both``): what each is of C@1/5/10 of t2v and v2t
_BOTH_DIRECTIONS = {"meanR": "is the mean", "RSum": "is the sum"}

__all__ = [  # (UNJUDGED_MODES, query_values and the chunk sizes live in fireval.metrics.driver)
    "CHUNK_ELEMS",
    "CHUNK_ELEMS_UPPER",
    "TABLE_COLUMNS",
    "THREADS",
    "UNJUDGED_MODES",
    "Evaluation",
    "evaluate",
    "no_relevant_value",
    "over_query_set",
    "query_values",
]

#: the columns of :attr:`Evaluation.table`, in order
TABLE_COLUMNS = ["run", "labels", "direction", "unjudged", "ties", "measure", "value", "n"]


@dataclass
class Evaluation:
    """Result of :func:`evaluate`.

    ``table``: one row per aggregate value, columns ``run, labels, direction`` (``t2v``, ``v2t``
    or ``both``), ``unjudged``, ``ties``, ``measure``, ``value`` and ``n`` (queries in the mean;
    empty for ``meanR``).
    ``per_query``: columns ``run, labels, direction, unjudged, query, measure, value`` (NaN for a
    query with no relevant doc), or None.
    ``tie_report``: per direction, ``n_queries``, ``queries_with_relevant_in_tie``,
    ``straddling`` (K → number of queries whose relevant doc is in a tie group straddling K),
    ``no_relevant``, ``queries_with_unretrieved_relevant`` and ``warnings`` (strings, e.g. when
    the ``clip4clip`` preset's tie handling moves a value; all of them are also in ``warnings``).
    ``records``: the rows of ``table`` as dicts (``n`` None where the table has NaN); the table
    is built from them on first access, so code that only prints them needs no pandas.
    """

    records: list[dict[str, Any]]
    per_query: pd.DataFrame | None
    tie_report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    checks: Any = None
    """The input checks' report (:class:`fireval.checks.ChecksReport`) when
    ``fireval.evaluate(..., checks=True)`` ran them, else ``None``."""

    @cached_property
    def table(self) -> pd.DataFrame:
        """One row per aggregate value (a pandas DataFrame, built from ``records`` on first use)."""
        import pandas as pd

        # n: pandas' nullable integer, so a count stays an integer beside meanR/RSum's missing n
        return pd.DataFrame(self.records, columns=TABLE_COLUMNS).astype({"n": "Int64"})

    def value(
        self, measure: str, direction: str = "t2v", unjudged: str | None = None, *, units: str = "fraction"
    ) -> float:
        """One aggregate value, e.g. ``ev.value("C@1")``: a fraction (``units="percent"``: x100),
        a rank for MdR/MnR (:mod:`fireval.core.units`).

        ``measure`` is read as ``-m`` reads it (``R@1`` is ``C@1``, case-insensitive names);
        ``unjudged`` defaults to ``lower`` when it was evaluated, else to the first mode evaluated.
        """
        from fireval.core.units import check_units

        pct = check_units(units) == "percent"
        from fireval.metrics.measures import parse_measure

        t = self.table
        modes = list(dict.fromkeys(t["unjudged"]))
        default = "lower" if "lower" in modes or not modes else modes[0]  # else the first evaluated
        mode = default if unjudged is None else unjudged
        try:
            name = str(parse_measure(measure))
        except FirevalError:
            name = measure
        direction = str(direction)
        sel = t[(t.measure == name) & (t.direction == direction) & (t.unjudged == mode)]
        if sel.empty:
            have = ", ".join(dict.fromkeys(t.measure))
            raise FirevalError(
                f"no value for {measure} / {direction} / unjudged={mode} in this evaluation "
                f"(measures: {have}; directions: {', '.join(dict.fromkeys(t.direction))}; "
                f"unjudged: {', '.join(modes)})"
            )
        v = float(sel.value.iloc[0])
        return 100.0 * v if pct and not parse_measure(name).lower_is_better else v

    def to_dict(
        self, names: str | None = None, *, unjudged: str | None = None, units: str = "fraction"
    ) -> dict[str, Any]:
        """JSON-serialisable form (NaN becomes None), in one unit with ``.value`` and ``.table``.

        ``names=None``: the full record (``table``, ``tie_report``, ``warnings``, ``per_query``,
        ``units``), values as in the table (fractions; ``n`` an integer). ``names="tvr"`` or
        ``"ir"``: the flat form for a logger, ``{direction: {measure: value}}`` (``"both"`` holds
        meanR and RSum), named as TVR papers do (``R@K`` for C@K) or as fireval does (``C@K``),
        for one unjudged mode (``unjudged``; default: the first evaluated), as fractions like
        ``.value`` (``units="percent"``: x100, the rank measures MdR and MnR stay ranks).
        """
        from fireval.core.units import UNITS_JSON, check_units

        u = check_units(units)
        if names is not None:
            return self._flat(names, unjudged, u == "percent")

        def clean(v: Any) -> Any:
            if isinstance(v, float) and math.isnan(v):
                return None
            if isinstance(v, np.generic):
                return clean(v.item())
            if isinstance(v, dict):
                return {str(k): clean(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return [clean(x) for x in v]
            return v

        if u == "percent":
            raise FirevalError("units='percent' is for the flat form: to_dict(names='tvr', units='percent')")
        out: dict[str, Any] = {
            "units": UNITS_JSON,
            "table": clean([{c: r.get(c) for c in TABLE_COLUMNS} for r in self.records]),
            "tie_report": clean(self.tie_report),
            "warnings": list(self.warnings),
        }
        if self.per_query is not None:
            out["per_query"] = clean(self.per_query.to_dict(orient="records"))
        return out

    def _flat(
        self, names: str, unjudged: str | None, pct: bool = False
    ) -> dict[str, dict[str, float | None]]:
        from fireval.metrics.measures import display_name, parse_measure

        style = str(names).strip().lower()
        if style not in ("tvr", "ir"):
            raise FirevalError(f"names must be 'tvr' or 'ir', got {names!r}")
        t = self.table
        modes = list(dict.fromkeys(t["unjudged"]))
        mode = modes[0] if unjudged is None and modes else unjudged
        if mode not in modes:
            raise FirevalError(f"no values for unjudged={unjudged!r}; this evaluation has {', '.join(modes)}")
        out: dict[str, dict[str, float | None]] = {}
        sel = t[t["unjudged"] == mode]
        for d, meas, v in zip(sel["direction"], sel["measure"], sel["value"], strict=True):
            m = parse_measure(meas)
            x = float(v)
            val = None if math.isnan(x) else (100.0 * x if pct and not m.lower_is_better else x)
            out.setdefault(str(d), {})[display_name(m, style)] = val
        return out


def no_relevant_value(m: Measure, n_docs: int) -> float:
    """The value of a query that has no relevant doc, when it must stay in a mean.

    No relevant doc can be found, so a gain measure is 0 and the rank of the first relevant doc
    is ``n_docs + 1`` (below every doc, as for unretrieved docs). ``judged@K`` does not depend on
    relevance and stays NaN (left out).
    """
    if m.name == "judged":
        return float("nan")
    return float(n_docs + 1) if m.name in ("MdR", "MnR") else 0.0


def over_query_set(
    m: Measure, vals: npt.NDArray[np.float64], queries: npt.NDArray[np.bool_], n_docs: int
) -> npt.NDArray[np.float64]:
    """Per-query values restricted to ``queries``: NaN outside, :func:`no_relevant_value` for the
    queries inside that have no relevant doc under these labels."""
    q = np.asarray(queries, dtype=bool)
    if q.shape != vals.shape:
        raise FirevalError(f"query set has {q.size} entries but there are {vals.size} queries")
    out = np.where(q, vals, np.nan)
    return np.where(q & np.isnan(vals), no_relevant_value(m, n_docs), out)


def _assert_no_lost_query(
    key: str,
    vals: npt.NDArray[np.float64],
    nrel: npt.NDArray[np.int64],
    qset: npt.NDArray[np.bool_] | None,
) -> None:
    """NaN is reserved for a query with no relevant doc (left out of the mean, trec_eval-style).

    A NaN for a query that has a relevant doc (an overflow, a 0/0) would silently leave the
    mean; it is a bug, so it raises :class:`~fireval.core.errors.InternalError` instead.
    """
    lost = np.isnan(vals) & (nrel > 0)
    if qset is not None:
        lost &= np.asarray(qset, dtype=bool)
    if lost.any():
        i = int(np.flatnonzero(lost)[0])
        raise InternalError(
            f"{key} is NaN for {int(lost.sum())} queries that have a relevant doc (first: query {i}); "
            "refusing to drop them from the mean"
        )


def _aggregate(m: Measure, vals: npt.NDArray[np.float64]) -> float:
    ok = vals[~np.isnan(vals)]
    if ok.size == 0:
        return float("nan")
    if m.aggregate == "median":  # np.median's value, without its import of numpy.ma (CLI start-up, issue 14)
        return float((np.sort(ok)[[(ok.size - 1) // 2, ok.size // 2]]).sum() / 2)
    return float(ok.mean())


def evaluate(
    run: Run,
    judgments: Judgments,
    *,
    measures: Iterable[str | Measure] | str = DEFAULT_MEASURES,
    directions: Iterable[str | Direction] | str = ("t2v", "v2t"),
    ties: str = "tie-aware",
    unjudged: str | Iterable[str] = ("lower",),
    preset: str | None = None,
    collection: Collection | None = None,
    per_query: bool = False,
    chunk_rows: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    run_name: str | None = None,
    labels_name: str = "labels",
    queries: Mapping[str, npt.NDArray[np.bool_]] | None = None,
    min_grade: float | None = None,
    zero_relevant: str | None = None,
) -> Evaluation:
    """Evaluate ``run`` against ``judgments``: every measure, each direction and unjudged mode.

    ``ties``: ``tie-aware`` (expected value over orderings within ties; McSherry & Najork 2008),
    ``optimistic``, ``pessimistic`` or ``docid`` (trec_eval's order). ``unjudged``: ``lower``
    (unjudged = irrelevant), ``upper`` (unjudged = relevant with the maximum grade) and/or
    ``condensed`` (unjudged docs removed; Sakai 2007); ``worst`` and ``best`` are the exact
    extremes over every labelling of the unjudged docs (:mod:`fireval.metrics.bounds`; with
    ``ties`` tie-aware or docid). ``preset``: ``fire2023``, ``clip4clip``
    or ``wray2021`` (see :mod:`fireval.metrics.presets`); it replaces the default measures.
    Directions a run of ranked lists does not cover are skipped.

    ``queries`` (direction → boolean mask over its queries) fixes the query set of the means,
    so that label sets are compared on the same queries: a query in the set with no relevant
    doc under ``judgments`` counts as a failure (:func:`no_relevant_value`) instead of leaving
    the mean. Without it each mean is over the queries with at least one relevant doc. The
    ``n`` column of the table is the number of queries in each mean.

    ``min_grade`` (trec_eval's ``-l``): for the binary measures (every measure but nDCG,
    nDCG_exp and infNDCG, which keep the grades) a doc is relevant when its grade is at least
    ``min_grade``; judged docs below it count as judged irrelevant. A query with no doc at that
    grade leaves those measures' means. ``None``: relevant = grade > 0.

    ``zero_relevant`` (``--zero-relevant``): what a query with no relevant item does to a mean:
    ``zero`` scores it 0 and keeps it (Falcon et al.'s ``ranp``; the ``wray2021`` preset's default),
    ``drop`` leaves it out (fireval's default otherwise), ``nan`` makes the mean NaN (JPoSE's
    ``nDCG.py``: 0 / 0). ``None``: the preset's rule (:data:`ALL_QUERIES_PRESETS`), else ``drop``.
    """
    min_grade = check_min_grade(min_grade)
    preset = check_preset(preset)
    zero_rule = check_zero_relevant(zero_relevant, preset)
    ties = check_ties(ties)
    modes = parse_modes(unjudged)
    check_bound_options(modes, ties, preset)
    if isinstance(directions, str | Direction):
        directions = [directions]
    dirs = list(dict.fromkeys(Direction.parse(d) for d in directions))
    if not dirs:
        raise FirevalError("no direction to evaluate; expected t2v and/or v2t")
    check_inputs(run, judgments, collection, labels_name)
    if measures is DEFAULT_MEASURES and preset is not None:
        ms = PRESET_MEASURES[preset]
    else:
        ms = parse_measures(measures)
    if not ms:
        raise FirevalError("no measures to compute")
    check_bound_measures(modes, ms)
    both_only = [m.name for m in ms if m.name in _BOTH_DIRECTIONS]
    if measures is not DEFAULT_MEASURES and both_only and not {Direction.T2V, Direction.V2T} <= set(dirs):
        raise FirevalError(
            f"{both_only[0]} {_BOTH_DIRECTIONS[both_only[0]]} of C@1, C@5 and C@10 over t2v and v2t: "
            "evaluate both directions (direction 'both'), or ask for C@K per direction"
        )
    dirs = [d for d in dirs if run.supports(d)]
    if dirs and all(m.name in _BOTH_DIRECTIONS for m in ms) and len(dirs) < 2:
        raise InputError(
            f"{ms[0].name} needs both directions, but run {run.name!r} ranks only {dirs[0].value} "
            "(a TREC run holds one direction); ask for C@K instead",
            source=run.source,
        )
    if not dirs:
        raise InputError(f"run {run.name!r} ranks no requested direction", source=run.source)
    name = run_name if run_name is not None else run.name
    ks = sorted(
        {int(m.k) for m in ms if m.k is not None and m.k != CUT_R}
        | ({1, 5, 10} if any(m.name in ("meanR", "geoC", "RSum") for m in ms) else set())
    )
    kernel_ms = tuple(ms)
    if any(m.name in ("meanR", "geoC", "RSum") for m in ms):
        kernel_ms = kernel_ms + parse_measures("C@1,C@5,C@10")
        kernel_ms = tuple(dict.fromkeys(kernel_ms))
    is_clip = preset == "clip4clip"
    tie_label = "clip4clip" if is_clip else ties

    total = sum(run.n_queries(d) for d in dirs) * len(modes)
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total)

    rows: list[dict[str, Any]] = []
    pq_frames: list[pd.DataFrame] = []
    if per_query:  # pandas only for the per-query table
        import pandas as pd
    tie_report: dict[str, Any] = {}
    warnings: dict[str, list[str]] = {d.value: [] for d in dirs}
    for mode in modes:
        per_dir_c: dict[str, dict[int, float]] = {}
        for d in dirs:
            res = run_split(
                run,
                judgments,
                d,
                kernel_ms,
                min_grade=min_grade,
                ties="tie-aware" if is_clip else ties,
                unjudged=mode,
                chunk_rows=chunk_rows,
                collection=collection,
                straddle_ks=tuple(ks),
                keep_clip=is_clip,
                progress=tick,
            )
            nq = run.n_queries(d)
            if d.value not in tie_report or (
                mode == "lower" and tie_report[d.value].get("unjudged") != "lower"
            ):
                tie_report[d.value] = res.report
            agg: dict[str, float] = {}
            vals = res.values
            if is_clip:
                assert res.clip is not None
                cq, cg, ct = res.clip
                cagg, cper = clip4clip_values(cq, cg, ct, nq, (1, 5, 10))
                for warn in clip4clip_warnings(cq, cg, ct, cagg, int(res.nrel.sum()), (1, 5, 10)):
                    warnings[d.value].append(f"{d.value} (unjudged={mode}): {warn}")
                agg.update(cagg)
                vals = {**vals, **cper}
            if "bpref" in vals and mode != "upper":  # (under upper no doc is unjudged)
                note = bpref_note(judgments, d, vals["bpref"], min_grade)
                if note:
                    warnings[d.value].append(f"{d.value} (unjudged={mode}): {note}")
            note = infndcg_pooled_note(judgments, vals) if mode == "lower" else ""
            if note:
                warnings[d.value].append(f"{d.value} (unjudged={mode}): {note}")
            qset = None if queries is None else queries.get(d.value)
            if zero_rule in ("zero", "nan"):  # a query with no relevant item scores 0 (wray2021's default)
                qset = np.ones(nq, dtype=bool)
            bound = mode in BOUND_MODES
            if qset is not None:
                ndocs = run.shape[1] if d is Direction.T2V else run.shape[0]
                if bound and mode == "worst":  # a query of the set may be left without a relevant doc
                    qs = np.asarray(qset, dtype=bool)
                    vals = {
                        k: np.where(
                            qs & (res.nrel_for(k) == 0) & ~np.isnan(v),
                            no_relevant_value(parse_measures(k)[0], ndocs),
                            v,
                        )
                        if parse_measures(k)[0].name != "judged"
                        else v
                        for k, v in vals.items()
                    }
                # (pooled clip4clip aggregates stay as CLIP4Clip computes them)
                vals = {k: over_query_set(parse_measures(k)[0], v, qset, ndocs) for k, v in vals.items()}
            counts = {key: int(np.count_nonzero(~np.isnan(v))) for key, v in vals.items()}
            for m in kernel_ms:
                key = str(m)
                if m.aggregate_only or key in agg:
                    continue
                _assert_no_lost_query(key, vals[key], res.nrel_for(key), qset)
                if bound and qset is None:  # which optional queries enter the mean is optimised too
                    agg[key], counts[key] = aggregate_bound(m, vals[key], res.nrel_for(key) > 0, mode)
                else:
                    agg[key] = _aggregate(m, vals[key])
                if zero_rule == "nan" and m.name != "judged" and bool((res.nrel_for(key) == 0).any()):
                    agg[key] = float("nan")  # JPoSE's nDCG.py: one query's 0/0 makes the mean NaN
            per_dir_c[d.value] = {k: agg.get(f"C@{k}", float("nan")) for k in (1, 5, 10)}
            for m in ms:
                key = str(m)
                if m.name == "geoC":
                    cs = [per_dir_c[d.value][k] for k in (1, 5, 10)]
                    v = float(np.exp(np.mean(np.log(cs)))) if all(c > 0 for c in cs) else 0.0
                    if any(math.isnan(c) for c in cs):  # no query to average (e.g. none >= min_grade)
                        v = float("nan")
                    n_c = counts.get("C@1")
                    rows.append(_row(name, labels_name, d.value, mode, tie_label, key, v, n_c))
                elif m.name not in _BOTH_DIRECTIONS:
                    rows.append(
                        _row(name, labels_name, d.value, mode, tie_label, key, agg[key], counts.get(key))
                    )
            if per_query:
                ids = collection.query_ids(d) if collection is not None else [str(i) for i in range(nq)]
                for m in ms:
                    if m.aggregate_only:
                        continue
                    pq_frames.append(
                        pd.DataFrame(
                            {
                                "run": name,
                                "labels": labels_name,
                                "direction": d.value,
                                "unjudged": mode,
                                "query": list(ids),
                                "measure": str(m),
                                "value": vals[str(m)],
                            }
                        )
                    )
        if any(m.name == "meanR" for m in ms) and {"t2v", "v2t"} <= set(per_dir_c):
            cs = [per_dir_c[dd][k] for dd in ("t2v", "v2t") for k in (1, 5, 10)]
            rows.append(_row(name, labels_name, "both", mode, tie_label, "meanR", float(np.mean(cs))))
        if any(m.name == "RSum" for m in ms) and {"t2v", "v2t"} <= set(per_dir_c):
            cs = [per_dir_c[dd][k] for dd in ("t2v", "v2t") for k in (1, 5, 10)]
            rows.append(_row(name, labels_name, "both", mode, tie_label, "RSum", float(np.sum(cs))))
    for dv, ws in warnings.items():
        tie_report[dv]["warnings"] = ws
    pq = None
    if per_query:
        cols = ["run", "labels", "direction", "unjudged", "query", "measure", "value"]
        pq = pd.concat(pq_frames, ignore_index=True) if pq_frames else pd.DataFrame(columns=cols)
    return Evaluation(
        records=rows,
        per_query=pq,
        tie_report=tie_report,
        warnings=[w for ws in warnings.values() for w in ws],
    )


def _row(
    run: str,
    labels: str,
    direction: str,
    unjudged: str,
    ties: str,
    measure: str,
    value: float,
    n: int | None = None,
) -> dict[str, Any]:
    return {
        "n": n,
        "run": run,
        "labels": labels,
        "direction": direction,
        "unjudged": unjudged,
        "ties": ties,
        "measure": measure,
        "value": value,
    }
