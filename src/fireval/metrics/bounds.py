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
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.run import Run
from fireval.metrics.entries import make_entries
from fireval.metrics.kernel import ChunkResult, compute_chunk, expected_rr
from fireval.metrics.measures import CUT_R, Measure
from fireval.metrics.ties import harmonic_diff, log_comb, prob_none

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


def _exact_route(m: Measure) -> bool:
    """Measures this module computes (the rest come from the kernel's lower/upper values)."""
    if m.name in ("Recall", "R-Prec", "AP", "AP_hits", "nDCG", "nDCG_exp", "judged"):
        return True
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


def _at(a: npt.NDArray[np.generic], rows: I64, cols: I64) -> F64:
    """``a[rows, cols]`` as float64 (a flat take)."""
    return np.asarray(a.reshape(-1).take(rows * a.shape[1] + cols), dtype=np.float64)


def _pad(a: npt.NDArray[np.generic]) -> F64:
    """``a`` (n x d) with a zero column d ("past the last doc")."""
    return np.concatenate([np.asarray(a, np.float64), np.zeros((a.shape[0], 1))], axis=1)


class _AP:
    """AP's tie-group terms ``(r/t)[(c+1) S0 + (r-1)/(t-1) S1]`` for the positions ``nk`` of each
    group inside the cutoff, as prefix sums over the ranks (values at group starts) for the
    judged-only labelling (``c_t0``, ``c_l0`` = its ``c`` coefficient) and the all-relevant one
    (``c_t1``, ``c_l1``), and per unjudged entry the term of its group under the best (prefix up
    to the entry) and worst (suffix from the entry) labelling."""

    def __init__(self, x: _Dense, nk: F64) -> None:
        self.x = x
        gf = x.gs.astype(np.float64)
        s0 = harmonic_diff(gf, nk)
        s1 = nk - (gf + 1.0) * s0
        tt = x.t
        pair = np.where(tt > 1, s1 / (tt * np.maximum(tt - 1.0, 1.0)), 0.0)
        a, w = x.a_grp, x.w_this - x.w_prev
        st = x.new
        self.c_t0 = x.cx(np.where(st, self.term(a, x.cj, s0, pair, tt), 0.0))
        self.c_t1 = x.cx(np.where(st, self.term(a + w, x.cj + x.w_prev, s0, pair, tt), 0.0))
        self.c_l0 = x.cx(np.where(st, a * s0 / tt, 0.0))
        self.c_l1 = x.cx(np.where(st, (a + w) * s0 / tt, 0.0))
        self.gs_e, self.ge_e = x.e0(x.gs).astype(np.int64), x.e0(x.ge).astype(np.int64)
        a_e, cj_e, wp_e = x.e0(x.a_grp), x.e0(x.cj), x.e0(x.w_prev)
        s0_e, pair_e, t_e = x.e0(s0), x.e0(pair), x.e0(tt)
        self.b_best = self.term(a_e + x.idx - wp_e, cj_e + wp_e, s0_e, pair_e, t_e)
        self.b_worst = self.term(a_e + x.e0(x.w_this) - (x.idx - 1.0), cj_e, s0_e, pair_e, t_e)

    @staticmethod
    def term(r: F64, c: F64, s0: F64, pair: F64, t: F64) -> F64:
        return r * (c + 1.0) * s0 / t + r * (r - 1.0) * pair

    def whole(self, hi: I64, best: bool) -> F64:
        """Per entry: the sum of the terms of the groups starting before ``hi`` (a group
        boundary at or after the entry's group), prefix (``best``) or suffix labelling."""
        x, gs, ge = self.x, self.gs_e, self.ge_e
        if best:
            j = x.idx
            return (
                x.e1(self.c_t1, gs)
                + self.b_best
                + (x.e1(self.c_t0, hi) - x.e1(self.c_t0, ge))
                + j * (x.e1(self.c_l0, hi) - x.e1(self.c_l0, ge))
            )
        i0 = x.idx - 1.0
        return (
            x.e1(self.c_t0, gs)
            + self.b_worst
            + (x.e1(self.c_t1, hi) - x.e1(self.c_t1, ge))
            - i0 * (x.e1(self.c_l1, hi) - x.e1(self.c_l1, ge))
        )

    def cut_at_r(self, qs: I64, kk: I64, idx: F64 | None, best: bool) -> F64:
        """AP numerator cut at rank ``kk`` (the terms hold full groups: ``nk = t``).

        ``idx is None``: judged labels only, for queries ``qs``. Otherwise per entry (``qs`` =
        the entries' queries): the prefix of ``idx`` unjudged docs (``best``) or the suffix
        from unjudged doc ``idx``. The groups wholly above the group ``S`` at 0-based position
        ``kk`` add their full terms; ``S`` adds its term with its ``kk - g`` slots inside.
        """
        x = self.x
        g_s = _at(x.gsP, qs, kk).astype(np.int64)
        n_s = np.where(_at(x.finP, qs, kk) > 0, kk - g_s, 0).astype(np.float64)
        t_s = _at(x.tP, qs, kk)
        a_s = _at(_pad(x.a_grp), qs, kk)
        cj_s = _at(_pad(x.cj), qs, kk)
        wp_s = _at(_pad(x.w_prev), qs, kk)
        wt_s = _at(_pad(x.w_this), qs, kk)
        s0_s = harmonic_diff(g_s.astype(np.float64), n_s)
        s1_s = n_s - (g_s + 1.0) * s0_s
        pair_s = np.where(t_s > 1, s1_s / (t_s * np.maximum(t_s - 1.0, 1.0)), 0.0)
        if idx is None:
            return _at(self.c_t0, qs, g_s) + self.term(a_s, cj_s, s0_s, pair_s, t_s)
        gs, ge = self.gs_e, self.ge_e
        before, same = g_s < gs, g_s == gs
        lo, hi = ge, np.maximum(g_s, ge)
        full_b = np.where(ge <= g_s, self.b_best if best else self.b_worst, 0.0)
        if best:
            head = x.e1(self.c_t1, np.minimum(gs, g_s))
            tail = (x.e1(self.c_t0, hi) - x.e1(self.c_t0, lo)) + idx * (
                x.e1(self.c_l0, hi) - x.e1(self.c_l0, lo)
            )
            r_s = np.where(before, a_s + wt_s - wp_s, np.where(same, a_s + idx - wp_s, a_s))
            c_s = np.where(before | same, cj_s + wp_s, cj_s + idx)
        else:
            i0 = idx - 1.0
            head = x.e1(self.c_t0, np.minimum(gs, g_s))
            tail = (x.e1(self.c_t1, hi) - x.e1(self.c_t1, lo)) - i0 * (
                x.e1(self.c_l1, hi) - x.e1(self.c_l1, lo)
            )
            r_s = np.where(before, a_s, np.where(same, a_s + wt_s - i0, a_s + wt_s - wp_s))
            c_s = np.where(before | same, cj_s, cj_s + wp_s - i0)
        return head + full_b + tail + self.term(r_s, c_s, s0_s, pair_s, t_s)


