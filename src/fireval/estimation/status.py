"""What the known labels decide for one run and direction, and which unjudged pairs can change it.

Per query of the direction (tie-aware, as ``fireval evaluate``):

* ``lower`` / ``upper``: the exact bounds of each measure over every labelling of the unjudged
  pairs (:mod:`fireval.metrics.bounds`, ``unjudged=worst|best``); ``lower == upper`` means the
  labels *decide* the query.
* the *population* of the mean: the queries with at least one known relevant doc (the queries
  ``evaluate`` averages over; a query with none is left out and counted).
* *candidate pairs* of an undecided query: the unjudged docs whose label can change a requested
  measure. For the first-relevant family (C@K, RR, MnR) these are the unjudged docs scoring at
  least as high as the best-scoring known relevant doc (a doc tied with it shares its tie group,
  whose expected value depends on it), cut at rank K for C@K (a doc is inside the top K when
  fewer than K docs score strictly higher: ``g < K``); for P@K every unjudged doc with ``g < K``.
  Docs scored ``-inf`` (not retrieved) are never candidates. Judging every candidate of a query
  decides it (up to labels left undecided by the annotators).

Candidates come from one row sort per chunk of queries (``g`` for every doc: the start of its tie
group in the descending order), as numpy over ``rows x docs`` blocks; no per-query loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.core.judgments import Judgments
from fireval.core.run import Run
from fireval.metrics.measures import CUT_R, Measure, parse_measure

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: measure families the estimation room plans and estimates (their value is fixed by the labels
#: of a bounded set of pairs of the query)
SUPPORTED = ("C", "RR", "MnR", "P")
#: the default measures of ``fireval plan`` / ``fireval estimate``
DEFAULT = ("C@1", "C@5", "C@10")
#: query rows per candidate chunk
CHUNK_ELEMS = 1 << 22


def parse_estimable(items: list[str] | tuple[str, ...]) -> tuple[Measure, ...]:
    """Measures under TVR names (R@K = C@K); refuses those a plan cannot decide."""
    out: list[Measure] = []
    for text in items:
        m = parse_measure(text, "tvr")
        ok = m.name in SUPPORTED and (m.name != "P" or (m.k is not None and m.k != CUT_R))
        ok = ok and (m.name != "C" or m.k is not None)
        if not ok:
            raise FirevalError(
                f"-m/--measures: {text!r} cannot be planned or estimated; supported: C@K (R@K), P@K, RR, "
                "MnR (AP, nDCG, Recall and R-Prec depend on every unjudged pair of a query, since "
                "|relevant| enters them; bound them with `fireval evaluate --unjudged worst,best`)"
            )
        if m not in out:
            out.append(m)
    if not out:
        raise FirevalError("-m/--measures: no measure given")
    return tuple(out)


@dataclass
class Candidates:
    """Candidate pairs of one measure, sorted by (query, rank, doc): query, doc, ``g``."""

    q: I64
    doc: I64
    g: I64

    def cost(self, n_queries: int) -> I64:
        """Candidate pairs per query."""
        return np.bincount(self.q, minlength=n_queries).astype(np.int64)

    def first_rank(self, n_queries: int) -> I64:
        """``g`` of each query's first candidate (-1 without one)."""
        out = np.full(n_queries, -1, np.int64)
        first = np.ones(self.q.size, bool)
        first[1:] = self.q[1:] != self.q[:-1]
        out[self.q[first]] = self.g[first]
        return out


@dataclass
class QueryStatus:
    """Status of every query of one run in one direction, per measure."""

    run: str
    direction: Direction
    measures: tuple[Measure, ...]
    lower: dict[str, F64]
    upper: dict[str, F64]
    population: npt.NDArray[np.bool_]
    undecided: dict[str, npt.NDArray[np.bool_]]
    candidates: dict[str, Candidates]
    #: relevant / judged among the judged pairs inside this run's top ``PRIOR_DEPTH`` (Laplace):
    #: a prior for how soon a walk meets a relevant candidate (walk costs only, never an estimate)
    top_rate: float = 0.5
    #: the labels' grades, query x doc (CSR, this direction): which walked pairs were relevant
    grades: Any = field(default=None, repr=False, compare=False)

    @property
    def n_queries(self) -> int:
        return int(self.population.size)

    def union(self) -> Candidates:
        """Candidates of any measure, each pair once, sorted by (query, rank, doc)."""
        parts = list(self.candidates.values())
        q = np.concatenate([c.q for c in parts]) if parts else np.zeros(0, np.int64)
        d = np.concatenate([c.doc for c in parts]) if parts else np.zeros(0, np.int64)
        g = np.concatenate([c.g for c in parts]) if parts else np.zeros(0, np.int64)
        o = np.lexsort((d, g, q))
        q, d, g = q[o], d[o], g[o]
        keep = np.ones(q.size, bool)
        keep[1:] = (q[1:] != q[:-1]) | (d[1:] != d[:-1])
        return Candidates(q[keep], d[keep], g[keep])


PRIOR_DEPTH = 10


def extreme_values(
    run: Run,
    judg: Judgments,
    direction: Direction,
    measures: tuple[Measure, ...],
    collection: Collection | None,
) -> tuple[dict[str, F64], dict[str, F64]]:
    """Per-query values of each measure with every unjudged doc irrelevant / relevant
    (``unjudged=worst`` / ``best``; NaN for a query that labelling leaves out)."""
    from fireval.metrics.evaluate import query_values

    worst = query_values(run, judg, direction, measures, unjudged="worst", collection=collection)
    best = query_values(run, judg, direction, measures, unjudged="best", collection=collection)
    return worst, best


