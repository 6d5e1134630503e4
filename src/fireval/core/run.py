"""Runs: a model's scores, either a dense matrix or sparse ranked lists.

Higher score = ranked earlier. ``-inf`` means "not retrieved / excluded". NaN and ``+inf``
are errors. Ties are kept as they are; how they are broken is a choice made at
evaluation time (see :mod:`fireval.metrics.ties`), never an accident of ``argsort``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.errors import InputError


@dataclass(frozen=True, eq=False)
class RankedLists:
    """Sparse ranked lists: for query ``q``, docs ``docs[indptr[q]:indptr[q+1]]`` with their scores.

    Docs not listed are not retrieved. ``direction`` says which side the queries are on.
    """

    direction: Direction
    shape: tuple[int, int]
    indptr: npt.NDArray[np.int64]
    docs: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]

    def __post_init__(self) -> None:
        if self.indptr.shape != (self.shape[0] + 1,) or self.docs.shape != self.scores.shape:
            raise InputError("malformed ranked lists (indptr/docs/scores sizes disagree)")

    def dense(self, start: int, stop: int) -> npt.NDArray[np.float64]:
        """Rows ``start:stop`` as a dense block with ``-inf`` for docs that are not listed."""
        out = np.full((stop - start, self.shape[1]), -np.inf)
        lo, hi = self.indptr[start], self.indptr[stop]
        counts = np.diff(self.indptr[start : stop + 1])
        rows = np.repeat(np.arange(stop - start), counts)
        out[rows, self.docs[lo:hi]] = self.scores[lo:hi]
        return out

    def depth(self) -> int:
        """The longest list."""
        return int(np.diff(self.indptr).max(initial=0))


@runtime_checkable
class BlockSource(Protocol):
    """Scores computed on demand, block by block (e.g. from embeddings; :mod:`fireval.scale`).

    ``shape`` is caption × video. ``block(direction, start, stop)`` returns the scores of
    queries ``start:stop`` of ``direction`` as a query × doc array; it may be a transposed
    view (doc-major memory), which the metrics kernel counts on without copying.
    """

    @property
    def shape(self) -> tuple[int, int]: ...

    def block(self, direction: Direction, start: int, stop: int) -> npt.NDArray[np.floating]: ...


@dataclass(frozen=True, eq=False)
class Run:
    """One system's output over a collection.

    Exactly one of ``scores`` (dense caption × video, usable in both directions; may be a
    read-only memory map), ``lists`` (sparse ranked lists for one direction) and ``blocks``
    (a :class:`BlockSource` computing dense blocks on demand, both directions) is set.
    """

    name: str
    scores: npt.NDArray[np.floating] | None = None
    lists: RankedLists | None = None
    source: str | None = None
    blocks: BlockSource | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.scores, self.lists, self.blocks)) != 1:
            raise ValueError("a Run holds exactly one of dense scores, ranked lists or a block source")
        if self.scores is not None:
            if self.scores.ndim != 2:
                raise InputError(
                    f"score matrix must be 2-D, got shape {self.scores.shape}", source=self.source
                )
            if 0 in self.scores.shape:
                raise InputError(f"score matrix is empty (shape {self.scores.shape})", source=self.source)

    @property
    def shape(self) -> tuple[int, int]:
        """Caption × video shape."""
        if self.scores is not None:
            return (int(self.scores.shape[0]), int(self.scores.shape[1]))
        if self.blocks is not None:
            return (int(self.blocks.shape[0]), int(self.blocks.shape[1]))
        assert self.lists is not None
        s = self.lists.shape
        return s if self.lists.direction is Direction.T2V else (s[1], s[0])

    def supports(self, direction: Direction | str) -> bool:
        """Dense runs and block sources serve both directions; ranked lists only their own."""
        return (
            self.scores is not None
            or self.blocks is not None
            or (self.lists is not None and self.lists.direction == Direction.parse(direction))
        )

    def n_queries(self, direction: Direction | str) -> int:
        d = Direction.parse(direction)
        return self.shape[0] if d is Direction.T2V else self.shape[1]

    def block(
        self,
        direction: Direction | str,
        start: int,
        stop: int,
        *,
        view: bool = False,
        validate: bool = True,
    ) -> npt.NDArray[np.floating]:
        """Scores of queries ``start:stop`` in ``direction`` as a dense query × doc block.

        Validates the block: NaN or ``+inf`` raise :class:`InputError` naming the first
        offending (query, doc) position. The block is C-contiguous unless ``view``: then a v2t
        block of a dense matrix is the transposed view ``scores[:, start:stop].T`` (no copy;
        the metrics kernel counts on its columns), and a block source's block is returned as
        the source made it. ``validate=False`` returns the block unvalidated: the caller
        promises to call :func:`validate_scores` on it, as
        :func:`fireval.metrics.kernel.evaluate_chunk` does (fused with the count of a v2t view's
        columns, which saves a full strided pass over it).
        """
        d = Direction.parse(direction)
        if not self.supports(d):
            raise InputError(f"run {self.name!r} only ranks {self.lists.direction.value} queries")  # type: ignore[union-attr]
        out: npt.NDArray[np.floating]
        if self.lists is not None:
            out = self.lists.dense(start, stop)
        elif self.blocks is not None:
            out = self.blocks.block(d, start, stop)
            if not view and not out.flags.c_contiguous:
                out = transpose_tiled(out.T)
        elif d is Direction.T2V:
            out = np.asarray(self.scores[start:stop])  # type: ignore[index]
        elif view:
            out = np.asarray(self.scores)[:, start:stop].T  # type: ignore[index]
        else:
            out = _transpose_columns(self.scores, start, stop)  # type: ignore[arg-type]
        if validate:
            validate_scores(out, self.source or self.name, start, d)
        return out


_TILE_ROWS = 256


def _transpose_columns(scores: npt.NDArray[np.floating], start: int, stop: int) -> npt.NDArray[np.floating]:
    """``scores[:, start:stop].T`` as a contiguous array, copied tile by tile.

    Copying in row tiles keeps reads and writes in cache (about 2x faster than one strided
    copy of a large, possibly memory-mapped, matrix).
    """
    src = scores[:, start:stop]
    out = np.empty((stop - start, src.shape[0]), dtype=src.dtype)
    for lo in range(0, src.shape[0], _TILE_ROWS):
        out[:, lo : lo + _TILE_ROWS] = src[lo : lo + _TILE_ROWS].T
    return out


def transpose_tiled(a: npt.NDArray[np.floating]) -> npt.NDArray[np.floating]:
    """``a.T`` as a C-contiguous array, copied in cache-sized tiles (see :func:`_transpose_columns`)."""
    return _transpose_columns(a, 0, a.shape[1])


def validate_scores(
    block: npt.NDArray[np.floating], name: str, offset: int = 0, direction: Direction = Direction.T2V
) -> None:
    """:func:`check_scores` behind one reduction: the maximum is NaN if any score is, ``+inf``
    if any is, so a valid block costs one pass."""
    if not np.max(block) < np.inf:
        check_scores(block, name, offset, direction)


def check_scores(
    block: npt.NDArray[np.floating], name: str, offset: int = 0, direction: Direction = Direction.T2V
) -> None:
    """Raise :class:`InputError` if ``block`` holds NaN or ``+inf`` (``-inf`` is allowed).

    ``name`` locates the scores in the message (the run's file when it has one); ``offset``
    is the index of the block's first query.
    """
    bad = np.isnan(block) | np.isposinf(block)
    if bad.any():
        q, doc = np.argwhere(bad)[0]
        what = "NaN" if np.isnan(block[q, doc]) else "+inf"
        raise InputError(
            f"score is {what} at {direction.value} query #{offset + q}, doc #{doc} "
            f"({int(bad.sum())} bad values in this block); use -inf to exclude a pair",
            source=name,
        )
