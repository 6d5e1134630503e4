"""Measures for incomplete judgments: bpref, infAP and infNDCG, over the kernel's tie groups.

Each is a sum over the tie groups of a query (:class:`fireval.metrics.entries.Groups`: ``g`` docs
strictly above, ``t`` tied, ``r`` relevant, ``c`` relevant above, ``nonrel`` judged irrelevant),
divided by R = |relevant| (judged relevant docs, retrieved or not). ``a`` below is the number of
judged irrelevant docs strictly above a group (an exclusive cumulative sum of ``nonrel``, as ``c``
is of ``r``); N is the query's number of judged irrelevant docs (retrieved or not). A relevant
doc scored ``-inf`` (not retrieved) adds nothing but counts in R; an unjudged doc is outside the
judged sample (trec_eval's "not in the pool"): it takes a rank and nothing else. A *pooled* doc
(``Judgments.pooled``: in the pool but not judged, TREC qrels ``rel < 0``, trec_eval's
``RELVALUE_UNJUDGED``) is unjudged for every measure but infAP (trec_eval's ``form_res_rels.c``
counts it in no relevance level, ``-J`` drops it, and only ``m_infap.c`` reads it); ``pooled``
counts them per group and ``p`` above a doc (the driver marks them only for infAP under ``lower``).

* **bpref** (Buckley & Voorhees 2004; trec_eval ``m_bpref.c``): for each retrieved relevant doc,
  ``1 - min(n, R) / min(N, R)`` with ``n`` the judged irrelevant docs ranked above it (1 when
  N = 0), summed and divided by R. Unjudged docs play no part.
* **infAP** (Yilmaz & Aslam 2006; trec_eval ``m_infap.c``): for the relevant doc at rank k with
  ``c`` relevant and ``n`` judged irrelevant docs above it,
  ``(1 + (c + n) (c + eps) / (c + n + 2 eps)) / k`` with ``eps = 1e-5`` (trec_eval's
  ``INFAP_EPSILON``; k = 1 gives 1), summed and divided by R; with ``p`` pooled docs above it,
  trec_eval adds ``p (c + eps) / ((c + n + 2 eps) k)`` (the precision estimated from the judged
  docs extends to them). Without pooled marks (every source but TREC qrels) p = 0.
* **infNDCG** (Yilmaz, Kanoulas & Aslam 2008): estimated DCG / estimated ideal DCG, where an
  unsampled pooled doc has the mean gain of the sampled docs of its stratum, a doc outside the pool
  gain 0, and the ideal ranking holds the estimated number of docs of each grade. Every judged pair
  of fireval's labels is sampled with probability 1 and every unjudged pair is outside the pool, so
  the estimates are the judged gains and grade counts themselves: infNDCG equals nDCG (with the same
  cutoffs, ``@K`` and ``@R``), and the kernel computes it with nDCG's sums. Pooled marks carry no
  sampling design (strata, rates), so infNDCG does not use them (``evaluate`` warns:
  :func:`infndcg_pooled_note`); trec_eval has no infNDCG.

Ties (``tie-aware``: the expected value over the orderings inside tie groups). bpref: for a
relevant doc in a group holding ``j`` judged irrelevant docs, the number of them above it is
uniform on ``0..j`` (its place among them is uniform), so ``E[min(a + X, R)]`` has a closed form.
infAP: ``(c + n)(c + eps)/(c + n + 2 eps) = c + eps - 2 eps (c + eps)/(c + n + 2 eps)``, so the
sum is AP's precision sum (``(c + 1)/k``, its tie closed form) plus ``eps E[1/k]`` minus a small
correction. For the correction, let the group hold ``m = r + j`` judged docs and ``u = t - m``
unjudged ones; the number ``W`` of judged group docs above a relevant doc is uniform on
``0..m-1``; given ``W = w`` the relevant ones among them have mean ``w (r-1)/(m-1)`` (and
``c + n = c0 + a + w`` does not depend on the split), and the unjudged docs above it, ``V``, are
independent of that split with ``P(V = v) = C(w+v, v) C(m-1-w+u-v, u-v) / C(m+u, u)``; the
correction is the exact sum over ``w`` and ``v`` (a ragged expansion in batches, no per-query
loop). The pooled term: with ``p0`` pooled docs above the group and ``pp`` of its ``u`` unjudged
docs pooled, given ``W = w`` and ``V = v`` the pooled docs above have mean ``p0 + v pp / u``,
independent of the relevant/irrelevant split, and ``k = g + 1 + w + v``: the same exact sum over
``w`` and ``v`` (:func:`_mean_pooled`). ``docid``, ``optimistic`` and ``pessimistic`` put every doc
at a strict rank (``t = 1``).
"""

