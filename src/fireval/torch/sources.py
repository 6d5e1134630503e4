"""Block sources whose scores live on a torch device: a score tensor, or embeddings.

Both are :class:`~fireval.core.run.BlockSource` objects with two additions that the metrics
engine looks for (:func:`fireval.metrics.entries.device_counter`):

* ``count_marked(direction, start, stop, q, doc, ...)``: the block of queries ``start:stop``
  is formed on the device and its judged entries are counted there
  (:func:`fireval.torch.counting.count_marked`); only the counts come to the host;
* ``chunk_rows(direction, n_docs)``: query rows per block, from the free device memory
  (``torch.cuda.mem_get_info`` on CUDA) or a fixed budget on the CPU.

``block()`` still returns a host numpy block: the modes that mark every doc (``unjudged``
upper) or search over labellings (worst/best) read chunks through it, one chunk at a time.

:class:`TensorEmbeddings` computes scores as :class:`fireval.scale.embeddings.EmbeddingScores`
does: ``sim="dot"`` or ``"cosine"`` (rows divided by their L2 norm), several rows per item
(3-D ``(items, k, dim)`` or 2-D plus an id map) pooled by ``"mean"`` (mean of the normalised
rows, normalised again for cosine) or ``"max"`` (the largest row × row score of the pair); a v2t
block is ``(T @ V[a:b].T).T``, the caption × video orientation of t2v. A matrix product on
another device (or with another blocking) may differ from the CPU's in the last bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

import torch
from fireval.core.direction import Direction
from fireval.core.errors import InputError
from fireval.metrics.entries import MarkedCounts
from fireval.torch.counting import as_float, count_marked

#: score elements per block on a CPU (float32: 16 MB)
CPU_BLOCK_ELEMS = 1 << 22
#: fraction of the free device memory one block and its temporaries may use
DEVICE_MEMORY_FRACTION = 0.5
#: device bytes per score of a block: the block, a sorted copy, sort indices, comparison masks
BYTES_PER_SCORE = 32
#: at most this many scores per block (also bounds the host arrays of one chunk's entries)
MAX_BLOCK_ELEMS = 1 << 30


def block_elems(device: torch.device) -> int:
    """Scores per block: from the free memory of a CUDA device, a fixed budget elsewhere."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(max(1 << 20, min(MAX_BLOCK_ELEMS, free * DEVICE_MEMORY_FRACTION // BYTES_PER_SCORE)))
    return CPU_BLOCK_ELEMS


def _host(block: torch.Tensor) -> npt.NDArray[np.floating]:
    return np.ascontiguousarray(as_float(block.detach()).cpu().numpy())


class _DeviceSource:
    """What both sources share: counting on the device, block sizes, host blocks."""

    device: torch.device

    @property
    def shape(self) -> tuple[int, int]:  # pragma: no cover - overridden
        raise NotImplementedError

    def device_block(self, direction: Direction, start: int, stop: int) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def block(self, direction: Direction, start: int, stop: int) -> npt.NDArray[np.floating]:
        """Scores of queries ``start:stop`` copied to the host (one chunk)."""
        return _host(self.device_block(Direction.parse(direction), start, stop))

    def count_marked(
        self,
        direction: Direction,
        start: int,
        stop: int,
        q: npt.NDArray[np.int64],
        doc: npt.NDArray[np.int64],
        *,
        condensed: bool = False,
        tie_rank: npt.NDArray[np.int64] | None = None,
        check: Callable[[npt.NDArray[Any]], None] | None = None,
    ) -> MarkedCounts:
        block = self.device_block(Direction.parse(direction), start, stop)
        return count_marked(block, q, doc, condensed=condensed, tie_rank=tie_rank, check=check)

    def rows_per_item(self, direction: Direction) -> float:
        return 1.0

    def chunk_rows(self, direction: Direction, n_docs: int) -> int:
        per = max(1, n_docs) * self.rows_per_item(direction)
        return max(1, int(block_elems(self.device) // per))


class TensorScores(_DeviceSource):
    """A caption × video score tensor on any device (``transposed``: it is video × caption)."""

    def __init__(self, scores: torch.Tensor, *, transposed: bool = False) -> None:
        if scores.dim() != 2:
            raise InputError(
                f"scores must be a 2-D matrix (captions x videos), got shape {tuple(scores.shape)}"
            )
        if 0 in scores.shape:
            raise InputError(f"score matrix is empty (shape {tuple(scores.shape)})")
        if scores.is_complex():
            raise InputError(f"scores must be real numbers, found dtype {scores.dtype}")
        self.scores = scores.detach().T if transposed else scores.detach()
        self.device = scores.device

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.scores.shape[0]), int(self.scores.shape[1]))

    def device_block(self, direction: Direction, start: int, stop: int) -> torch.Tensor:
        if direction is Direction.T2V:
            return self.scores[start:stop]
        return self.scores[:, start:stop].T


