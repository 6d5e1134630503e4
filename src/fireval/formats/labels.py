"""Graded-label ``.npz`` files and :func:`read_labels`, which dispatches on the file type.

Graded ``.npz`` (written by :func:`write_graded_labels`; used for proxy and auto labels):

- ``rows``, ``cols``: int arrays, caption and video indices (caption × video orientation);
- ``grades``: number array, 0 = judged irrelevant; integers from 0 to 100
  (:data:`~fireval.formats.grades.GRADE_MAX`), any real in that range for ``proxy:*`` sources;
- ``source``: 0-d string array, e.g. ``"proxy:bow"`` or ``"auto:exact"``;
- optional ``caption_ids`` / ``video_ids``: string arrays naming the collection the indices
  refer to. When present the indices are mapped onto the target collection by id (labels on
  ids the target lacks raise :class:`InputError` naming the id); when absent the file's
  ``shape`` (2 ints) must equal the collection's shape;
- optional ``grid``: 0-d JSON string, written when ``rows``/``cols`` are the full row-major
  grid of ``shape`` (every cell once, e.g. a proxy with every pair judged):
  ``{"layout": "row-major grid", "version": 1, "shape": [n, m], "rows": {"crc32", "size"},
  "cols": {...}, "grades": {"crc32", "size", "pieces"}}``, the CRC-32 and uncompressed size
  of each member as the zip directory records them, and ``pieces`` the ``[input, output]``
  byte counts of the independently deflated pieces of ``grades`` (or null).

Reading: :class:`~fireval.formats.graded_npz.GradedNpz` and :func:`read_graded_labels`
(:mod:`fireval.formats.graded_npz`, re-exported here), which read a full grid straight into a
dense matrix and stream any other file. :func:`read_labels` picks the reader by content
(:func:`~fireval.formats.textio.label_format`): ``.npz`` and FIRE JSON through
:mod:`fireval.formats.labelfmt`, qrels through :func:`fireval.formats.trec.read_trec_qrels`;
both modules sit below this one, so the readers that dispatch never import each other.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fireval.atomic import atomic_write
from fireval.core import Collection, Direction, InputError, Judgments
from fireval.formats.graded_npz import GRID_MEMBER as GRID_MEMBER
from fireval.formats.graded_npz import GRID_VERSION as GRID_VERSION
from fireval.formats.graded_npz import GradedNpz as GradedNpz
from fireval.formats.graded_npz import read_graded_labels as read_graded_labels
from fireval.formats.labelfmt import read_label_content
from fireval.formats.textio import PathLike


def write_graded_labels(
    path: PathLike, judgments: Judgments, collection: Collection, source: str | None = None
) -> None:
    """Write ``judgments`` (one source) as a graded ``.npz`` with the collection's ids, atomically."""
    if judgments.shape != collection.shape:
        raise InputError(f"judgments cover {judgments.shape} but the collection is {collection.shape}")
    src = source or (judgments.sources[0] if len(judgments.sources) == 1 else None)
    if src is None:
        raise InputError(f"judgments mix sources {judgments.sources}; pass source=")
    write_graded_arrays(
        path,
        shape=collection.shape,
        rows=judgments.rows,
        cols=judgments.cols,
        grades=judgments.grades,
        source=src,
        caption_ids=collection.caption_ids,
        video_ids=collection.video_ids,
    )


def write_graded_arrays(
    path: PathLike,
    *,
    shape: tuple[int, int],
    rows: np.ndarray,
    cols: np.ndarray,
    grades: np.ndarray,
    source: str,
    caption_ids: Sequence[str],
    video_ids: Sequence[str],
    meta: Mapping[str, Any] | None = None,
    compress: str = "fast",
    threads: int | None = None,
) -> None:
    """Write the graded-label ``.npz`` layout (module docstring) atomically.

    ``meta`` (JSON-serialisable provenance, e.g. a proxy's parameters) is stored as a JSON
    string under ``meta``; readers that do not know it ignore it.

    The file is the zip of ``.npy`` members that :func:`numpy.savez_compressed` writes (so
    :func:`numpy.load` reads it), each array streamed into its member. ``compress``:
    ``"best"`` deflates every member at zlib level 6 (as ``savez_compressed``); ``"fast"``
    (default) deflates float arrays (the grades) at level 1, several times faster on a
    full-test proxy's grades for about 40% more bytes, string arrays (the ids) at level 3
    (:data:`_FAST_LEVELS`; ISA-L's levels when ``isal`` is installed), and the rest at level
    6 (the index arrays repeat with a period of a few kB, which level 1's short hash chains
    miss: on a 59,800 × 2,990 grid the column indices take 5 MB at level 6 and 248 MB at level
    1); ``"none"`` stores the members uncompressed. Members of 8 MB or more (float members at
    level 1: 2 MB) are deflated on ``threads`` threads (default: the CPUs, at most 4; see
    :class:`_ParallelDeflate`), in pieces shared out among the threads; the
    bytes read back are the same.
    """
    _check_compress(compress)
    members: dict[str, Any] = {"rows": rows, "cols": cols, "grades": grades}
    grid = (int(shape[0]), int(shape[1])) if _is_full_grid(rows, cols, grades, shape) else None
    small = _small_members(source, shape, caption_ids, video_ids, meta)
    _write_npz(path, members, small, compress, threads, grid=grid)


