"""Scores from embeddings, computed block by block and never as a whole matrix.

Algorithm. The metrics engine (:func:`fireval.metrics.evaluate`) works on chunks of query
rows: for a chunk it needs the query × doc score block, from which it counts, for each
relevant (judged) doc, the docs scoring above and equal to it (:mod:`fireval.metrics.counting`).
:class:`EmbeddingScores` is a :class:`~fireval.core.run.BlockSource` that computes that block
on demand with one matrix product:

* t2v, captions ``a:b``: ``T[a:b] @ V.T`` (``n × n_videos``);
* v2t, videos ``a:b``: ``(T @ V[a:b].T).T``, i.e. the same caption × video orientation as t2v,
  returned as a transposed view whose columns the kernel counts in place.

So the scores of a pair are computed the way a dense ``T @ V.T`` would be, the ranks come from
exactly the same kernel as for a dense matrix, and the results are identical to the dense path
on the same scores (tested with float64 and ties). Floating-point products done by another
library, or with another blocking, may differ in the last bit from these.

Conventions:

* ``sim="dot"``: the inner product; ``sim="cosine"``: each embedding is divided by its L2 norm
  first (a zero embedding is an error).
* Several embeddings per item (frames of a video, or several rows per caption): a 3-D array
  ``(items, k, dim)``, or a 2-D array plus ``ids`` mapping each row to its item.
  ``pool="mean"``: the item's embedding is the mean of its (normalised, for cosine) rows,
  normalised again for cosine (CLIP4Clip's mean pooling). ``pool="max"``: the score of a pair is
  the largest score over the two items' rows (e.g. the best-matching frame).
* Memory: one block holds ``block_size × n_docs`` scores in the embeddings' dtype (float32: 4
  bytes each; default ``block_size`` = 2M / n_docs rows, i.e. 8 MB), plus the kernel's
  temporaries (a few times the block), per worker thread. The doc-side embeddings (pooled,
  normalised) are kept in memory once per process; query-side embeddings are read one block at
  a time, so ``.npy`` shards (memory-mapped) and Zarr arrays may be larger than memory. With
  ``pool="max"`` the row × row products are formed in sub-blocks of at most 16M scores.
"""

from __future__ import annotations

import glob
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import InputError
from fireval.core.judgments import Judgments
from fireval.core.run import Run

SIMS = ("dot", "cosine")
POOLS = ("mean", "max")
#: scores per row × row sub-product with ``pool="max"``
_PAIR_ELEMS = 1 << 24
#: default query rows per block: 2M scores (8 MB in float32), as for dense matrices
BLOCK_ELEMS = 1 << 21

I64 = npt.NDArray[np.int64]


