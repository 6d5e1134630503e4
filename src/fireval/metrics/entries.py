"""Marked entries of a chunk and their tie groups: what the measures are computed from.

For a chunk of ``n`` queries × ``D`` docs (steps 1-4 of :mod:`fireval.metrics.kernel`):

1. *Marked entries* are the docs whose label matters: the judged docs of each query
   (``lower``/``condensed``), or every doc (``upper``, where unjudged = relevant).
2. For each entry, ``g`` (docs with a strictly greater score) and ``t`` (docs with an equal
   score) are counted, by the numpy kernels (:mod:`fireval.metrics.counting`; no per-query
   Python loop) in :func:`make_entries`, or by a block source's own kernel on its device
   (:func:`device_counter`, e.g. torch: :mod:`fireval.torch.counting`). :class:`MarkedCounts`
   is the one interface between a counting kernel and the measures; :func:`judged_entries`
   turns it into :class:`Entries`. A v2t chunk of a dense caption × video matrix (and of an
   embedding source) is a doc-major view, counted on its columns in place (no transpose;
   :func:`use_view`, :func:`view_chunk_rows`, ``Run.block(view=True)``).
3. Non tie-aware policies turn each entry into its own group at a strict rank.
4. Entries are grouped by (query, g) (:func:`make_groups`): one :class:`Groups` row per tie
   group that holds a marked doc, with ``r`` relevant docs, their gain sums, ``j`` judged docs,
   ``c`` relevant docs above it and (for bpref, infAP) ``nonrel`` judged irrelevant docs and
   ``pooled`` pooled-but-unjudged docs.

Relevant = grade > 0; an entry with score ``-inf`` is not retrieved (``Entries.fin`` False). A
grade < 0 in the CSR arrays marks a pooled-but-unjudged doc (``Judgments.pooled``, added by the
driver for infAP under ``lower`` only): an entry that is neither judged nor relevant, with gain 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.run import Run, transpose_tiled
from fireval.metrics.counting import count_columns, count_direct, count_sorted, dense_entries, docid_offsets
from fireval.metrics.ties import strict_positions

_T = TypeVar("_T", bound=np.generic)
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: mean marked docs per query up to which direct comparison beats sorting the rows
DIRECT_MAX_PER_ROW = 6.0
#: most queries per chunk when the block is a view of a dense matrix's columns (v2t)
VIEW_CHUNK_MAX = 16384
#: average marked entries per widened view chunk
VIEW_CHUNK_ENTRIES = 1 << 17


@dataclass
class Entries:
    """Marked (query, doc) entries of a chunk, with their place in the ranking."""

    q: I64
    doc: I64
    g: I64
    t: I64
    rel: npt.NDArray[np.bool_]
    gain: F64
    gain_exp: F64
    judged: npt.NDArray[np.bool_]
    fin: npt.NDArray[np.bool_]
    #: pooled but unjudged (grade < 0 in the CSR arrays); None when the chunk has none
    pooled: npt.NDArray[np.bool_] | None = None


@dataclass
class Groups:
    """Tie groups that contain at least one marked entry, sorted by (query, g)."""

    q: I64
    g: I64
    t: I64
    r: F64
    gain: F64
    gain_exp: F64
    judged: F64
    fin: npt.NDArray[np.bool_]
    c: F64  # relevant docs strictly above the group
    #: judged irrelevant docs in the group (only when ``make_groups(..., nonrel=True)``; bpref, infAP)
    nonrel: F64 | None = None
    #: pooled-but-unjudged docs in the group (with ``nonrel``, when the entries have any; infAP)
    pooled: F64 | None = None


@dataclass
class MarkedCounts:
    """What a counting kernel returns for the marked (judged) entries of a chunk.

    The one interface between a counting kernel (numpy: :mod:`fireval.metrics.counting`, called by
    :func:`make_entries`; torch on any device: :mod:`fireval.torch.counting`) and the measure
    definitions: per entry, its score ``s``, ``g`` (docs scoring strictly above), ``t`` (docs
    scoring equal, itself included) and, with ``ties="docid"``, ``offsets`` (docs of its tie group
    that the tie-break order puts first). A new count joins here and in both kernels.
    """

    s: npt.NDArray[np.floating]
    g: I64
    t: I64
    offsets: I64 | None = None


def rows_of(indptr: I64) -> I64:
    """The row of each stored element of a CSR matrix with row pointers ``indptr``."""
    return np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))


def make_entries(
    block: npt.NDArray[np.floating],
    indptr: I64,
    indices: I64,
    grades: F64,
    *,
    unjudged: str,
    ties: str,
    tie_rank: I64 | None,
    max_grade: float,
    check: Callable[[npt.NDArray[np.floating]], None] | None = None,
) -> tuple[Entries, I64, I64]:
    """Entries of a chunk; also returns the tie-aware ``g, t`` (for the tie report and presets).

    ``block`` is query × doc. It may be a doc-major view (e.g. ``scores[:, a:b].T``): with
    ``unjudged="lower"`` and a tie policy other than ``docid`` its columns are counted in place
    (:func:`~fireval.metrics.counting.count_columns`); otherwise it is copied to row order first.
    ``check`` is given when ``block`` has not been validated: ``check(block)`` raises on NaN or
    ``+inf``; it runs fused with the column count when there is one (which calls it only if
    the count meets a bad score), else first.
    """
    n, d = block.shape
    col_major = _doc_major(block)
    if not block.flags.c_contiguous and (not col_major or unjudged != "lower" or ties == "docid"):
        block = transpose_tiled(block.T) if col_major else np.ascontiguousarray(block)
        col_major = False
    if check is not None and not (col_major and unjudged == "lower" and ties != "docid"):
        check(block)  # (otherwise count_columns below runs it, fused with the count)
        check = None
    indptr = np.asarray(indptr, np.int64)
    indices = np.asarray(indices, np.int64)
    grades = np.asarray(grades, np.float64)
    qj = rows_of(indptr)
    if unjudged == "upper":
        judged_d = np.zeros((n, d), dtype=bool)
        judged_d[qj, indices] = True
        grade_d = np.zeros((n, d), dtype=np.float64)
        grade_d[qj, indices] = grades
        q, doc, g, t = dense_entries(block)
        flat = q * d + doc
        judged = judged_d.reshape(-1)[flat]
        grade = grade_d.reshape(-1)[flat]
        rel = ~judged | (grade > 0)
        gain = np.where(judged, grade, max_grade)
        gain = np.where(rel, gain, 0.0)
        s = np.asarray(block, dtype=np.float64).reshape(-1)[flat]
        raw_g, raw_t = g, t
        if ties == "docid":
            assert tie_rank is not None
            q2, doc2, g2, _ = dense_entries(block, tie_rank)
            pos = np.empty(n * d, np.int64)
            pos[q2 * d + doc2] = g2
            g = pos[flat]
            t = np.ones_like(g)
    else:
        q, doc, grade = qj, indices, grades
        work = block
        has_nan = False
        if unjudged == "condensed":
            mask = np.zeros((n, d), dtype=bool)
            mask[q, doc] = True
            work = np.where(mask, block, np.nan)
            has_nan = True
        if col_major:  # a doc-major view (lower bound only): count on its columns in place
            s = np.asarray(block[q, doc])
            g, t = count_columns(block.T, q, s, check=None if check is None else partial(check, block))
        else:
            s = np.asarray(work).reshape(-1).take(q * d + doc)
            if q.size <= DIRECT_MAX_PER_ROW * n:
                g, t = count_direct(work, q, s)
            else:
                g, t = count_sorted(work, q, s, has_nan)
        offsets = None
        if ties == "docid":
            assert tie_rank is not None
            offsets = docid_offsets(work, q, s, doc, tie_rank)
        return judged_entries(q, doc, grade, MarkedCounts(s, g, t, offsets), ties=ties)
    return _finish(q, doc, g, t, rel, gain, judged, s, raw_g, raw_t, ties)


def judged_entries(
    q: I64,
    doc: I64,
    grade: F64,
    counts: MarkedCounts,
    *,
    ties: str,
) -> tuple[Entries, I64, I64]:
    """:class:`Entries` of the judged docs (``unjudged`` lower or condensed) from their counts.

    Shared by every counting kernel (the numpy one in :func:`make_entries`, the torch one in
    :mod:`fireval.torch`), so the measure code downstream sees the same arrays whichever
    counted them. Returns the entries and the tie-aware ``g, t``.
    """
    q = np.asarray(q, np.int64)
    doc = np.asarray(doc, np.int64)
    grade = np.asarray(grade, np.float64)
    judged = grade >= 0
    pooled = None if judged.all() else ~judged
    rel = grade > 0
    gain = np.where(rel, grade, 0.0)
    raw_g, raw_t = np.asarray(counts.g, np.int64), np.asarray(counts.t, np.int64)
    g, t = raw_g, raw_t
    if ties == "docid":
        assert counts.offsets is not None
        g = g + np.asarray(counts.offsets, np.int64)
        t = np.ones_like(g)
    s = np.asarray(counts.s, dtype=np.float64)
    return _finish(q, doc, g, t, rel, gain, judged, s, raw_g, raw_t, ties, pooled)


def _finish(
    q: I64,
    doc: I64,
    g: I64,
    t: I64,
    rel: npt.NDArray[np.bool_],
    gain: F64,
    judged: npt.NDArray[np.bool_],
    s: npt.NDArray[np.floating],
    raw_g: I64,
    raw_t: I64,
    ties: str,
    pooled: npt.NDArray[np.bool_] | None = None,
) -> tuple[Entries, I64, I64]:
    fin = np.isfinite(s)
    # grades above MAX_EXP_GRADE overflow 2^g; evaluate() refuses them for nDCG_exp, and no other
    # measure reads gain_exp, so the overflow is silenced rather than warned about
    with np.errstate(over="ignore"):
        gain_exp = np.where(rel, np.exp2(gain) - 1.0, 0.0)
    if ties in ("optimistic", "pessimistic"):
        g = strict_positions(q, g, t, gain, judged, doc, ties)
        t = np.ones_like(g)
    return Entries(q, doc, g, t, rel, gain, gain_exp, judged, fin, pooled), raw_g, raw_t


def _doc_major(block: npt.NDArray[np.generic]) -> bool:
    """True when the query axis is the contiguous one (a transposed view of doc-major memory)."""
    return (
        block.ndim == 2
        and not block.flags.c_contiguous
        and block.shape[0] > 1
        and block.strides[0] == block.itemsize
    )


def device_counter(run: Run, unjudged: str) -> Callable[..., MarkedCounts] | None:
    """The block source's own counting kernel (``count_marked``, e.g. torch on the tensors'
    device; :mod:`fireval.torch.sources`), when the mode counts judged docs only (lower,
    condensed); else None (the chunk is read as a host block and counted here)."""
    if run.blocks is None or unjudged not in ("lower", "condensed"):
        return None
    return getattr(run.blocks, "count_marked", None)


def use_view(run: Run, direction: Direction, unjudged: str, ties: str) -> bool:
    """Whether chunks read ``run``'s blocks as views (v2t columns counted in place)."""
    return unjudged == "lower" and ties != "docid"