def write_graded_dense(
    path: PathLike,
    grades: np.ndarray,
    *,
    source: str,
    caption_ids: Sequence[str],
    video_ids: Sequence[str],
    meta: Mapping[str, Any] | None = None,
    judge_zeros: bool = True,
    compress: str = "fast",
    threads: int | None = None,
) -> None:
    """Write a dense (captions × videos) grade matrix in the graded-label ``.npz`` layout.

    With ``judge_zeros`` every cell is a label (row-major; 0 = judged irrelevant), else only
    the cells with a grade > 0. The arrays read back are those :func:`write_graded_arrays`
    writes for the same labels (``rows``/``cols`` int32, ``grades`` in the matrix's dtype), but
    with ``judge_zeros`` the index arrays are generated and streamed piece by piece, never held
    in memory (59,800 × 2,990 cells would take 1.4 GB of int32 indices); with ``compress="fast"``
    the row indices (runs of one value) are deflated at level 1 and the column indices (one
    period repeated, deflated once by :class:`_ParallelDeflate`) at level 6. A full grid also
    gets the ``grid`` marker (module docstring), which lets readers skip the index arrays.
    """
    _check_compress(compress)
    g = np.asarray(grades)
    if g.ndim != 2:
        raise ValueError(f"grades must be a 2-d matrix, got shape {g.shape}")
    n, m = g.shape
    small = _small_members(source, (n, m), caption_ids, video_ids, meta)
    if not judge_zeros:
        r, c = np.nonzero(g)
        members: dict[str, Any] = {"rows": r.astype(np.int32), "cols": c.astype(np.int32), "grades": g[r, c]}
        _write_npz(path, members, small, compress, threads)
        return
    # pieces of about 1 MB (the rows, filled into one reused buffer) and of one period-aligned
    # deflate piece (the columns: the same buffer every time): a few hundred kB of memory
    # touched, not the 4-16 MB pieces whose fresh pages cost more than deflating them
    per_row = max(1, min(n, (1 << 18) // max(m, 1)))
    per_col = max(1, min(n, _period_piece(4 * m) // max(4 * m, 1)))
    tile = np.tile(np.arange(m, dtype=np.int32), per_col)

    def row_pieces() -> Any:
        buf = np.empty((per_row, m), np.int32)
        for a in range(0, n, per_row):
            b = min(n, a + per_row)
            buf[: b - a] = np.arange(a, b, dtype=np.int32)[:, None]
            yield buf[: b - a].reshape(-1)  # the writers copy or consume it before the next

    def col_pieces() -> Any:
        for a in range(0, n, per_col):
            yield tile[: (min(n, a + per_col) - a) * m]

    members = {
        # runs of one value: level 1 is several times faster than 6 there, for a few MB more
        "rows": _Streamed(np.dtype(np.int32), n * m, row_pieces, fast_level=1),
        # one period repeated: deflated once per period-aligned piece (see _ParallelDeflate)
        "cols": _Streamed(np.dtype(np.int32), n * m, col_pieces, period_bytes=4 * m),
        "grades": np.ascontiguousarray(g).reshape(-1),
    }
    _write_npz(path, members, small, compress, threads, grid=(n, m))


class _Streamed:
    """A 1-d array given as a generator of pieces (dtype, total length, piece factory), the
    zlib level that ``compress="fast"`` uses for it, and, for data that repeats one period of
    ``period_bytes`` bytes (the column indices of a full grid), that period."""

    def __init__(
        self, dtype: np.dtype, size: int, pieces: Any, fast_level: int = 6, period_bytes: int | None = None
    ) -> None:
        self.dtype, self.size, self.pieces, self.fast_level = dtype, size, pieces, fast_level
        self.period_bytes = period_bytes


def _check_compress(compress: str) -> None:
    if compress not in ("fast", "best", "none"):
        raise ValueError(f"compress must be 'fast', 'best' or 'none', not {compress!r}")


def _small_members(
    source: str,
    shape: tuple[int, int],
    caption_ids: Sequence[str],
    video_ids: Sequence[str],
    meta: Mapping[str, Any] | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "source": np.array(source),
        "shape": np.asarray(shape, np.int64),
        "caption_ids": np.asarray(caption_ids, dtype=str),
        "video_ids": np.asarray(video_ids, dtype=str),
    }
    if meta is not None:
        out["meta"] = np.asarray(json.dumps(dict(meta), sort_keys=True))
    return out


#: members at least this large are deflated on several threads
_PARALLEL_MIN_BYTES = 8 << 20
#: bytes of an array handed to its zip member per write (as :func:`numpy.save` writes)
_WRITE_BYTES = 16 << 20


def _is_full_grid(rows: Any, cols: Any, grades: Any, shape: tuple[int, int]) -> bool:
    """Whether ``rows``/``cols`` list every cell of ``shape`` once, row-major (checked in pieces)."""
    n, m = (int(x) for x in shape)
    r, c, g = (np.asarray(x).reshape(-1) for x in (rows, cols, grades))
    if not (r.size == c.size == g.size == n * m) or r.dtype.kind not in "iu" or c.dtype.kind not in "iu":
        return False
    per = max(1, min(n, (1 << 20) // max(m, 1)))
    tile = np.tile(np.arange(m, dtype=np.int64), per)
    for a in range(0, n, per):
        b = min(n, a + per)
        k = (b - a) * m
        if not np.array_equal(c[a * m : b * m], tile[:k]):
            return False
        if not np.array_equal(r[a * m : b * m], np.repeat(np.arange(a, b, dtype=np.int64), m)):
            return False
    return True


def _write_npz(
    path: PathLike,
    big: Mapping[str, Any],
    small: Mapping[str, Any],
    compress: str,
    threads: int | None,
    grid: tuple[int, int] | None = None,
) -> None:
    """Zip of ``.npy`` members (``big`` first, then ``small``), written atomically.

    ``grid``: the ``rows``/``cols`` of ``big`` are the full row-major grid of that shape; a
    ``grid`` marker member (module docstring) is written last, with the members' CRC-32s.
    """
    import os

    from numpy.lib import format as npy_format

    method = zipfile.ZIP_STORED if compress == "none" else zipfile.ZIP_DEFLATED
    n_threads = max(1, min(4, os.cpu_count() or 1)) if threads is None else max(1, int(threads))
    pieces: dict[str, list[list[int]]] = {}
    with (
        atomic_write(path, "wb") as fh,
        zipfile.ZipFile(fh, "w", compression=method, allowZip64=True) as zf,
    ):
        for name, value in {**big, **small}.items():
            if isinstance(value, _Streamed):
                dtype, size = value.dtype, value.size
            else:
                value = np.asanyarray(value)
                dtype, size = value.dtype, value.size
            nbytes = size * dtype.itemsize
            level = 6
            if compress == "fast":
                level = value.fast_level if isinstance(value, _Streamed) else _FAST_LEVELS.get(dtype.kind, 6)
            zf.compresslevel = level  # read by ZipFile.open when it creates the member
            deflater = None
            fast = compress == "fast"
            # float members at level 1 (the grades) deflate fast enough to go parallel sooner
            quick = fast and level == 1 and dtype.kind == "f"
            min_bytes = _PARALLEL_MIN_BYTES // 4 if quick else _PARALLEL_MIN_BYTES
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                period = value.period_bytes if isinstance(value, _Streamed) else None
                if compress != "none" and period:
                    deflater = _use_parallel_deflate(member, level, n_threads, fast, _period_piece(period))
                elif compress != "none" and n_threads > 1 and nbytes >= min_bytes:
                    piece = _spread_piece(nbytes, n_threads)
                    stable = not isinstance(value, _Streamed) and _plain_numbers(value)  # written in place
                    deflater = _use_parallel_deflate(member, level, n_threads, fast, piece, stable)
                elif fast and level in _ISAL_LEVELS:
                    _use_fast_deflate(member, level)
                write = _member_writer(member)
                if isinstance(value, _Streamed) or _plain_numbers(value):
                    # header, then the data as it is in memory (no copy; numpy's write_array
                    # copies through tobytes): the bytes numpy.save writes for a C-order array
                    header = {
                        "descr": npy_format.dtype_to_descr(dtype),
                        "fortran_order": False,
                        "shape": (size,) if isinstance(value, _Streamed) else value.shape,
                    }
                    npy_format.write_array_header_1_0(member, header)
                    if deflater is not None:
                        deflater.cut()  # the header is a piece of its own: the data's pieces align
                    if isinstance(value, _Streamed):
                        for piece in value.pieces():
                            write(np.ascontiguousarray(piece, dtype=dtype).view(np.uint8).data)
                    else:  # in 16 MB pieces, as numpy writes (bounded deflate output in flight)
                        flat = value.reshape(-1).view(np.uint8)
                        for at in range(0, flat.size, _WRITE_BYTES):
                            write(flat[at : at + _WRITE_BYTES].data)
                else:
                    npy_format.write_array(member, value, allow_pickle=False)
            if deflater is not None:
                pieces[name] = deflater.pieces
        if grid is not None:
            zf.compresslevel = 6
            marker = _grid_marker(zf, grid, pieces.get("grades"))
            with zf.open(f"{GRID_MEMBER}.npy", "w", force_zip64=True) as member:
                npy_format.write_array(member, np.asarray(json.dumps(marker, sort_keys=True)))


def _plain_numbers(value: np.ndarray) -> bool:
    """Whether ``value`` is a C-ordered array of plain numbers (written without numpy's copy)."""
    return (
        value.dtype.kind in "biufc"
        and not value.dtype.hasobject
        and value.flags.c_contiguous
        and value.ndim > 0
    )


def _spread_piece(nbytes: int, threads: int) -> int:
    """Deflate piece size for a member of ``nbytes`` on ``threads`` threads: the usual
    :attr:`_ParallelDeflate.PIECE`, or, for a member smaller than a piece per thread, an equal
    share per thread (at least a quarter piece), so that every thread has a piece."""
    piece = _ParallelDeflate.PIECE
    if nbytes < threads * piece:
        piece = min(piece, max(piece // 4, -(-nbytes // max(threads, 1))))
    return piece


def _isal_crc32() -> Any:
    """ISA-L's CRC-32 (the same values as :func:`zlib.crc32`, about 10x faster), or None."""
    try:
        from isal import isal_zlib
    except ImportError:
        return None
    return isal_zlib.crc32


#: Pythons whose ``zipfile._ZipWriteFile.write`` :func:`_member_writer` mirrors
_ZIP_WRITE_KNOWN = ((3, 11), (3, 12), (3, 13))


def _member_writer(member: Any) -> Any:
    """``member.write`` of an open zip member, with ISA-L's CRC-32 when it can be used.

    :class:`zipfile.ZipFile` computes each member's CRC-32 with :func:`zlib.crc32` as data is
    written (0.9 ms per 4 MB here, 2 GB of it for a full-test proxy file); ``isal`` gives the
    same value about 10x faster. There is no hook for it, so on the Pythons whose
    ``_ZipWriteFile.write`` is known (:data:`_ZIP_WRITE_KNOWN`: add the byte count, update
    ``_crc``, compress with ``_compressor``, add to ``_compress_size``, write to ``_fileobj``)
    this does the same with the other CRC function; anywhere else, or without ``isal``, it is
    ``member.write`` itself. Either way :mod:`zipfile` writes the sizes and CRC-32 on close,
    and the bytes of the file are the same.
    """
    import sys

    crc32 = _isal_crc32()
    if (
        crc32 is None
        or sys.version_info[:2] not in _ZIP_WRITE_KNOWN
        or type(member) is not getattr(zipfile, "_ZipWriteFile", None)
        or not all(hasattr(member, a) for a in ("_file_size", "_crc", "_compressor", "_compress_size"))
    ):
        return member.write

    def write(data: Any) -> int:
        if member.closed:
            raise ValueError("I/O operation on closed file.")
        mv = memoryview(data)
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B")
        member._file_size += mv.nbytes
        member._crc = crc32(mv, member._crc)
        out: Any = mv
        if member._compressor:
            out = member._compressor.compress(mv)
            member._compress_size += len(out)
        member._fileobj.write(out)
        return mv.nbytes

    return write


def _use_parallel_deflate(
    member: Any, level: int, threads: int, fast: bool = False, piece: int | None = None, stable: bool = False
) -> _ParallelDeflate | None:
    """Swap the zlib compressor of an open zip member for a :class:`_ParallelDeflate`.

    :class:`zipfile.ZipFile` has no public hook for this: the member object keeps its
    compressor in ``_compressor`` (CPython 3.11 to 3.13) and only calls its ``compress`` and
    ``flush``. When that attribute is not a plain zlib compressor (another Python), nothing is
    changed and the member is deflated on one thread.
    """
    if _plain_compressor(member):
        member._compressor = _ParallelDeflate(level, threads, fast=fast, piece=piece, stable=stable)
        return member._compressor  # type: ignore[no-any-return]
    return None


def _plain_compressor(member: Any) -> bool:
    """Whether an open zip member deflates with a plain zlib compressor (that may be swapped)."""
    return type(getattr(member, "_compressor", None)) is type(zlib.compressobj())


#: zlib level of a member by dtype kind under ``compress="fast"`` (others: 6): floats (the
#: grades) 1; strings (the ids) 3, which ISA-L deflates about 6x faster than zlib's 6 for 5-10%
#: more bytes (3.3 kB against 3.1 kB for 1,000 MSR-VTT video ids)
_FAST_LEVELS = {"f": 1, "U": 3, "S": 3}
#: levels :func:`_fast_deflater` gives to ISA-L (its own levels 1 and 3)
_ISAL_LEVELS = (1, 3)


def _fast_deflater(level: int) -> Any:
    """A raw-deflate compressor for ``compress="fast"`` at zlib ``level`` 1 or 3: ISA-L's level of
    that number when ``isal`` is installed (at 1, 4-5x faster than zlib's, about the same size
    on grades, smaller on runs), else zlib's. Any inflater reads either."""
    if level in _ISAL_LEVELS:
        try:
            from isal import isal_zlib
        except ImportError:
            pass
        else:
            return isal_zlib.compressobj(level, zlib.DEFLATED, -15)
    return zlib.compressobj(level, zlib.DEFLATED, -15)


def _use_fast_deflate(member: Any, level: int = 1) -> None:
    """Deflate an open zip member at ``compress="fast"`` ``level`` with :func:`_fast_deflater`."""
    if _plain_compressor(member):
        member._compressor = _fast_deflater(level)


def _period_piece(period: int) -> int:
    """Piece size for data repeating a ``period``-byte period: a whole number of periods near
    256 KB (at least one period), so that every full piece is the same bytes."""
    return period * max(1, (256 << 10) // max(period, 1))


class _ParallelDeflate:
    """Raw deflate of a byte stream on several threads, with ``compress``/``flush`` as zlib's.

    Each ``compress`` call's data is cut into pieces of at most 4 MB (small calls are
    buffered); each piece is deflated independently (zlib releases the GIL) and ended with a
    sync flush (byte-aligned, not final), and the outputs are concatenated in order, then
    closed by an empty final block: one valid deflate stream (the scheme of pigz) that
    inflates to exactly the input. The pieces do not see each other's history, which costs a
    few bytes per piece. A piece equal to the piece at the same place of the previous call is
    not deflated again (its output is the same), nor is a piece equal to the one before it:
    a periodic array cut into period-aligned pieces (``piece``: a whole number of periods), such
    as the column indices of a full grid, is deflated once. With ``fast`` (``compress="fast"``)
    level-1 pieces use :func:`_fast_deflater`. With ``stable`` the caller promises to leave every
    buffer it passes as it is until :meth:`flush` (an array written in place): its pieces are
    deflated from it, not from copies, and not compared. At most ``2 × threads`` pieces
    are in flight. ``pieces`` lists ``[input bytes, output bytes]`` of every piece in order
    (the closing empty block last, as ``[0, n]``): each piece inflates on its own, which lets a
    reader inflate them in parallel (:meth:`GradedNpz.grid`).
    """

    PIECE = 4 << 20

    def __init__(
        self, level: int, threads: int, *, fast: bool = False, piece: int | None = None, stable: bool = False
    ) -> None:
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        self.level = level
        self.fast = fast
        self.stable = stable
        if piece is not None:
            self.PIECE = piece
        self._pool = ThreadPoolExecutor(max_workers=threads)
        self._pending: Any = deque()
        self._limit = 2 * threads
        self._buf = bytearray()
        self._prev: list[tuple[bytes, Any]] = []  # (piece, future) of the previous call
        self.pieces: list[list[int]] = []

    def _deflate(self, data: bytes | memoryview) -> bytes:  # a piece, or a view of the caller's buffer
        c = _fast_deflater(self.level) if self.fast else zlib.compressobj(self.level, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)

    def _collect(self, wait_until: int) -> bytes:
        out = []
        while self._pending and (len(self._pending) > wait_until or self._pending[0][1].done()):
            size, fut = self._pending.popleft()
            out.append(fut.result())
            self.pieces.append([size, len(out[-1])])
        return b"".join(out)

    def compress(self, data: Any) -> bytes:
        mv = memoryview(data).cast("B")
        if self._buf or len(mv) < self.PIECE // 4:
            self._buf += mv
            if len(self._buf) < self.PIECE:
                return self._collect(self._limit)
            mv, self._buf = memoryview(bytes(self._buf)), bytearray()
        if self.stable:  # the caller's buffer stays as it is until flush: no copy, no comparison
            out = []
            for pos in range(0, len(mv), self.PIECE):
                view = mv[pos : pos + self.PIECE]
                self._pending.append((len(view), self._pool.submit(self._deflate, view)))
                out.append(self._collect(self._limit))
            return b"".join(out)
        prev, self._prev = self._prev, []
        for i, pos in enumerate(range(0, len(mv), self.PIECE)):
            piece = bytes(mv[pos : pos + self.PIECE])  # a copy: the caller may reuse its buffer
            if i < len(prev) and prev[i][0] == piece:
                fut = prev[i][1]
            elif self._prev and self._prev[-1][0] == piece:
                fut = self._prev[-1][1]
            else:
                fut = self._pool.submit(self._deflate, piece)
            self._prev.append((piece, fut))
            self._pending.append((len(piece), fut))
        return self._collect(self._limit)

    def cut(self) -> None:
        """End the current piece: the bytes buffered so far (a ``.npy`` header) are deflated as a
        piece of their own, so that the next call's data starts a new piece. A member repeating
        one period (:func:`_period_piece`) then has every full piece equal to the one before it."""
        if self._buf:
            self._pending.append((len(self._buf), self._pool.submit(self._deflate, bytes(self._buf))))
            self._buf = bytearray()

    def flush(self) -> bytes:
        import zlib

        try:
            if self._buf:
                self._pending.append((len(self._buf), self._pool.submit(self._deflate, bytes(self._buf))))
                self._buf = bytearray()
            body = self._collect(0)
        finally:
            self._pool.shutdown(wait=True)
            self._prev = []
        end = zlib.compressobj(self.level, zlib.DEFLATED, -15).flush()
        self.pieces.append([0, len(end)])
        return body + end


def _grid_marker(zf: zipfile.ZipFile, shape: tuple[int, int], grades_pieces: Any) -> dict[str, Any]:
    """The ``grid`` marker of the members just written to ``zf`` (module docstring)."""

    def member(name: str) -> dict[str, Any]:
        info = zf.getinfo(f"{name}.npy")
        return {"crc32": info.CRC, "size": info.file_size}

    grades = member("grades")
    grades["pieces"] = grades_pieces
    return {
        "layout": "row-major grid",
        "version": GRID_VERSION,
        "shape": [int(shape[0]), int(shape[1])],
        "rows": member("rows"),
        "cols": member("cols"),
        "grades": grades,
    }


def read_labels(path: PathLike, collection: Collection, direction: Direction | str = "t2v") -> Judgments:
    """Read one label file, choosing the reader by what it holds, not by its name.

    :func:`fireval.formats.textio.label_format` tells the format from the bytes (zip → graded
    labels ``.npz``; JSON → FIRE JSON, source ``human``; other text → TREC qrels in
    ``direction``, source ``human``; gzip data is looked into; the name only breaks a tie when
    the content shows nothing). So FIRE JSON saved as ``labels.txt``, a gzipped one saved as
    ``labels.qrels``, a label ``.npz`` saved as ``labels.tsv`` and qrels saved as
    ``labels.json`` all read as what they are; content that is none of them is a one-line
    :class:`InputError` naming the file.

    FIRE JSON: see :func:`~fireval.formats.labelfmt.read_fire_labels` (no joined record is an
    error; the import's warnings are returned in ``Judgments.warnings``, not logged).
    """
    from fireval.formats.textio import label_format

    p = Path(path)
    kind = label_format(p)
    if kind != "qrels":
        return read_label_content(p, collection, kind)
    from fireval.formats.trec import read_trec_qrels  # imported here: writers do not need it

    return read_trec_qrels(p, collection, direction)
