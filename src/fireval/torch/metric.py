"""``TVRMetric``: text–video retrieval measures for a training loop, safe under DDP.

Use::

    metric = fireval.torch.TVRMetric("msrvtt-1ka")            # collection (object, name or file)
    for batch in loader:                                      # each rank sees its shard
        metric.update(text_emb=t, video_emb=v, caption_ids=batch["caption_id"], video_ids=batch["video_id"])
    scores = metric.compute()     # {"t2v": {"R@1": ..., ...}, "v2t": {...}, "both": {...}}, on every rank
    metric.reset()

Algorithm of :meth:`TVRMetric.compute`:

1. Each rank concatenates what it was given. Under ``torch.distributed`` (initialised, more than
   one process) the ids are gathered with ``all_gather_object`` and the embeddings with
   ``all_gather`` (padded to the longest rank, then cut), in rank order.
2. Repeats are dropped by id, keeping the first: ``DistributedSampler`` pads the last batch with
   repeated samples, and a video seen with each of its captions is given once per caption.
3. Every caption and every video of the collection must have been given, and nothing else: a
   missing or unknown id raises :class:`~fireval.core.errors.InputError` (one line, the same on
   every rank, since the check runs after the gather).
4. The rows are put in collection order and evaluated from the embeddings on their device
   (:class:`fireval.torch.sources.TensorEmbeddings`). Under DDP the query-row chunks are dealt
   round-robin to the ranks (:func:`fireval.metrics.kernel.chunk_mapper`); each rank computes its
   chunks, the per-query results are gathered, and every rank aggregates all of them, so every
   rank returns exactly what one process computes (chunking never changes a per-query value).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import torch
from fireval.core.errors import InputError

__all__ = ["TVRMetric"]


def _dist() -> Any:
    """``torch.distributed`` when a process group is initialised with more than one process."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


def _ids(ids: Any, n: int, what: str) -> list[Any]:
    """Ids as a list of ``n`` str/int (tensors and arrays of ints become ints)."""
    if ids is None:
        raise InputError(f"TVRMetric.update: {what}_emb= needs {what}_ids= (one id per row)")
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu().reshape(-1).tolist()
    elif isinstance(ids, np.ndarray):
        ids = ids.reshape(-1).tolist()
    elif isinstance(ids, str | int):
        ids = [ids]
    out = list(ids)
    if len(out) != n:
        raise InputError(f"TVRMetric.update: {len(out)} {what}_ids for {n} rows of {what}_emb")
    return out


