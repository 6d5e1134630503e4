"""Set-overlap kernels: IoU of token sets through sparse binary matrices.

A family of sets (one per caption) becomes a binary CSR matrix (sets × vocabulary). For a
block of query rows, the intersection sizes with every document set are one sparse
product ``A_block @ B.T``; the union is ``|a| + |b| - |a ∩ b|``. Only pairs that share an
item get a non-zero IoU, so every block stays sparse; no Python loop runs over pairs.

IoU(a, b) = |a ∩ b| / |a ∪ b|, and 0 when both sets are empty (Wray et al.'s
``create_iou`` divides by 0.0001 in that case, which also gives 0).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp


def binary_matrix(
    sets: Sequence[Sequence[str]], vocab: dict[str, int] | None = None
) -> tuple[sp.csr_matrix, dict[str, int]]:
    """Binary CSR (n_sets × |vocab|) of membership; ``vocab`` is extended in place if given.

    New items get the next ids in order of first appearance. Each row's column indices are
    sorted and distinct (a repeated item counts once). Vectorised: one dictionary look-up per
    item, then one sort of the ``(row, id)`` keys.
    """
    from itertools import chain

    vocab = {} if vocab is None else vocab
    lengths = np.fromiter(map(len, sets), np.int64, len(sets))
    add = vocab.setdefault
    ids = np.array([add(w, len(vocab)) for w in chain.from_iterable(sets)], dtype=np.int64)
    width = max(len(vocab), 1)
    key = np.repeat(np.arange(len(sets), dtype=np.int64) * width, lengths)
    key += ids
    key.sort()
    if key.size:
        key = key[np.r_[True, key[1:] != key[:-1]]]
    rows, cols = np.divmod(key, width)
    indptr = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=len(sets)), out=indptr[1:])
    data = np.ones(key.size, dtype=np.float32)
    m = sp.csr_matrix((data, cols.astype(np.int32), indptr), shape=(len(sets), width))
    m.has_sorted_indices = True
    return m, vocab


def align_vocab(a: sp.csr_matrix, b: sp.csr_matrix) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Pad two matrices built on one growing vocabulary to the same number of columns."""
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


def chunk_rows(n_docs: int, budget_bytes: int = 128 << 20) -> int:
    """Query rows per block so that the dense (rows × docs) float32 buffer fits ``budget_bytes``."""
    return max(1, budget_bytes // (4 * max(1, n_docs)))
