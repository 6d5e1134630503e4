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
* :func:`count_columns`: the same counts on a *doc-major* block (``cols[doc, query]``, e.g. the
  v2t columns of a caption × video matrix, read in place without transposing). Row tiles of
  ``cols`` are compared with one "layer" of thresholds at a time (layer k holds the k-th
  marked score of every query), so the cost is 2·L comparisons per element for L layers:
  used while the queries have at most :data:`MAX_LAYERS` marked docs each. Queries with more
  (v2t with ~20 relevant captions per video) go to :func:`count_buckets`: the same layered
  counts in one compiled pass (numba, imported on first use) over tiles of rows, each
  column's tile copied to a contiguous buffer and reduced against two thresholds per pass (a
  column stops at the first threshold none of its tile's scores reaches), while no query has
  more than :data:`BUCKET_MAX_LAYERS`.
  Without numba, on small blocks, or above that, the pure-numpy paths of
  :func:`count_columns_numpy` give the same integers (candidates, or transposed sub-blocks
  through :func:`count_sorted`).
* :func:`dense_entries`: every doc is marked (the ``upper`` bound, where unjudged = relevant):
  one stable argsort per row gives all groups directly.

Scores that are NaN in a block mean "removed" (the ``condensed`` list): they are neither
greater than nor equal to any score, so they never count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]

#: elements per temporary (entries × docs) comparison batch: 16M bools ≈ 16 MB
_BATCH_ELEMS = 1 << 24
#: elements per comparison batch of :func:`count_direct` (1M bools: stays in L2)
_DIRECT_ELEMS = 1 << 20
#: most threshold layers for which :func:`count_columns` compares instead of sorting
#: (a layer costs ~2 compare-and-sum passes, a row sort ~10-20 on this kind of machine)
MAX_LAYERS = 6
#: elements per row tile of :func:`count_columns` (256K floats: stays in L2)
_TILE_ELEMS = 1 << 18
#: elements per transposed sub-block for the sorted fallback of :func:`count_columns`
_SUB_ELEMS = 1 << 21
#: elements per column range of the candidate path (keys: at most CANDIDATE_MAX x 8 bytes each)
_CAND_ELEMS = 1 << 25
#: lowest-scoring entries of a query with many, counted by layers before the candidate path
LOW_LAYERS = 2
#: largest fraction of candidate elements for which sorting candidates beats sorting columns
CANDIDATE_MAX = 0.3
#: most entries per query for the compiled bucket kernel (it compares every score with up to
#: this many thresholds of its column; above, sorting the column is cheaper)
BUCKET_MAX_LAYERS = 64
#: rows per tile of the compiled kernel (at most 2**16 - 1: its counts are packed in 16-bit
#: halves): a column's tile (2 KB of float32) stays in L1 while it is compared with each
#: threshold, and the tile's rows stay in L2 while its columns are copied (on 59,800 x 1,495
#: scores, 256 to 1,024 rows measured within noise of each other)
TILE_ROWS = 512
#: a column tile of the compiled kernel finishes its scores one by one when fewer than
#: 1/TILE_SPARSE of them reach its lowest threshold (model-like scores)
TILE_SPARSE = 64
#: fewest scores in a block for the compiled kernel before it has run in this process (its
#: first call imports numba and loads or compiles the kernel, ~1-3 s: worth it on large blocks
#: only), and once it has run (smaller blocks: pure numpy)
BUCKET_MIN_ELEMS = 1 << 24
BUCKET_MIN_ELEMS_WARM = 1 << 20
#: False forces the pure-numpy paths (the tests compare both)
USE_COMPILED = True


def _count_rows(buf: npt.NDArray[np.bool_]) -> IntArray:
    """Number of True per row of ``buf`` (width a multiple of 8, padding False).

    SWAR: the row is read as uint64 words of 8 one-byte flags; summing up to 255 words keeps
    every byte lane below 256, so the lanes never carry into each other; the 8 lane totals are
    then added. About 3x faster than ``count_nonzero(axis=1)``.
    """
    n = buf.shape[0]
    words = buf.view(np.uint64)
    acc = np.zeros(n, np.int64)
    for lo in range(0, words.shape[1], 255):
        lanes = np.add.reduce(words[:, lo : lo + 255], axis=1, dtype=np.uint64)
        acc += np.add.reduce(lanes.view(np.uint8).reshape(n, 8), axis=1, dtype=np.int64)
    return acc