class ShardedArray:
    """Rows of several ``.npy`` files, concatenated lazily (memory-mapped, read on slicing).

    Picklable as its paths (a Dask worker opens the files itself), so every worker needs the
    files at the same path (a shared file system or a copy).
    """

    def __init__(self, paths: Sequence[str | Path]) -> None:
        self.paths = [str(p) for p in paths]
        if not self.paths:
            raise InputError("no embedding file given")
        shapes, dtypes = [], []
        for p in self.paths:
            a = self._open(p)
            shapes.append(a.shape)
            dtypes.append(a.dtype)
        tails = {s[1:] for s in shapes}
        if len(tails) != 1:
            raise InputError(
                f"embedding shards disagree on their shape past the first axis: "
                f"{', '.join(f'{Path(p).name} {s}' for p, s in zip(self.paths, shapes, strict=True))}"
            )
        self.dtype = np.result_type(*dtypes)
        self.bounds = np.concatenate([[0], np.cumsum([s[0] for s in shapes])]).astype(np.int64)
        self.shape = (int(self.bounds[-1]), *shapes[0][1:])
        self._maps: list[np.ndarray] | None = None

    @staticmethod
    def _open(path: str) -> np.ndarray:
        try:
            a = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:  # EOFError: an empty file (Click would say "Aborted!")
            raise InputError(f"cannot read embeddings: {exc or 'the file is empty'}", source=path) from None
        if not isinstance(a, np.ndarray) or a.ndim not in (2, 3) or a.dtype.kind not in "fiu":
            raise InputError(
                "expected a 2-D (rows x dim) or 3-D (items x k x dim) numeric .npy array", source=path
            )
        return a

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_maps"] = None
        return state

    def _shards(self) -> list[np.ndarray]:
        if self._maps is None:
            self._maps = [self._open(p) for p in self.paths]
        return self._maps

    def __getitem__(self, key: Any) -> np.ndarray:
        shards = self._shards()
        if isinstance(key, slice):
            lo, hi, step = key.indices(self.shape[0])
            if step != 1:
                raise IndexError("ShardedArray supports contiguous slices and integer arrays")
            parts = []
            for i, a in enumerate(shards):
                s0, s1 = int(self.bounds[i]), int(self.bounds[i + 1])
                a0, a1 = max(lo, s0), min(hi, s1)
                if a0 < a1:
                    parts.append(np.asarray(a[a0 - s0 : a1 - s0]))
            if not parts:
                return np.empty((0, *self.shape[1:]), self.dtype)
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        rows = np.asarray(key, dtype=np.int64)
        out = np.empty((rows.size, *self.shape[1:]), self.dtype)
        which = np.searchsorted(self.bounds, rows, side="right") - 1
        for i in np.unique(which):
            sel = np.flatnonzero(which == i)
            out[sel] = shards[i][rows[sel] - self.bounds[i]]
        return out


def open_embeddings(spec: Any) -> Any:
    """An array-like of embeddings from ``spec``, read lazily.

    ``spec``: an array (returned as is), a ``.npy`` path, a glob pattern or a list of ``.npy``
    paths (shards, concatenated along the first axis in the given order; a pattern's matches
    in sorted order), or a Zarr array directory (``*.zarr``; needs the ``scale`` extra).
    """
    if hasattr(spec, "shape") and hasattr(spec, "__getitem__") and not isinstance(spec, str | Path):
        return spec
    items: list[str]
    if isinstance(spec, str | Path):
        s = str(spec)
        items = sorted(glob.glob(s)) if any(c in s for c in "*?[") else [s]
        if not items:
            raise InputError(f"no file matches {s!r}", source=s)
    else:
        items = [str(p) for p in spec]
    if len(items) == 1 and (items[0].rstrip("/").endswith(".zarr") or Path(items[0], ".zarray").exists()):
        return _open_zarr(items[0])
    for p in items:
        if not Path(p).is_file():
            raise InputError("embedding file not found", source=p)
    return ShardedArray(items)


def _open_zarr(path: str) -> Any:
    try:
        import zarr
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError(
            "reading Zarr embeddings needs the optional 'scale' extra (pip install 'fireval[scale]')",
            source=path,
        ) from None
    try:
        arr = zarr.open_array(path, mode="r")
    except Exception as exc:  # zarr raises several kinds for a bad store
        raise InputError(f"cannot open the Zarr array: {exc}", source=path) from None
    if arr.ndim not in (2, 3):
        raise InputError(f"expected a 2-D or 3-D Zarr array, got shape {arr.shape}", source=path)
    return arr


def _rows(arr: Any, idx: I64 | slice) -> np.ndarray:
    """Rows of an array-like (numpy, memmap, :class:`ShardedArray` or Zarr) as a numpy array."""
    if isinstance(idx, slice):
        return np.asarray(arr[idx])
    if hasattr(arr, "oindex"):  # zarr: orthogonal selection along the first axis
        return np.asarray(arr.oindex[idx])
    return np.asarray(arr[idx])


