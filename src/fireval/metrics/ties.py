"""Tie policies and the closed forms of expected values over tied groups.

A *tie group* of a query is the set of docs with one score. With ``g`` docs strictly above
the group, ``t`` docs in it and ``r`` of them relevant, a random ordering inside the group
(McSherry & Najork, "Computing information retrieval performance measures efficiently in
the presence of tied scores", ECIR 2008) gives:

* expected relevant docs in the top K from the group: ``r * n / t`` with ``n = clip(K-g, 0, t)``;
* P(no relevant doc in the group's first ``n`` positions) = ``C(t-r, n) / C(t, n)``
  (hypergeometric), which gives C@K;
* expected sum of precisions at the group's relevant positions among its first ``n``, with
  ``c`` relevant docs above the group: ``(r/t) [(c+1) S0 + (r-1)/(t-1) S1]`` where
  ``S0 = H(g+n) - H(g)`` and ``S1 = n - (g+1) S0`` (H = harmonic numbers);
* expected DCG of the group's first ``n`` positions: ``(sum of gains / t) * sum_{k=1..n} disc(g+k)``;
* expected rank of the first relevant doc: ``g + (t+1)/(r+1)``;
* expected reciprocal rank: ``E[1/(g+X)]`` with ``P(X=x) = C(t-x, r-1) / C(t, r)``.

The other policies break ties into a strict order (so every group has ``t == 1``):

* ``optimistic``: relevant docs first (higher grades first), then judged irrelevant, then unjudged;
* ``pessimistic``: the reverse (unjudged, judged irrelevant, relevant by increasing grade);
* ``docid``: trec_eval's order: score descending, then doc id descending by string comparison
  (``comp_sim_docno`` in trec_eval's ``form_res_rels.c`` returns ``strcmp(ptr2->docno, ptr1->docno)``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from fireval.core.errors import FirevalError

TIE_POLICIES = ("tie-aware", "optimistic", "pessimistic", "docid")

_EULER = 0.57721566490153286061


def check_ties(ties: str) -> str:
    t = str(ties).strip().lower()
    if t in ("tie_aware", "tieaware", "expected", "mcsherry"):
        t = "tie-aware"
    if t not in TIE_POLICIES:
        raise FirevalError(f"unknown tie policy {ties!r}; expected one of {', '.join(TIE_POLICIES)}")
    return t


# Integer arguments (every caller's: counts and ranks) are served without scipy, whose import
# costs more than a whole small evaluation: below _SMALL from exact tables, above by the
# asymptotic series of H(x) and log Gamma(z) (truncation error < 1e-16 relative there). Anything
# else (non-integer, NaN, inf, negative for H) goes to scipy.special.
_SMALL = 32
_H_SMALL = np.array(
    [float(sum((Fraction(1, i) for i in range(1, k + 1)), Fraction(0))) for k in range(_SMALL + 1)]
)
_LGAMMA_SMALL = np.array([math.lgamma(k) if k > 0 else math.inf for k in range(_SMALL + 1)])
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _integral(x: npt.NDArray[np.float64]) -> bool:
    return bool(np.all(np.isfinite(x)) and np.all(np.rint(x) == x))


def harmonic(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """H(x) = sum_{i=1..x} 1/i for integer x >= 0 (= psi(x+1) + gamma, digamma for other x)."""
    xa = np.asarray(x, dtype=np.float64)
    if not (_integral(xa) and np.all(xa >= 0)):
        from scipy.special import digamma

        return np.asarray(digamma(xa + 1.0) + _EULER, dtype=np.float64)
    small = xa <= _SMALL
    out = np.empty_like(xa)
    out[small] = _H_SMALL[xa[small].astype(np.int64)]
    big = xa[~small]
    inv2 = 1.0 / (big * big)
    tail = inv2 * (-1.0 / 12 + inv2 * (1.0 / 120 + inv2 * (-1.0 / 252 + inv2 * (1.0 / 240))))
    out[~small] = np.log(big) + _EULER + 0.5 / big + tail
    return out


def _gammaln(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """log |Gamma(z)|; +inf at the integers <= 0, as scipy.special.gammaln."""
    if not _integral(z):
        from scipy.special import gammaln

        return np.asarray(gammaln(z), dtype=np.float64)
    small = z <= _SMALL
    out = np.empty_like(z)
    out[small] = _LGAMMA_SMALL[np.maximum(z[small], 0.0).astype(np.int64)]
    big = z[~small]
    inv = 1.0 / big
    inv2 = inv * inv
    tail = inv * (1.0 / 12 + inv2 * (-1.0 / 360 + inv2 * (1.0 / 1260 + inv2 * (-1.0 / 1680))))
    out[~small] = (big - 0.5) * np.log(big) - big + _HALF_LOG_2PI + tail
    return out


def harmonic_diff(g: npt.ArrayLike, n: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """H(g+n) - H(g) = sum_{k=1..n} 1/(g+k); exact for n in {0, 1} (digamma only where n > 1)."""
    ga = np.asarray(g, dtype=np.float64)
    na = np.asarray(n, dtype=np.float64)
    ga, na = np.broadcast_arrays(ga, na)
    out = np.where(na == 1, 1.0 / (ga + 1.0), 0.0)
    many = na > 1
    if many.any():
        gm, nm = ga[many], na[many]
        out[many] = harmonic(gm + nm) - harmonic(gm)
    return out


def log_comb(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """log C(a, b) for 0 <= b <= a (callers mask the rest)."""
    aa = np.asarray(a, dtype=np.float64)
    bb = np.asarray(b, dtype=np.float64)
    return np.asarray(_gammaln(aa + 1.0) - _gammaln(bb + 1.0) - _gammaln(aa - bb + 1.0), dtype=np.float64)


def prob_none(t: npt.ArrayLike, r: npt.ArrayLike, n: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """P(no relevant among the first n of t positions holding r relevant) = C(t-r, n) / C(t, n)."""
    ta = np.asarray(t, dtype=np.float64)
    ra = np.asarray(r, dtype=np.float64)
    na = np.asarray(n, dtype=np.float64)
    ok = na <= ta - ra
    safe_n = np.where(ok, na, 0.0)
    val = np.exp(log_comb(ta - ra, safe_n) - log_comb(ta, safe_n))
    val = np.where(ra <= 0, 1.0, val)
    return np.where(ok, val, 0.0)


def strict_positions(
    q: npt.NDArray[np.int64],
    g: npt.NDArray[np.int64],
    t: npt.NDArray[np.int64],
    gain: npt.NDArray[np.float64],
    judged: npt.NDArray[np.bool_],
    doc: npt.NDArray[np.int64],
    policy: str,
) -> npt.NDArray[np.int64]:
    """New ``g`` (0-based rank) of every marked entry when ties are broken optimistically or pessimistically.

    Entries of one group are the marked docs (judged or relevant); the other ``t - m`` docs
    of the group are unjudged irrelevant. Optimistic puts marked entries first, ordered by
    decreasing gain then judged first; pessimistic puts them last in the reverse order.
    """
    if q.size == 0:
        return g.copy()
    sign = -1.0 if policy == "optimistic" else 1.0
    order = np.lexsort((doc, sign * judged.astype(np.float64), sign * gain, g, q))
    qs, gs = q[order], g[order]
    first = np.ones(q.size, dtype=bool)
    first[1:] = (qs[1:] != qs[:-1]) | (gs[1:] != gs[:-1])
    idx = np.arange(q.size, dtype=np.int64)
    start = np.maximum.accumulate(np.where(first, idx, 0))
    within = idx - start
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, q.size))
    m_grp = np.repeat(sizes, sizes)
    new_sorted = gs + within if policy == "optimistic" else gs + t[order] - m_grp + within
    out = np.empty_like(g)
    out[order] = new_sorted
    return out


def docid_tie_rank(doc_ids: Sequence[str]) -> npt.NDArray[np.int64]:
    """Position of each doc in trec_eval's tie-break order: doc id descending (byte-wise strcmp)."""
    keys = [d.encode("utf-8") for d in doc_ids]
    order = sorted(range(len(keys)), key=lambda i: keys[i], reverse=True)
    rank = np.empty(len(keys), np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(keys), dtype=np.int64)
    return rank


def span_batches(span: npt.NDArray[np.int64], limit: int) -> Iterator[tuple[int, int]]:
    """Consecutive ranges ``lo:hi`` of items whose ``span`` (elements each item expands to) sums
    to at most ``limit`` (at least one item a range): bounded memory for ragged expansions."""
    cuts = np.cumsum(span)
    lo = 0
    while lo < span.size:
        hi = int(np.searchsorted(cuts, (cuts[lo - 1] if lo else 0) + limit, side="right"))
        hi = max(hi, lo + 1)
        yield lo, hi
        lo = hi
