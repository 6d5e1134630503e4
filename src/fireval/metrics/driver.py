"""The chunk driver: one direction of one run → per-query values of every measure.

:func:`run_direction` builds the query × doc CSR arrays of the grades (:func:`grades_csr`),
picks the chunk size (:data:`CHUNK_ELEMS` score-block elements; wider v2t views, a device
source's own size), runs :func:`fireval.metrics.kernel.evaluate_chunk` (or
:func:`fireval.metrics.bounds.bound_chunk` for ``worst``/``best``) over the chunks of query rows,
on :data:`THREADS` threads or the mapper of :func:`fireval.metrics.kernel.chunk_mapper`, and
concatenates the per-query values, the tie report's counts and the clip4clip pairs.
:func:`run_split` runs the binary measures on labels binarised at ``min_grade``.
Memory is bounded by the chunk size. :func:`query_values` is the per-query entry point; the
aggregates and the table are :func:`fireval.metrics.evaluate.evaluate`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError, InputError
from fireval.core.judgments import Judgments
from fireval.core.run import Run
from fireval.metrics.bounds import BOUND_MODES, BOUND_TIES, CHUNK_ELEMS_BOUNDS, bound_chunk
from fireval.metrics.entries import device_counter, use_view, view_chunk_rows
from fireval.metrics.incomplete import check_bound_measures
from fireval.metrics.kernel import chunk_results, evaluate_chunk
from fireval.metrics.measures import DEFAULT_MEASURES, MAX_EXP_GRADE, Measure, parse_measures
from fireval.metrics.threshold import GRADED, check_min_grade
from fireval.metrics.ties import check_ties, docid_tie_rank

#: ``worst``/``best``: exact bounds over every labelling of the unjudged pairs (:mod:`fireval.metrics.bounds`)
UNJUDGED_MODES = ("lower", "upper", "condensed", *BOUND_MODES)

#: score-block elements per chunk (float32: 2M elements = 8 MB; temporaries stay well under 256 MB)
CHUNK_ELEMS = 1 << 21
#: worker threads over chunks (numpy releases the GIL in the heavy kernels); FIREVAL_THREADS overrides
THREADS = max(1, int(os.environ.get("FIREVAL_THREADS", min(2, os.cpu_count() or 1))))
#: the upper bound marks every doc, so its temporaries are ~10x larger per element
CHUNK_ELEMS_UPPER = 1 << 20


def parse_modes(unjudged: str | Iterable[str]) -> tuple[str, ...]:
    """The unjudged modes asked for, checked, lower-case and without repeats, in order."""
    items = [unjudged] if isinstance(unjudged, str) else list(unjudged)
    out = []
    for u in items:
        m = str(u).strip().lower()
        if m not in UNJUDGED_MODES:
            raise FirevalError(f"unknown unjudged mode {u!r}; expected one of {', '.join(UNJUDGED_MODES)}")
        if m not in out:
            out.append(m)
    if not out:
        raise FirevalError("no unjudged mode given; expected lower, upper, condensed, worst and/or best")
    return tuple(out)


def check_bound_options(modes: tuple[str, ...], ties: str, preset: str | None) -> None:
    """``worst``/``best`` need a tie order that does not depend on the labels, and no clip4clip preset."""
    bound = [m for m in modes if m in BOUND_MODES]
    if not bound:
        return
    if ties not in BOUND_TIES:
        raise FirevalError(
            f"unjudged={bound[0]} needs ties tie-aware or docid, got {ties!r} "
            "(optimistic/pessimistic orders change with the labelling)"
        )
    if preset == "clip4clip":
        raise FirevalError(f"unjudged={bound[0]} is not available with the clip4clip preset (pooled ranks)")


def check_inputs(
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


def grades_csr(
    judgments: Judgments, d: Direction
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.floating[Any]]]:
    """Query × doc CSR arrays of the grades; judged-irrelevant pairs stay as explicit zeros.

    The arrays of ``judgments.matrix(d)`` (rows in order, doc indices sorted within a row): for
    judgments already in (row, col) order, :meth:`Judgments.csr_arrays` (no sort; indices and
    grades may be int32/float32, which the kernel widens chunk by chunk); otherwise built with
    one numpy lexsort so that evaluating needs no scipy; duplicate pairs (which scipy sums) go
    through ``matrix``.
    """
    if judgments.is_sorted():
        return judgments.csr_arrays(d)
    t2v = d is Direction.T2V
    r = np.asarray(judgments.rows if t2v else judgments.cols, np.int64)
    c = np.asarray(judgments.cols if t2v else judgments.rows, np.int64)
    order = np.lexsort((c, r))
    r, c = r[order], c[order]
    if r.size > 1 and bool(np.any((r[1:] == r[:-1]) & (c[1:] == c[:-1]))):
        m = judgments.matrix(d)
        return m.indptr.astype(np.int64), m.indices.astype(np.int64), np.asarray(m.data, np.float64)
    n_rows = judgments.shape[0 if t2v else 1]
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n_rows), out=indptr[1:])
    return indptr, c, np.asarray(judgments.grades, np.float64)[order]


def with_pooled(
    csr: tuple[npt.NDArray[np.int64], npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.floating[Any]]],
    pooled: npt.NDArray[np.int64],
    d: Direction,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The CSR arrays of :func:`grades_csr` with the pooled-but-unjudged pairs
    (``Judgments.pooled``) added as grade -1 (the kernel's mark for them; trec_eval's qrels
    ``rel < 0``), still sorted by (query, doc). Used for infAP under ``unjudged=lower`` only."""
    indptr, indices, grades = csr
    n_rows = indptr.size - 1
    q = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(indptr))
    pq, pd = (pooled[:, 0], pooled[:, 1]) if d is Direction.T2V else (pooled[:, 1], pooled[:, 0])
    q = np.concatenate([q, pq])
    doc = np.concatenate([np.asarray(indices, np.int64), pd])
    g = np.concatenate([np.asarray(grades, np.float64), np.full(pq.size, -1.0)])
    order = np.lexsort((doc, q))
    out = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(q, minlength=n_rows), out=out[1:])
    return out, doc[order], g[order]


