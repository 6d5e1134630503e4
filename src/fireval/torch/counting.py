"""The torch counting kernel: the counts of :mod:`fireval.metrics.counting`, on the tensors' device.

For every marked entry (a judged doc of a query; ``unjudged`` lower or condensed) the measure
code needs its score ``s``, ``g`` (docs of the query scoring strictly above ``s``), ``t`` (docs
scoring equal to ``s``, itself included) and, for ``ties="docid"``, the docs of its tie group
that the tie-break order puts first. This module computes exactly those integers with torch on
the device that holds the scores and hands them to the host as a
:class:`~fireval.metrics.entries.MarkedCounts` (a few numbers per judged pair, never the score
block); :func:`fireval.metrics.entries.judged_entries` and the measure definitions then run as
for numpy input. Comparisons are the same IEEE comparisons numpy makes, on the same dtype, so the
integers are identical (float16/bfloat16 are widened to float32 and integers to float64, as
``fireval.api.as_score_matrix`` does).

Three strategies, as on the CPU:

* *direct*: compare each entry's score with its whole row (cost m·D), in batches of rows
  bounded by an element budget; used with few judged docs per query (t2v with instance labels)
  and for ``condensed`` (where the unjudged docs are NaN, which compares false);
* *sorted*: sort each row once, then a branchless lock-step binary search for all entries at
  once (``<=`` gives ``right``, ``<`` gives ``left``: ``g = D - right``, ``t = right - left``);
  used with many judged docs per query (v2t), unless
* *candidates*: with many judged docs per query and float32 scores, when at most 5% of the scores
  reach the lowest judged score of their query (a model that ranks its relevant docs high), only
  those are sorted, as ``query << 32 | order key`` integers, and searched.

torch is imported by this module only; ``import fireval`` never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

import torch
from fireval.metrics.entries import DIRECT_MAX_PER_ROW, MarkedCounts

#: mean judged docs per query up to which the direct strategy is used, per device type (others:
#: the CPU kernel's DIRECT_MAX_PER_ROW). torch's row sort on a CPU costs more than 64 compare
#: passes (10k x 1k, 2 threads); on accelerators the crossover has not been measured yet.
DIRECT_MAX_BY_DEVICE = {"cpu": 64.0}
#: largest fraction of the block's scores that may be candidates for :func:`_candidates`
CANDIDATE_MAX = 0.05
#: comparison elements per batch of the direct strategy on a CPU (bools: 16 MB)
CPU_BATCH_ELEMS = 1 << 24
#: on CUDA and other accelerators
DEVICE_BATCH_ELEMS = 1 << 27


def as_float(t: torch.Tensor) -> torch.Tensor:
    """``t`` as numpy input becomes float: half types to float32, integers and bools to float64."""
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.float()
    if not t.is_floating_point():
        if t.is_complex():
            raise TypeError(f"scores must be real numbers, found dtype {t.dtype}")
        return t.double()
    return t


def _batch_elems(device: torch.device) -> int:
    return CPU_BATCH_ELEMS if device.type == "cpu" else DEVICE_BATCH_ELEMS


def validate(block: torch.Tensor, check: Callable[[npt.NDArray[Any]], None] | None) -> None:
    """One reduction: the maximum is NaN if any score is and ``+inf`` if any is. Only a bad
    block is copied to the host, where ``check`` names the first bad score and raises."""
    if check is None or block.numel() == 0:
        return
    if not bool(block.max() < float("inf")):
        check(block.detach().cpu().numpy())


def count_marked(
    block: torch.Tensor,
    q: npt.NDArray[np.int64],
    doc: npt.NDArray[np.int64],
    *,
    condensed: bool = False,
    tie_rank: npt.NDArray[np.int64] | None = None,
    check: Callable[[npt.NDArray[Any]], None] | None = None,
) -> MarkedCounts:
    """Counts of the marked entries ``(q[i], doc[i])`` of a query × doc ``block`` (a tensor).

    ``q`` (sorted) and ``doc`` are host arrays; the counts come back as host arrays. With
    ``condensed`` only the marked docs of each query are ranked (the others are left out);
    with ``tie_rank`` (doc → position in the tie-break order) the docid offsets are counted.
    ``check`` validates the block (it raises on NaN or ``+inf``).
    """
    block = as_float(block.detach())
    validate(block, check)
    dev = block.device
    n, d = block.shape
    m = int(q.size)
    if m == 0:
        z = np.zeros(0, np.int64)
        return MarkedCounts(np.zeros(0), z, z, z if tie_rank is not None else None)
    qt = torch.from_numpy(np.ascontiguousarray(q, np.int64)).to(dev)
    dt = torch.from_numpy(np.ascontiguousarray(doc, np.int64)).to(dev)
    work = block
    if condensed:  # unjudged docs removed: NaN is neither above nor equal to any score
        mask = torch.zeros((n, d), dtype=torch.bool, device=dev)
        mask[qt, dt] = True
        work = block.masked_fill(~mask, float("nan"))
    s = work[qt, dt]
    one_per_row = m == n and bool((q == np.arange(n)).all())
    if condensed or m <= DIRECT_MAX_BY_DEVICE.get(dev.type, DIRECT_MAX_PER_ROW) * n:
        g, t = _direct(work, qt, s, one_per_row)
    else:
        got = _candidates(work, qt, s)
        g, t = got if got is not None else _sorted(work, qt, s)
    offsets = None
    if tie_rank is not None:
        offsets = _docid(work, qt, s, dt, torch.from_numpy(np.asarray(tie_rank, np.int64)).to(dev))
    parts = [g, t] if offsets is None else [g, t, offsets]
    ints = torch.stack([p.to(torch.int64) for p in parts]).cpu().numpy()  # one transfer for the counts
    return MarkedCounts(s.cpu().numpy(), ints[0], ints[1], None if offsets is None else ints[2])


def _direct(
    work: torch.Tensor, q: torch.Tensor, s: torch.Tensor, one_per_row: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """``g, t`` by comparing each entry's score with its whole row, in bounded batches."""
    m, d = q.numel(), work.shape[1]
    g = torch.empty(m, dtype=torch.int64, device=work.device)
    t = torch.empty_like(g)
    step = max(1, _batch_elems(work.device) // max(d, 1))
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        rows = work[lo:hi] if one_per_row else work.index_select(0, q[lo:hi])
        sv = s[lo:hi, None]
        g[lo:hi] = _count(rows > sv)
        t[lo:hi] = _count(rows == sv)
    return g, t


def _count(mask: torch.Tensor) -> torch.Tensor:
    """True per row (a byte sum into int32: half the time of ``bool.sum``, which widens to int64)."""
    return mask.view(torch.uint8).sum(dim=1, dtype=torch.int32)


def _search(flat: torch.Tensor, d: int, q: torch.Tensor, s: torch.Tensor, strict: bool) -> torch.Tensor:
    """Per entry, the number of elements of sorted row ``q`` that are ``< s`` (strict) or ``<= s``.

    The same lock-step search as :func:`fireval.metrics.counting._search`: P = largest power of
    two <= d; the first probe at index P-1 picks the window, then P/2, ..., 1 halve it; every
    probe stays inside the row."""
    cmp = torch.lt if strict else torch.le
    p = 1 << (int(d).bit_length() - 1)
    base = q * d - 1
    idx = base + cmp(flat[base + p], s).long() * (d - p + 1)
    step = p >> 1
    while step:
        idx = idx + cmp(flat[idx + step], s).long() * step
        step >>= 1
    return idx - base


def _sorted(work: torch.Tensor, q: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``g, t`` from row-sorted scores and two batched binary searches (no NaN in ``work``)."""
    d = work.shape[1]
    flat = torch.sort(work.contiguous(), dim=1).values.reshape(-1)
    right = _search(flat, d, q, s, strict=False)
    left = _search(flat, d, q, s, strict=True)
    return d - right, right - left


def _order_keys(x: torch.Tensor) -> torch.Tensor:
    """float32 -> int64 in [0, 2^32) with the same order (``-0.0`` equal to ``0.0``; no NaN)."""
    u = (x + 0.0).view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    return torch.where(u >= 1 << 31, (1 << 32) - 1 - u, u + (1 << 31))


def _candidates(
    work: torch.Tensor, q: torch.Tensor, s: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``g, t`` from the *candidates* alone: the docs of a row scoring at least its lowest entry.

    No other doc is above or equal to any entry of the row, so sorting the candidates as
    ``row << 32 | order key`` integers and three searches per entry give the exact counts (as
    :func:`fireval.metrics.counting._count_candidates` does on the CPU). One pass over the block
    finds them; None (use :func:`_sorted`) unless the scores are float32 and the candidates are at
    most :data:`CANDIDATE_MAX` of the block (a model that ranks its relevant docs high has few).
    """
    if work.dtype != torch.float32:
        return None
    n, d = work.shape
    low = torch.full((n,), float("inf"), dtype=work.dtype, device=work.device)
    low = low.scatter_reduce(0, q, s, reduce="amin", include_self=True)
    mask = work >= low[:, None]
    if int(mask.sum()) > CANDIDATE_MAX * n * d:
        return None
    r, c = mask.nonzero(as_tuple=True)
    keys = torch.sort((r << 32) | _order_keys(work[r, c])).values
    ek = (q << 32) | _order_keys(s)
    right = torch.searchsorted(keys, ek, right=True)
    left = torch.searchsorted(keys, ek, right=False)
    end = torch.searchsorted(keys, (q + 1) << 32, right=False)
    return end - right, right - left


def _docid(
    work: torch.Tensor, q: torch.Tensor, s: torch.Tensor, doc: torch.Tensor, tie_rank: torch.Tensor
) -> torch.Tensor:
    """Per entry, the docs of its tie group that the tie-break order puts first."""
    m, d = q.numel(), work.shape[1]
    out = torch.empty(m, dtype=torch.int64, device=work.device)
    step = max(1, _batch_elems(work.device) // max(d, 1))
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        rows = work.index_select(0, q[lo:hi])
        eq = (rows == s[lo:hi, None]) & (tie_rank[None, :] < tie_rank[doc[lo:hi], None])
        out[lo:hi] = _count(eq)
    return out
