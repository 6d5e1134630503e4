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
  ``u_m`` relevant. judged@K does not depend on the
  labelling. AP@R and AP_hits@K have no exact bound here (AP_hits is not monotone under the
  exchange: one more hit at rank K can lower it); :data:`UNSUPPORTED` lists them.

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
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.run import Run
from fireval.metrics.kernel import ChunkResult, compute_chunk, expected_rr, make_entries
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
#: score-block elements per chunk (~45 float64 values per element live at once: ~50 MB per chunk)
CHUNK_ELEMS_BOUNDS = 1 << 17


def unsupported(m: Measure) -> bool:
    """Measures without an exact bound here: AP@R and AP_hits@K."""
    return m.name == "AP_hits" or (m.name == "AP" and m.k == CUT_R)


def _exact_route(m: Measure) -> bool:
    """Measures this module computes (the rest come from the kernel's lower/upper values)."""
    if m.name in ("Recall", "R-Prec", "AP", "nDCG", "nDCG_exp", "judged"):
        return not unsupported(m)
    return m.name == "P" and m.k == CUT_R


def maximizes(m: Measure, side: str) -> bool:
    """Whether ``side`` of ``m`` is its largest value (best of a score, worst of a rank)."""
    return (side == BEST) != m.lower_is_better


class _Dense:
    """One chunk's docs sorted by score per query, with tie-group and label prefix sums."""

    def __init__(
        self,
        block: npt.NDArray[np.floating],
        indptr: I64,
        indices: I64,
        grades: F64,
        tie_rank: I64 | None,
    ) -> None:
        s = np.asarray(block, dtype=np.float64)
        n, d = s.shape
        self.n, self.d = n, d
        qj = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        judged = np.zeros((n, d), dtype=bool)
        judged[qj, indices] = True
        grade = np.zeros((n, d))
        grade[qj, indices] = grades
        if tie_rank is None:
            order = np.argsort(-s, axis=1, kind="stable")
        else:
            order = np.lexsort((np.broadcast_to(tie_rank, (n, d)), -s), axis=1)
        ss = np.take_along_axis(s, order, 1)
        self.judged = np.take_along_axis(judged, order, 1)
        self.grade = np.take_along_axis(grade, order, 1)
        del judged, grade, order
        self.fin = np.isfinite(ss)
        pos = np.arange(d, dtype=np.int64)
        new = np.ones((n, d), dtype=bool)
        if tie_rank is None:
            new[:, 1:] = ss[:, 1:] != ss[:, :-1]
        self.new = new
        self.gs = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
        end = np.ones((n, d), dtype=bool)
        end[:, :-1] = new[:, 1:]
        self.ge = np.flip(np.minimum.accumulate(np.flip(np.where(end, pos + 1, d), 1), axis=1), 1)
        self.t = (self.ge - self.gs).astype(np.float64)
        unj = ~self.judged
        self.relj = self.judged & (self.grade > 0)
        self.CA = self.cx(self.relj)  # judged relevant docs before each rank
        self.CU = self.cx(unj)  # unjudged docs before each rank
        self.CUf = self.cx(unj & self.fin)
        self.RJ = self.CA[:, d]
        self.m = self.CU[:, d]
        self.a_grp = self.gat(self.CA, self.ge) - self.gat(self.CA, self.gs)
        self.w_prev = self.gat(self.CU, self.gs)
        self.w_this = self.gat(self.CU, self.ge)
        self.cj = self.gat(self.CA, self.gs)
        # the unjudged docs as entries (query, rank), by query then rank; idx = 1-based order
        self.uq, self.up = np.nonzero(unj)
        self.b1 = self.uq * (d + 1)
        self.b0 = self.uq * d + self.up
        self.idx = self.e1(self.CU, self.up) + 1.0
        self.e_rj = self.RJ[self.uq]
        self.e_m = self.m[self.uq]
        # padded per-rank arrays (column d = "past the last doc") for cutoffs K = R
        self.gsP = np.concatenate([self.gs, np.full((n, 1), d, np.int64)], axis=1)
        self.geP = np.concatenate([self.ge, np.full((n, 1), d, np.int64)], axis=1)
        self.tP = np.concatenate([self.t, np.ones((n, 1))], axis=1)
        self.finP = np.concatenate([self.fin, np.zeros((n, 1), bool)], axis=1)

    def e1(self, a: npt.NDArray[np.generic], cols: I64) -> F64:
        """``a[uq, cols]`` for an n x (d+1) array ``a`` (a flat take: faster than 2-D indexing)."""
        return np.asarray(a.reshape(-1).take(self.b1 + cols), dtype=np.float64)

    def e0(self, a: npt.NDArray[np.generic]) -> F64:
        """``a[uq, up]`` for an n x d array ``a``: the value at each unjudged entry."""
        return np.asarray(a.reshape(-1).take(self.b0), dtype=np.float64)

    def cx(self, a: npt.NDArray[np.generic]) -> F64:
        """Exclusive prefix sums along the ranks: out[:, p] = sum of a[:, :p] (n x (d+1))."""
        out = np.zeros((self.n, self.d + 1))
        np.cumsum(a, axis=1, dtype=np.float64, out=out[:, 1:])
        return out

    @staticmethod
    def gat(a: npt.NDArray[np.generic], cols: I64) -> F64:
        return np.take_along_axis(a, cols, 1).astype(np.float64)

    def n_at(self, k: int) -> F64:
        """Slots of each rank's group inside the top k: clip(k - g, 0, t), 0 when unretrieved."""
        return np.where(self.fin, np.clip(k - self.gs, 0, self.t), 0.0)

    def straddle(self, q: I64, k: I64) -> tuple[F64, F64, F64, I64]:
        """For cutoffs ``k`` of queries ``q``: unjudged docs wholly inside the top k (N_in), the
        unjudged docs of the group straddling k (w_s), the share of that group inside (frac),
        and the group's start."""
        assert q is self.uq  # entries only: the flat takes below use their row offsets
        gsk = self.e1(self.gsP, k).astype(np.int64)
        n_in = self.e1(self.CUf, gsk)
        w_s = self.e1(self.CU, self.e1(self.geP, k).astype(np.int64)) - self.e1(self.CU, gsk)
        frac = np.where(self.e1(self.finP, k) > 0, (k - gsk) / self.e1(self.tP, k), 0.0)
        return n_in, w_s, frac, gsk