@dataclass(eq=False)
class _Side:
    """One side's embeddings: rows of ``arr``; item ``i`` owns rows ``order[bounds[i]:bounds[i+1]]``
    (``order`` None: rows in item order; ``k`` > 0: a 3-D array with k rows per item)."""

    arr: Any
    n_items: int
    k: int = 0
    order: I64 | None = None
    bounds: I64 | None = None
    #: item names (the collection's caption or video ids) and the file, for messages
    names: Sequence[str] | None = None
    source: str | None = None

    def item_of(self, a: int, starts: I64 | None, row: int) -> str:
        """The item (name, or index) that row ``row`` of :meth:`rows` ``(a, ...)`` belongs to."""
        if self.k:
            i = a + row // self.k
        elif starts is None:
            i = a + row
        else:
            i = a + int(np.searchsorted(starts, row, side="right")) - 1
        return repr(self.names[i]) if self.names is not None and i < len(self.names) else f"{i} (0-based)"

    def rows(self, a: int, b: int) -> tuple[np.ndarray, I64 | None]:
        """Embedding rows of items ``a:b`` and the start of each item's rows (None: one row each)."""
        if self.k:
            x = np.asarray(self.arr[a:b])
            return x.reshape(-1, x.shape[-1]), np.arange(0, (b - a) * self.k, self.k, dtype=np.int64)
        if self.bounds is None:
            return np.asarray(self.arr[a:b]), None
        lo, hi = int(self.bounds[a]), int(self.bounds[b])
        idx = self.order[lo:hi] if self.order is not None else slice(lo, hi)
        starts = self.bounds[a:b] - lo
        return _rows(self.arr, idx), (None if hi - lo == b - a else starts)


def _side(arr: Any, ids: Any, names: Sequence[str] | None, what: str) -> _Side:
    shape = tuple(int(x) for x in arr.shape)
    if len(shape) == 3:
        if ids is not None:
            raise InputError(f"{what} embeddings are 3-D (items x k x dim): they need no id map")
        return _Side(arr, shape[0], k=shape[1], names=names)
    if len(shape) != 2:
        raise InputError(f"{what} embeddings must be 2-D (rows x dim) or 3-D (items x k x dim), got {shape}")
    if ids is None:
        return _Side(arr, shape[0], names=names)
    owner, counts = item_owners(ids, names, what, shape[0])
    order = None if (owner[1:] >= owner[:-1]).all() else np.argsort(owner, kind="stable").astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return _Side(arr, len(counts), order=order, bounds=bounds, names=names)


def item_owners(ids: Any, names: Sequence[str] | None, what: str, n_rows: int) -> tuple[I64, I64]:
    """Row → item index (:func:`_owner_index`) and the number of rows of each item (one entry an
    item: ``len(names)``, or the largest index + 1); every item must own a row."""
    owner = _owner_index(ids, names, what, n_rows)
    n_items = len(names) if names is not None else int(owner.max()) + 1
    counts = np.bincount(owner, minlength=n_items)
    if (counts == 0).any():
        i = int(np.flatnonzero(counts == 0)[0])
        name = names[i] if names is not None else str(i)
        raise InputError(f"{what} {name!r} has no embedding row in the id map")
    return owner, counts


def check_sim_pool(sim: Any, pool: Any, options: tuple[str, str] = ("--sim", "--pool")) -> tuple[str, str]:
    """``sim`` and ``pool`` lower-cased, checked against :data:`SIMS` and :data:`POOLS`
    (``options``: the names the messages give them)."""
    sim, pool = str(sim).lower(), str(pool).lower()
    if sim not in SIMS:
        raise InputError(f"{options[0]}: unknown similarity {sim!r}; expected dot or cosine")
    if pool not in POOLS:
        raise InputError(f"{options[1]}: unknown pooling {pool!r}; expected mean or max")
    return sim, pool


def check_collection_shape(
    shape: tuple[int, int],
    collection: Collection | None,
    options: tuple[str, str] = ("--text-emb", "--video-emb"),
    sources: tuple[str | None, str | None] = (None, None),
) -> None:
    """Refuse embeddings whose caption × video shape is not the collection's (``options``: the
    names the message gives the text and video embeddings; ``sources``: their files)."""
    if collection is None or shape == tuple(collection.shape):
        return
    i = 0 if shape[0] != collection.shape[0] else 1
    raise InputError(
        f"{options[i]} gives {shape[i]} {('captions', 'videos')[i]} but collection "
        f"{collection.name!r} has {collection.shape[i]}",
        source=sources[i],
    )