@dataclass
class DirResult:
    """One direction's per-query values, relevant docs per query, tie report and clip4clip pairs."""

    values: dict[str, npt.NDArray[np.float64]]
    nrel: npt.NDArray[np.int64]
    report: dict[str, Any]
    clip: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None
    #: measure -> relevant docs per query, where it differs from ``nrel`` (graded measures under
    #: ``min_grade``: their relevant docs are those of grade > 0)
    nrel_of: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)

    def nrel_for(self, key: str) -> npt.NDArray[np.int64]:
        return self.nrel_of.get(key, self.nrel)


def run_split(
    run: Run,
    judgments: Judgments,
    direction: Direction,
    measures: tuple[Measure, ...],
    *,
    min_grade: float | None,
    **kw: Any,
) -> DirResult:
    """:func:`run_direction`, with the binary measures on labels binarised at ``min_grade``
    (grade >= min_grade is relevant, the rest judged irrelevant: trec_eval's ``-l``) and the
    graded ones (:data:`GRADED`) on the grades as they are."""
    if min_grade is None:
        return run_direction(run, judgments, direction, measures, **kw)
    binary = tuple(m for m in measures if m.name not in GRADED)
    graded = tuple(m for m in measures if m.name in GRADED)
    progress = kw.pop("progress", None)
    first = binary or graded
    res = run_direction(
        run,
        judgments.binarised(min_grade) if binary else judgments,
        direction,
        first,
        progress=progress,
        **kw,
    )
    if binary and graded:
        kw["keep_clip"] = False
        other = run_direction(run, judgments, direction, graded, **kw)
        res.values.update(other.values)
        res.nrel_of.update({str(m): other.nrel for m in graded})
    return res