def count_direct(block: FloatArray, q: IntArray, s: FloatArray) -> tuple[IntArray, IntArray]:
    """``g`` and ``t`` by comparing each entry's score ``s`` with the whole row ``block[q]``."""
    m, d = q.size, block.shape[1]
    g = np.empty(m, np.int64)
    t = np.empty(m, np.int64)
    if m == 0:
        return g, t
    step = max(1, _DIRECT_ELEMS // max(d, 1))
    buf = np.zeros((min(step, m), -(-d // 8) * 8), dtype=bool)  # padding stays False
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        qq = q[lo:hi]
        first, last = int(qq[0]), int(qq[-1])
        if last - first == hi - lo - 1 and (hi - lo == 1 or bool((np.diff(qq) == 1).all())):
            rows = block[first : last + 1]  # one entry per row (t2v, instance labels): no gather
        else:
            rows = block[qq]
        sv = s[lo:hi, None]
        b = buf[: hi - lo]
        np.greater(rows, sv, out=b[:, :d])
        g[lo:hi] = _count_rows(b)
        np.equal(rows, sv, out=b[:, :d])
        t[lo:hi] = _count_rows(b)
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


def _layer_counts(cols: FloatArray, thr: FloatArray) -> tuple[IntArray, IntArray]:
    """``(#cols[:, j] > thr[k, j], #cols[:, j] == thr[k, j])`` for every layer k, tile by tile."""
    n_layers, n = thr.shape
    d = cols.shape[0]
    gt = np.zeros((n_layers, n), np.int64)
    eq = np.zeros((n_layers, n), np.int64)
    rows = max(8, min(255, _TILE_ELEMS // max(n, 1)))  # uint8 sums of <= 255 rows cannot overflow
    buf = np.empty((rows, n), dtype=bool)
    for lo in range(0, d, rows):
        tile = cols[lo : lo + rows]
        b = buf[: tile.shape[0]]
        b8 = b.view(np.uint8)
        for k in range(n_layers):
            np.greater(tile, thr[k], out=b)
            gt[k] += np.add.reduce(b8, axis=0, dtype=np.uint8)
            np.equal(tile, thr[k], out=b)
            eq[k] += np.add.reduce(b8, axis=0, dtype=np.uint8)
    return gt, eq


def count_columns(
    cols: FloatArray, q: IntArray, s: FloatArray, *, check: Callable[[], None] | None = None
) -> tuple[IntArray, IntArray]:
    """``g`` and ``t`` for entries of a doc-major block ``cols`` (``cols[doc, query]``), no NaN.

    ``q`` (the entry's query, i.e. column) must be sorted ascending. Exactly the counts of
    :func:`count_direct`. When some query has more than :data:`MAX_LAYERS` entries, none has
    more than :data:`BUCKET_MAX_LAYERS`, the block holds at least :data:`BUCKET_MIN_ELEMS`
    float32/float64 scores in rows of unit stride and numba is importable, the compiled bucket
    kernel counts every entry in one pass over the block (:func:`count_buckets`; smaller blocks
    once it has run in the process, :data:`BUCKET_MIN_ELEMS_WARM`); otherwise
    the pure-numpy paths of :func:`count_columns_numpy` do (the same integers either way).

    ``check`` (for a block nobody has validated yet) validates the whole block, raising on
    NaN or ``+inf``: the compiled kernel counts the bad scores as it reads them and calls it
    only if there are any; the numpy paths call it first.
    """
    m = q.size
    if m and USE_COMPILED and cols.size >= (BUCKET_MIN_ELEMS_WARM if _WARM else BUCKET_MIN_ELEMS):
        per_q = np.bincount(q, minlength=cols.shape[1])
        top = int(per_q.max())
        if MAX_LAYERS < top <= BUCKET_MAX_LAYERS and compiled_ok(cols):
            return count_buckets(cols, q, s, check=check)
    if check is not None:
        check()
    return count_columns_numpy(cols, q, s)


def count_columns_numpy(cols: FloatArray, q: IntArray, s: FloatArray) -> tuple[IntArray, IntArray]:
    """:func:`count_columns` in pure numpy, by three exact methods:

    * queries with at most :data:`MAX_LAYERS` entries: layered comparison of row tiles
      (:func:`_layer_counts`, reading ``cols`` once per layer in memory order);
    * queries with more: their :data:`LOW_LAYERS` lowest-scoring entries by layers too, and the
      others from the *candidates*, the docs scoring at least the lowest of those others
      (:func:`_count_candidates`), when a sample of rows says candidates are few;
    * otherwise their columns are transposed in sub-blocks and counted by :func:`count_sorted`.
    """
    d, n = cols.shape
    m = q.size
    g = np.empty(m, np.int64)
    t = np.empty(m, np.int64)
    if m == 0:
        return g, t
    per_q = np.bincount(q, minlength=n)
    first = np.cumsum(per_q) - per_q
    big_q = np.flatnonzero(per_q > MAX_LAYERS)
    big = per_q[q] > MAX_LAYERS
    maybe = big_q.size > 0 and _few_candidates(cols, big_q, q[big], s[big], np.add)  # cheap pre-check
    if maybe:
        # rank of each entry by score within its query (entries of a query are contiguous)
        order = np.lexsort((s, q))
        layer = np.empty(m, np.int64)
        layer[order] = np.arange(m, dtype=np.int64) - first[q[order]]
    else:
        layer = np.arange(m, dtype=np.int64) - first[q]
    by_cand = big & (layer >= LOW_LAYERS)
    by_layer = ~big | (layer < LOW_LAYERS)
    cand = np.flatnonzero(by_cand)
    use_cand = maybe and cand.size > 0 and _few_candidates(cols, big_q, q[cand], s[cand])
    if not use_cand:
        by_layer = ~big
    if by_layer.any():
        n_layers = int(layer[by_layer].max()) + 1
        dt = np.result_type(cols.dtype, np.float32)
        thr = np.full((n_layers, n), np.nan, dtype=dt)  # NaN: compares false, counts nothing
        thr[layer[by_layer], q[by_layer]] = s[by_layer]
        gt, eq = _layer_counts(cols, thr)
        g[by_layer] = gt[layer[by_layer], q[by_layer]]
        t[by_layer] = eq[layer[by_layer], q[by_layer]]
    if use_cand:  # in column ranges of at most _CAND_ELEMS elements (bounds the candidate keys)
        qc = q[cand]
        width = max(1, _CAND_ELEMS // max(d, 1))
        for a in range(int(qc[0]), int(qc[-1]) + 1, width):
            b = a + width
            lo, hi = np.searchsorted(qc, [a, b])
            if lo == hi:
                continue
            part = cand[lo:hi]
            sub_q = big_q[(big_q >= a) & (big_q < b)] - a
            g[part], t[part] = _count_candidates(cols[:, a:b], sub_q, q[part] - a, s[part])
    elif big_q.size:
        ent = np.flatnonzero(big)
        g[ent], t[ent] = _count_transposed(cols, big_q, q[ent], s[ent])
    return g, t


def _tile_columns(
    flat: FloatArray,
    ld: int,
    d: int,
    n: int,
    thr: FloatArray,
    n_thr: IntArray,
    ge: IntArray,
    eq: IntArray,
    tile: int,
    sparse: int,
) -> int:  # pragma: no cover - compiled by numba (see _bucket_kernel); tested through it
    """``ge[k, j] += #(x >= thr[k, j])`` and ``eq[k, j] += #(x == thr[k, j])`` for ``k <
    n_thr[j]``, over the scores ``x`` of column ``j`` of the ``d x n`` block whose row ``i`` is
    ``flat[i*ld : i*ld+n]``; returns how many scores of the whole block are ``< +inf`` (the
    others are NaN or ``+inf``: the block holds a bad score unless this is ``d * n``).

    ``thr`` (``L x n``) holds each column's thresholds ascending (NaN last). Tile by tile of
    ``tile`` rows, each column's scores are first copied to a contiguous buffer (a strided
    scalar gather, four adjacent columns per pass so that they share the rows' cache lines;
    the tile's rows stay in cache while its columns are copied), then the thresholds, lowest
    first, are plain reductions over the buffer: both counts packed in the two 16-bit halves of
    one int32 (``c += (x >= t) | (x == t) << 16``; ``tile`` < 2**16, so neither half
    overflows), which LLVM vectorises with the accumulators in registers (no counter is loaded
    or stored per element). After the lowest, the thresholds go two per pass (one load of each
    score serves both and the per-pass overhead is halved; on random 59,800 x 2,990 scores,
    about 6% less kernel time than one per pass, median of 12 interleaved rounds). Once no
    score of the tile reaches a threshold, none reaches the later ones, so the column stops
    there. When fewer than ``1/sparse`` of the tile's scores reach the lowest threshold (a
    model that ranks its relevant docs high), only they can reach later ones: they are
    collected and finished one by one. NaN compares false, so it never counts.

    Validation is fused: every score of the block is read once whatever its column's
    thresholds (a column copied to the buffer is copied whole, even if it stops early), and
    ``x < inf`` is counted in the first reduction over the buffer (in a separate one for a
    column without thresholds; four adjacent columns without any are read only to be
    counted). On the strided v2t view this replaces a separate ``np.max`` pass.
    """
    buf = np.empty((4, tile), flat.dtype)
    rows = np.empty(tile, np.int64)
    inf = np.inf
    ok = 0
    for r0 in range(0, d, tile):
        r = min(tile, d - r0)
        for j0 in range(0, n, 4):
            w = min(4, n - j0)
            src = r0 * ld + j0
            if w == 4:  # four adjacent columns per pass: they share the rows' cache lines
                if n_thr[j0] + n_thr[j0 + 1] + n_thr[j0 + 2] + n_thr[j0 + 3] == 0:
                    v = np.int32(0)  # no thresholds: the scores are only validated
                    for i in range(r):
                        p = src + i * ld
                        v = np.int32(
                            v
                            + np.int32(flat[p] < inf)
                            + np.int32(flat[p + 1] < inf)
                            + np.int32(flat[p + 2] < inf)
                            + np.int32(flat[p + 3] < inf)
                        )
                    ok += int(v)
                    continue
                for i in range(r):
                    p = src + i * ld
                    buf[0, i] = flat[p]
                    buf[1, i] = flat[p + 1]
                    buf[2, i] = flat[p + 2]
                    buf[3, i] = flat[p + 3]
            else:
                for jj in range(w):
                    for i in range(r):
                        buf[jj, i] = flat[src + jj + i * ld]
            for jj in range(w):
                j = j0 + jj
                kmax = n_thr[j]
                x = buf[jj]
                v = np.int32(0)  # scores < +inf (validation)
                if kmax == 0:
                    for i in range(r):
                        v = np.int32(v + np.int32(x[i] < inf))
                    ok += int(v)
                    continue
                t = thr[0, j]
                c = np.int32(0)
                for i in range(r):
                    xi = x[i]
                    c = np.int32(c + (np.int32(xi >= t) | (np.int32(xi == t) << 16)))
                    v = np.int32(v + np.int32(xi < inf))
                ok += int(v)
                cg = c & 0xFFFF
                ge[0, j] += cg
                eq[0, j] += (c >> 16) & 0xFFFF
                if cg == 0 or kmax == 1:
                    continue
                if cg * sparse < r:  # few scores reach the lowest threshold: finish them one by one
                    cnt = 0
                    for i in range(r):
                        rows[cnt] = i
                        cnt += x[i] >= t
                    for a in range(cnt):
                        xv = x[rows[a]]
                        k = 1
                        while k < kmax and xv >= thr[k, j]:
                            ge[k, j] += 1
                            eq[k, j] += xv == thr[k, j]
                            k += 1
                    continue
                k = 1
                while k < kmax:
                    if k + 1 == kmax:  # one threshold left
                        t = thr[k, j]
                        c = np.int32(0)
                        for i in range(r):
                            c = np.int32(c + (np.int32(x[i] >= t) | (np.int32(x[i] == t) << 16)))
                        ge[k, j] += c & 0xFFFF
                        eq[k, j] += (c >> 16) & 0xFFFF
                        break
                    t = thr[k, j]  # two thresholds per pass: one load of x[i] serves both
                    u = thr[k + 1, j]
                    c = np.int32(0)
                    e = np.int32(0)
                    for i in range(r):
                        xi = x[i]
                        c = np.int32(c + (np.int32(xi >= t) | (np.int32(xi == t) << 16)))
                        e = np.int32(e + (np.int32(xi >= u) | (np.int32(xi == u) << 16)))
                    ge[k, j] += c & 0xFFFF
                    eq[k, j] += (c >> 16) & 0xFFFF
                    ge[k + 1, j] += e & 0xFFFF
                    eq[k + 1, j] += (e >> 16) & 0xFFFF
                    if e == 0:  # no score reaches thr[k + 1]: none reaches the later ones
                        break
                    k += 2
    return ok


_KERNEL_LOCK = threading.Lock()
_KERNEL: list[Any] = []
_WARM: list[bool] = []  # non-empty once the compiled kernel has run in this process


def _bucket_kernel() -> Any:
    """:func:`_tile_columns` compiled by numba (imported here, on first use), or None without numba.

    ``nogil``: the engine's worker threads run it in parallel; ``cache``: compiled once per
    machine and dtype, then loaded from numba's cache.
    """
    with _KERNEL_LOCK:
        if not _KERNEL:
            _KERNEL.append(njit_optional(_tile_columns))
        return _KERNEL[0]


def njit_optional(fn: Any) -> Any:
    """``fn`` compiled by numba (``nogil``, cached on disk where it can be), or None without numba
    (imported here, on first use). Callers keep the result, under a lock, in a module-level slot."""
    try:
        import numba
    except ImportError:  # numba is optional (the ``fast`` extra)
        return None
    try:
        return numba.njit(nogil=True, cache=True, boundscheck=False)(fn)
    except RuntimeError:  # pragma: no cover - no writable cache directory
        return numba.njit(nogil=True, boundscheck=False)(fn)


def compiled_ok(cols: FloatArray) -> bool:
    """Whether the compiled kernel can read ``cols`` (float32/64, rows of unit stride) and numba loads."""
    if cols.ndim != 2 or cols.dtype not in (np.float32, np.float64):
        return False
    s0, s1 = cols.strides
    size = cols.dtype.itemsize
    if cols.shape[1] > 1 and s1 != size:
        return False
    if cols.shape[0] > 1 and (s0 < size * cols.shape[1] or s0 % size):
        return False
    return _bucket_kernel() is not None


def count_buckets(
    cols: FloatArray, q: IntArray, s: FloatArray, *, check: Callable[[], None] | None = None
) -> tuple[IntArray, IntArray]:
    """``g`` and ``t`` of every entry of a doc-major block by the compiled tile kernel.

    The entries of each column, sorted by score, are its thresholds (layer ``k`` holds the
    ``k``-th lowest of every column). One pass over the block in tiles of :data:`TILE_ROWS`
    rows (:func:`_tile_columns`) counts per threshold the scores at or above it and equal to
    it: an entry's ``t`` is the equal count of its own threshold and ``g`` the rest (entries
    with equal scores get equal counts). ``q`` is sorted; NaN scores never count; requires
    :func:`compiled_ok`. The kernel also counts the scores that are NaN or ``+inf``; if there
    are any, ``check`` is called (it raises the error that names the first one).
    """
    d, n = cols.shape
    m = q.size
    kern = _bucket_kernel()
    per_q = np.bincount(q, minlength=n)
    first = np.cumsum(per_q) - per_q
    order = np.lexsort((s, q))  # by column, then score (NaN last)
    qs = q[order]
    ss = np.asarray(s, dtype=cols.dtype)[order]
    rank = np.arange(m, dtype=np.int64) - first[qs]
    n_layers = int(per_q.max())
    thr = np.full((n_layers, n), np.inf, dtype=cols.dtype)
    thr[rank, qs] = ss
    ge = np.zeros((n_layers, n), np.int64)
    eq = np.zeros((n_layers, n), np.int64)
    size = cols.dtype.itemsize
    ld = cols.strides[0] // size if d > 1 else n
    flat = np.lib.stride_tricks.as_strided(cols, shape=((d - 1) * ld + n,), strides=(size,), writeable=False)
    tile = max(1, min(TILE_ROWS, (1 << 16) - 1))
    n_ok = kern(flat, ld, d, n, thr, per_q.astype(np.int64), ge, eq, tile, TILE_SPARSE)
    if check is not None and n_ok != d * n:
        check()
    if not _WARM:
        _WARM.append(True)
    g = np.empty(m, np.int64)
    t = np.empty(m, np.int64)
    g[order] = ge[rank, qs] - eq[rank, qs]
    t[order] = eq[rank, qs]
    return g, t


def _order_keys(v: FloatArray) -> npt.NDArray[np.int64]:
    """float32 → int64 in [0, 2^32) with the same order (``-0.0`` and ``0.0`` equal; no NaN)."""
    u = (np.asarray(v, dtype=np.float32) + np.float32(0.0)).view(np.uint32).astype(np.int64)
    return np.where(u >= 1 << 31, (1 << 32) - 1 - u, u + (1 << 31))


def _lower_bounds(
    n: int, big_q: IntArray, q: IntArray, s: FloatArray, reduce: Any = np.minimum
) -> npt.NDArray[np.float32]:
    """Per query: the lowest score among its entries (``reduce=np.add``: their mean), NaN for
    queries outside ``big_q`` or without entries. ``q`` is sorted."""
    out = np.full(n, np.nan, dtype=np.float32)  # NaN: no candidate in that column
    if q.size:
        starts = np.flatnonzero(np.concatenate([[True], q[1:] != q[:-1]]))
        val = reduce.reduceat(np.asarray(s, dtype=np.float64), starts)
        if reduce is np.add:  # the mean
            val = val / np.diff(np.append(starts, q.size))
        out[q[starts]] = val.astype(np.float32)
    big = np.zeros(n, dtype=bool)
    big[big_q] = True
    out[~big] = np.nan
    return out


def _few_candidates(
    cols: FloatArray, big_q: IntArray, q: IntArray, s: FloatArray, reduce: Any = np.minimum
) -> bool:
    """True when a sample of rows says at most :data:`CANDIDATE_MAX` of the elements of the
    ``big_q`` columns score at least their lowest entry (``reduce=np.add``: their mean entry,
    a quick pre-check; either way only the path is chosen, every path is exact) and the scores
    are float32 or narrower."""
    if cols.dtype.kind != "f" or cols.dtype.itemsize > 4:
        return False
    d, n = cols.shape
    lo = _lower_bounds(n, big_q, q, s, reduce)
    sample = cols[:: max(1, d // 512)]
    with np.errstate(invalid="ignore"):
        frac = np.count_nonzero(sample >= lo) / max(1, sample.shape[0] * big_q.size)
    return bool(frac <= CANDIDATE_MAX)


def _count_candidates(
    cols: FloatArray, big_q: IntArray, q: IntArray, s: FloatArray
) -> tuple[IntArray, IntArray]:
    """``g, t`` from the *candidates*: the docs scoring at least the lowest given entry of their
    query. Docs below it count in neither ``g`` nor ``t`` of any of these entries, so sorting
    the candidates alone (as ``query << 32 | order key`` integers) and two binary searches give
    the exact counts. Pays off when few docs score above the entries (a model that ranks its
    relevant docs high; see :func:`_few_candidates`). float32 (or narrower) scores only.
    """
    d, n = cols.shape
    lo = _lower_bounds(n, big_q, q, s)
    keys = []
    rows = max(8, _TILE_ELEMS // max(n, 1))
    for r0 in range(0, d, rows):
        tile = cols[r0 : r0 + rows]
        with np.errstate(invalid="ignore"):
            mask = tile >= lo
        flat = np.flatnonzero(mask)  # one scan of a mostly-False mask; then cheap gathers
        r, c = np.divmod(flat, n)
        keys.append((c << 32) | _order_keys(tile[r, c]))
    allk = np.sort(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
    qk = q.astype(np.int64) << 32
    ek = qk | _order_keys(s)
    right = np.searchsorted(allk, ek, side="right")
    left = np.searchsorted(allk, ek, side="left")
    end = np.searchsorted(allk, qk + (1 << 32), side="left")
    return end - right, right - left


def _count_transposed(
    cols: FloatArray, big_q: IntArray, q: IntArray, s: FloatArray
) -> tuple[IntArray, IntArray]:
    """``g, t`` by copying the columns ``big_q`` to row order in sub-blocks, then :func:`count_sorted`."""
    d, n = cols.shape
    g = np.empty(q.size, np.int64)
    t = np.empty(q.size, np.int64)
    width = max(1, _SUB_ELEMS // max(d, 1))
    local = np.full(n, -1, np.int64)
    dense = big_q.size * 2 >= int(big_q[-1]) - int(big_q[0]) + 1  # mostly contiguous: slice, no gather
    groups = (
        [
            np.arange(a, min(a + width, int(big_q[-1]) + 1))
            for a in range(int(big_q[0]), int(big_q[-1]) + 1, width)
        ]
        if dense
        else [big_q[i : i + width] for i in range(0, big_q.size, width)]
    )
    for sub in groups:
        a, b = int(sub[0]), int(sub[-1]) + 1
        block = np.empty((sub.size, d), dtype=cols.dtype)
        for r in range(0, d, 256):  # tiled transpose keeps reads in cache
            part = cols[r : r + 256, a:b] if dense else cols[r : r + 256][:, sub]
            block[:, r : r + 256] = part.T
        local[sub] = np.arange(sub.size)
        ent = np.flatnonzero(local[q] >= 0)
        if ent.size:
            g[ent], t[ent] = count_sorted(block, local[q[ent]], s[ent], has_nan=False)
        local[sub] = -1
    return g, t


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