def labels_and_block_size(
    judgments: Judgments | None,
    collection: Collection | None,
    block_size: int | None,
    option: str = "--block-size",
) -> tuple[Judgments, int | None]:
    """The labels to evaluate embeddings with (default: the collection's instance labels) and
    ``block_size`` checked (a positive number of query rows, or None)."""
    if judgments is None:
        if collection is None:
            raise InputError("evaluating embeddings needs labels or a collection (for its instance labels)")
        judgments = collection.instance_judgments()
    if block_size is not None and int(block_size) < 1:
        raise InputError(f"{option} must be a positive number of query rows, got {block_size}")
    return judgments, None if block_size is None else int(block_size)


def _owner_index(ids: Any, names: Sequence[str] | None, what: str, n_rows: int) -> I64:
    """Row → item index from item ids (strings, resolved against ``names``) or integer indices."""
    if isinstance(ids, str | Path):
        from fireval.formats.textio import read_text

        text = read_text(ids).splitlines()  # missing, binary, non-UTF-8: one line naming the file
        vals: list[Any] = [line.strip() for line in text if line.strip()]
        src = str(ids)
    else:
        vals = list(ids)
        src = None
    if len(vals) != n_rows:
        raise InputError(
            f"{what} id map has {len(vals)} entries but the embeddings have {n_rows} rows", source=src
        )
    arr = np.asarray(vals)
    if arr.dtype.kind in "iu":
        owner = arr.astype(np.int64)
        hi = len(names) if names is not None else None
        if owner.min(initial=0) < 0 or (hi is not None and owner.max(initial=0) >= hi):
            raise InputError(f"{what} id map holds an index outside 0..{(hi or 1) - 1}", source=src)
        return owner
    if names is None:
        raise InputError(f"{what} ids are strings: a collection is needed to resolve them", source=src)
    index = {n: i for i, n in enumerate(names)}
    owner = np.empty(len(vals), np.int64)
    for line, v in enumerate(vals):
        j = index.get(str(v))
        if j is None:
            raise InputError(f"line {line + 1}: unknown {what} id {str(v)!r}", source=src)
        owner[line] = j
    return owner


def _normalise(
    x: np.ndarray, what: str, side: _Side | None = None, a: int = 0, starts: I64 | None = None
) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    if (norm == 0).any():
        row = int(np.flatnonzero(norm.reshape(-1) == 0)[0])
        item = f" of {what} {side.item_of(a, starts, row)}" if side is not None else ""
        raise InputError(
            f"an embedding{item} has norm 0: cosine similarity is undefined for it (use --sim dot, "
            f"or drop the row)",
            source=side.source if side is not None else None,
        )
    return x / norm