from __future__ import annotations

import math
import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.metrics.ties import harmonic_diff, log_comb, span_batches

if TYPE_CHECKING:
    from collections.abc import Iterable

    from fireval.core.judgments import Judgments
    from fireval.metrics.entries import Entries, Groups
    from fireval.metrics.measures import Measure

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: the measures of this module
INCOMPLETE = frozenset({"bpref", "infAP", "infNDCG"})
#: trec_eval's INFAP_EPSILON (trec_eval.h)
INFAP_EPSILON = 0.00001
#: elements per batch of the ragged expansion of infAP's tie correction
_BATCH = 1 << 22


def _exclusive_within(q: I64, x: F64) -> F64:
    """Per element: the sum of ``x`` over the earlier elements of its query (``q`` sorted)."""
    if x.size == 0:
        return x.copy()
    cs = np.cumsum(x)
    first = np.ones(q.size, dtype=bool)
    first[1:] = q[1:] != q[:-1]
    base = np.maximum.accumulate(np.where(first, np.arange(q.size), 0))
    return cs - x - (cs[base] - x[base])


def _nonrel(gr: Groups) -> F64:
    if gr.nonrel is None:  # pragma: no cover - compute_chunk asks make_groups for it
        raise ValueError("make_groups(..., nonrel=True) is needed for bpref and infAP")
    return gr.nonrel


def bpref_sums(gr: Groups, e: Entries, n: int, nrel: F64) -> F64:
    """Per query: the sum over retrieved relevant docs of bpref's term (divide by R)."""
    nonrel = _nonrel(gr)
    a = _exclusive_within(gr.q, nonrel)
    big_n = np.bincount(e.q[e.judged & ~e.rel], minlength=n).astype(np.float64)
    sel = np.flatnonzero(gr.fin & (gr.r > 0))
    q = gr.q[sel]
    big_r = nrel[q]
    cap = np.minimum(big_n[q], big_r)
    a_s, j = a[sel], nonrel[sel]
    # E[min(a + X, R)], X uniform on 0..j: the first cnt values of a + X are below R
    cnt = np.clip(big_r - a_s, 0.0, j + 1.0)
    expected = (cnt * a_s + cnt * (cnt - 1.0) / 2.0 + (j + 1.0 - cnt) * big_r) / (j + 1.0)
    term = np.where(cap > 0, 1.0 - expected / np.where(cap > 0, cap, 1.0), 1.0)
    return np.bincount(q, weights=gr.r[sel] * term, minlength=n).astype(np.float64)


def infap_sums(gr: Groups, n: int, ap_sums: F64) -> F64:
    """Per query: the sum over retrieved relevant docs of infAP's term (divide by R).

    ``ap_sums`` is AP's expected precision sum per query (the kernel's ``ap_terms`` over the full
    ranking); infAP adds ``eps E[1/k]`` and subtracts the correction of the module docstring.
    """
    nonrel = _nonrel(gr)
    a = _exclusive_within(gr.q, nonrel)
    sel = np.flatnonzero(gr.fin & (gr.r > 0))
    g = gr.g[sel].astype(np.float64)
    t = gr.t[sel].astype(np.float64)
    r = gr.r[sel]
    eps_part = INFAP_EPSILON * r * harmonic_diff(g, t) / t
    corr = r * _mean_correction_any(g, t, r, nonrel[sel], gr.c[sel], a[sel])
    terms = eps_part - corr
    if gr.pooled is not None:  # trec_eval's pooled-but-unjudged docs above (qrels rel < 0)
        pooled = gr.pooled
        p0 = _exclusive_within(gr.q, pooled)[sel]
        terms = terms + r * _mean_pooled_any(g, t, r, nonrel[sel], pooled[sel], gr.c[sel], a[sel], p0)
    return ap_sums + np.bincount(gr.q[sel], weights=terms, minlength=n).astype(np.float64)


def _mean_pooled_any(g: F64, t: F64, r: F64, j: F64, pp: F64, c0: F64, n0: F64, p0: F64) -> F64:
    """:func:`_mean_pooled`, by the compiled loops (:func:`_pooled_loops`) on large expansions
    when numba is there, as :func:`_mean_correction_any` decides, else in numpy."""
    m = r + j
    u = np.maximum(t - m, 0.0)
    size = float(np.sum(m * (u + 1.0)))
    warm = "numba" in sys.modules
    kernel = _loops_kernel(_pooled_loops) if size >= (COMPILED_MIN_WARM if warm else COMPILED_MIN) else None
    if kernel is None:
        return _mean_pooled(g, t, r, j, pp, c0, n0, p0)
    out = np.zeros(g.size)
    kernel(g, r, m, u, pp, c0, n0, p0, INFAP_EPSILON, out)
    return out