def run_direction(
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
) -> DirResult:
    """Per-query values of ``measures``, the raw tie report and (``keep_clip``) the clip4clip pairs."""
    nq = run.n_queries(direction)
    nd = run.shape[1] if direction is Direction.T2V else run.shape[0]
    indptr, indices, grades = grades_csr(judgments, direction)
    if unjudged == "lower" and judgments.pooled.size and any(m.name == "infAP" for m in measures):
        indptr, indices, grades = with_pooled((indptr, indices, grades), judgments.pooled, direction)
    max_grade = float(grades.max()) if grades.size and grades.max() > 0 else 1.0
    if max_grade > MAX_EXP_GRADE and any(m.name == "nDCG_exp" for m in measures):
        raise InputError(
            f"grade {max_grade:g} is too large for the exponential gain 2^g - 1 of nDCG_exp "
            f"(at most {MAX_EXP_GRADE:g}; 2^g overflows beyond 1023): use nDCG (linear gain) or rescale the grades"
        )
    tie_rank = None
    if ties == "docid":
        ids = collection.doc_ids(direction) if collection is not None else [str(i) for i in range(nd)]
        tie_rank = docid_tie_rank(ids)
    bounds = unjudged in BOUND_MODES
    on_device = device_counter(run, unjudged) is not None  # counted where the tensors live (torch)
    if chunk_rows is None and on_device:
        chunk_rows = run.blocks.chunk_rows(direction, nd)  # type: ignore[union-attr]
    if chunk_rows is None:
        budget = CHUNK_ELEMS_UPPER if unjudged == "upper" else CHUNK_ELEMS
        budget = CHUNK_ELEMS_BOUNDS if bounds else budget
        chunk_rows = max(1, budget // max(nd, 1))
        if not bounds and use_view(run, direction, unjudged, ties):
            chunk_rows = view_chunk_rows(run, direction, nq, chunk_rows, THREADS, int(indptr[-1]))
    chunk_rows = max(1, int(chunk_rows))
    values: dict[str, list[npt.NDArray[np.float64]]] = {}
    nrel = []
    counts: dict[str, int] = {}
    straddle: dict[int, int] = {k: 0 for k in straddle_ks}
    clips: list[tuple[npt.NDArray[np.int64], ...]] = []
    shared = {
        "run": run,
        "direction": direction,
        "chunk_rows": chunk_rows,
        "n_queries": nq,
        "n_docs": nd,
        "indptr": indptr,
        "indices": indices,
        "grades": grades,
        "unjudged": unjudged,
        "ties": ties,
        "tie_rank": tie_rank,
        "max_grade": max_grade,
        "measures": measures,
        "straddle_ks": straddle_ks,
        "keep_clip": keep_clip,
    }
    # chunks run on THREADS threads, or on the mapper set by kernel.chunk_mapper (e.g. Dask)
    fn = bound_chunk if bounds else evaluate_chunk
    threads = 1 if on_device else THREADS  # a device runs one chunk at a time
    with chunk_results(fn, range(0, nq, chunk_rows), shared, threads) as results:
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
    report: dict[str, Any] = {"n_queries": nq, "unjudged": unjudged, **counts, "straddling": straddle}
    clip = None
    if keep_clip:
        clip = (
            tuple(np.concatenate([c[i] for c in clips]) for i in range(3))
            if clips
            else (np.zeros(0, np.int64),) * 3
        )
    return DirResult(
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
    min_grade: float | None = None,
) -> dict[str, npt.NDArray[np.float64]]:
    """Per-query values of ``measures`` in one direction, keyed by measure name (``str(m)``).

    Each array has one value per query of ``direction`` (captions for t2v, videos for v2t).
    A query with no relevant doc gets NaN for every measure (trec_eval-style: it is skipped
    from means); ``~np.isnan(values[m])`` is the mask of evaluated queries. ``MdR`` and ``MnR``
    both hold the rank of the first relevant doc. Aggregate-only measures (meanR, geoC) are
    skipped. ``min_grade``: as for :func:`fireval.metrics.evaluate.evaluate`.
    """
    d = Direction.parse(direction)
    ms = parse_measures(measures)
    ties = check_ties(ties)
    mode = parse_modes(unjudged)[0]
    check_bound_options((mode,), ties, None)
    check_bound_measures((mode,), ms)
    check_inputs(run, judgments, collection)
    if not run.supports(d):
        raise InputError(f"run {run.name!r} does not rank {d.value} queries", source=run.source)
    res = run_split(
        run,
        judgments,
        d,
        ms,
        min_grade=check_min_grade(min_grade),
        ties=ties,
        unjudged=mode,
        chunk_rows=chunk_rows,
        collection=collection,
        straddle_ks=(),
    )
    return res.values