@dataclass(eq=False)
class EmbeddingScores:
    """A :class:`~fireval.core.run.BlockSource`: scores of captions × videos from embeddings.

    ``text``/``video``: array-likes (numpy, memory map, :class:`ShardedArray`, Zarr) of shape
    ``(rows, dim)`` or ``(items, k, dim)``; ``text_ids``/``video_ids``: optional row → item
    maps (a sequence, or a file with one id per line) for 2-D arrays with several rows per item;
    ids are resolved against ``caption_ids``/``video_names`` when strings.
    """

    text: Any
    video: Any
    sim: str = "cosine"
    pool: str = "mean"
    text_ids: Any = None
    video_ids: Any = None
    caption_ids: Sequence[str] | None = None
    video_names: Sequence[str] | None = None
    _t: _Side = field(init=False, repr=False)
    _v: _Side = field(init=False, repr=False)
    _cache: dict[str, Any] = field(init=False, repr=False, default_factory=dict)
    _lock: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.sim, self.pool = check_sim_pool(self.sim, self.pool)
        t_src, v_src = (str(x) if isinstance(x, str | Path) else None for x in (self.text, self.video))
        self.text = open_embeddings(self.text)
        self.video = open_embeddings(self.video)
        if self.text.shape[-1] != self.video.shape[-1]:
            raise InputError(
                f"text embeddings have dimension {self.text.shape[-1]} but video embeddings "
                f"{self.video.shape[-1]}; they must be from one model"
            )
        self._t = _side(self.text, self.text_ids, self.caption_ids, "caption")
        self._v = _side(self.video, self.video_ids, self.video_names, "video")
        self._t.source, self._v.source = t_src, v_src
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # caches and locks stay in their process
        state = dict(self.__dict__)
        state["_cache"] = {}
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def shape(self) -> tuple[int, int]:
        return (self._t.n_items, self._v.n_items)

    @property
    def dtype(self) -> np.dtype[Any]:
        dt = np.result_type(self.text.dtype, self.video.dtype)
        return np.dtype(dt if dt.kind == "f" else np.float64)

    def _prepare(self, side: _Side, a: int, b: int, what: str) -> tuple[np.ndarray, I64 | None]:
        """Rows of items ``a:b`` ready for the product: normalised (cosine), pooled (mean)."""
        x, starts = side.rows(a, b)
        x = np.asarray(x, dtype=self.dtype)
        if self.sim == "cosine":
            x = _normalise(x, what, side, a, starts)
        if starts is None or self.pool == "max":
            return x, starts
        counts = np.diff(np.append(starts, x.shape[0])).astype(x.dtype)
        pooled = np.add.reduceat(x, starts, axis=0) / counts[:, None]
        if self.sim == "cosine":
            pooled = _normalise(pooled, what, side, a, None)
        return pooled, None

    def _all(self, which: str) -> tuple[np.ndarray, I64 | None]:
        """Every item of one side, prepared once per process (the doc side of a direction)."""
        got = self._cache.get(which)
        if got is None:
            with self._lock:
                got = self._cache.get(which)
                if got is None:
                    side = self._t if which == "text" else self._v
                    got = self._prepare(side, 0, side.n_items, "caption" if which == "text" else "video")
                    self._cache[which] = got
        return got  # type: ignore[no-any-return]

    def block(self, direction: Direction, start: int, stop: int) -> npt.NDArray[np.floating]:
        """Scores of queries ``start:stop``: C-contiguous for t2v, a transposed view for v2t."""
        d = Direction.parse(direction)
        if d is Direction.T2V:
            t, ts = self._prepare(self._t, start, stop, "caption")
            v, vs = self._all("video")
            return _product(t, ts, v, vs, stop - start, self._v.n_items)
        t, ts = self._all("text")
        v, vs = self._prepare(self._v, start, stop, "video")
        return _product(t, ts, v, vs, self._t.n_items, stop - start).T