def _pooled_loops(
    g: F64, r: F64, m: F64, u: F64, pp: F64, c0: F64, n0: F64, p0: F64, eps: float, out: F64
) -> None:  # pragma: no cover - compiled by numba (_loops_kernel); tested through it
    """:func:`_mean_pooled` as plain loops (for numba): per group, per ``w``, per ``v``, with
    ``P(v | w)`` stepped by its ratio (in log space when ``C(m+u, u) > e^600``)."""
    for i in range(g.size):
        mi = int(m[i])
        ui = int(u[i])
        log_total = math.lgamma(mi + ui + 1.0) - math.lgamma(ui + 1.0) - math.lgamma(mi + 1.0)
        rho = (r[i] - 1.0) / (mi - 1.0) if mi > 1 else 0.0
        share = pp[i] / ui if ui > 0 else 0.0
        acc = 0.0
        for w in range(mi):
            b = (c0[i] + w * rho + eps) / (c0[i] + n0[i] + w + 2.0 * eps)
            top = mi - 1 - w + ui
            logp = math.lgamma(top + 1.0) - math.lgamma(ui + 1.0) - math.lgamma(top - ui + 1.0) - log_total
            s = 0.0
            if log_total < 600.0:  # every P(v | w) > 1e-261: step the probability itself
                p = math.exp(logp)
                for v in range(ui + 1):
                    s += p * (p0[i] + v * share) / (g[i] + 1.0 + w + v)
                    if v < ui:
                        p *= ((w + v + 1.0) * (ui - v)) / ((v + 1.0) * (top - v))
            else:
                for v in range(ui + 1):
                    s += math.exp(logp) * (p0[i] + v * share) / (g[i] + 1.0 + w + v)
                    if v < ui:
                        logp += math.log(((w + v + 1.0) * (ui - v)) / ((v + 1.0) * (top - v)))
            acc += b * s
        out[i] = acc / mi


def _mean_pooled(g: F64, t: F64, r: F64, j: F64, pp: F64, c0: F64, n0: F64, p0: F64) -> F64:
    """E[p (c + eps) / ((c + n + 2 eps) k)] for one relevant doc of each group, ``p`` the pooled
    docs above it (``p0`` above the group, ``pp`` in it): the pooled term of the module docstring.

    Given ``W = w`` judged and ``Z = z`` other group docs above it (the joint law of
    :func:`_mean_correction`, ``z`` in the place of ``v``), the pooled ones among the ``z`` have mean
    ``z pp / u`` (``u = t - m`` other docs) independently of the relevant ones among the ``w``.
    """
    m = r + j
    u = np.maximum(t - m, 0.0)
    out = np.zeros(g.size)
    single = (m == 1) & (u == 0)
    e = INFAP_EPSILON
    out[single] = (c0[single] + e) / (c0[single] + n0[single] + 2.0 * e) * p0[single] / (g[single] + 1.0)
    rest = np.flatnonzero(~single & ((p0 > 0) | (pp > 0)))
    span = (m[rest] * (u[rest] + 1.0)).astype(np.int64)
    for lo, hi in span_batches(span, _BATCH):
        i = rest[lo:hi]
        grp, w, y_mean, own, v, p = _expansion(g[i], r[i], m[i], u[i])
        b = (c0[i][grp] + y_mean + e) / (c0[i][grp] + n0[i][grp] + w + 2.0 * e)
        eg = grp[own]  # the group of each (group, w, v) element
        ue = u[i][eg]
        above = p0[i][eg] + np.where(ue > 0, v * pp[i][eg] / np.maximum(ue, 1.0), 0.0)
        val = b[own] * p * above / (g[i][eg] + 1.0 + w[own] + v)
        out[i] = np.bincount(eg, weights=val, minlength=i.size) / m[i]
    return out


def _corr_term(c0: F64, n0: F64, w: F64, y_mean: F64) -> F64:
    e = INFAP_EPSILON
    return 2.0 * e * (c0 + y_mean + e) / (c0 + n0 + w + 2.0 * e)


