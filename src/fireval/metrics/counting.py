"""Where each marked (query, doc) entry sits in its query's ranking, without a full argsort.

For every marked entry (a judged or relevant doc of a query) we need

* ``g``: the number of docs of that query with a *strictly greater* score, and
* ``t``: the number of docs with an *equal* score (the entry's tie group, itself included).

Every measure follows from ``g``, ``t`` and the labels of the entries in the same group
(see :mod:`fireval.metrics.kernel`). Three strategies, chosen per chunk of query rows:

* :func:`count_direct`: compare the entry's score with its whole row (cost m·D). Best when a
  query has only a few marked docs (t2v with instance labels).
* :func:`count_sorted`: sort each row once (np.sort, no argsort), then a vectorised binary
  search for all entries at once (cost n·D·log D + m·log D). Best with many marked docs per
  query (v2t, where a video has ~20–80 relevant captions).
* :func:`dense_entries`: every doc is marked (the ``upper`` bound, where unjudged = relevant):
  one stable argsort per row gives all groups directly.

Scores that are NaN in a block mean "removed" (the ``condensed`` list): they are neither
greater than nor equal to any score, so they never count.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]

#: elements per temporary (entries × docs) comparison batch: 16M bools ≈ 16 MB
_BATCH_ELEMS = 1 << 24


def count_direct(block: FloatArray, q: IntArray, s: FloatArray) -> tuple[IntArray, IntArray]:
    """``g`` and ``t`` by comparing each entry's score ``s`` with the whole row ``block[q]``."""
    m, d = q.size, block.shape[1]
    g = np.empty(m, np.int64)
    t = np.empty(m, np.int64)
    step = max(1, _BATCH_ELEMS // max(d, 1))
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        rows = block[q[lo:hi]]
        sv = s[lo:hi, None]
        g[lo:hi] = np.count_nonzero(rows > sv, axis=1)
        t[lo:hi] = np.count_nonzero(rows == sv, axis=1)
    return g, t


def _search(sorted_flat: FloatArray, d: int, q: IntArray, s: FloatArray, strict: bool) -> IntArray:
    """Per entry, the number of leading elements of row ``q`` that are ``< s`` (strict) or ``<= s``.

    Rows are sorted ascending with NaN last, so the predicate is monotone along each row.
    A branchless lock-step binary search over all entries at once (P = largest power of two
    <= d): the first probe at index P-1 picks the window [0, P-1] or [d-P+1, d], then
    P/2, P/4, ..., 1 halve it. Every probe index stays inside the row, so no clamping is
    needed: one gather, one comparison and one multiply-add per step.
    """
    if q.size == 0 or d == 0:
        return np.zeros(q.size, np.int64)
    cmp = np.less if strict else np.less_equal
    itype: type[np.signedinteger[Any]] = np.int32 if sorted_flat.size < (1 << 31) - 1 else np.int64
    p = 1 << (int(d).bit_length() - 1)
    # idx = flat index of the last element counted so far (row start - 1 when none)
    idx = q.astype(itype) * itype(d) - itype(1)
    ok = cmp(sorted_flat.take(idx + itype(p)), s)
    idx += ok * itype(d - p + 1)
    step = p >> 1
    probe = np.empty_like(idx)
    while step:
        np.add(idx, itype(step), out=probe)
        cmp(sorted_flat.take(probe), s, out=ok)
        idx += ok * itype(step)
        step >>= 1
    pos = idx.astype(np.int64)
    pos -= q * d - 1
    return pos


def count_sorted(block: FloatArray, q: IntArray, s: FloatArray, has_nan: bool) -> tuple[IntArray, IntArray]:
    """``g`` and ``t`` from row-sorted scores and a batched binary search.

    One search finds ``right`` = #scores <= s; the entry itself is at ``right - 1``. Only
    entries whose left neighbour in the sorted row has the same score (a tie) need the
    second search for ``left`` = #scores < s.
    """
    n, d = block.shape
    valid = (d - np.count_nonzero(np.isnan(block), axis=1)) if has_nan else np.full(n, d, np.int64)
    sb = np.sort(block, axis=1)
    flat = sb.reshape(-1)
    right = _search(flat, d, q, s, strict=False)
    left = right - 1
    prev = q * d + np.maximum(right - 2, 0)
    tied = (right >= 2) & (flat[prev] == s)
    if tied.any():
        idx = np.flatnonzero(tied)
        left[idx] = _search(flat, d, q[idx], s[idx], strict=True)
    return valid[q] - right, right - left


def docid_offsets(
    block: FloatArray, q: IntArray, s: FloatArray, doc: IntArray, tie_rank: IntArray
) -> IntArray:
    """Per entry, the number of docs in its tie group that a tie-break order puts first.

    ``tie_rank[d]`` is doc ``d``'s position in the tie-break order (0 = first).
    """
    m, d = q.size, block.shape[1]
    out = np.empty(m, np.int64)
    step = max(1, _BATCH_ELEMS // max(d, 1))
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        rows = block[q[lo:hi]]
        eq = rows == s[lo:hi, None]
        eq &= tie_rank[None, :] < tie_rank[doc[lo:hi], None]
        out[lo:hi] = np.count_nonzero(eq, axis=1)
    return out


def dense_entries(
    block: FloatArray, tie_rank: IntArray | None = None
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """All (query, doc) entries of a block in rank order, with ``g`` and ``t``.

    Returns ``q, doc, g, t``. With ``tie_rank`` the ties are broken by that order, so every
    entry is its own group (``t == 1``).
    """
    n, d = block.shape
    neg = -np.asarray(block)
    if tie_rank is None:
        order = np.argsort(neg, axis=1, kind="stable")
    else:
        order = np.lexsort((np.broadcast_to(tie_rank, (n, d)), neg), axis=1)
    sv = np.take_along_axis(neg, order, axis=1)
    q = np.repeat(np.arange(n, dtype=np.int64), d)
    doc = order.reshape(-1).astype(np.int64)
    pos = np.tile(np.arange(d, dtype=np.int64), n)
    if tie_rank is not None:
        return q, doc, pos, np.ones(n * d, np.int64)
    start = np.ones((n, d), dtype=bool)
    start[:, 1:] = sv[:, 1:] != sv[:, :-1]
    flat_start = start.reshape(-1)
    idx = np.arange(n * d, dtype=np.int64)
    gstart = np.maximum.accumulate(np.where(flat_start, idx, 0))
    # group end: next start (exclusive)
    starts = np.flatnonzero(flat_start)
    ends = np.append(starts[1:], n * d)
    size = ends - starts
    t = np.repeat(size, size)
    g = gstart - q * d
    return q, doc, g, t
