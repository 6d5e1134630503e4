"""The measure kernel: one chunk of query rows → per-query values of every measure.

Algorithm, per chunk of ``n`` queries × ``D`` docs (no per-query Python loop): the docs whose
label matters are *marked*; for each, ``g`` (docs scored strictly higher) and ``t`` (docs scored
equal) are counted and the marked docs are grouped into tie groups by (query, g)
(:mod:`fireval.metrics.entries`: steps 1-4). :func:`compute_chunk` then gives every measure as a
sum over groups of a closed form (expected value over the orderings inside ties:
:mod:`fireval.metrics.ties`; bpref, infAP: :mod:`fireval.metrics.incomplete`).
:func:`evaluate_chunk` runs one chunk, :func:`chunk_results` runs the chunks (threads, or a mapper).
Conventions (``docs/metrics.md``): relevant = grade > 0, and |relevant| counts every relevant
doc, retrieved or not; a ``-inf`` score is not retrieved (no gain; for MdR/MnR the ``-inf`` docs
are one tie group after every retrieved doc); a query with no relevant doc is NaN for every
measure (left out of the means, as in trec_eval) and counted in the tie report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.run import Run, validate_scores
from fireval.metrics.entries import (
    DIRECT_MAX_PER_ROW,
    VIEW_CHUNK_ENTRIES,
    VIEW_CHUNK_MAX,
    Entries,
    Groups,
    MarkedCounts,
    device_counter,
    judged_entries,
    make_entries,
    make_groups,
    rows_of,
    starts_of_runs,
    use_view,
    view_chunk_rows,
)
from fireval.metrics.incomplete import INCOMPLETE, bpref_sums, infap_sums
from fireval.metrics.measures import CUT_R, Measure
from fireval.metrics.ties import harmonic_diff, log_comb, prob_none, span_batches

__all__ = [  # the kernel's own names, and those of fireval.metrics.entries it has always exported
    "DIRECT_MAX_PER_ROW",
    "VIEW_CHUNK_ENTRIES",
    "VIEW_CHUNK_MAX",
    "ChunkMapper",
    "ChunkResult",
    "Entries",
    "Groups",
    "MarkedCounts",
    "chunk_mapper",
    "chunk_results",
    "compute_chunk",
    "device_counter",
    "evaluate_chunk",
    "expected_rr",
    "judged_entries",
    "make_entries",
    "make_groups",
    "use_view",
    "view_chunk_rows",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: ragged expansion batch (elements) for the tie-aware reciprocal rank
_RR_BATCH = 1 << 22


@dataclass
class ChunkResult:
    values: dict[str, F64]
    nrel: I64
    tie_counts: dict[str, int]
    straddle: dict[int, int]
    clip_entries: tuple[I64, I64, I64] = field(default_factory=lambda: (np.zeros(0, np.int64),) * 3)


def evaluate_chunk(
    start: int,
    *,
    run: Run,
    direction: Direction,
    chunk_rows: int,
    n_queries: int,
    n_docs: int,
    indptr: I64,
    indices: I64,
    grades: F64,
    unjudged: str,
    ties: str,
    tie_rank: I64 | None,
    max_grade: float,
    measures: tuple[Measure, ...],
    straddle_ks: tuple[int, ...] = (),
    keep_clip: bool = False,
) -> tuple[int, int, ChunkResult]:
    """Per-query values for queries ``start : start + chunk_rows`` of ``direction``.

    A pure function of its arguments (module level, so that a distributed scheduler can ship
    it): reads the block, finds the entries, computes every measure. The block is read
    unvalidated (``Run.block(validate=False)``) and :func:`~fireval.metrics.entries.make_entries`
    validates it, fused with the count when it counts a v2t view's columns, with the error
    ``Run.block`` raises. Scores on a device are counted there (:func:`device_counter`).
    """
    stop = min(n_queries, start + chunk_rows)
    check = partial(validate_scores, name=run.source or run.name, offset=start, direction=direction)
    lo, hi = indptr[start], indptr[stop]
    counter = device_counter(run, unjudged)
    if counter is not None:  # the scores live on a device (torch): count there, bring back the counts
        q = rows_of(np.asarray(indptr[start : stop + 1] - lo, np.int64))
        doc = np.asarray(indices[lo:hi], np.int64)
        counts = counter(
            direction,
            start,
            stop,
            q,
            doc,
            condensed=unjudged == "condensed",
            tie_rank=tie_rank if ties == "docid" else None,
            check=check,
        )
        e, rg, rt = judged_entries(q, doc, grades[lo:hi], counts, ties=ties)
    else:
        view = use_view(run, direction, unjudged, ties)
        block = run.block(direction, start, stop, view=view, validate=False)
        e, rg, rt = make_entries(
            block,
            indptr[start : stop + 1] - lo,
            indices[lo:hi],
            grades[lo:hi],
            unjudged=unjudged,
            ties=ties,
            tie_rank=tie_rank,
            max_grade=max_grade,
            check=check,
        )
    res = compute_chunk(
        e, rg, rt, stop - start, n_docs, measures, straddle_ks=straddle_ks, keep_clip=keep_clip
    )
    return start, stop, res


#: ``mapper(fn, starts, shared)`` → results of ``fn(start, **shared)`` in the order of ``starts``
ChunkMapper = Callable[[Callable[..., Any], Sequence[int], Mapping[str, Any]], Iterator[Any]]
_MAPPER: ContextVar[ChunkMapper | None] = ContextVar("fireval_chunk_mapper", default=None)


@contextmanager
def chunk_mapper(mapper: ChunkMapper | None) -> Iterator[None]:
    """Run the chunks of every evaluation inside the block with ``mapper`` (e.g. on Dask;
    :func:`fireval.scale.distributed.dask_mapper`) instead of the local thread pool."""
    token = _MAPPER.set(mapper)
    try:
        yield
    finally:
        _MAPPER.reset(token)


@contextmanager
def chunk_results(
    fn: Callable[..., Any], starts: Sequence[int], shared: Mapping[str, Any], threads: int
) -> Iterator[Iterator[Any]]:
    """``fn(start, **shared)`` for every start, yielded in order.

    With a mapper set by :func:`chunk_mapper` the mapper runs them; otherwise up to
    ``threads`` threads (numpy releases the GIL in sorts, comparisons and gathers). Results
    come in order, so the first bad chunk raises first; leaving the block stops the rest.
    """
    mapper = _MAPPER.get()
    if mapper is not None:
        it = mapper(fn, list(starts), shared)
        try:
            yield it
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
        return
    work = partial(fn, **shared)
    workers = min(threads, len(starts))
    if workers <= 1:
        yield map(work, starts)
        return
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        yield pool.map(work, starts)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@lru_cache(maxsize=8)
def _discount_prefix(d: int) -> F64:
    """Dc[i] = sum_{k=1..i} 1/log2(k+1), i = 0..d+1 (cached per d; read-only)."""
    out = np.zeros(d + 2)
    out[1:] = np.cumsum(1.0 / np.log2(np.arange(2, d + 3, dtype=np.float64)))
    out.flags.writeable = False
    return out


def _first_relevant(gr: Groups) -> tuple[I64, I64]:
    """(query, group index) of the first group holding a relevant doc, per query that has one."""
    rel_idx = np.flatnonzero(gr.r > 0)
    if rel_idx.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rq = gr.q[rel_idx]  # groups are sorted by (query, g)
    fi = rel_idx[starts_of_runs(rq)]
    return gr.q[fi].astype(np.int64), fi


def expected_rr(g: I64, t: I64, r: F64) -> F64:
    """E[1/(g+X)], X = position of the first of r relevant docs among t tied slots."""
    g = g.astype(np.float64)
    tf = t.astype(np.float64)
    out = np.where(tf > 0, 1.0 / (g + 1.0), 0.0)
    one = (r == 1) & (tf > 1)
    out[one] = harmonic_diff(g[one], tf[one]) / tf[one]
    many = np.flatnonzero((r > 1) & (r < tf))
    if many.size:
        span = (tf[many] - r[many] + 1).astype(np.int64)
        for lo, hi in span_batches(span, _RR_BATCH):
            sel = many[lo:hi]
            sp = span[lo:hi]
            owner = np.repeat(np.arange(sel.size), sp)
            starts = np.cumsum(sp) - sp
            x = np.arange(owner.size) - np.repeat(starts, sp) + 1.0
            tt, rr, gg = tf[sel][owner], r[sel][owner], g[sel][owner]
            w = np.exp(log_comb(tt - x, rr - 1) - log_comb(tt, rr))
            out[sel] = np.bincount(owner, weights=w / (gg + x), minlength=sel.size)
    return out


def compute_chunk(
    e: Entries,
    raw_g: I64,
    raw_t: I64,
    n: int,
    d: int,
    measures: tuple[Measure, ...],
    *,
    straddle_ks: tuple[int, ...] = (),
    keep_clip: bool = False,
) -> ChunkResult:
    """Per-query values of ``measures`` for one chunk of ``n`` queries over ``d`` docs."""
    gr = make_groups(e, d, nonrel=any(m.name in INCOMPLETE for m in measures))
    nrel = np.bincount(e.q[e.rel], minlength=n).astype(np.int64)
    has = nrel > 0
    nrel_f = nrel.astype(np.float64)
    safe_nrel = np.where(has, nrel_f, 1.0)
    tf = gr.t.astype(np.float64)
    gf = gr.g.astype(np.float64)
    fq, fi = _first_relevant(gr)

    def per_query(w: F64) -> F64:
        return np.bincount(gr.q, weights=w, minlength=n).astype(np.float64)

    n_cache: dict[int | None, F64] = {}

    def n_for(k: int | None) -> F64:
        """Positions of each group inside the top K (K = |relevant| for CUT_R, all for None)."""
        if k not in n_cache:
            left = (nrel_f[gr.q] if k == CUT_R else float(d if k is None else k)) - gf
            nn = np.minimum(np.maximum(left, 0.0), tf)  # clip(K - g, 0, t)
            nn[~gr.fin] = 0.0
            n_cache[k] = nn
        return n_cache[k]

    hits_cache: dict[int | None, F64] = {}

    def hits(k: int | None) -> F64:
        if k not in hits_cache:
            hits_cache[k] = per_query(gr.r * n_for(k) / tf)
        return hits_cache[k]

    def ap_terms(nn: F64) -> F64:
        s0 = harmonic_diff(gf, nn)
        s1 = nn - (gf + 1.0) * s0
        frac = np.where(tf > 1, (gr.r - 1.0) / np.maximum(tf - 1.0, 1.0), 0.0)
        return (gr.r / tf) * ((gr.c + 1.0) * s0 + frac * s1)

    dc: F64 | None = None
    out: dict[str, F64] = {}
    first_rank = np.full(n, np.nan)
    if fq.size:
        first_rank[fq] = gf[fi] + (tf[fi] + 1.0) / (gr.r[fi] + 1.0)

    for m in measures:
        key = str(m)
        if m.aggregate_only or key in out:
            continue
        name = m.name
        if name in ("MdR", "MnR"):
            val = first_rank.copy()
        elif name == "C":
            val = np.zeros(n)
            if fq.size:
                nn = n_for(m.k)[fi]
                val[fq] = np.where(gr.fin[fi], 1.0 - prob_none(tf[fi], gr.r[fi], nn), 0.0)
        elif name in ("P", "Recall"):
            h = hits(m.k)
            by_rel = name == "Recall" or m.k == CUT_R
            val = h / safe_nrel if by_rel else h / float(m.k)  # type: ignore[arg-type]
        elif name == "R-Prec":
            val = hits(CUT_R) / safe_nrel
        elif name == "AP":
            val = per_query(np.where(gr.r > 0, ap_terms(n_for(m.k)), 0.0)) / safe_nrel
        elif name == "AP_hits":
            val = _ap_hits(gr, n, float(m.k), ap_terms)  # type: ignore[arg-type]
        elif name == "RR":
            val = np.zeros(n)
            if fq.size:
                val[fq] = np.where(gr.fin[fi], expected_rr(gr.g[fi], gr.t[fi], gr.r[fi]), 0.0)
        elif name == "bpref":
            val = bpref_sums(gr, e, n, nrel_f) / safe_nrel
        elif name == "infAP":  # AP's precision sums plus infAP's terms (fireval.metrics.incomplete)
            ap_sums = per_query(np.where(gr.fin & (gr.r > 0), ap_terms(n_for(None)), 0.0))
            val = infap_sums(gr, n, ap_sums) / safe_nrel
        elif name in ("nDCG", "nDCG_exp", "infNDCG"):  # infNDCG: nDCG's sums (fireval.metrics.incomplete)
            if dc is None:
                dc = _discount_prefix(d)
            nn = n_for(m.k)
            gains = gr.gain_exp if name == "nDCG_exp" else gr.gain
            ni = nn.astype(np.int64)
            span = dc[gr.g + ni] - dc[gr.g]
            span = np.where(ni == 1, 1.0 / np.log2(gf + 2.0), span)
            dcg = per_query(gains / tf * span)
            idcg = _ideal_dcg(e, n, m, nrel_f, d, exp=(name == "nDCG_exp"))
            val = dcg / np.where(idcg > 0, idcg, 1.0)
        elif name == "judged":
            val = per_query(gr.judged * n_for(m.k) / tf) / float(m.k)  # type: ignore[arg-type]
        else:  # pragma: no cover - parse_measure rejects unknown names
            raise ValueError(f"no kernel for {m}")
        val = np.where(has, val, np.nan)
        out[key] = val

    tie_counts, straddle = _tie_counts(e, raw_g, raw_t, n, straddle_ks)
    tie_counts["no_relevant"] = int((~has).sum())
    clip = (np.zeros(0, np.int64),) * 3
    if keep_clip:
        sel = e.rel & e.fin
        clip = (e.q[sel], raw_g[sel], raw_t[sel])
    return ChunkResult(out, nrel, tie_counts, straddle, clip)  # type: ignore[arg-type]


def _ideal_dcg(e: Entries, n: int, m: Measure, nrel: F64, d: int, *, exp: bool) -> F64:
    """DCG of the ideal ranking: all relevant docs by decreasing gain, cut at K (or R, or all)."""
    sel = np.flatnonzero(e.rel)
    if sel.size == 0:
        return np.zeros(n)
    q = e.q[sel]
    gains = (e.gain_exp if exp else e.gain)[sel]
    same_q = q[1:] == q[:-1]
    if (q[1:] >= q[:-1]).all() and (~same_q | (gains[1:] <= gains[:-1])).all():
        qs, gs = q, gains  # already by query, gains decreasing (e.g. binary grades)
        first = np.ones(qs.size, dtype=bool)
        first[1:] = ~same_q
    else:
        order = np.lexsort((-gains, q))
        qs, gs = q[order], gains[order]
        first = np.ones(qs.size, dtype=bool)
        first[1:] = qs[1:] != qs[:-1]
    idx = np.arange(qs.size)
    pos = idx - np.maximum.accumulate(np.where(first, idx, 0)) + 1
    if m.k == CUT_R:
        k = nrel[qs]
    elif m.k is None:
        k = np.full(qs.size, float(d))
    else:
        k = np.full(qs.size, float(m.k))
    keep = pos <= k
    w = gs[keep] / np.log2(pos[keep] + 1.0)
    return np.bincount(qs[keep], weights=w, minlength=n).astype(np.float64)


def _ap_hits(gr: Groups, n: int, k: float, ap_terms) -> F64:  # type: ignore[no-untyped-def]
    """FIRE's AP over the top K divided by the hits found there (0 without a hit), tie-aware.

    Groups entirely inside the top K contribute fixed hit counts and expected precision
    sums. A tie group that straddles K holds a hypergeometric number h of relevant docs in
    its first n = K-g slots; conditional on h they are spread uniformly over those slots, so
    E[AP] = sum_h P(h) (A + B_h) / (c + h), with B_h the expected precision sum of h relevant
    among n slots.
    """
    tf = gr.t.astype(np.float64)
    gf = gr.g.astype(np.float64)
    inside = gr.fin & (gf + tf <= k) & (gr.r > 0)
    a = np.bincount(gr.q, weights=np.where(inside, ap_terms(tf), 0.0), minlength=n)
    c_in = np.bincount(gr.q, weights=np.where(inside, gr.r, 0.0), minlength=n)
    val = np.where(c_in > 0, a / np.where(c_in > 0, c_in, 1.0), 0.0)
    strad = np.flatnonzero(gr.fin & (gf < k) & (gf + tf > k) & (gr.r > 0))
    if strad.size:
        q = gr.q[strad]
        g, t, r, c = gf[strad], tf[strad], gr.r[strad], gr.c[strad]
        nn = k - g
        hmax = int(min(k, r.max()))
        h = np.arange(hmax + 1, dtype=np.float64)[None, :]
        tt, rr, ncol = t[:, None], r[:, None], nn[:, None]
        feasible = (h <= rr) & (h <= ncol) & (ncol - h <= tt - rr)
        hs = np.where(feasible, h, 0.0)
        logp = log_comb(rr, hs) + log_comb(tt - rr, np.where(feasible, ncol - hs, 0.0)) - log_comb(tt, ncol)
        p = np.where(feasible, np.exp(logp), 0.0)
        s0 = harmonic_diff(g, nn)[:, None]
        s1 = ncol - (g[:, None] + 1.0) * s0
        frac = np.where(ncol > 1, (hs - 1.0) / np.maximum(ncol - 1.0, 1.0), 0.0)
        b = (hs / ncol) * ((c[:, None] + 1.0) * s0 + frac * s1)
        a_q = a[q][:, None]
        denom = c[:, None] + hs
        ratio = np.where(denom > 0, (a_q + b) / np.where(denom > 0, denom, 1.0), 0.0)
        val[q] = np.sum(p * ratio, axis=1)
    return val


def _n_distinct(q: I64) -> int:
    """Number of distinct values of ``q`` (sorted fast path; entries are in query order)."""
    if q.size == 0:
        return 0
    if (q[1:] < q[:-1]).any():
        return int(np.unique(q).size)
    return int(np.count_nonzero(q[1:] != q[:-1])) + 1


def _tie_counts(
    e: Entries, g: I64, t: I64, n: int, ks: tuple[int, ...]
) -> tuple[dict[str, int], dict[int, int]]:
    """Queries whose relevant doc sits in a tie (t > 1, retrieved) and groups straddling each K."""
    all_fin = bool(e.fin.all())
    sel = e.rel if all_fin else e.rel & e.fin
    tied_all = t > 1
    if not tied_all.any():  # no marked doc in a tie: nothing to select
        q = gg = tt = np.zeros(0, np.int64)
        tied = np.zeros(0, bool)
    else:
        q, gg, tt = e.q[sel], g[sel], t[sel]
        tied = tied_all[sel]
    n_tied = int(np.count_nonzero(tied))
    counts = {
        "queries_with_relevant_in_tie": _n_distinct(q[tied]) if n_tied else 0,
        "relevant_in_tie": n_tied,
        "queries_with_unretrieved_relevant": 0 if all_fin else _n_distinct(e.q[e.rel & ~e.fin]),
    }
    straddle = {}
    for k in ks:
        if n_tied == 0:  # a straddling group has t > 1
            straddle[int(k)] = 0
            continue
        s = (gg < k) & (gg + tt > k)
        straddle[int(k)] = _n_distinct(q[s])
    return counts, straddle