def _mean_correction(g: F64, t: F64, r: F64, j: F64, c0: F64, n0: F64) -> F64:
    """E[2 eps (c + eps) / ((c + n + 2 eps) k)] for one relevant doc of each group.

    Sum over ``w`` (judged group docs above, probability ``1/m``) of the ``w``-term times
    ``E[1/k | w] = sum_v P(v | w) / (g + 1 + w + v)``. ``P(0 | w)`` comes from binomials (one per
    ``(group, w)``), the other ``P(v | w)`` from the ratio ``P(v+1)/P(v) = (w+v+1)(u-v) /
    ((v+1)(m-1-w+u-v))`` by a cumulative sum of logarithms within each ``(group, w)`` run: one
    logarithm and one exponential per ``(group, w, v)``, in batches of at most :data:`_BATCH`.
    """
    m = r + j
    u = np.maximum(t - m, 0.0)
    out = np.zeros(g.size)
    single = (m == 1) & (u == 0)
    zero = np.zeros(int(single.sum()))
    out[single] = _corr_term(c0[single], n0[single], zero, zero) / (g[single] + 1.0)
    rest = np.flatnonzero(~single)
    if rest.size == 0:
        return out
    span = (m[rest] * (u[rest] + 1.0)).astype(np.int64)  # (w, v) pairs per group
    for lo, hi in span_batches(span, _BATCH):
        idx = rest[lo:hi]
        out[idx] = _correction_batch(g[idx], r[idx], m[idx], u[idx], c0[idx], n0[idx])
    return out


def _mean_correction_any(g: F64, t: F64, r: F64, j: F64, c0: F64, n0: F64) -> F64:
    """:func:`_mean_correction`, by the compiled loops when numba is there and the expansion is
    large (at least :data:`COMPILED_MIN` elements), else in numpy (the same sums)."""
    m = r + j
    u = np.maximum(t - m, 0.0)
    size = float(np.sum(m * (u + 1.0)))
    # numba's first use in a process costs ~1-3 s (import, cache load): worth it on large sums,
    # or once another kernel has loaded it (fireval.metrics.counting)
    warm = "numba" in sys.modules
    kernel = _loops_kernel() if size >= (COMPILED_MIN_WARM if warm else COMPILED_MIN) else None
    if kernel is None:
        return _mean_correction(g, t, r, j, c0, n0)
    out = np.zeros(g.size)
    kernel(g, r, m, u, c0, n0, INFAP_EPSILON, out)
    return out


def _correction_loops(
    g: F64, r: F64, m: F64, u: F64, c0: F64, n0: F64, eps: float, out: F64
) -> None:  # pragma: no cover - compiled by numba (_loops_kernel); tested through it
    """:func:`_mean_correction` as plain loops (for numba): per group, per ``w``, per ``v``."""
    for i in range(g.size):
        mi = int(m[i])
        ui = int(u[i])
        log_total = math.lgamma(mi + ui + 1.0) - math.lgamma(ui + 1.0) - math.lgamma(mi + 1.0)
        rho = (r[i] - 1.0) / (mi - 1.0) if mi > 1 else 0.0
        acc = 0.0
        for w in range(mi):
            a = 2.0 * eps * (c0[i] + w * rho + eps) / (c0[i] + n0[i] + w + 2.0 * eps)
            top = mi - 1 - w + ui
            logp = math.lgamma(top + 1.0) - math.lgamma(ui + 1.0) - math.lgamma(top - ui + 1.0) - log_total
            s = 0.0
            if log_total < 600.0:  # every P(v | w) >= 1 / C(m+u, u) > 1e-261: no underflow
                p = math.exp(logp)
                for v in range(ui + 1):
                    s += p / (g[i] + 1.0 + w + v)
                    if v < ui:
                        p *= ((w + v + 1.0) * (ui - v)) / ((v + 1.0) * (top - v))
            else:
                for v in range(ui + 1):
                    s += math.exp(logp) / (g[i] + 1.0 + w + v)
                    if v < ui:
                        logp += math.log(((w + v + 1.0) * (ui - v)) / ((v + 1.0) * (top - v)))
            acc += a * s
        out[i] = acc / mi


#: expansion size from which the compiled loops are used (when numba is installed), before and
#: after numba is loaded in the process
COMPILED_MIN = 1 << 22
COMPILED_MIN_WARM = 1 << 16
_LOOPS: dict[Any, Any] = {}
_LOOPS_LOCK = threading.Lock()


def _loops_kernel(fn: Any = None) -> Any:
    """``fn`` (default :func:`_correction_loops`) compiled by numba (imported on first use), or
    None without it."""
    from fireval.metrics.counting import njit_optional

    fn = _correction_loops if fn is None else fn
    with _LOOPS_LOCK:
        if fn not in _LOOPS:
            _LOOPS[fn] = njit_optional(fn)
        return _LOOPS[fn]