class _Side:
    """One side's embeddings on the device, prepared once: ``x`` rows, ``owner`` (row → item,
    rows grouped by item) and ``bounds`` (item ``i`` owns rows ``bounds[i]:bounds[i+1]``), or
    ``owner`` None when each item has one row."""

    def __init__(self, x: torch.Tensor, owner: torch.Tensor | None, bounds: torch.Tensor | None, n: int):
        self.x, self.owner, self.bounds, self.n = x, owner, bounds, n
        self.per_item = 1.0 if owner is None else x.shape[0] / max(1, n)

    def rows(self, a: int, b: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.owner is None:
            return self.x[a:b], None
        assert self.bounds is not None
        lo, hi = int(self.bounds[a]), int(self.bounds[b])
        return self.x[lo:hi], self.owner[lo:hi] - a


def _normalise(x: torch.Tensor, what: str) -> torch.Tensor:
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    if bool((norm == 0).any()):
        row = int(torch.nonzero(norm.reshape(-1) == 0)[0])
        raise InputError(
            f"a {what} embedding (row {row}) has norm 0: cosine similarity is undefined for it "
            "(use sim='dot', or drop the row)"
        )
    return x / norm


def _prepare_side(
    arr: torch.Tensor,
    ids: Any,
    names: Sequence[str] | None,
    what: str,
    sim: str,
    pool: str,
    dtype: torch.dtype,
    device: torch.device,
) -> _Side:
    from fireval.scale.embeddings import item_owners  # the CPU path's id resolution (numpy only)

    x = arr.detach().to(device=device, dtype=dtype)
    if not bool(torch.isfinite(x).all()):
        raise InputError(f"{what} embeddings hold NaN or inf")
    owner: torch.Tensor | None = None
    if x.dim() == 3:
        if ids is not None:
            raise InputError(f"{what} embeddings are 3-D (items x k x dim): they need no id map")
        n, k = int(x.shape[0]), int(x.shape[1])
        x = x.reshape(n * k, x.shape[-1])
        owner = torch.arange(n, device=device).repeat_interleave(k) if k > 1 else None
    elif x.dim() == 2:
        n = int(x.shape[0])
        if ids is not None:
            own, counts = item_owners(ids, names, what, n)
            n = len(counts)
            order = np.argsort(own, kind="stable")
            x = x[torch.from_numpy(order).to(device)]
            owner = torch.from_numpy(own[order]).to(device)
    else:
        raise InputError(
            f"{what} embeddings must be 2-D (rows x dim) or 3-D (items x k x dim), got {tuple(x.shape)}"
        )
    if sim == "cosine":
        x = _normalise(x, what)
    if owner is None:
        return _Side(x, None, None, n)
    counts_t = torch.bincount(owner, minlength=n)
    if pool == "mean":
        pooled = torch.zeros((n, x.shape[1]), dtype=x.dtype, device=device).index_add_(0, owner, x)
        pooled = pooled / counts_t.to(x.dtype)[:, None]
        if sim == "cosine":
            pooled = _normalise(pooled, what)
        return _Side(pooled, None, None, n)
    bounds = torch.zeros(n + 1, dtype=torch.int64)
    bounds[1:] = torch.cumsum(counts_t.cpu(), 0)
    return _Side(x, owner, bounds, n)


def _reduce_max(m: torch.Tensor, owner: torch.Tensor | None, n: int, dim: int) -> torch.Tensor:
    """Max of ``m`` over the rows (``dim`` 0) or columns (1) of each item."""
    if owner is None:
        return m
    shape = list(m.shape)
    shape[dim] = n
    idx = owner[:, None].expand_as(m) if dim == 0 else owner[None, :].expand_as(m)
    out = torch.full(shape, float("-inf"), dtype=m.dtype, device=m.device)
    return out.scatter_reduce(dim, idx, m, reduce="amax", include_self=True)


class TensorEmbeddings(_DeviceSource):
    """Caption × video scores from text and video embeddings (tensors), block by block on
    their device (see the module docstring for ``sim`` and ``pool``)."""

    def __init__(
        self,
        text: Any,
        video: Any,
        *,
        sim: str = "cosine",
        pool: str = "mean",
        text_ids: Any = None,
        video_ids: Any = None,
        caption_ids: Sequence[str] | None = None,
        video_names: Sequence[str] | None = None,
    ) -> None:
        from fireval.scale.embeddings import check_sim_pool

        sim, pool = check_sim_pool(sim, pool, ("sim", "pool"))
        tt = text if isinstance(text, torch.Tensor) else None
        vt = video if isinstance(video, torch.Tensor) else None
        ref = tt if tt is not None else vt
        if ref is None:
            raise InputError("TensorEmbeddings needs a torch tensor for text or video embeddings")
        self.device = ref.device
        text = tt if tt is not None else torch.as_tensor(np.asarray(text))
        video = vt if vt is not None else torch.as_tensor(np.asarray(video))
        if text.shape[-1] != video.shape[-1]:
            raise InputError(
                f"text embeddings have dimension {text.shape[-1]} but video embeddings "
                f"{video.shape[-1]}; they must be from one model"
            )
        dtype = torch.promote_types(text.dtype, video.dtype)
        if not dtype.is_floating_point:
            dtype = torch.float64
        self.sim, self.pool = sim, pool
        self._t = _prepare_side(text, text_ids, caption_ids, "caption", sim, pool, dtype, self.device)
        self._v = _prepare_side(video, video_ids, video_names, "video", sim, pool, dtype, self.device)

    @property
    def shape(self) -> tuple[int, int]:
        return (self._t.n, self._v.n)

    def rows_per_item(self, direction: Direction) -> float:
        return self._t.per_item * self._v.per_item

    def _product(
        self,
        t: torch.Tensor,
        to: torch.Tensor | None,
        nt: int,
        v: torch.Tensor,
        vo: torch.Tensor | None,
        nv: int,
    ) -> torch.Tensor:
        m = t @ v.T
        m = _reduce_max(m, vo, nv, 1)
        return _reduce_max(m, to, nt, 0)

    def device_block(self, direction: Direction, start: int, stop: int) -> torch.Tensor:
        if direction is Direction.T2V:
            t, to = self._t.rows(start, stop)
            return self._product(t, to, stop - start, self._v.x, self._v.owner, self._v.n)
        v, vo = self._v.rows(start, stop)
        return self._product(self._t.x, self._t.owner, self._t.n, v, vo, stop - start).T


def evaluate_tensor_embeddings(
    text_emb: Any,
    video_emb: Any,
    judgments: Any = None,
    collection: Any = None,
    *,
    sim: str = "cosine",
    pool: str = "mean",
    text_ids: Any = None,
    video_ids: Any = None,
    block_size: int | None = None,
    client: Any = None,
    name: str = "embeddings",
    **options: Any,
) -> Any:
    """:func:`fireval.scale.embeddings.evaluate_embeddings` for tensors: blocks (matmul, then
    counts) on the tensors' device, ``block_size`` query rows each (default: from the free
    device memory)."""
    from fireval.core.run import Run
    from fireval.metrics import evaluate
    from fireval.scale.embeddings import check_collection_shape, labels_and_block_size

    if client is not None:
        raise InputError("client= (Dask) takes arrays or files; tensors are evaluated on their own device")
    if text_emb is None or video_emb is None:
        raise InputError("give both text_emb= and video_emb=")
    src = TensorEmbeddings(
        text_emb,
        video_emb,
        sim=sim,
        pool=pool,
        text_ids=text_ids,
        video_ids=video_ids,
        caption_ids=collection.caption_ids if collection is not None else None,
        video_names=collection.video_ids if collection is not None else None,
    )
    check_collection_shape(src.shape, collection, ("text_emb", "video_emb"))
    judgments, chunk_rows = labels_and_block_size(judgments, collection, block_size, "block_size")
    return evaluate(Run(name, blocks=src), judgments, collection=collection, chunk_rows=chunk_rows, **options)
