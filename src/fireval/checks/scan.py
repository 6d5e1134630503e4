"""One chunked pass over a run in one direction: what every check needs from the scores.

For each query (rows of ``run.block(direction, ...)``, chunk by chunk, bounded memory):

* ``top``: the ``K`` best documents *other than the query's instance positives*, ties broken at
  random with a seeded generator (never by document index); ``valid`` is False where fewer than
  ``K`` documents were retrieved (score ``-inf``);
* truncation figures: the size of the tie group at the row's minimum (``-inf`` counts as the
  minimum), whether an instance positive lies in that group, and whether the minimum is
  ``-inf`` (the tail is not retrieved, as in ranked lists).

Top-K (:func:`top_k`) is exact and avoids ``argpartition`` where it is slow (long rows, and rows
with a big tie, where introselect degrades tenfold): a threshold per row (the row's minimum when
at least a quarter of the row ties there, as in truncated runs; for rows of 2,048 documents or
more, the order statistic of a random sample of columns above which about ``4K`` documents are
expected), one strict comparison, and a sort of the few candidates above it by (row, score
descending, random key). Other rows, and rows with fewer than ``K`` candidates, are ranked over
randomly shuffled columns (:func:`_exact`): the ``K``-th largest of the maxima of ``G >= 4K``
groups of shuffled columns is a threshold with at least ``K`` scores at or above it (one per
group) and about ``K + K^2/G`` of them on average; those few candidates are sorted by (row,
score descending, shuffled position). A row with many candidates (a big tie at the threshold)
falls back to one ``argpartition``. Ties across the cut are drawn again at random
(:func:`_fill_ties`). No per-query Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fireval.checks.text import Csr, positives
from fireval.core import Collection, Direction, Run

_CHUNK_ELEMENTS = 1 << 22
_OVERSAMPLE = 4
_MIN_SAMPLE = 256
_SAMPLE_RANK = 8
#: rows at least this long use the sampled threshold (measured faster from about 2,000 docs)
_SAMPLE_MIN_DOCS = 2048
#: _exact: groups of shuffled columns per requested rank (at least _MIN_GROUPS), and the most
#: candidates per requested rank before a row falls back to argpartition
_GROUPS_PER_K = 4
_MIN_GROUPS = 64
_MAX_CANDIDATES = 4


@dataclass
class Scan:
    """What one pass over ``run`` in ``direction`` found."""

    run: str
    direction: Direction
    k: int
    n_docs: int
    top: npt.NDArray[np.int64]
    valid: npt.NDArray[np.bool_]
    bottom_size: npt.NDArray[np.int64]
    positive_at_bottom: npt.NDArray[np.bool_]
    mean_positives: float
    #: per query: the row's minimum is ``-inf`` (its tail is *not retrieved*, as in ranked lists),
    #: not a finite tie
    bottom_unretrieved: npt.NDArray[np.bool_] | None = None

    @property
    def n_queries(self) -> int:
        return int(self.top.shape[0])

    def ranks_any(self) -> npt.NDArray[np.bool_]:
        """Per query: the row ranks at least one document, i.e. it is not one tie over every
        document (a constant row, or a query absent from a ranked-list run). The top-K of a row
        that ranks nothing is a random draw, which says nothing about its order: the alignment and
        agreement checks leave such rows out. With a single document, a finite score ranks it."""
        ranked = self.bottom_size < self.n_docs
        if self.n_docs == 1:
            ranked = ranked | (
                ~self.bottom_unretrieved if self.bottom_unretrieved is not None else np.ones_like(ranked)
            )
        return np.asarray(ranked)


def effective_k(pos: Csr, k: int) -> int:
    """``k`` capped so that every query keeps at least one non-positive document outside its top."""
    return max(1, min(k, pos.shape[1] - int(np.diff(pos.indptr).max(initial=0)) - 1))


def scan(run: Run, collection: Collection, direction: Direction, *, k: int = 10, seed: int = 0) -> Scan:
    """Scan ``run`` in ``direction`` (see the module docstring)."""
    pos = positives(collection, direction)
    n_q, n_d = pos.shape
    k = effective_k(pos, k)
    rng = np.random.default_rng(seed)
    top = np.zeros((n_q, k), dtype=np.int64)
    valid = np.zeros((n_q, k), dtype=bool)
    bottom = np.zeros(n_q, dtype=np.int64)
    pos_bottom = np.zeros(n_q, dtype=bool)
    unretrieved = np.zeros(n_q, dtype=bool)
    step = max(1, _CHUNK_ELEMENTS // max(n_d, 1))
    for lo in range(0, n_q, step):
        hi = min(n_q, lo + step)
        block = np.ascontiguousarray(run.block(direction, lo, hi))
        low = _bottom(block, pos[lo:hi], bottom[lo:hi], pos_bottom[lo:hi])
        unretrieved[lo:hi] = low == -np.inf
        top[lo:hi], valid[lo:hi] = top_k(block, pos[lo:hi], k, rng, at_low=(low, bottom[lo:hi]))
    return Scan(
        run.name,
        direction,
        k,
        n_d,
        top,
        valid,
        bottom,
        pos_bottom,
        float(np.diff(pos.indptr).mean()),
        unretrieved,
    )


def top_k(
    block: npt.NDArray[np.floating],
    pos: Csr,
    k: int,
    rng: np.random.Generator,
    *,
    at_low: tuple[npt.NDArray[np.floating], npt.NDArray[np.int64]] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """The ``k`` highest-scoring columns of each row, ``pos`` (CSR, same rows) left out, ties at random.

    Returns ``(indices, valid)``, best first; ``valid`` is False for picks with score ``-inf``
    (not retrieved). ``block`` is not modified. ``at_low``: each row's minimum and how many
    scores equal it, when already known (:func:`scan` has them from :func:`_bottom`).
    """
    n, d = block.shape
    out = np.zeros((n, k), dtype=np.int64)
    ok = np.zeros((n, k), dtype=bool)
    if n == 0:
        return out, ok
    prow = np.repeat(np.arange(n), np.diff(pos.indptr))
    pcol = pos.indices
    if d >= _SAMPLE_MIN_DOCS:  # long rows: a threshold from a sample of the columns
        m = min(d, max(_MIN_SAMPLE, int(np.ceil(_SAMPLE_RANK * d / (_OVERSAMPLE * k)))))
        r = max(1, min(m, int(np.ceil(m * _OVERSAMPLE * k / d))))
        sample = np.take(block, rng.choice(d, size=m, replace=False), axis=1)
        thr = np.partition(sample, m - r, axis=1)[:, m - r]
        rest = _above(block, np.arange(n), thr, prow, pcol, k, rng, out, ok)
    else:  # rows ending in a big tie (truncated runs, sparse text scores): candidates above it
        low, at_min = (block.min(axis=1), None) if at_low is None else at_low
        if at_min is None:
            at_min = (block == low[:, None]).sum(axis=1)
        big_tie = at_min >= max(k, d // 4)
        tied, rest = np.flatnonzero(big_tie), np.flatnonzero(~big_tie)  # (np.setdiff1d imports numpy.ma)
        if tied.size:  # rows with fewer than k above the tie draw the rest from it at random
            short = _above(block, tied, low[tied], prow, pcol, k, rng, out, ok)
            if short.size:
                _fill_ties(block, short, low[short], prow, pcol, k, rng, out, ok)
    if rest.size:
        _exact(block, rest, prow, pcol, k, rng, out, ok)
    return out, ok


def _above(
    block: npt.NDArray[np.floating],
    idx: npt.NDArray[np.int64],
    thr: npt.NDArray[np.floating],
    prow: npt.NDArray[np.int64],
    pcol: npt.NDArray[np.integer],
    k: int,
    rng: np.random.Generator,
    out: npt.NDArray[np.int64],
    ok: npt.NDArray[np.bool_],
) -> npt.NDArray[np.int64]:
    """Top-``k`` of rows ``idx`` among their documents scored strictly above ``thr`` (one per row).

    Candidates are sorted by (row, score descending, random key). Returns the rows with fewer than
    ``k`` candidates (a ``k``-th value tied with the threshold): they need :func:`_exact` or
    :func:`_fill_ties`.
    """
    sub = block[idx] if idx.size < block.shape[0] else block
    mask = sub > thr[:, None]
    inpos = np.isin(prow, idx)
    mask[np.searchsorted(idx, prow[inpos]), pcol[inpos]] = False
    short = mask.sum(axis=1) < k
    rows, cols = np.nonzero(mask & ~short[:, None])
    order = np.lexsort((rng.random(rows.size), -sub[rows, cols], rows))
    rows, cols = rows[order], cols[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, np.arange(idx.size))[rows]
    sel = rank < k
    out[idx[rows[sel]], rank[sel]] = cols[sel]
    ok[idx[rows[sel]], rank[sel]] = sub[rows[sel], cols[sel]] > -np.inf
    return idx[short]


def _fill_ties(
    block: npt.NDArray[np.floating],
    idx: npt.NDArray[np.int64],
    thr: npt.NDArray[np.floating],
    prow: npt.NDArray[np.int64],
    pcol: npt.NDArray[np.integer],
    k: int,
    rng: np.random.Generator,
    out: npt.NDArray[np.int64],
    ok: npt.NDArray[np.bool_],
) -> None:
    """Rows ``idx`` whose ``k``-th value ``thr`` ties past the cut: the ``g < k`` documents above it
    (by :func:`_above`, which leaves them in place), then ``k - g`` members of the tie drawn at random
    (the smallest of uniform random keys, one ``argpartition`` without ties)."""
    sub = np.array(block[idx], dtype=None if np.issubdtype(block.dtype, np.floating) else np.float64)
    inpos = np.isin(prow, idx)
    sub[np.searchsorted(idx, prow[inpos]), pcol[inpos]] = np.nan  # positives: neither above nor tied
    above = sub > thr[:, None]
    g = above.sum(axis=1)
    rows, cols = np.nonzero(above)
    order = np.lexsort((rng.random(rows.size), -sub[rows, cols], rows))
    rows, cols = rows[order], cols[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, np.arange(idx.size))[rows]
    out[idx[rows], rank] = cols
    ok[idx[rows], rank] = True
    keys = np.where(sub == thr[:, None], rng.random(sub.shape), np.inf)
    kk = min(k, sub.shape[1])
    part = np.argpartition(keys, kk - 1, axis=1)[:, :kk]
    part = np.take_along_axis(part, np.argsort(np.take_along_axis(keys, part, axis=1), axis=1), axis=1)
    r, j = np.nonzero(np.arange(kk)[None, :] < (k - g)[:, None])
    picked = part[r, j]
    out[idx[r], g[r] + j] = picked
    ok[idx[r], g[r] + j] = np.isfinite(keys[r, picked]) & (sub[r, picked] > -np.inf)


def _exact(
    block: npt.NDArray[np.floating],
    idx: npt.NDArray[np.int64],
    prow: npt.NDArray[np.int64],
    pcol: npt.NDArray[np.integer],
    k: int,
    rng: np.random.Generator,
    out: npt.NDArray[np.int64],
    ok: npt.NDArray[np.bool_],
) -> None:
    """Exact top-``k`` of rows ``idx`` over randomly shuffled columns (ties at random).

    Candidates: the scores at or above the ``k``-th largest of the maxima of ``G`` groups of
    consecutive shuffled columns (at least ``k`` per row, about ``k + k^2/G``), sorted by (row,
    score descending, shuffled position); rows with more than :data:`_MAX_CANDIDATES` times ``k``
    candidates use ``argpartition`` instead. Where the ``k``-th value's tie group spills past the
    cut, its members are drawn again per row at random (:func:`_fill_ties`).
    """
    d = block.shape[1]
    perm = rng.permutation(d)
    b = np.take(block[idx] if idx.size < block.shape[0] else block, perm, axis=1)
    if not np.issubdtype(b.dtype, np.floating):
        b = b.astype(np.float64)
    inv = np.empty(d, dtype=np.int64)
    inv[perm] = np.arange(d)
    sub = np.isin(prow, idx)
    b[np.searchsorted(idx, prow[sub]), inv[pcol[sub]]] = -np.inf
    n = b.shape[0]
    kth = np.full(n, -np.inf, dtype=b.dtype)
    spill = np.zeros(n, dtype=bool)
    size = -(-d // max(_GROUPS_PER_K * k, _MIN_GROUPS))  # columns per group
    starts = np.arange(0, d, size)
    many = np.ones(n, dtype=bool)
    if size >= 2 and starts.size > k:
        gmax = np.maximum.reduceat(b, starts, axis=1)
        thr = np.partition(gmax, starts.size - k, axis=1)[:, starts.size - k]
        cand = b >= thr[:, None]
        many = cand.sum(axis=1) > _MAX_CANDIDATES * k
        few = np.flatnonzero(~many)
        if few.size:
            flat = np.flatnonzero(cand[few] if few.size < n else cand)  # by (row, shuffled position)
            rows, cols = flat // d, flat % d
            vals = b[few[rows], cols]
            order = np.lexsort((-vals, rows))  # stable: equal scores keep their shuffled order
            rows, cols, vals = rows[order], cols[order], vals[order]
            rank = np.arange(rows.size) - np.searchsorted(rows, np.arange(few.size))[rows]
            sel = rank < k
            out[idx[few[rows[sel]]], rank[sel]] = perm[cols[sel]]
            ok[idx[few[rows[sel]]], rank[sel]] = vals[sel] > -np.inf
            kth[few[rows[rank == k - 1]]] = vals[rank == k - 1]
            nxt = rank == k  # the best score left out: spills when it ties with the k-th
            spill[few[rows[nxt]]] = vals[nxt] == kth[few[rows[nxt]]]
    rest = np.flatnonzero(many)
    if rest.size:
        br = b[rest] if rest.size < n else b
        part = np.argpartition(br, d - k, axis=1)[:, d - k :]
        vals = np.take_along_axis(br, part, axis=1)
        o = np.argsort(-vals, axis=1, kind="stable")
        out[idx[rest]] = perm[np.take_along_axis(part, o, axis=1)]
        ok[idx[rest]] = np.take_along_axis(vals, o, axis=1) > -np.inf
        kth[rest] = vals.min(axis=1)
        spill[rest] = (br == kth[rest, None]).sum(axis=1) > (vals == kth[rest, None]).sum(axis=1)
    # the shuffle is one per chunk; where the k-th value's tie group spills past the cut, draw
    # its members again per row at random
    spill &= kth > -np.inf
    if spill.any():
        _fill_ties(block, idx[spill], kth[spill], prow, pcol, k, rng, out, ok)


def _bottom(
    block: npt.NDArray[np.floating],
    pos: Csr,
    size_out: npt.NDArray[np.int64],
    pos_out: npt.NDArray[np.bool_],
) -> npt.NDArray[np.floating]:
    """Size of each row's minimum tie group, and whether a positive lies in it; returns the minima."""
    low = block.min(axis=1, keepdims=True)
    at_min = block == low
    size_out[:] = at_min.sum(axis=1)
    rows = np.repeat(np.arange(block.shape[0]), np.diff(pos.indptr))
    hit = np.zeros(block.shape[0], dtype=bool)
    np.logical_or.at(hit, rows, at_min[rows, pos.indices])
    pos_out[:] = hit & (size_out > 1)
    return low[:, 0]