def _correction_batch(g: F64, r: F64, m: F64, u: F64, c0: F64, n0: F64) -> F64:
    """:func:`_mean_correction` for a batch of groups with ``t > 1`` (see there)."""
    grp, w, y_mean, own, v, p = _expansion(g, r, m, u)
    a = _corr_term(c0[grp], n0[grp], w, y_mean)
    val = a[own] * p / (g[grp][own] + 1.0 + w[own] + v)
    per_w = np.bincount(own, weights=val, minlength=grp.size)
    return np.bincount(grp, weights=per_w, minlength=g.size) / m


def _expansion(g: F64, r: F64, m: F64, u: F64) -> tuple[I64, F64, F64, I64, F64, F64]:
    """The ragged expansion of :func:`_mean_correction`: one row per (group, ``w``) (``grp``,
    ``w``, ``y_mean`` = mean relevant docs among the ``w``) and one element per (group, ``w``,
    ``v``) (``own`` = its row, ``v``, ``p`` = P(v | w))."""
    # one row per (group, w)
    mi = m.astype(np.int64)
    grp = np.repeat(np.arange(g.size), mi)
    w = (np.arange(grp.size) - np.repeat(np.cumsum(mi) - mi, mi)).astype(np.float64)
    mw, uw = m[grp], u[grp]
    y_mean = np.where(mw > 1, w * (r[grp] - 1.0) / np.maximum(mw - 1.0, 1.0), 0.0)
    logp0 = log_comb(mw - 1.0 - w + uw, uw) - log_comb(mw + uw, uw)
    # one element per (group, w, v), v = 0..u
    nv = (uw + 1.0).astype(np.int64)
    own = np.repeat(np.arange(grp.size), nv)
    first = np.repeat(np.cumsum(nv) - nv, nv)
    v = (np.arange(own.size) - first).astype(np.float64)
    wv, uv = w[own], uw[own]
    # log P(v+1)/P(v) for the step out of v (none out of v = u, the last of its run)
    last = v == uv
    step = np.log(
        np.where(last, 1.0, (wv + v + 1.0) * (uv - v))
        / np.where(last, 1.0, (v + 1.0) * (mw[own] - 1.0 - wv + uv - v))
    )
    cs = np.cumsum(step) - step  # exclusive cumulative sum ...
    logp = logp0[own] + cs - cs[first]  # ... restarted at each (group, w)
    return grp, w, y_mean, own, v, np.exp(logp)


def bpref_note(judgments: Judgments, direction: Direction, values: F64, min_grade: float | None) -> str:
    """A warning when queries scored by bpref have no judged irrelevant doc (then every relevant
    doc scores 1, trec_eval's convention, whatever the ranking), else ``""``."""
    q = np.asarray(judgments.rows if direction is Direction.T2V else judgments.cols, np.int64)
    grades = np.asarray(judgments.grades, np.float64)
    irrelevant = grades <= 0 if min_grade is None else grades < min_grade
    n_irr = np.bincount(q[irrelevant], minlength=values.size)
    scored = ~np.isnan(values)
    empty = int(np.count_nonzero(scored & (n_irr == 0)))
    if not empty:
        return ""
    return (
        f"bpref is 1 for the {empty} of {int(scored.sum())} queries with no judged irrelevant doc "
        "(trec_eval's convention: nothing to prefer a relevant doc to); bpref needs judged "
        "irrelevant docs, e.g. a judged pool, to rank runs"
    )


def infndcg_pooled_note(judgments: Judgments, measures: Iterable[str]) -> str:
    """A warning when infNDCG is computed on labels with pooled-but-unjudged pairs (TREC qrels
    ``rel < 0``), which it does not use (module docstring), else ``""``."""
    n = int(judgments.pooled.shape[0])
    if not n or not any(str(m).startswith("infNDCG") for m in measures):
        return ""
    return (
        f"infNDCG does not use the {n} pooled-but-unjudged pairs of the labels (qrels rel < 0): "
        "without the sampling design (strata, rates) it treats them as outside the pool and equals "
        "nDCG; infAP counts them, as trec_eval does"
    )


def check_bound_measures(modes: tuple[str, ...], measures: Iterable[Measure]) -> None:
    """``worst``/``best`` are not defined for the estimators bpref, infAP and infNDCG."""
    bound = [m for m in modes if m in ("worst", "best")]
    est = [str(m) for m in measures if m.name in INCOMPLETE]
    if bound and est:
        raise FirevalError(
            f"unjudged={bound[0]} is not available for {', '.join(est)} (estimators for incomplete "
            "judgments, not values over a labelling): use lower, upper or condensed for them"
        )