def view_chunk_rows(
    run: Run, direction: Direction, n_queries: int, rows: int, threads: int, n_entries: int = 0
) -> int:
    """Queries per chunk: wider for v2t views of a dense matrix, so that every row of the
    matrix is read in long contiguous runs (a narrow column strip costs ~10x per element), but
    with at most :data:`VIEW_CHUNK_ENTRIES` marked entries per chunk on average (the per-entry
    work slows down ~3x once its arrays leave the cache)."""
    if direction is Direction.V2T and run.scores is not None:
        share = -(-n_queries // max(1, threads))
        by_entries = max(1, VIEW_CHUNK_ENTRIES * n_queries // max(1, n_entries))
        return max(rows, min(n_queries, share, VIEW_CHUNK_MAX, by_entries))
    if direction is Direction.V2T and run.blocks is not None:
        # each v2t block multiplies all the caption embeddings: 4x larger blocks read them 4x less
        return max(rows, min(n_queries, 4 * rows))
    return rows


def _sorted_order(key: I64) -> I64 | None:
    """Stable ascending order of integer ``key`` (None when it is already sorted).

    The entry index is packed into the low bits so that a plain ``np.sort`` (much faster
    than a stable argsort) yields exactly the stable order.
    """
    if key.size < 2 or not (key[1:] < key[:-1]).any():
        return None
    bits = int(key.size - 1).bit_length()
    kmax = int(key.max())
    if int(key.min()) >= 0 and (kmax + 1).bit_length() + bits <= 62:
        packed = np.sort((key << bits) | np.arange(key.size, dtype=np.int64))
        return packed & ((1 << bits) - 1)
    return np.argsort(key, kind="stable")


def starts_of_runs(a: npt.NDArray[np.generic]) -> npt.NDArray[np.bool_]:
    """Mask of the first element of each run of equal values."""
    first = np.ones(a.size, dtype=bool)
    first[1:] = a[1:] != a[:-1]
    return first


def make_groups(e: Entries, d: int, *, nonrel: bool = False) -> Groups:
    """Aggregate entries into tie groups keyed by (query, g); with ``nonrel`` also count each
    group's judged irrelevant docs (``Groups.nonrel``, for bpref and infAP) and, when the entries
    mark some, its pooled-but-unjudged docs (``Groups.pooled``, for infAP)."""
    if e.q.size == 0:
        z = np.zeros(0, np.int64)
        zf = np.zeros(0)
        return Groups(z, z, z, zf, zf, zf, zf, np.zeros(0, bool), zf, zf if nonrel else None)
    nr: F64 | None = None
    pl: F64 | None = None
    with_pooled = nonrel and e.pooled is not None
    key = e.q * (d + 1) + e.g
    order = _sorted_order(key)
    ks = key if order is None else key[order]
    first = starts_of_runs(ks)
    if first.all():  # every group holds one entry (no ties among marked docs)

        def take(a: npt.NDArray[_T]) -> npt.NDArray[_T]:
            return a if order is None else a[order]

        r = take(e.rel).astype(np.float64)
        gq, gg, gt, gfin = take(e.q), take(e.g), take(e.t), take(e.fin)
        gain, gain_exp = take(e.gain), take(e.gain_exp)
        judged = take(e.judged).astype(np.float64)
        if nonrel:
            nr = take(e.judged & ~e.rel).astype(np.float64)
        if with_pooled:
            pl = take(e.pooled).astype(np.float64)  # type: ignore[arg-type]
    else:
        if order is None:
            order = np.arange(key.size, dtype=np.int64)
        starts = np.flatnonzero(first)
        o = order[starts]
        r = np.add.reduceat(e.rel[order].astype(np.float64), starts)
        gq, gg, gt, gfin = e.q[o], e.g[o], e.t[o], e.fin[o]
        gain = np.add.reduceat(e.gain[order], starts)
        gain_exp = np.add.reduceat(e.gain_exp[order], starts)
        judged = np.add.reduceat(e.judged[order].astype(np.float64), starts)
        if nonrel:
            nr = np.add.reduceat((e.judged & ~e.rel)[order].astype(np.float64), starts)
        if with_pooled:
            pl = np.add.reduceat(e.pooled[order].astype(np.float64), starts)  # type: ignore[index]
    # relevant docs strictly above: exclusive cumulative sum of r within the query
    cs = np.cumsum(r)
    qfirst = starts_of_runs(gq)
    base = np.maximum.accumulate(np.where(qfirst, np.arange(gq.size), 0))
    c = cs - r - (cs[base] - r[base])
    return Groups(
        q=gq,
        g=gg,
        t=gt,
        r=r,
        gain=gain,
        gain_exp=gain_exp,
        judged=judged,
        fin=gfin,
        c=c,
        nonrel=nr,
        pooled=pl,
    )
