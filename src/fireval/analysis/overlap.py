"""Agreement between runs' rankings: top-K overlap and rank-biased overlap (FIRE Table 3).

Top-K lists are taken with a *deterministic* tie order: descending score, then ascending
document index (trec_eval's ``docid`` order is by id; here the collection order). Docs scored
``-inf`` are not retrieved; lists shorter than K are padded with ``-1``, which never matches.

* ``overlap@K = |A_K ∩ B_K| / K`` per query.
* Rank-biased overlap (Webber, Moffat & Zobel 2010, "A similarity measure for indefinite
  rankings", TOIS 28(4)). With agreement ``A_d = X_d / d`` where ``X_d = |S_{:d} ∩ T_{:d}|``,
  the extrapolated RBO for two lists evaluated to the same depth ``k`` (Eq. 32 with s = l = k)
  is ``RBO_ext = X_k / k * p^k + (1 - p) / p * sum_{d=1..k} X_d / d * p^d``.
  ``p`` is the persistence (default 0.9: the top 10 carry ~86% of the weight).
* Truncated RBO (Webber et al. 2010, Eq. 7 cut at depth ``k``, the ``rbo`` package's
  ``rbo(p=p)``): ``RBO@k = (1 - p) * sum_{d=1..k} p^(d-1) * X_d / d``. It counts only the
  agreement seen down to depth ``k`` (the weight ``p^k`` of the unseen tail is left out), so it
  is a lower bound of the full RBO and lies below overlap@K when the lists agree at every depth
  as much as at K; FIRE's Table 3 (RBO below overlap in every row) matches it.
  ``RBO_ext`` extrapolates the agreement at depth ``k`` to the tail instead. Both are reported,
  each by name (``rbo_ext``, ``rbo_truncated``; the key ``rbo`` stays ``RBO_ext``).

Both are vectorised over queries: for each item of ``A`` its position ``j`` in ``B``; it
joins the overlap from depth ``max(i, j) + 1`` on, so ``X_d`` is a cumulative histogram.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.core.run import Run

_ROW_BUDGET = 4_000_000


def topk_block(block: npt.NDArray[np.floating], k: int) -> npt.NDArray[np.int64]:
    """Top-``k`` doc indices of each row of a score block (desc score, asc doc index; ``-1`` pad)."""
    q, n_docs = block.shape
    k_eff = min(k, n_docs)
    s = np.asarray(block, dtype=np.float64)
    if k_eff < n_docs:
        # the k-th largest value; everything strictly above is in, ties at it are broken by index
        kth = np.partition(s, n_docs - k_eff, axis=1)[:, n_docs - k_eff]
        cand = s >= kth[:, None]
    else:
        cand = np.ones_like(s, dtype=bool)
    out = np.full((q, k), -1, dtype=np.int64)
    # sort candidates per row: key = (-score, doc); non-candidates pushed to the end
    key = np.where(cand, -s, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(n_docs), s.shape), key), axis=1)[:, :k_eff]
    top_scores = np.take_along_axis(s, order, axis=1)
    order = np.where(np.isneginf(top_scores), -1, order)
    out[:, :k_eff] = order
    return out


def topk(run: Run, direction: Direction | str, k: int) -> npt.NDArray[np.int64]:
    """``(n_queries, k)`` top-``k`` doc indices of ``run`` in ``direction``, computed in row chunks."""
    if k < 1:
        raise FirevalError(f"K must be >= 1, got {k}")
    d = Direction.parse(direction)
    nq = run.n_queries(d)
    n_docs = run.shape[1] if d is Direction.T2V else run.shape[0]
    step = max(1, _ROW_BUDGET // max(n_docs, 1))
    parts = [topk_block(run.block(d, s, min(s + step, nq)), k) for s in range(0, nq, step)]
    return np.concatenate(parts, axis=0)


def overlap_counts(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``X[q, d-1] = |a[q, :d] ∩ b[q, :d]|`` for d = 1..k (lists of distinct ids, ``-1`` = none)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 2:
        raise FirevalError(f"top-K lists must have the same (queries, K) shape: {a.shape} vs {b.shape}")
    q, k = a.shape
    out = np.zeros((q, k), dtype=np.int64)
    step = max(1, _ROW_BUDGET // max(k * k, 1))
    for s in range(0, q, step):
        aa, bb = a[s : s + step], b[s : s + step]
        eq = (aa[:, :, None] == bb[:, None, :]) & (aa[:, :, None] >= 0)
        found = eq.any(axis=2)
        j = eq.argmax(axis=2)
        depth = np.maximum(np.arange(k)[None, :], j)  # 0-based depth from which the item is shared
        rows = np.broadcast_to(np.arange(aa.shape[0])[:, None], depth.shape)
        hist = np.zeros((aa.shape[0], k), dtype=np.int64)
        np.add.at(hist, (rows[found], depth[found]), 1)
        out[s : s + step] = np.cumsum(hist, axis=1)
    return out


def overlap_at_k(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Per-query ``|A_K ∩ B_K| / K``."""
    x = overlap_counts(a, b)
    return x[:, -1] / a.shape[1]


