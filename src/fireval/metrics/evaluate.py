"""``evaluate()``: every measure, both directions, each unjudged bound, as a tidy table.

The work is row-parallel: for each chunk of query rows the dense score block is read once
(``run.block``) and the kernel (:mod:`fireval.metrics.kernel`) derives all measures from
the positions of the marked docs. Memory is bounded by the chunk size.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError, InputError
from fireval.core.judgments import Judgments
from fireval.core.run import Run
from fireval.metrics.kernel import ChunkResult, compute_chunk, make_entries
from fireval.metrics.measures import CUT_R, DEFAULT_MEASURES, Measure, parse_measures
from fireval.metrics.presets import PRESET_MEASURES, check_preset, clip4clip_values, clip4clip_warnings
from fireval.metrics.ties import check_ties, docid_tie_rank

UNJUDGED_MODES = ("lower", "upper", "condensed")

#: score-block elements per chunk (float32: 2M elements = 8 MB; temporaries stay well under 256 MB)
CHUNK_ELEMS = 1 << 21
#: worker threads over chunks (numpy releases the GIL in the heavy kernels); FIREVAL_THREADS overrides
THREADS = max(1, int(os.environ.get("FIREVAL_THREADS", min(2, os.cpu_count() or 1))))
#: the upper bound marks every doc, so its temporaries are ~10x larger per element
CHUNK_ELEMS_UPPER = 1 << 20


@dataclass
class Evaluation:
    """Result of :func:`evaluate`.

    ``table``: one row per aggregate value, columns ``run, labels, direction`` (``t2v``, ``v2t``
    or ``both``), ``unjudged``, ``ties``, ``measure``, ``value``.
    ``per_query``: columns ``run, labels, direction, unjudged, query, measure, value`` (NaN for a
    query with no relevant doc), or None.
    ``tie_report``: per direction, ``n_queries``, ``queries_with_relevant_in_tie``,
    ``straddling`` (K → number of queries whose relevant doc is in a tie group straddling K),
    ``no_relevant``, ``queries_with_unretrieved_relevant`` and ``warnings`` (strings, e.g. when
    the ``clip4clip`` preset's tie handling moves a value; all of them are also in ``warnings``).
    """

    table: pd.DataFrame
    per_query: pd.DataFrame | None
    tie_report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def value(self, measure: str, direction: str = "t2v", unjudged: str = "lower") -> float:
        """One aggregate value, e.g. ``ev.value("C@1")``."""
        t = self.table
        sel = t[(t.measure == measure) & (t.direction == direction) & (t.unjudged == unjudged)]
        if sel.empty:
            raise FirevalError(f"no value for {measure} / {direction} / {unjudged} in this evaluation")
        return float(sel.value.iloc[0])

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (NaN becomes None)."""

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

        out: dict[str, Any] = {
            "table": clean(self.table.to_dict(orient="records")),
            "tie_report": clean(self.tie_report),
            "warnings": list(self.warnings),
        }
        if self.per_query is not None:
            out["per_query"] = clean(self.per_query.to_dict(orient="records"))
        return out


def _modes(unjudged: str | Iterable[str]) -> tuple[str, ...]:
    items = [unjudged] if isinstance(unjudged, str) else list(unjudged)
    out = []
    for u in items:
        m = str(u).strip().lower()
        if m not in UNJUDGED_MODES:
            raise FirevalError(f"unknown unjudged mode {u!r}; expected one of {', '.join(UNJUDGED_MODES)}")
        if m not in out:
            out.append(m)
    if not out:
        raise FirevalError("no unjudged mode given; expected lower, upper and/or condensed")
    return tuple(out)


def _check_inputs(
    run: Run, judgments: Judgments, collection: Collection | None, labels_name: str = "judgments"
) -> None:
    """Raise :class:`InputError` unless run, labels and collection have one shape and the run ranks docs."""
    if tuple(run.shape) != tuple(judgments.shape):
        raise InputError(
            f"run {run.name!r} has shape {run.shape} (captions x videos) but the labels "
            f"{labels_name!r} cover {judgments.shape}; they must describe the same collection",
            source=run.source,
        )
    if collection is not None and tuple(collection.shape) != tuple(run.shape):
        raise InputError(
            f"run {run.name!r} has shape {run.shape} but collection {collection.name!r} is {collection.shape}",
            source=run.source,
        )
    if run.lists is not None and run.lists.docs.size == 0:
        raise InputError(f"run {run.name!r} is empty: it ranks no documents", source=run.source)


def _csr(
    judgments: Judgments, d: Direction
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Query × doc CSR arrays of the grades; judged-irrelevant pairs stay as explicit zeros."""
    m = judgments.matrix(d)
    return m.indptr.astype(np.int64), m.indices.astype(np.int64), np.asarray(m.data, np.float64)


@dataclass
class _DirResult:
    values: dict[str, npt.NDArray[np.float64]]
    nrel: npt.NDArray[np.int64]
    report: dict[str, Any]
    clip: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None


def _run_direction(
    run: Run,
    judgments: Judgments,
    direction: Direction,
    measures: tuple[Measure, ...],
    *,
    ties: str,
    unjudged: str,
    chunk_rows: int | None,
    collection: Collection | None,
    straddle_ks: tuple[int, ...],
    keep_clip: bool = False,
    progress: Callable[[int], None] | None = None,
) -> _DirResult:
    """Per-query values of ``measures``, the raw tie report and (``keep_clip``) the clip4clip pairs."""
    nq = run.n_queries(direction)
    nd = run.shape[1] if direction is Direction.T2V else run.shape[0]
    indptr, indices, grades = _csr(judgments, direction)
    max_grade = float(grades.max()) if grades.size and grades.max() > 0 else 1.0
    tie_rank = None
    if ties == "docid":
        ids = collection.doc_ids(direction) if collection is not None else [str(i) for i in range(nd)]
        tie_rank = docid_tie_rank(ids)
    if chunk_rows is None:
        budget = CHUNK_ELEMS_UPPER if unjudged == "upper" else CHUNK_ELEMS
        chunk_rows = max(1, budget // max(nd, 1))
    chunk_rows = max(1, int(chunk_rows))
    values: dict[str, list[npt.NDArray[np.float64]]] = {}
    nrel = []
    counts: dict[str, int] = {}
    straddle: dict[int, int] = {k: 0 for k in straddle_ks}
    clips: list[tuple[npt.NDArray[np.int64], ...]] = []

    def one_chunk(start: int) -> tuple[int, int, ChunkResult]:
        stop = min(nq, start + chunk_rows)
        block = run.block(direction, start, stop)
        lo, hi = indptr[start], indptr[stop]
        e, rg, rt = make_entries(
            block,
            indptr[start : stop + 1] - lo,
            indices[lo:hi],
            grades[lo:hi],
            unjudged=unjudged,
            ties=ties,
            tie_rank=tie_rank,
            max_grade=max_grade,
        )
        res = compute_chunk(
            e, rg, rt, stop - start, nd, measures, straddle_ks=straddle_ks, keep_clip=keep_clip
        )
        return start, stop, res

    starts = range(0, nq, chunk_rows)
    workers = min(THREADS, len(starts))
    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        # numpy releases the GIL in sorts, comparisons and gathers, so chunks run in parallel;
        # map() yields in order, so the first bad chunk raises first
        results = pool.map(one_chunk, starts) if pool is not None else map(one_chunk, starts)
        for start, stop, res in results:
            for k, v in res.values.items():
                values.setdefault(k, []).append(v)
            nrel.append(res.nrel)
            for k, c in res.tie_counts.items():
                counts[k] = counts.get(k, 0) + c
            for kk, c in res.straddle.items():
                straddle[kk] = straddle.get(kk, 0) + c
            if keep_clip:
                cq, cg, ct = res.clip_entries
                clips.append((cq + start, cg, ct))
            if progress is not None:
                progress(stop - start)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    report: dict[str, Any] = {"n_queries": nq, "unjudged": unjudged, **counts, "straddling": straddle}
    clip = None
    if keep_clip:
        clip = (
            tuple(np.concatenate([c[i] for c in clips]) for i in range(3))
            if clips
            else (np.zeros(0, np.int64),) * 3
        )
    return _DirResult(
        {k: np.concatenate(v) for k, v in values.items()},
        np.concatenate(nrel),
        report,
        clip,  # type: ignore[arg-type]
    )


def query_values(
    run: Run,
    judgments: Judgments,
    direction: Direction | str,
    measures: Iterable[str | Measure] | str = DEFAULT_MEASURES,
    *,
    ties: str = "tie-aware",
    unjudged: str = "lower",
    chunk_rows: int | None = None,
    collection: Collection | None = None,
) -> dict[str, npt.NDArray[np.float64]]:
    """Per-query values of ``measures`` in one direction, keyed by measure name (``str(m)``).

    Each array has one value per query of ``direction`` (captions for t2v, videos for v2t).
    A query with no relevant doc gets NaN for every measure (trec_eval-style: it is skipped
    from means); ``~np.isnan(values[m])`` is the mask of evaluated queries. ``MdR`` and ``MnR``
    both hold the rank of the first relevant doc. Aggregate-only measures (meanR, geoC) are
    skipped.
    """
    d = Direction.parse(direction)
    ms = parse_measures(measures)
    ties = check_ties(ties)
    mode = _modes(unjudged)[0]
    _check_inputs(run, judgments, collection)
    if not run.supports(d):
        raise InputError(f"run {run.name!r} does not rank {d.value} queries", source=run.source)
    res = _run_direction(
        run,
        judgments,
        d,
        ms,
        ties=ties,
        unjudged=mode,
        chunk_rows=chunk_rows,
        collection=collection,
        straddle_ks=(),
    )
    return res.values


def _aggregate(m: Measure, vals: npt.NDArray[np.float64]) -> float:
    ok = vals[~np.isnan(vals)]
    if ok.size == 0:
        return float("nan")
    if m.name == "MdR":
        return float(np.median(ok))
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
) -> Evaluation:
    """Evaluate ``run`` against ``judgments``: every measure, each direction and unjudged mode.

    ``ties``: ``tie-aware`` (expected value over orderings within ties; McSherry & Najork 2008),
    ``optimistic``, ``pessimistic`` or ``docid`` (trec_eval's order). ``unjudged``: ``lower``
    (unjudged = irrelevant), ``upper`` (unjudged = relevant with the maximum grade) and/or
    ``condensed`` (unjudged docs removed; Sakai 2007). ``preset``: ``fire2023``, ``clip4clip``
    or ``wray2021`` (see :mod:`fireval.metrics.presets`); it replaces the default measures.
    Directions a run of ranked lists does not cover are skipped.
    """
    preset = check_preset(preset)
    ties = check_ties(ties)
    modes = _modes(unjudged)
    if isinstance(directions, str | Direction):
        directions = [directions]
    dirs = list(dict.fromkeys(Direction.parse(d) for d in directions))
    if not dirs:
        raise FirevalError("no direction to evaluate; expected t2v and/or v2t")
    _check_inputs(run, judgments, collection, labels_name)
    if measures is DEFAULT_MEASURES and preset is not None:
        ms = PRESET_MEASURES[preset]
    else:
        ms = parse_measures(measures)
    if not ms:
        raise FirevalError("no measures to compute")
    dirs = [d for d in dirs if run.supports(d)]
    if not dirs:
        raise InputError(f"run {run.name!r} ranks no requested direction", source=run.source)
    name = run_name if run_name is not None else run.name
    ks = sorted(
        {int(m.k) for m in ms if m.k is not None and m.k != CUT_R}
        | ({1, 5, 10} if any(m.name in ("meanR", "geoC") for m in ms) else set())
    )
    kernel_ms = tuple(ms)
    if any(m.name in ("meanR", "geoC") for m in ms):
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
    tie_report: dict[str, Any] = {}
    warnings: dict[str, list[str]] = {d.value: [] for d in dirs}
    for mode in modes:
        per_dir_c: dict[str, dict[int, float]] = {}
        for d in dirs:
            res = _run_direction(
                run,
                judgments,
                d,
                kernel_ms,
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
            for m in kernel_ms:
                key = str(m)
                if m.aggregate_only or key in agg:
                    continue
                agg[key] = _aggregate(m, vals[key])
            per_dir_c[d.value] = {k: agg.get(f"C@{k}", float("nan")) for k in (1, 5, 10)}
            for m in ms:
                key = str(m)
                if m.name == "geoC":
                    cs = [per_dir_c[d.value][k] for k in (1, 5, 10)]
                    v = float(np.exp(np.mean(np.log(cs)))) if all(c > 0 for c in cs) else 0.0
                    rows.append(_row(name, labels_name, d.value, mode, tie_label, key, v))
                elif m.name != "meanR":
                    rows.append(_row(name, labels_name, d.value, mode, tie_label, key, agg[key]))
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
    for dv, ws in warnings.items():
        tie_report[dv]["warnings"] = ws
    table = pd.DataFrame(rows, columns=["run", "labels", "direction", "unjudged", "ties", "measure", "value"])
    pq = None
    if per_query:
        cols = ["run", "labels", "direction", "unjudged", "query", "measure", "value"]
        pq = pd.concat(pq_frames, ignore_index=True) if pq_frames else pd.DataFrame(columns=cols)
    return Evaluation(
        table=table, per_query=pq, tie_report=tie_report, warnings=[w for ws in warnings.values() for w in ws]
    )


def _row(
    run: str, labels: str, direction: str, unjudged: str, ties: str, measure: str, value: float
) -> dict[str, Any]:
    return {
        "run": run,
        "labels": labels,
        "direction": direction,
        "unjudged": unjudged,
        "ties": ties,
        "measure": measure,
        "value": value,
    }
