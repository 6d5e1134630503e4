"""Set-overlap kernels: IoU of token sets through sparse binary matrices.

A family of sets (one per caption) becomes a binary CSR matrix (sets × vocabulary). For a
block of query rows, the intersection sizes with every document set are one sparse
product ``A_block @ B.T``; the union is ``|a| + |b| - |a ∩ b|``. Only pairs that share an
item get a non-zero IoU, so every block stays sparse; no Python loop runs over pairs.

IoU(a, b) = |a ∩ b| / |a ∪ b|, and 0 when both sets are empty (Wray et al.'s
``create_iou`` divides by 0.0001 in that case, which also gives 0).

:func:`video_max_iou` is the same IoU reduced to a query × video **max**, in numpy alone (no
SciPy import, which costs a fresh process about 0.2 s): the intersection sizes come from the
inverted index of the doc sets, counted in a dense byte array per block of queries, and every
(query, doc, shared item) triple scatters its pair's IoU into the result with
``np.maximum.at``. The IoU of a pair is computed with the same float32 operations as
:func:`video_block`, and a maximum does not depend on order, so the values are the same bit
for bit. SciPy is imported only by the functions that build sparse matrices.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import scipy.sparse as sp

#: a set family as CSR arrays ``(indptr, indices)``: row ``i`` holds the sorted, distinct item
#: ids ``indices[indptr[i]:indptr[i + 1]]`` (the pattern of :func:`binary_matrix`)
Rows = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]


def csr_rows(
    lengths: npt.NDArray[np.int64], ids: npt.NDArray[np.int64], width: int, kind: str = "quicksort"
) -> Rows:
    """Sorted, distinct CSR rows from row lengths and the item ids of each row, in row order.

    Vectorised: one sort of the ``(row, id)`` keys ``row · width + id`` (a repeated item counts
    once). The keys come in row order, so ``kind="stable"`` (timsort on nearly sorted data) is
    several times faster than the default; :func:`binary_matrix` keeps the default.
    """
    n = lengths.size
    width = max(int(width), 1)
    key = np.repeat(np.arange(n, dtype=np.int64) * width, lengths)
    key += ids
    key.sort(kind=kind)  # type: ignore[arg-type]
    if key.size:
        key = key[np.r_[True, key[1:] != key[:-1]]]
    rows, cols = np.divmod(key, width)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols


def binary_rows(
    sets: Sequence[Sequence[str]], vocab: dict[str, int] | None = None
) -> tuple[Rows, dict[str, int]]:
    """:func:`binary_matrix` as numpy CSR arrays (no SciPy): ``((indptr, indices), vocab)``."""
    from itertools import chain

    vocab = {} if vocab is None else vocab
    lengths = np.fromiter(map(len, sets), np.int64, len(sets))
    add = vocab.setdefault
    ids = np.array([add(w, len(vocab)) for w in chain.from_iterable(sets)], dtype=np.int64)
    return csr_rows(lengths, ids, len(vocab)), vocab


def binary_matrix(
    sets: Sequence[Sequence[str]], vocab: dict[str, int] | None = None
) -> tuple[sp.csr_matrix, dict[str, int]]:
    """Binary CSR (n_sets × |vocab|) of membership; ``vocab`` is extended in place if given.

    New items get the next ids in order of first appearance. Each row's column indices are
    sorted and distinct (a repeated item counts once). Vectorised: one dictionary look-up per
    item, then one sort of the ``(row, id)`` keys.
    """
    import scipy.sparse as sp

    (indptr, cols), vocab = binary_rows(sets, vocab)
    width = max(len(vocab), 1)
    data = np.ones(cols.size, dtype=np.float32)
    m = sp.csr_matrix((data, cols.astype(np.int32), indptr), shape=(len(sets), width))
    m.has_sorted_indices = True
    return m, vocab


def align_vocab(a: sp.csr_matrix, b: sp.csr_matrix) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Pad two matrices built on one growing vocabulary to the same number of columns."""
    import scipy.sparse as sp

    n = max(a.shape[1], b.shape[1])
    if a.shape[1] < n:
        a = sp.csr_matrix((a.data, a.indices, a.indptr), shape=(a.shape[0], n))
    if b.shape[1] < n:
        b = sp.csr_matrix((b.data, b.indices, b.indptr), shape=(b.shape[0], n))
    return a, b