def _reduce(j0: F64, cand: F64, q: I64, n: int, maximize: bool) -> F64:
    """Per query: the extreme of ``j0`` (NaN = not a candidate) and the entry candidates ``cand``."""
    out = j0.astype(np.float64).copy()
    if q.size == 0:
        return out
    first = np.ones(q.size, dtype=bool)
    first[1:] = q[1:] != q[:-1]
    starts = np.flatnonzero(first)
    red = np.maximum if maximize else np.minimum
    ext = red.reduceat(cand, starts)
    qs = q[starts]
    out[qs] = (np.fmax if maximize else np.fmin)(out[qs], ext)
    return out


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
        elif name == "AP":
            nk = x.n_at(k_fix)
            gf = x.gs.astype(np.float64)
            s0 = harmonic_diff(gf, nk)
            s1 = nk - (gf + 1.0) * s0
            tt = x.t
            pair = np.where(tt > 1, s1 / (tt * np.maximum(tt - 1.0, 1.0)), 0.0)

            def term(r: F64, c: F64, s0: F64 = s0, pair: F64 = pair, tt: F64 = tt) -> F64:
                return r * (c + 1.0) * s0 / tt + r * (r - 1.0) * pair

            a, w = x.a_grp, x.w_this - x.w_prev
            at_start = x.new
            c_t0 = x.cx(np.where(at_start, term(a, x.cj), 0.0))
            c_t1 = x.cx(np.where(at_start, term(a + w, x.cj + x.w_prev), 0.0))
            c_l0 = x.cx(np.where(at_start, a * s0 / tt, 0.0))
            c_l1 = x.cx(np.where(at_start, (a + w) * s0 / tt, 0.0))
            gs_e, ge_e = x.e0(x.gs).astype(np.int64), x.e0(x.ge).astype(np.int64)
            a_e, cj_e, wp_e = x.e0(x.a_grp), x.e0(x.cj), x.e0(x.w_prev)
            s0_e, pair_e, t_e = x.e0(s0), x.e0(pair), x.e0(tt)
            if best:
                r_b = a_e + idx - wp_e
                b_term = term(r_b, cj_e + wp_e, s0_e, pair_e, t_e)
                num = (
                    x.e1(c_t1, gs_e)
                    + b_term
                    + (c_t0[:, d][q] - x.e1(c_t0, ge_e))
                    + idx * (c_l0[:, d][q] - x.e1(c_l0, ge_e))
                )
            else:
                r_b = a_e + x.e0(x.w_this) - i0
                b_term = term(r_b, cj_e, s0_e, pair_e, t_e)
                num = (
                    x.e1(c_t0, gs_e)
                    + b_term
                    + (c_t1[:, d][q] - x.e1(c_t1, ge_e))
                    - i0 * (c_l1[:, d][q] - x.e1(c_l1, ge_e))
                )
            out[key] = finish(c_t0[:, d] / safe_rj, num / jdenom)
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
    kernel_ms = tuple(m for m in measures if not _exact_route(m) and not unsupported(m))
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