def _rbo_from_counts(x: npt.NDArray[np.int64], p: float) -> npt.NDArray[np.float64]:
    """``RBO_ext`` (module docstring) from the overlap counts ``X_d`` of :func:`overlap_counts`."""
    if not 0 < p < 1:
        raise FirevalError(f"RBO persistence p must be in (0, 1), got {p}")
    k = x.shape[1]
    depth = np.arange(1, k + 1, dtype=np.float64)
    agreement = x / depth
    return agreement[:, -1] * p**k + (1 - p) / p * (agreement * p**depth).sum(axis=1)


def _rbo_truncated_from_counts(x: npt.NDArray[np.int64], p: float) -> npt.NDArray[np.float64]:
    """Truncated ``RBO@k`` (module docstring) from the overlap counts ``X_d``."""
    if not 0 < p < 1:
        raise FirevalError(f"RBO persistence p must be in (0, 1), got {p}")
    depth = np.arange(1, x.shape[1] + 1, dtype=np.float64)
    return (1 - p) * (x / depth * p ** (depth - 1)).sum(axis=1)


def rbo_truncated(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], p: float = 0.9
) -> npt.NDArray[np.float64]:
    """Per-query truncated RBO at the lists' depth (Webber et al. 2010, Eq. 7 to depth k)."""
    return _rbo_truncated_from_counts(overlap_counts(a, b), p)


def rbo_ext(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], p: float = 0.9) -> npt.NDArray[np.float64]:
    """Per-query extrapolated RBO (Webber et al. 2010, Eq. 32, equal depths) of two top-K lists."""
    return _rbo_from_counts(overlap_counts(a, b), p)


def pairwise_overlap(tops: dict[str, npt.NDArray[np.int64]], *, p: float = 0.9) -> list[dict[str, object]]:
    """Mean overlap@K, RBO_ext and truncated RBO for every pair of runs (``run -> (Q, K) top-K``).

    Row keys: ``overlap``, ``rbo`` (= ``rbo_ext``, kept for old readers), ``rbo_ext`` and
    ``rbo_truncated`` (FIRE Table 3's variant), all means over queries.
    """
    names = list(tops)
    rows: list[dict[str, object]] = []
    for i, a in enumerate(names):
        for bname in names[i + 1 :]:
            x = overlap_counts(tops[a], tops[bname])
            ov = x[:, -1] / x.shape[1]
            rb = _rbo_from_counts(x, p)
            rt = _rbo_truncated_from_counts(x, p)
            rows.append(
                {
                    "a": a,
                    "b": bname,
                    "k": int(tops[a].shape[1]),
                    "overlap": float(ov.mean()),
                    "rbo": float(rb.mean()),
                    "rbo_ext": float(rb.mean()),
                    "rbo_truncated": float(rt.mean()),
                    "p": p,
                }
            )
    return rows