def iou_block(
    a: sp.csr_matrix,
    b_t: sp.csc_matrix | sp.csr_matrix,
    size_a: npt.NDArray[np.float32],
    size_b: npt.NDArray[np.float32],
) -> sp.csr_matrix:
    """IoU of every row set of ``a`` with every column set of ``b_t`` (= ``B.T``), as CSR.

    Only pairs with a non-empty intersection are stored (all others are 0).
    """
    inter = (a @ b_t).tocsr()
    inter.sort_indices()
    rows = np.repeat(np.arange(inter.shape[0]), np.diff(inter.indptr))
    d = inter.data
    inter.data = (d / (size_a[rows] + size_b[inter.indices] - d)).astype(np.float32)
    return inter


def iou_blocks(
    parts: Sequence[tuple[sp.csr_matrix, sp.csr_matrix]], chunk: int = 2048
) -> Iterator[tuple[int, sp.csr_matrix]]:
    """Mean IoU over ``parts`` (pairs of query/doc binary matrices), block by block of rows.

    With one part this is plain IoU (BoW); with the verb and noun parts it is Wray's PoS /
    SYN proxy: ``(IoU(verbs) + IoU(nouns)) / 2``. Yields ``(row_start, csr_block)``.
    """
    prepared = prepare(parts)
    n = prepared[0][0].shape[0]
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        acc: sp.csr_matrix | None = None
        for q, dt, sq, sd in prepared:
            blk = iou_block(q[start:stop], dt, sq[start:stop], sd)
            acc = blk if acc is None else acc + blk
        assert acc is not None
        if len(prepared) > 1:
            acc = acc.multiply(np.float32(1.0 / len(prepared))).tocsr()
        acc.sort_indices()
        yield start, acc


def iou_dense(
    parts: Sequence[tuple[sp.csr_matrix, sp.csr_matrix]], chunk: int = 2048
) -> npt.NDArray[np.float32]:
    """The full query × doc matrix of mean IoU (small inputs only)."""
    nq, nd = parts[0][0].shape[0], parts[0][1].shape[0]
    out = np.zeros((nq, nd), dtype=np.float32)
    for start, blk in iou_blocks(parts, chunk):
        out[start : start + blk.shape[0]] = blk.toarray()
    return out


def prepare(
    parts: Sequence[tuple[sp.csr_matrix, sp.csr_matrix]],
) -> list[tuple[sp.csr_matrix, sp.csr_matrix, npt.NDArray[np.float32], npt.NDArray[np.float32]]]:
    """``(Q, D.T as CSR, |q|, |d|)`` per part, on a shared vocabulary width."""
    out = []
    for q, d in parts:
        q, d = align_vocab(q, d)
        out.append(
            (
                q.tocsr(),
                d.T.tocsr(),
                np.diff(q.indptr).astype(np.float32),
                np.diff(d.indptr).astype(np.float32),
            )
        )
    return out