class TVRMetric:
    """TVR measures from embeddings accumulated over batches (see the module docstring).

    ``collection``: a :class:`~fireval.core.Collection`, a registered name or a file.
    ``measures``: None = the default set (or the preset's); ``direction``: ``"both"``, ``"t2v"``
    or ``"v2t"``. Keywords: ``labels`` (None = instance labels; Judgments or label specs as
    :func:`fireval.evaluate` takes), ``ties``, ``unjudged``, ``preset``, ``sim`` (``"cosine"``,
    ``"dot"``), ``pool`` (``"mean"``, ``"max"``; frames of a 3-D video tensor), ``process_group``.
    Ids are the collection's caption/video ids (str) or their positions (int).
    """

    def __init__(
        self,
        collection: Any,
        measures: Any = None,
        direction: str = "both",
        *,
        labels: Any = None,
        ties: str = "tie-aware",
        unjudged: str | Sequence[str] = "lower",
        preset: str | None = None,
        sim: str = "cosine",
        pool: str = "mean",
        process_group: Any = None,
    ) -> None:
        from fireval.api import resolve_collection

        self.collection = resolve_collection(collection)
        self.measures = measures
        self.direction = direction
        self.labels = labels
        self.options: dict[str, Any] = {"ties": ties, "unjudged": unjudged, "preset": preset}
        self.sim, self.pool = sim, pool
        self.process_group = process_group
        self._index = {
            "caption": {c: i for i, c in enumerate(self.collection.caption_ids)},
            "video": {v: i for i, v in enumerate(self.collection.video_ids)},
        }
        self.evaluation: Any = None
        """The full :class:`~fireval.metrics.Evaluation` of the last :meth:`compute`."""
        self.reset()

    def reset(self) -> None:
        """Forget every update (call after each evaluation epoch)."""
        self._emb: dict[str, list[torch.Tensor]] = {"caption": [], "video": []}
        self._id: dict[str, list[Any]] = {"caption": [], "video": []}

    def update(
        self,
        text_emb: torch.Tensor | None = None,
        video_emb: torch.Tensor | None = None,
        caption_ids: Any = None,
        video_ids: Any = None,
    ) -> None:
        """Add a batch: text rows with their caption ids and/or video rows (2-D, or 3-D with
        frames) with their video ids. The tensors are detached and kept on their device."""
        for what, emb, ids in (("caption", text_emb, caption_ids), ("video", video_emb, video_ids)):
            if emb is None:
                if ids is not None:
                    raise InputError(f"TVRMetric.update: {what}_ids= given without its embeddings")
                continue
            if not isinstance(emb, torch.Tensor) or emb.dim() not in (2, 3):
                raise InputError(f"TVRMetric.update: {what} embeddings must be a 2-D or 3-D tensor")
            self._emb[what].append(emb.detach())
            self._id[what].extend(_ids(ids, int(emb.shape[0]), what))

    # ------------------------------------------------------------------ gathering
    def _local(self, what: str) -> torch.Tensor | None:
        parts = self._emb[what]
        return torch.cat(parts) if parts else None

    def _gather(self, dist: Any) -> tuple[dict[str, torch.Tensor | None], dict[str, list[Any]]]:
        """Ids and embeddings of every rank, in rank order."""
        embs: dict[str, torch.Tensor | None] = {}
        ids: dict[str, list[Any]] = {}
        group = self.process_group
        world = dist.get_world_size(group)
        for what in ("caption", "video"):
            local = self._local(what)
            meta = None if local is None else (tuple(local.shape), str(local.dtype))
            got: list[Any] = [None] * world
            dist.all_gather_object(got, (self._id[what], meta), group=group)
            ids[what] = [i for part, _ in got for i in part]
            metas = [m for _, m in got if m is not None]
            if not metas:
                embs[what] = None
                continue
            tails = {m[0][1:] for m in metas}
            if len(tails) != 1 or len({m[1] for m in metas}) != 1:
                raise InputError(
                    f"TVRMetric: the ranks' {what} embeddings disagree in shape or dtype: {metas}"
                )
            rows = [0 if m is None else m[0][0] for _, m in got]
            tail, dtype = (
                metas[0][0][1:],
                local.dtype if local is not None else getattr(torch, metas[0][1][6:]),
            )
            comm = _comm_device(dist, group)  # gloo gathers host tensors, NCCL CUDA ones
            pad = torch.zeros((max(rows), *tail), dtype=dtype, device=comm)
            if local is not None:
                pad[: local.shape[0]] = local.to(comm)
            bufs = [torch.empty_like(pad) for _ in range(world)]
            dist.all_gather(bufs, pad, group=group)
            target = local.device if local is not None else comm
            embs[what] = torch.cat([b[:r] for b, r in zip(bufs, rows, strict=True)]).to(target)
        return embs, ids

    def _ordered(self, what: str, emb: torch.Tensor | None, ids: list[Any]) -> torch.Tensor:
        """Rows in collection order, repeats dropped by id; refuses unknown and missing ids."""
        index = self._index[what]
        names = self.collection.caption_ids if what == "caption" else self.collection.video_ids
        n = len(names)
        pos = np.empty(len(ids), np.int64)
        for k, i in enumerate(ids):
            j = index.get(i) if isinstance(i, str) else (int(i) if isinstance(i, int | np.integer) else None)
            if j is None or not 0 <= j < n:
                raise InputError(
                    f"TVRMetric: {what} id {i!r} (given to update) is not in collection "
                    f"{self.collection.name!r} ({n} {what}s)"
                )
            pos[k] = j
        first = np.unique(pos, return_index=True)[1] if pos.size else np.zeros(0, np.int64)
        seen = pos[first]
        if seen.size != n or emb is None:
            have = np.zeros(n, bool)
            have[seen] = True
            miss = np.flatnonzero(~have)
            raise InputError(
                f"TVRMetric: {miss.size} of the {n} {what}s of collection {self.collection.name!r} were "
                f"never given to update() (first: {names[int(miss[0])]!r}); every {what} must be evaluated"
            )
        order = first[np.argsort(seen)]
        return emb[torch.from_numpy(order).to(emb.device)]

    # ------------------------------------------------------------------ compute
    def compute(self) -> dict[str, dict[str, float | None]]:
        """The measures, as ``Evaluation.to_dict(names="tvr")``: ``{direction: {name: value}}``
        in percent (MdR/MnR as ranks). The same numbers on every rank."""
        from fireval.api import evaluate
        from fireval.metrics.kernel import chunk_mapper
        from fireval.torch.sources import block_elems

        dist = _dist()
        if dist is not None:
            embs, ids = self._gather(dist)
        else:
            embs = {w: self._local(w) for w in ("caption", "video")}
            ids = dict(self._id)
        text = self._ordered("caption", embs["caption"], ids["caption"])
        video = self._ordered("video", embs["video"], ids["video"]).to(text.device)
        mapper = None
        chunk_rows = None
        if dist is not None:
            n_c, n_v = self.collection.shape
            k = 1  # rows per item pair that pool="max" multiplies (frames)
            if self.pool == "max":
                k = (text.shape[1] if text.dim() == 3 else 1) * (video.shape[1] if video.dim() == 3 else 1)
            local = max(1, block_elems(text.device) // (max(n_c, n_v) * k))
            world = dist.get_world_size(self.process_group)
            share = math.ceil(min(n_c, n_v) / world)  # at least one chunk per rank in each direction
            chunk_rows = _all_min(dist, self.process_group, min(local, share))
            mapper = rank_mapper(dist, self.process_group)
        with chunk_mapper(mapper):
            ev = evaluate(
                collection=self.collection,
                labels=self.labels,
                measures=self.measures,
                direction=self.direction,
                text_emb=text,
                video_emb=video,
                sim=self.sim,
                pool=self.pool,
                block_size=chunk_rows,
                **self.options,
            )
        self.evaluation = ev
        return ev.to_dict(names="tvr")  # type: ignore[no-any-return]

    # the torchmetrics-style call: update and return nothing (the measures need every query)
    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.update(*args, **kwargs)


def _comm_device(dist: Any, group: Any) -> torch.device:
    """The device collectives of this backend take (NCCL: the current CUDA device)."""
    if str(dist.get_backend(group)).lower() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _all_min(dist: Any, group: Any, value: int) -> int:
    t = torch.tensor([int(value)], dtype=torch.int64, device=_comm_device(dist, group))
    dist.all_reduce(t, op=dist.ReduceOp.MIN, group=group)
    return int(t.item())


def rank_mapper(dist: Any, group: Any = None) -> Callable[..., Iterator[Any]]:
    """A chunk mapper (:func:`fireval.metrics.kernel.chunk_mapper`) that deals chunks round-robin
    to the ranks and gathers their results, in order, on every rank. An error in a chunk is
    gathered too and raised on every rank (so no rank waits for a collective that never comes)."""

    def mapper(fn: Callable[..., Any], starts: Sequence[int], shared: Mapping[str, Any]) -> Iterator[Any]:
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        mine: list[tuple[int, Any, Any]] = []
        for i in range(rank, len(starts), world):
            try:
                mine.append((i, fn(starts[i], **shared), None))
            except Exception as exc:  # noqa: BLE001 - re-raised on every rank below
                mine.append((i, None, (type(exc), str(exc))))
                break
        got: list[Any] = [None] * world
        dist.all_gather_object(got, mine, group=group)
        results = sorted((item for part in got for item in part), key=lambda x: x[0])
        for _i, res, err in results:
            if err is not None:
                cls, msg = err
                try:
                    error = cls(msg)
                except Exception:  # pragma: no cover - an exception class that takes no message
                    error = RuntimeError(f"{cls.__name__}: {msg}")
                raise error
            yield res

    return mapper