def value_bounds(
    run: Run,
    judg: Judgments,
    direction: Direction,
    measures: tuple[Measure, ...],
    collection: Collection | None,
) -> tuple[dict[str, F64], dict[str, F64]]:
    """Per-query exact bounds of each measure (NaN for a query the bounds leave out)."""
    return bounds_of(*extreme_values(run, judg, direction, measures, collection))


def bounds_of(worst: dict[str, F64], best: dict[str, F64]) -> tuple[dict[str, F64], dict[str, F64]]:
    """Per-query ``(lower, upper)`` from :func:`extreme_values`."""
    lo = {k: np.fmin(worst[k], best[k]) for k in worst}
    hi = {k: np.fmax(worst[k], best[k]) for k in worst}
    return lo, hi


def mean_bounds(
    measures: tuple[Measure, ...],
    worst: dict[str, F64],
    best: dict[str, F64],
    required: npt.NDArray[np.bool_],
) -> dict[str, tuple[float, float]]:
    """Exact numeric bounds of each measure's mean as ``fireval evaluate --unjudged worst,best``
    gives them, from :func:`extreme_values`: ``required`` queries (a known relevant doc) are in
    every mean, the others only in the labellings that give them one
    (:func:`fireval.metrics.bounds.aggregate_bound`)."""
    from fireval.metrics.bounds import aggregate_bound

    out: dict[str, tuple[float, float]] = {}
    for m in measures:
        a = aggregate_bound(m, worst[str(m)], required, "worst")[0]
        b = aggregate_bound(m, best[str(m)], required, "best")[0]
        out[str(m)] = (min(a, b), max(a, b))
    return out


def _strict_above(block: npt.NDArray[np.floating]) -> I64:
    """``g`` for every cell: docs of its row scoring strictly higher (one sort per row)."""
    n, d = block.shape
    order = np.argsort(-block, axis=1, kind="stable")
    sv = np.take_along_axis(block, order, axis=1)
    starts = np.ones((n, d), bool)
    starts[:, 1:] = sv[:, 1:] != sv[:, :-1]
    g_sorted = np.maximum.accumulate(np.where(starts, np.arange(d)[None, :], 0), axis=1)
    g = np.empty((n, d), np.int64)
    np.put_along_axis(g, order, g_sorted, axis=1)
    return g


def query_status(
    run: Run,
    judg: Judgments,
    direction: Direction | str,
    measures: tuple[Measure, ...],
    *,
    collection: Collection | None = None,
) -> QueryStatus:
    """Bounds, population, decided queries and candidate pairs of ``run`` in ``direction``."""
    d = Direction.parse(direction)
    lo, hi = value_bounds(run, judg, d, measures, collection)
    pop = judg.has_relevant(d)
    und = {str(m): pop & ~np.isnan(lo[str(m)]) & (hi[str(m)] - lo[str(m)] > 1e-12) for m in measures}
    grades = judg.matrix(d).tocsr()
    judged = judg.matrix(d, judged=True).tocsr()
    n_q, n_d = grades.shape
    rows = max(1, CHUNK_ELEMS // max(n_d, 1))
    any_und = np.zeros(n_q, bool)
    for u in und.values():
        any_und |= u
    found: dict[str, list[tuple[I64, I64, I64]]] = {str(m): [] for m in measures}
    n_judged_top = n_rel_top = 0
    for a in range(0, n_q, rows):
        b = min(n_q, a + rows)
        if not any_und[a:b].any():
            continue
        block = np.asarray(run.block(d, a, b), np.float64)
        jm = judged[a:b].toarray() > 0
        rel = (grades[a:b].toarray() > 0) & jm
        open_ = ~jm & np.isfinite(block)
        g = _strict_above(block)
        best_rel = np.where(rel, block, -np.inf).max(axis=1)
        above = block >= best_rel[:, None]
        top = g < PRIOR_DEPTH
        n_judged_top += int((jm & top).sum())
        n_rel_top += int((rel & top).sum())
        for m in measures:
            mask = open_ & und[str(m)][a:b, None]
            if m.name in ("C", "RR", "MnR"):
                mask &= above
            if m.name in ("C", "P"):
                mask &= g < int(m.k or 0)
            q, doc = np.nonzero(mask)
            found[str(m)].append((q.astype(np.int64) + a, doc.astype(np.int64), g[q, doc]))
    cands: dict[str, Candidates] = {}
    for key, parts in found.items():
        if parts:
            cq = np.concatenate([p[0] for p in parts])
            cd = np.concatenate([p[1] for p in parts])
            cg = np.concatenate([p[2] for p in parts])
        else:
            cq = cd = cg = np.zeros(0, np.int64)
        o = np.lexsort((cd, cg, cq))
        cands[key] = Candidates(cq[o], cd[o], cg[o])
    # an undecided query without a candidate cannot be decided by judging (e.g. only unretrieved
    # docs are unjudged): it is in no stratum and enters every estimate with its bounds
    rate = (n_rel_top + 1.0) / (n_judged_top + 2.0)
    return QueryStatus(run.name, d, measures, lo, hi, pop, und, cands, rate, grades)