def _product(t: np.ndarray, ts: I64 | None, v: np.ndarray, vs: I64 | None, n_t: int, n_v: int) -> np.ndarray:
    """Caption × video scores ``n_t × n_v``: ``t @ v.T``, max-reduced over each item's rows."""
    if ts is None and vs is None:
        return np.asarray(t @ v.T)
    out = np.empty((n_t, n_v), dtype=np.result_type(t, v))
    # sub-blocks over the side with more rows keep each row × row product under _PAIR_ELEMS
    t_bounds = np.append(ts, t.shape[0]) if ts is not None else np.arange(n_t + 1)
    v_bounds = np.append(vs, v.shape[0]) if vs is not None else np.arange(n_v + 1)
    if t.shape[0] >= v.shape[0]:
        step = max(1, _PAIR_ELEMS // max(1, v.shape[0]))
        for a in _item_batches(t_bounds, step):
            lo, hi = int(t_bounds[a[0]]), int(t_bounds[a[-1] + 1])
            m = t[lo:hi] @ v.T
            out[a[0] : a[-1] + 1] = _reduce(
                m, t_bounds[a] - lo, v_bounds[:-1], ts is not None, vs is not None
            )
    else:
        step = max(1, _PAIR_ELEMS // max(1, t.shape[0]))
        for a in _item_batches(v_bounds, step):
            lo, hi = int(v_bounds[a[0]]), int(v_bounds[a[-1] + 1])
            m = t @ v[lo:hi].T
            out[:, a[0] : a[-1] + 1] = _reduce(
                m, t_bounds[:-1], v_bounds[a] - lo, ts is not None, vs is not None
            )
    return out


def _item_batches(bounds: I64, max_rows: int) -> Iterable[I64]:
    """Consecutive item ranges whose rows total at most ``max_rows`` (at least one item each)."""
    n = bounds.size - 1
    i = 0
    while i < n:
        j = int(np.searchsorted(bounds, bounds[i] + max_rows, side="right")) - 1
        j = min(max(j, i + 1), n)
        yield np.arange(i, j)
        i = j


def _reduce(m: np.ndarray, t_starts: I64, v_starts: I64, by_t: bool, by_v: bool) -> np.ndarray:
    if by_v:
        m = np.maximum.reduceat(m, v_starts, axis=1)
    if by_t:
        m = np.maximum.reduceat(m, t_starts, axis=0)
    return m


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """BLAS on one thread inside the block: chunks already run on several threads (and Dask
    workers on several processes), and a small product split over busy cores is many times
    slower (measured: 57 ms with 2 BLAS threads vs 7 ms with 1 for 209 x 32 @ 32 x 10,000 on a
    loaded 2-core machine). Uses threadpoolctl when it is installed (the ``scale`` extra)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - depends on the environment
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def embedding_run(
    text_emb: Any,
    video_emb: Any,
    *,
    sim: str = "cosine",
    pool: str = "mean",
    text_ids: Any = None,
    video_ids: Any = None,
    collection: Collection | None = None,
    name: str = "embeddings",
) -> Run:
    """A :class:`~fireval.core.run.Run` whose blocks are computed from embeddings."""
    src = EmbeddingScores(
        text_emb,
        video_emb,
        sim=sim,
        pool=pool,
        text_ids=text_ids,
        video_ids=video_ids,
        caption_ids=collection.caption_ids if collection is not None else None,
        video_names=collection.video_ids if collection is not None else None,
    )
    check_collection_shape(src.shape, collection, sources=(src._t.source, src._v.source))
    return Run(name, blocks=src)


def evaluate_embeddings(
    text_emb: Any,
    video_emb: Any,
    judgments: Judgments | None = None,
    collection: Collection | None = None,
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
    """Evaluate from embeddings: :func:`fireval.metrics.evaluate` on blocks computed on demand.

    ``text_emb``/``video_emb``: arrays, ``.npy`` paths or shard lists, glob patterns or Zarr
    arrays (:func:`open_embeddings`). ``judgments`` default to the collection's instance labels.
    ``block_size``: query rows per block (memory: ``block_size × n_docs`` scores per thread).
    ``client``: a ``dask.distributed.Client``; the blocks are then computed and ranked on its
    workers (:mod:`fireval.scale.distributed`). Other keyword arguments go to ``evaluate``
    (``measures``, ``directions``, ``ties``, ``unjudged``, ``preset``, ``per_query``, ...).
    Returns the :class:`~fireval.metrics.Evaluation`, identical to the dense path on the same
    scores.
    """
    from fireval.metrics import evaluate
    from fireval.metrics.kernel import chunk_mapper

    run = embedding_run(
        text_emb,
        video_emb,
        sim=sim,
        pool=pool,
        text_ids=text_ids,
        video_ids=video_ids,
        collection=collection,
        name=name,
    )
    judgments, chunk_rows = labels_and_block_size(judgments, collection, block_size)
    mapper = None
    if client is not None:
        from fireval.scale.distributed import dask_mapper

        mapper = dask_mapper(client)
    with chunk_mapper(mapper), single_thread_blas():
        return evaluate(run, judgments, collection=collection, chunk_rows=chunk_rows, **options)