def _ap_hits_bound(x: _Dense, ap: _AP, k: int, best: bool) -> F64:
    """Per-query ``best`` (max) or worst (min) of AP_hits@K over the labellings (module docstring).

    Candidates per query: ``m1`` of the ``u_in`` unjudged docs in the groups wholly inside the
    top K relevant (the first ``m1`` for best, the last for worst; ``ap`` has full groups) and
    ``s = 0 .. w_S`` of the unjudged docs of the group ``S`` straddling K. With ``h`` relevant
    docs of ``S`` in the top K (hypergeometric), spread uniformly over its ``n`` slots there,
    the value is ``E_h[(A + B_h) / (c + h)]`` (0 when ``c + h = 0``): for the queries with a
    straddling group, a batched matrix product ``phi[m1, h] @ P[h, s]``.
    """
    n, d = x.n, x.d
    kc = min(k, d)
    rows = np.arange(n, dtype=np.int64)
    nfin = x.fin.sum(axis=1)
    gk = x.gsP[:, kc]
    strad = (kc < nfin) & (gk < kc)
    bnd = np.minimum(gk, nfin).astype(np.int64)
    u_in = x.CU[rows, bnd]
    rj_in = x.CA[rows, bnd]
    w_s = np.where(strad, _pad(x.w_this - x.w_prev)[:, kc], 0.0)
    u_out = x.m - u_in - w_s  # unjudged docs below the top K or unretrieved: only make it defined
    # rows (query, m1, A, c): m1 = 0 for every query, then one per unjudged doc inside
    q_e = x.uq
    sel = x.idx <= u_in[q_e]
    nums = ap.whole(bnd[q_e], best)[sel]
    m1_e = x.idx[sel] if best else u_in[q_e[sel]] - x.idx[sel] + 1.0
    rq = np.concatenate([rows, q_e[sel]])
    rm = np.concatenate([np.zeros(n), m1_e])
    ra = np.concatenate([ap.c_t0[rows, bnd], nums])
    rc = rj_in[rq] + rm
    val = np.where(rc > 0, ra / np.where(rc > 0, rc, 1.0), 0.0)
    val = np.where((x.RJ[rq] > 0) | (rm > 0) | (u_out[rq] > 0), val, np.nan)
    plain = ~strad[rq]
    order = np.argsort(rq[plain], kind="stable")
    out = _reduce(np.full(n, np.nan), val[plain][order], rq[plain][order], n, maximize=best)
    sq = np.flatnonzero(strad)
    if sq.size == 0:
        return out
    # queries with a straddling group: value[m1, s] = sum_h phi[m1, h] P[h, s]
    pos = np.full(n, -1, np.int64)
    pos[sq] = np.arange(sq.size)
    keep = strad[rq]
    sr, sm, sa, sc = pos[rq[keep]], rm[keep].astype(np.int64), ra[keep], rc[keep]
    g_s = gk[sq].astype(np.float64)
    n_s = (kc - gk[sq]).astype(np.float64)
    t_s, a_s, w_q = x.tP[sq, kc], _pad(x.a_grp)[sq, kc], w_s[sq]
    s0 = harmonic_diff(g_s, n_s)
    s1 = n_s - (g_s + 1.0) * s0
    u_q = u_in[sq]
    cells = (u_q + 1.0) * (w_q + 1.0) * (n_s + 1.0)
    ends = np.cumsum(cells)
    lo = 0
    while lo < sq.size:
        base = float(ends[lo - 1]) if lo else 0.0
        hi = max(lo + 1, int(np.searchsorted(ends, base + CHUNK_ELEMS_BOUNDS, side="right")))
        b = np.arange(lo, hi)
        um, wm, hm = int(u_q[b].max()) + 1, int(w_q[b].max()) + 1, int(n_s[b].max()) + 1
        h = np.arange(hm, dtype=np.float64)
        sv = np.arange(wm, dtype=np.float64)
        # P[b, h, s]: hypergeometric, r = a_S + s relevant of t, n slots inside the top K
        tt, nn = t_s[b][:, None, None], n_s[b][:, None, None]
        rr = a_s[b][:, None, None] + sv[None, None, :]
        hh = h[None, :, None]
        ok = (sv[None, None, :] <= w_q[b][:, None, None]) & (hh <= rr) & (hh <= nn) & (nn - hh <= tt - rr)
        r0, h0, k0 = np.where(ok, rr, 0.0), np.where(ok, hh, 0.0), np.where(ok, nn - hh, 0.0)
        lp = log_comb(r0, h0) + log_comb(tt - r0, k0) - log_comb(tt, nn)
        prob = np.where(ok, np.exp(lp), 0.0)
        # phi[b, m1, h] = (A + B_h) / (c + h)
        in_b = (sr >= lo) & (sr < hi)
        phi_a = np.zeros((hi - lo, um))
        phi_c = np.zeros((hi - lo, um))
        phi_a[sr[in_b] - lo, sm[in_b]] = sa[in_b]
        phi_c[sr[in_b] - lo, sm[in_b]] = sc[in_b]
        ca, cc = phi_a[:, :, None], phi_c[:, :, None]
        n3 = n_s[b][:, None, None]
        h3 = h[None, None, :]
        frac = np.where(n3 > 1, (h3 - 1.0) / np.maximum(n3 - 1.0, 1.0), 0.0)
        bh = (h3 / n3) * ((cc + 1.0) * s0[b][:, None, None] + frac * s1[b][:, None, None])
        den = cc + h3
        phi = np.where(den > 0, (ca + bh) / np.where(den > 0, den, 1.0), 0.0)
        v = np.matmul(phi, prob)  # (batch, m1, s)
        valid = (np.arange(um)[None, :, None] <= u_q[b][:, None, None]) & (
            sv[None, None, :] <= w_q[b][:, None, None]
        )
        undefined = (x.RJ[sq[b]] == 0) & (u_out[sq[b]] == 0)
        valid[:, 0, 0] &= ~undefined
        ext = (np.fmax if best else np.fmin).reduce(np.where(valid, v, np.nan).reshape(hi - lo, -1), axis=1)
        out[sq[b]] = ext
        lo = hi
    return out


def _reduce(j0: F64, cand: F64, q: I64, n: int, maximize: bool) -> F64:
    """Per query: the extreme of ``j0`` (NaN = not a candidate) and the entry candidates ``cand``."""
    out = j0.astype(np.float64).copy()
    if q.size == 0:
        return out
    first = np.ones(q.size, dtype=bool)
    first[1:] = q[1:] != q[:-1]
    starts = np.flatnonzero(first)
    red = np.fmax if maximize else np.fmin  # NaN = not a candidate
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