def video_block(
    prepared: Sequence[tuple[sp.csr_matrix, sp.csr_matrix, npt.NDArray[np.float32], npt.NDArray[np.float32]]],
    start: int,
    stop: int,
    group_starts: npt.NDArray[np.int64],
    group_counts: npt.NDArray[np.float32],
    agg: str,
    weights: npt.NDArray[np.float32] | None = None,
    doc_group: npt.NDArray[np.integer] | None = None,
) -> npt.NDArray[np.float32]:
    """Mean-over-parts IoU of query rows ``start:stop`` with all docs, reduced per doc group.

    Docs must be ordered so that each group (a video's captions) is contiguous, starting at
    ``group_starts``. Returns (rows × groups) float32.

    ``max`` stays sparse: one sparse product per part gives the intersection sizes of the
    pairs that share an item, their IoUs (parts summed as sparse matrices, then scaled by
    ``1/parts``) are reduced straight into the (rows × groups) result with ``np.maximum.at``
    on the key ``row · groups + group(doc)``. Work and memory grow with the number of
    intersecting pairs, not with rows × docs; pairs that share nothing are 0 and absent
    groups stay 0, as in the dense reduction (the maximum does not depend on order, so the
    values are the same bit for bit). ``doc_group`` (group of each doc) may be passed to avoid
    recomputing it per block.

    ``mean`` scatters the IoUs into a dense (rows × docs) float32 buffer and sums each group
    in doc order with ``np.add.reduceat``, divided by ``group_counts``. ``weights`` multiplies
    each doc's value before a ``mean`` (multiplicity of a deduplicated caption;
    ``group_counts`` must then be the summed weights).
    """
    import scipy.sparse as sp

    n_docs = prepared[0][1].shape[1]
    rows_n = stop - start
    if agg == "max":
        n_groups = group_starts.size
        if doc_group is None:
            doc_group = np.repeat(np.arange(n_groups, dtype=np.int64), np.diff(np.r_[group_starts, n_docs]))
        acc: sp.csr_matrix | None = None
        for q, dt, sq, sd in prepared:
            inter = q[start:stop] @ dt
            d = inter.data.astype(np.float32, copy=False)
            iou = np.repeat(sq[start:stop], np.diff(inter.indptr))  # |q| + |d| - |q ∩ d|, then the IoU
            iou += sd[inter.indices]
            iou -= d
            np.divide(d, iou, out=iou)
            if len(prepared) == 1:
                acc = inter
                acc.data = iou
                break
            blk = sp.csr_matrix((iou, inter.indices, inter.indptr), shape=inter.shape)
            acc = blk if acc is None else acc + blk
        assert acc is not None
        vals = acc.data
        if len(prepared) > 1:
            vals = vals * np.float32(1.0 / len(prepared))
        kt = np.dtype(np.int32) if rows_n * n_groups < 2**31 else np.dtype(np.int64)
        key: npt.NDArray[np.signedinteger] = np.repeat(
            np.arange(0, rows_n * n_groups, n_groups, dtype=kt), np.diff(acc.indptr)
        )
        key += doc_group[acc.indices].astype(kt, copy=False)
        out = np.zeros(rows_n * n_groups, dtype=np.float32)
        np.maximum.at(out, key, vals)
        return out.reshape(rows_n, n_groups)
    dense = np.zeros((rows_n, n_docs), dtype=np.float32)
    for q, dt, sq, sd in prepared:
        inter = q[start:stop] @ dt
        rows = np.repeat(np.arange(rows_n, dtype=np.int32), np.diff(inter.indptr))
        d = inter.data.astype(np.float32, copy=False)
        iou = d / (sq[start:stop][rows] + sd[inter.indices] - d)
        if weights is not None:
            iou *= weights[inter.indices]
        dense[rows, inter.indices] += iou
    if len(prepared) > 1:
        dense *= np.float32(1.0 / len(prepared))
    return np.asarray(np.add.reduceat(dense, group_starts, axis=1) / group_counts, dtype=np.float32)


