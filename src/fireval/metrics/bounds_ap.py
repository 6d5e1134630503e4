"""The sorted per-chunk arrays of the exact bounds and the AP family's pieces.

:class:`_Dense`: one chunk's docs sorted by score per query (``ties="docid"``: then by doc id,
every doc its own group), with each rank's tie group (start, end, size) and prefix sums of
judged relevant and of unjudged docs per rank, so every prefix or suffix labelling of the
unjudged docs is read off cumulative sums (no per-query loop). :class:`_AP`: the AP term
``(r/t)[(c+1) S0 + (r-1)/(t-1) S1]`` per tie group as prefix sums of "fully relevant" terms,
one boundary-group term and suffix sums of "judged only" terms, for AP, AP@K and AP@R.
:func:`_reduce`: the per-query extreme over candidate values (NaN: not a candidate).
:func:`_ap_hits_bound`: FIRE's AP_hits@K, whose bounds are the extremes over the relevant
unjudged docs inside the top K and in the group straddling K, as one batched matrix product.

The derivations are in :mod:`fireval.metrics.bounds` (which uses and re-exports these names).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.metrics.ties import harmonic_diff, log_comb

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: score-block elements per chunk (~45 float64 values per element live at once: ~50 MB per chunk)
CHUNK_ELEMS_BOUNDS = 1 << 17


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
