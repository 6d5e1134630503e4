"""Exact worst and best values over every labelling of the unjudged docs (``unjudged=worst|best``).

A *labelling* marks each unjudged (query, doc) pair relevant or irrelevant. An unjudged doc
labelled relevant gets the largest grade of the labels (``G``; 1 for binary labels), as with
``unjudged=upper``; intermediate grades are not searched (for graded nDCG the bounds are over
{0, G} per unjudged doc). ``worst`` is the smallest value of a measure over all labellings
(the largest rank for MdR/MnR), ``best`` the largest; per query, over the labellings under
which the query has at least one relevant doc.

Algorithm (per query). Let the unjudged docs be ``u_1 .. u_m`` in decreasing score.

* *Exchange.* Take a labelling with ``J`` unjudged docs relevant, and move the relevance of
  an unjudged doc to an unjudged doc with a strictly higher score. |relevant| and the ideal
  ranking (the multiset of gains) stay the same, and in every strict ordering consistent with
  the scores the relevant label moves up: AP, AP@K, nDCG, nDCG@K, nDCG@R, Recall@K,
  R-Prec (= P@R = Recall@R), C@K, P@K, RR and the first relevant rank never get worse (each is
  a sequence of adjacent swaps of a relevant doc with an irrelevant one above it). The
  tie-aware value is the expectation over the orderings inside tie groups, so it never gets
  worse either. Within one tie group every unjudged doc has the same place, and the expectation
  depends only on how many of them are relevant. So for a fixed ``J`` the best labelling makes
  ``u_1 .. u_J`` relevant (a *prefix*), the worst ``u_{m-J+1} .. u_m`` (a *suffix*); the
  bounds are the best prefix and the worst suffix over ``J = 0 .. m`` (``J >= 1`` when the
  query has no judged relevant doc).
* *All ``m + 1`` prefixes at once.* Docs are sorted by score per query (``ties="docid"``:
  by score, then trec_eval's doc id order, every doc its own group). Every value is a sum
  over tie groups of the closed forms of :mod:`fireval.metrics.ties`, with ``r`` relevant docs
  in a group of ``t`` and ``c`` relevant above it. For a prefix of length ``J`` every group
  above the group of ``u_J`` is fully relevant, every group below has its judged relevant docs
  only (with ``J`` more relevant docs above), and only the group of ``u_J`` is partly labelled.
  Terms linear in ``r`` (hits, DCG) are cumulative sums over the unjudged docs in score order;
  the AP term ``(r/t)[(c+1) S0 + (r-1)/(t-1) S1]`` is quadratic in ``r`` and linear in ``c``,
  so it is a prefix sum of "fully relevant" group terms, one boundary-group term, and a suffix
  sum of "judged only" terms plus ``J`` times a suffix sum of their ``c`` coefficients (suffixes
  mirror this). Cutoffs at ``R = |judged relevant| + J`` (R-Prec, nDCG@R) read the per-rank
  prefix sums at ``K = R`` and split the group straddling ``K``. The ideal DCG of ``J`` docs at
  gain ``G`` plus the judged gains ``g_1 >= ...`` is ``G Dc(min(J,K)) + sum_l (g_l - g_{l+1})
  (Dc(min(J+l,K)) - Dc(min(J,K)))``, non-zero only where the grade changes.
  Everything is numpy over a chunk of query rows (``n x D`` arrays; no per-query loop).
* C@K, P@K, RR, MdR, MnR are monotone in the relevant set: ``best`` is the ``upper`` value
  (every unjudged doc relevant, from the same sorted arrays) and ``worst`` the ``lower`` value
  (:mod:`fireval.metrics.kernel`); a query with no judged relevant doc is worst with only
  ``u_m`` relevant. judged@K does not depend on the labelling.
* *AP@R* (trec_eval ``map_cut`` at K = R = |relevant|, divided by R). Fix ``J``; then R =
  |judged relevant| + J is fixed. In a strict ordering with relevant docs at positions
  ``p_1 < p_2 < ...`` the numerator is ``sum_{j: p_j <= R} j / p_j``. Moving a relevant label
  to an earlier irrelevant position replaces one ``p`` by a smaller one, so every sorted
  ``p_j`` weakly decreases: the set ``{j: p_j <= R}`` can only grow and each ``j / p_j`` only
  increase, with R unchanged. The exchange argument above therefore holds: the bounds are the
  best prefix / worst suffix over ``J``. Per prefix the cutoff ``R = |judged relevant| + J``
  moves: the groups wholly above rank R add their full terms (the prefix sums as for AP: fully
  relevant groups, the boundary group of ``u_J``, judged-only groups with ``J`` more relevant
  above) and the group at rank R its term with its ``R - g`` slots inside, with ``r`` and
  ``c`` according to whether it lies above, at or below the boundary group.
* *AP_hits@K* (FIRE): ``V = (1/H) sum_{j <= H} j / p_j`` over the ``H`` relevant docs in the
  top K, 0 when ``H = 0``; |relevant| does not enter. In a strict ordering, moving a relevant
  label between two positions inside the top K keeps ``H`` and lowers the sorted positions, so
  ``V`` weakly increases; between two positions below K it changes nothing; but from below K
  into the top K it adds a hit and can *lower* ``V`` (``[rel, irrel, u, u]``, K = 3: the 4th
  relevant gives 1, the 3rd 5/6). So split each query's groups into ``I`` (finite, wholly in
  the top K), the group ``S`` straddling K (``g < K < g + t``, finite; absent for
  ``ties="docid"``) and ``O`` (below it or unretrieved). ``V`` depends on the labels of ``I``
  and, in ``S``, only on the number ``s`` of relevant unjudged docs (exchangeable). Fix ``s``
  and the number ``m1`` of relevant unjudged docs in ``I``: in every ordering both ends of a
  move inside ``I`` are in the top K, so the first ``m1`` unjudged docs of ``I`` are best and
  the last ``m1`` worst. The bounds are the extremes over all ``(m1, s)``, ``m1 = 0 .. u_I``,
  ``s = 0 .. w_S`` (``O``'s labels only decide whether the query has a relevant doc: ``m1 = s
  = 0`` counts, with value 0 when nothing of ``I`` is relevant, only if the query has a judged
  relevant doc or an unjudged doc in ``O``). The plain prefix/suffix over ``J`` is not enough:
  brute force finds a worst labelling with ``m1 > 0`` and ``s < w_S`` (kept as a test). Value
  of a candidate: ``I`` holds ``c`` relevant docs and the AP numerator ``A`` (full-group terms,
  prefix sums as for AP); ``S`` (``r = a_S + s`` relevant of ``t``, ``n = K - g`` slots in the
  top K) puts ``h`` relevant docs there, hypergeometric, spread uniformly over the ``n``
  slots, so given ``h`` the denominator is ``c + h`` and the expected numerator ``A + B_h``,
  ``B_h = (h/n)[(c+1) S0 + (h-1)/(n-1) S1]``, ``S0 = H(g+n) - H(g)``, ``S1 = n - (g+1) S0``;
  ``V = sum_h P(h) (A + B_h) / (c + h)``. A query without a straddling group has ``u_I + 1``
  candidates; with one, ``(u_I + 1)(w_S + 1)``: ``phi[m1, h] = (A + B_h) / (c + h)`` times
  ``P[h, s]`` as one batched matrix product over batches of straddling queries (no per-query
  loop; VAST 1k-A, whose 950 zero scores straddle K = 60, takes ~3 s per side).

Means over queries (:func:`aggregate_bound`): labellings are independent across the queries
of one direction (each unjudged pair belongs to one t2v query and one v2t query), so a mean's
bounds combine per-query bounds. A query with no judged relevant doc but some unjudged docs is
in the mean only when some of them are labelled relevant; the exact bound of the mean chooses
which of these *optional* queries to include (the ``k`` most extreme ones, optimised over ``k``;
for the median MdR likewise). With a fixed query set (``queries=``, the ``wray2021`` preset)
such a query scores 0 (rank ``n_docs + 1``) when left without a relevant doc. meanR and geoC
combine the bounds of C@1/5/10 means and of the two directions: they are valid bounds, but
exact only when nothing is optional, and a t2v and a v2t bound need not come from one labelling
of the shared pairs.

The sorted per-chunk arrays and the AP family's prefix sums (:class:`_Dense`, :class:`_AP`,
:func:`_ap_hits_bound`) are in :mod:`fireval.metrics.bounds_ap`; this module holds the
per-chunk driver (:func:`bound_chunk`, :func:`exact_values`) and the means' bounds
(:func:`aggregate_bound`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.run import Run
from fireval.metrics.bounds_ap import _AP, _ap_hits_bound, _Dense, _reduce
from fireval.metrics.bounds_ap import CHUNK_ELEMS_BOUNDS as CHUNK_ELEMS_BOUNDS
from fireval.metrics.bounds_ap import _at as _at
from fireval.metrics.bounds_ap import _pad as _pad
from fireval.metrics.entries import make_entries
from fireval.metrics.kernel import ChunkResult, compute_chunk, expected_rr
from fireval.metrics.measures import CUT_R, Measure
from fireval.metrics.ties import harmonic_diff, prob_none

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

WORST = "worst"
BEST = "best"
#: the ``unjudged`` modes of this module
BOUND_MODES = (WORST, BEST)
#: tie policies the exact bounds support (optimistic/pessimistic orders depend on the labels)
BOUND_TIES = ("tie-aware", "docid")


def _exact_route(m: Measure) -> bool:
    """Measures this module computes (the rest come from the kernel's lower/upper values)."""
    if m.name in ("Recall", "R-Prec", "AP", "AP_hits", "nDCG", "nDCG_exp", "judged"):
        return True
    return m.name == "P" and m.k == CUT_R


def maximizes(m: Measure, side: str) -> bool:
    """Whether ``side`` of ``m`` is its largest value (best of a score, worst of a rank)."""
    return (side == BEST) != m.lower_is_better


def _levels(indptr: I64, grades: F64, n: int, exp: bool) -> tuple[F64, F64]:
    """Per query, where the sorted judged relevant gains change: (index l, g_l - g_{l+1}), padded."""
    q = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    sel = grades > 0
    q, g = q[sel], grades[sel]
    if exp:
        with np.errstate(over="ignore"):
            g = np.exp2(g) - 1.0
    if q.size == 0:
        return np.zeros((n, 0)), np.zeros((n, 0))
    order = np.lexsort((-g, q))
    q, g = q[order], g[order]
    first = np.ones(q.size, dtype=bool)
    first[1:] = q[1:] != q[:-1]
    i = np.arange(q.size)
    pos = i - np.maximum.accumulate(np.where(first, i, 0)) + 1  # 1-based rank in the ideal order
    last = np.ones(q.size, dtype=bool)
    last[:-1] = first[1:]
    nxt = np.where(last, 0.0, np.append(g[1:], 0.0))
    change = g != nxt
    qc, lc, dc = q[change], pos[change], (g - nxt)[change]
    firstc = np.ones(qc.size, dtype=bool)
    firstc[1:] = qc[1:] != qc[:-1]
    ic = np.arange(qc.size)
    lev = ic - np.maximum.accumulate(np.where(firstc, ic, 0))
    width = int(lev.max()) + 1
    li = np.zeros((n, width))
    ld = np.zeros((n, width))
    li[qc, lev] = lc
    ld[qc, lev] = dc
    return li, ld


def _ideal(dc: F64, big: float, li: F64, ld: F64, q: I64, j: F64, k: int | F64) -> F64:
    """Ideal DCG of ``j`` docs at gain ``big`` plus the judged relevant gains, cut at ``k``."""
    jk = np.minimum(j, k).astype(np.int64)
    out = big * dc[jk]
    for level in range(li.shape[1]):
        at = np.minimum(j + li[q, level], k).astype(np.int64)
        out = out + ld[q, level] * (dc[at] - dc[jk])
    return out


def _discounts(d: int) -> F64:
    out = np.zeros(d + 2)
    out[1:] = np.cumsum(1.0 / np.log2(np.arange(2, d + 3, dtype=np.float64)))
    return out


def exact_values(
    block: npt.NDArray[np.floating],
    indptr: I64,
    indices: I64,
    grades: F64,
    measures: tuple[Measure, ...],
    *,
    side: str,
    max_grade: float,
    tie_rank: I64 | None = None,
    dense: _Dense | None = None,
) -> tuple[dict[str, F64], I64, F64]:
    """Per-query ``side`` values of the :func:`_exact_route` measures for one chunk.

    Returns (values by ``str(m)``, judged relevant docs per query, unjudged docs per query).
    A value is NaN when no labelling gives the query a relevant doc. ``dense``: the chunk's
    sorted arrays when the caller has them already.
    """
    x = dense if dense is not None else _Dense(block, indptr, indices, grades, tie_rank)
    n, d = x.n, x.d
    q, up, idx, rj, mm = x.uq, x.up, x.idx, x.e_rj, x.e_m
    best = side == BEST
    i0 = idx - 1.0
    has_j = x.RJ > 0
    safe_rj = np.where(has_j, x.RJ, 1.0)
    defined = has_j | (x.m > 0)
    jdenom = rj + idx if best else rj + mm - i0  # |relevant| of each entry's labelling
    dc: F64 | None = None
    levels: dict[bool, tuple[F64, F64]] = {}
    out: dict[str, F64] = {}

    def finish(j0: F64, cand: F64) -> F64:
        return _reduce(np.where(has_j, j0, np.nan), cand, q, n, maximize=best)

    aps: dict[int, _AP] = {}

    def ap_parts(k: int) -> _AP:
        if k not in aps:
            aps[k] = _AP(x, x.n_at(k))
        return aps[k]

    for m in measures:
        key = str(m)
        if key in out or not _exact_route(m):
            continue
        name = m.name
        at_r = m.k == CUT_R or name == "R-Prec" or (name == "P" and m.k == CUT_R)
        k_fix = d if m.k is None or m.k == CUT_R else int(m.k)
        if name == "judged":
            dens = np.where(x.fin, (x.t - (x.w_this - x.w_prev)) / x.t, 0.0)
            val = x.cx(dens)[:, min(k_fix, d)] / float(k_fix)
            out[key] = np.where(defined, val, np.nan)
        elif name in ("Recall", "R-Prec", "P") and not at_r:  # Recall@K
            f = x.n_at(k_fix) / x.t
            hj = (x.relj * f).sum(axis=1)
            fx = x.cx(np.where(x.judged, 0.0, f))
            unj = x.e1(fx, up + 1) if best else fx[:, d][q] - x.e1(fx, up)
            out[key] = finish(hj / safe_rj, (hj[q] + unj) / jdenom)
        elif name in ("Recall", "R-Prec", "P"):  # hits at rank R / R (R-Prec, P@R, Recall@R)
            hjx = x.cx(np.where(x.fin, x.a_grp / x.t, 0.0))
            kk = jdenom.astype(np.int64)
            n_in, w_s, frac, _ = x.straddle(q, kk)
            if best:
                u = np.minimum(idx, n_in) + np.clip(idx - n_in, 0.0, w_s) * frac
            else:
                u = np.maximum(0.0, n_in - i0) + np.maximum(0.0, n_in + w_s - np.maximum(i0, n_in)) * frac
            j0 = hjx[np.arange(n), safe_rj.astype(np.int64)] / safe_rj
            out[key] = finish(j0, (x.e1(hjx, kk) + u) / jdenom)
        elif name == "AP" and m.k != CUT_R:  # AP, AP@K
            ap = ap_parts(k_fix)
            num = ap.whole(np.full(q.size, d, np.int64), best)  # the terms hold the cutoff K already
            out[key] = finish(ap.c_t0[:, d] / safe_rj, num / jdenom)
        elif name == "AP":  # AP@R: AP cut at R = |judged relevant| + J, divided by R
            ap = ap_parts(d)
            all_q = np.arange(n, dtype=np.int64)
            j0 = ap.cut_at_r(all_q, safe_rj.astype(np.int64), None, best)
            kk = jdenom.astype(np.int64)
            out[key] = finish(j0 / safe_rj, ap.cut_at_r(q, kk, idx, best) / jdenom)
        elif name == "AP_hits":
            out[key] = _ap_hits_bound(x, ap_parts(d), int(m.k), best)  # type: ignore[arg-type]
        elif name in ("nDCG", "nDCG_exp"):
            exp = name == "nDCG_exp"
            if dc is None:
                dc = _discounts(d)
            if exp not in levels:
                levels[exp] = _levels(indptr, grades, n, exp)
            li, ld = levels[exp]
            with np.errstate(over="ignore"):
                big = float(np.exp2(max_grade) - 1.0) if exp else float(max_grade)
                gain_j = np.where(x.relj, np.exp2(x.grade) - 1.0 if exp else x.grade, 0.0)
            all_q = np.arange(n, dtype=np.int64)
            if not at_r:
                nk = x.n_at(k_fix)
                ni = nk.astype(np.int64)
                span = np.where(ni == 1, 1.0 / np.log2(x.gs + 2.0), dc[x.gs + ni] - dc[x.gs]) / x.t
                dcg_j = (gain_j * span).sum(axis=1)
                fd = x.cx(np.where(x.judged, 0.0, span))
                unj = x.e1(fd, up + 1) if best else fd[:, d][q] - x.e1(fd, up)
                idcg = _ideal(dc, big, li, ld, q, jdenom - rj, k_fix)
                idcg0 = _ideal(dc, big, li, ld, all_q, np.zeros(n), k_fix)
                j0 = dcg_j / np.where(idcg0 > 0, idcg0, 1.0)
                out[key] = finish(j0, (dcg_j[q] + big * unj) / idcg)
            else:  # nDCG@R: DCG cut at R = |judged relevant| + J
                a_gain = x.gat(x.cx(gain_j), x.ge) - x.gat(x.cx(gain_j), x.gs)
                disc = 1.0 / np.log2(np.arange(d, dtype=np.float64) + 2.0)
                djx = x.cx(np.where(x.fin, a_gain / x.t, 0.0) * disc)
                full = np.where(x.fin, (dc[x.ge] - dc[x.gs]) / x.t, 0.0)
                fdf = x.cx(np.where(x.judged, 0.0, full))
                kk = jdenom.astype(np.int64)
                n_in, w_s, frac, gsk = x.straddle(q, kk)
                part = np.where(frac > 0, (dc[kk] - dc[gsk]) / x.e1(x.tP, kk), 0.0)
                if best:
                    inside = np.where(idx <= n_in, x.e1(fdf, up + 1), x.e1(fdf, gsk))
                    cnt = np.clip(idx - n_in, 0.0, w_s)
                else:
                    inside = np.where(n_in >= idx, x.e1(fdf, gsk) - x.e1(fdf, up), 0.0)
                    cnt = np.maximum(0.0, n_in + w_s - np.maximum(i0, n_in))
                dcg = x.e1(djx, kk) + big * (inside + cnt * part)
                idcg = _ideal(dc, big, li, ld, q, jdenom - rj, d)
                idcg0 = _ideal(dc, big, li, ld, all_q, np.zeros(n), d)
                j0 = djx[all_q, safe_rj.astype(np.int64)] / np.where(idcg0 > 0, idcg0, 1.0)
                out[key] = finish(j0, dcg / idcg)
    return out, x.RJ.astype(np.int64), x.m


def _worst_single(x: _Dense) -> tuple[I64, F64, F64, npt.NDArray[np.bool_]]:
    """Queries with no judged relevant doc but unjudged docs, and the group (g, t, finite) of
    their lowest-scored unjudged doc (the worst labelling of a monotone measure)."""
    q = x.uq
    if q.size == 0:
        z = np.zeros(0)
        return np.zeros(0, np.int64), z, z, np.zeros(0, bool)
    last = np.ones(q.size, dtype=bool)
    last[:-1] = q[1:] != q[:-1]
    sel = np.flatnonzero(last)
    sel = sel[x.RJ[q[sel]] == 0]
    qq, pp = q[sel], x.up[sel]
    return qq, x.gs[qq, pp].astype(np.float64), x.t[qq, pp], x.fin[qq, pp]


def _all_relevant(x: _Dense, measures: tuple[Measure, ...]) -> dict[str, F64]:
    """C@K, P@K, RR, MdR, MnR with every unjudged doc relevant (``upper``): their best value.

    The first group holding a relevant doc decides C@K, RR and the first relevant rank (the
    closed forms of :mod:`fireval.metrics.ties` with ``r`` = its judged relevant plus unjudged
    docs); P@K sums ``r n / t`` over the groups.
    """
    n, d = x.n, x.d
    rall = x.a_grp + (x.w_this - x.w_prev)  # relevant docs of each rank's group
    hit = x.relj | ~x.judged
    has = hit.any(axis=1)
    rows = np.arange(n)
    fp = np.argmax(hit, axis=1)
    g, t, r, fin = x.gs[rows, fp].astype(np.float64), x.t[rows, fp], rall[rows, fp], x.fin[rows, fp]
    r = np.where(has, r, 1.0)
    out: dict[str, F64] = {}
    dens: F64 | None = None
    for m in measures:
        key = str(m)
        if m.name == "C":
            nn = np.clip(float(m.k) - g, 0.0, t)  # type: ignore[arg-type]
            val = np.where(fin, 1.0 - prob_none(t, r, nn), 0.0)
        elif m.name == "P":
            if dens is None:
                dens = x.cx(np.where(x.fin, rall / x.t, 0.0))
            k = int(m.k)  # type: ignore[arg-type]
            val = dens[:, min(k, d)] / float(k)
        elif m.name == "RR":
            val = np.where(fin, expected_rr(g.astype(np.int64), t.astype(np.int64), r), 0.0)
        elif m.name in ("MnR", "MdR"):
            val = g + (t + 1.0) / (r + 1.0)
        else:
            continue
        out[key] = np.where(has, val, np.nan)
    return out


def bound_chunk(
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
    """Per-query ``unjudged`` (``worst`` or ``best``) values for queries ``start : start + chunk_rows``.

    The same arguments and result as :func:`fireval.metrics.kernel.evaluate_chunk`; ``nrel``
    holds the *judged* relevant docs per query (a query with none is optional in a mean).
    """
    side = unjudged
    stop = min(n_queries, start + chunk_rows)
    block = run.block(direction, start, stop)
    lo, hi = indptr[start], indptr[stop]
    ip = np.asarray(indptr[start : stop + 1] - lo, np.int64)
    ix = np.asarray(indices[lo:hi], np.int64)  # the CSR arrays may be int32 / float32
    gr = np.asarray(grades[lo:hi], np.float64)
    n = stop - start
    kernel_ms = tuple(m for m in measures if not _exact_route(m))
    # the kernel's lower bound: the worst of the monotone measures, and the tie report (of the
    # judged relevant docs) for both sides; it only visits the judged pairs
    e, rg, rt = make_entries(
        block, ip, ix, gr, unjudged="lower", ties=ties, tie_rank=tie_rank, max_grade=max_grade
    )
    res = compute_chunk(e, rg, rt, n, n_docs, kernel_ms if side == WORST else (), straddle_ks=straddle_ks)
    del e
    x = _Dense(block, ip, ix, gr, tie_rank)
    exact, rj, _ = exact_values(
        block, ip, ix, gr, measures, side=side, max_grade=max_grade, tie_rank=tie_rank, dense=x
    )
    values = {**res.values, **exact}
    if side == BEST:
        values.update(_all_relevant(x, kernel_ms))
    if side == WORST and any(m.name in ("C", "P", "RR", "MnR", "MdR") for m in kernel_ms):
        qq, g, t, fin = _worst_single(x)
        for m in kernel_ms:
            key = str(m)
            if not qq.size or key not in values:
                continue
            if m.name in ("C", "P"):
                k = float(m.k)  # type: ignore[arg-type]
                v = np.where(fin, np.clip(k - g, 0.0, t) / t, 0.0)
                v = v / k if m.name == "P" else v
            elif m.name == "RR":
                v = np.where(fin, harmonic_diff(g, t) / t, 0.0)
            else:  # MnR, MdR: first relevant rank
                v = g + (t + 1.0) / 2.0
            values[key] = values[key].copy()
            values[key][qq] = v
    return start, stop, ChunkResult(values, rj, res.tie_counts, res.straddle)


def aggregate_bound(m: Measure, vals: F64, required: npt.NDArray[np.bool_], side: str) -> tuple[float, int]:
    """Exact ``side`` bound of the mean (or, for MdR, the median) over queries, and its query count.

    ``required`` queries have a judged relevant doc and are in every mean; the others with a
    value are *optional* (in the mean only when a labelling gives them a relevant doc). For a
    fixed number ``k`` of optional queries the ``k`` most extreme values are best; ``k`` is
    optimised over ``0 .. #optional``.
    """
    v = np.asarray(vals, dtype=np.float64)
    ok = ~np.isnan(v)
    need = np.asarray(required, dtype=bool)
    req = v[ok & need]
    opt = v[ok & ~need]
    sign = 1.0 if maximizes(m, side) else -1.0
    a = sign * req
    b = np.sort(sign * opt)[::-1]  # most favourable first
    if a.size + b.size == 0:
        return float("nan"), 0
    ks = np.arange(b.size + 1)
    if m.aggregate == "median":
        cand = _medians(np.sort(a), b, ks)
    else:
        sums = a.sum() + np.concatenate([[0.0], np.cumsum(b)])
        with np.errstate(invalid="ignore", divide="ignore"):
            cand = sums / (a.size + ks)
    if a.size == 0:
        cand[0] = np.nan
    best = int(np.nanargmax(cand))
    return float(sign * cand[best]) + 0.0, int(a.size + best)  # + 0.0: no -0.0 from the sign flip


def _medians(a: F64, b: F64, ks: I64) -> F64:
    """Median of ``a`` (sorted) together with the first ``k`` of ``b`` (descending), for every k.

    The r-th smallest of the union is found by bisection over the merged sorted values, all
    ``k`` at once: count_k(x) = #a <= x + #(first k of b) <= x.
    """
    bs = b[::-1]  # ascending; the first k of b are its k largest = the last k of bs
    merged = np.sort(np.concatenate([a, b]))
    ca = np.searchsorted(a, merged, side="right")
    cb_gt = bs.size - np.searchsorted(bs, merged, side="right")  # values of b above x

    def order_stat(r: I64) -> F64:
        lo = np.zeros(ks.size, np.int64)
        hi = np.full(ks.size, merged.size - 1, np.int64)
        while True:
            active = lo < hi
            if not active.any():
                return merged[lo]
            mid = (lo + hi) // 2
            cnt = ca[mid] + np.maximum(0, ks - cb_gt[mid])
            big = cnt >= r + 1
            hi = np.where(active & big, mid, hi)
            lo = np.where(active & ~big, mid + 1, lo)

    total = a.size + ks
    r1, r2 = np.maximum(total - 1, 0) // 2, total // 2
    out = (order_stat(r1) + order_stat(r2)) / 2.0
    return np.where(total > 0, out, np.nan)