def video_max_iou(
    q: Rows,
    d: Rows,
    doc_video: npt.NDArray[np.integer],
    n_videos: int,
    *,
    out: npt.NDArray[np.float32] | None = None,
    block_triples: int = 1 << 18,
    block_cells: int = 1 << 18,
) -> npt.NDArray[np.float32]:
    """Query × video relevance ``max over the video's docs of IoU(query set, doc set)``.

    ``q`` and ``d`` are set families as CSR rows on one vocabulary (:data:`Rows`);
    ``doc_video[j]`` is the video of doc ``j`` (any order). Equal bit for bit to
    :func:`video_block` with ``agg="max"`` on the same sets (module docstring), without SciPy.

    Per block of queries: every triple (query, shared item, doc) comes from the inverted index
    of the docs; ``np.add.at`` counts them per (query, doc) in a dense byte array, which gives
    each triple its pair's intersection size, hence its IoU; ``np.maximum.at`` keeps the largest
    per (query, video). A pair that shares ``k`` items is written ``k`` times with the same
    value, which a maximum ignores. A block holds at most ``block_triples`` triples (about 40
    bytes each; the triples of one query item are slices of the posting arrays, copied rather
    than gathered) and ``block_cells`` (query, doc) byte counters, or 16 queries if more, or one
    query if it alone needs more: the defaults keep a block in cache (on 1k-A, 256 K beat 1 M
    and 64 K). A video without docs, and a pair that shares nothing, stay 0.
    """
    q_ptr, q_idx = (np.asarray(a, dtype=np.int64) for a in q)
    d_ptr, d_idx = (np.asarray(a, dtype=np.int64) for a in d)
    nq, nd = q_ptr.size - 1, d_ptr.size - 1
    res = np.zeros((nq, n_videos), dtype=np.float32) if out is None else out
    if out is not None:
        res[...] = 0
    if not (nq and nd and q_idx.size and d_idx.size):
        return res
    width = int(max(q_idx.max(), d_idx.max())) + 1
    d_len = np.diff(d_ptr)
    q_len = np.diff(q_ptr)
    max_rows = max(min(16, block_cells), block_cells // nd)
    # inverted index of the docs: postings post_ptr[i]:post_ptr[i + 1] hold item i
    post_ptr = np.zeros(width + 1, dtype=np.int64)
    np.cumsum(np.bincount(d_idx, minlength=width), out=post_ptr[1:])
    hits = np.diff(post_ptr)[q_idx]  # docs holding each query item
    cum = np.zeros(q_idx.size + 1, dtype=np.int64)
    np.cumsum(hits, out=cum[1:])
    at_query = cum[q_ptr]  # triples before each query
    small = max(d_idx.size, max_rows * max(nd, n_videos)) < 2**31
    it = np.dtype(np.int32) if small else np.dtype(np.int64)  # index type of the per-triple arrays
    # per posting: its doc, the doc's set size and the doc's video, so that the triples of a
    # query item are slices (copied, not gathered)
    by_item = d_idx.astype(np.uint16) if width <= 1 << 16 else d_idx  # 16 bits: a radix sort
    post_doc = np.repeat(np.arange(nd, dtype=it), d_len)[np.argsort(by_item, kind="stable")]
    post_size = d_len.astype(np.float32)[post_doc]
    post_video = np.asarray(doc_video).astype(it)[post_doc]
    # per query item: its query and the query's set size
    entry_row: npt.NDArray[np.signedinteger] = np.repeat(np.arange(nq, dtype=it), q_len)
    entry_size = np.repeat(q_len.astype(np.float32), q_len)
    lo, hi = post_ptr[q_idx].tolist(), post_ptr[q_idx + 1].tolist()
    count_t = np.dtype(np.min_scalar_type(int(q_len.max())))  # |q ∩ d| <= |q|
    one = count_t.type(1)
    direct = res.flags.c_contiguous
    s = 0
    while s < nq:
        e = int(np.searchsorted(at_query, at_query[s] + block_triples, side="right")) - 1
        e = min(nq, max(e, s + 1), s + max_rows)
        a, b = int(q_ptr[s]), int(q_ptr[e])
        h = hits[a:b]
        if cum[b] > cum[a]:
            spans = [slice(x, y) for x, y in zip(lo[a:b], hi[a:b])]
            local = (entry_row[a:b] - s).astype(np.intp)  # ufunc.at and take index fastest with intp
            key = np.repeat(local * nd, h)  # (query, doc) of each triple
            key += np.concatenate([post_doc[x] for x in spans])
            counts = np.zeros((e - s) * nd, dtype=count_t)
            np.add.at(counts, key, one)
            inter = counts[key].astype(np.float32)
            del counts, key
            iou = np.repeat(entry_size[a:b], h)  # |q| + |d| - |q ∩ d|, then the IoU (as video_block)
            iou += np.concatenate([post_size[x] for x in spans])
            iou -= inter
            np.divide(inter, iou, out=iou)
            cell = np.repeat(local * n_videos, h)  # (query, video) of each triple
            cell += np.concatenate([post_video[x] for x in spans])
            blk = res[s:e].reshape(-1) if direct else np.zeros((e - s) * n_videos, dtype=np.float32)
            np.maximum.at(blk, cell, iou)
            if not direct:
                res[s:e] = blk.reshape(e - s, n_videos)
        s = e
    return res


def chunk_rows(n_docs: int, budget_bytes: int = 128 << 20) -> int:
    """Query rows per block so that the dense (rows × docs) float32 buffer fits ``budget_bytes``."""
    return max(1, budget_bytes // (4 * max(1, n_docs)))
