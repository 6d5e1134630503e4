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

Reading (:class:`GradedNpz`): a file whose ``grid`` marker checks out against the zip
directory, the ``shape`` member and the first ``m + 1`` index entries has its ``grades``
inflated straight into an ``n × m`` matrix (the pieces on several threads) and its index
arrays (1.4 GB of int32 for 59,800 × 2,990) never inflated; any other file, including one
whose marker is damaged or whose index members were rewritten (their CRC-32 no longer
matches), is streamed member by member in 4 Mi-item pieces. Readers that do not know the
marker (:func:`numpy.load`, older fireval) ignore it and read the index arrays as before.
A grid's :class:`~fireval.core.Judgments` hold int32 indices when the collection fits
(:func:`~fireval.core.judgments.index_dtype`), float32 grades when the file's are float32 (the
inflated matrix itself, not a copy; float64 grades stay float64), as
:meth:`Judgments.from_arrays` would make them on the general path.
"""

from __future__ import annotations

import json
import math
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fireval.atomic import atomic_write
from fireval.core import Collection, Direction, InputError, Judgments
from fireval.formats.grades import check_grades
from fireval.formats.textio import PathLike, loads_bounded


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


#: name of the marker member (``grid.npy``) of a full-grid file (module docstring)
GRID_MEMBER = "grid"
#: version of the marker's layout
GRID_VERSION = 1


def _zlib_module() -> Any:
    """``isal.isal_zlib`` when installed (same API and bytes as :mod:`zlib`, faster), else :mod:`zlib`."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib
    return isal_zlib


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


#: elements per piece when the index and grade members are streamed (16 MB of int32)
_STREAM_ITEMS = 1 << 22

#: what a damaged marker or member raises while a grid is verified (the file then takes the
#: general path, which reports real damage)
_UNUSABLE = (
    AttributeError, KeyError, TypeError, ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error
)  # fmt: skip


class GradedNpz:
    """An open graded-label ``.npz``: small members on demand, the large ones streamed.

    ``npz[name]`` reads a whole member as :func:`numpy.load` does (meant for the small ones);
    :meth:`grid` reads the grades of a verified full-grid file straight into a dense matrix;
    :meth:`triples` streams ``(rows, cols, grades)`` in pieces of bounded size. Raises
    :class:`ValueError` (or :class:`OSError`, :class:`zipfile.BadZipFile`) on an unreadable
    file, :class:`InputError` on members of the wrong kind or length; callers add the file name.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = str(path)
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("not a .npz (zip) archive")
        if z.zip is None:
            raise ValueError("not a .npz (zip) archive")
        self._z = z
        self._zip: zipfile.ZipFile = z.zip
        self.files: list[str] = list(z.files)
        self._memo: dict[str, tuple[int, int] | None] = {}

    def __enter__(self) -> GradedNpz:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._z.close()

    def __contains__(self, name: str) -> bool:
        return name in self.files

    def __getitem__(self, name: str) -> np.ndarray:
        return np.asarray(self._z[name])

    # ------------------------------------------------------------------ members
    def _header(self, name: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
        """``(shape, fortran_order, dtype, header bytes)`` of a member, inflating only its start."""
        from numpy.lib import format as npy_format

        info = self._zip.getinfo(f"{name}.npy")
        with self._zip.open(info) as fp:
            version = npy_format.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = npy_format.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = npy_format.read_array_header_2_0(fp)
            else:
                raise ValueError(f"member {name!r}: unsupported .npy format version {version}")
        if dtype.hasobject:
            raise ValueError(f"member {name!r} holds Python objects")
        header = info.file_size - math.prod(shape) * dtype.itemsize
        if header < 10:
            raise ValueError(f"member {name!r} is shorter than its header says")
        return tuple(shape), bool(fortran), dtype, header

    def _leading(self, name: str, header: int, dtype: np.dtype, count: int) -> np.ndarray:
        with self._zip.open(f"{name}.npy") as fp:
            fp.read(header)
            return np.frombuffer(fp.read(count * dtype.itemsize), dtype=dtype)

    # ------------------------------------------------------------------ full grid
    def grid_shape(self, scan: bool = False) -> tuple[int, int] | None:
        """The shape of a verified full row-major grid, or None (then use :meth:`triples`).

        Verified by the marker (:meth:`marked_shape`); without a marker that checks out and
        with ``scan``, by comparing the index members with the grid of the ``shape`` member
        piece by piece (they are inflated, but not kept; the first piece that differs ends
        the scan, so a file of another layout pays little).
        """
        found = self.marked_shape()
        if found is None and scan:
            if "scanned" not in self._memo:
                self._memo["scanned"] = self._scanned_shape()
            found = self._memo["scanned"]
        return found

    def marked_shape(self) -> tuple[int, int] | None:
        """The shape recorded by a ``grid`` marker that checks out, or None.

        Checked (once per open file): the marker parses, its shape equals the ``shape``
        member, the sizes and CRC-32s it records for ``rows``/``cols``/``grades`` equal the
        zip directory's (so those members are the bytes the writer generated), the index
        members are integer arrays of ``n × m`` items whose first ``m + 1`` items are the
        grid's, and ``grades`` holds ``n × m`` numbers in C order. Anything else, including an
        unreadable marker, gives None. The marker binds the members as written: it is not a
        proof against a file crafted to carry a marker over other index arrays with the same
        CRC-32s.
        """
        if "marked" not in self._memo:
            self._memo["marked"] = self._marked_shape()
        return self._memo["marked"]

    def _marked_shape(self) -> tuple[int, int] | None:
        need = (GRID_MEMBER, "rows", "cols", "grades", "shape")
        if any(k not in self.files for k in need):
            return None
        try:
            mk = loads_bounded(str(self._z[GRID_MEMBER]))
            if mk.get("version") != GRID_VERSION or mk.get("layout") != "row-major grid":
                return None
            n, m = (int(x) for x in mk["shape"])
            if n < 0 or m < 0 or tuple(int(x) for x in np.asarray(self._z["shape"]).ravel()) != (n, m):
                return None
            for name in ("rows", "cols", "grades"):
                info, rec = self._zip.getinfo(f"{name}.npy"), mk[name]
                if (info.CRC, info.file_size) != (int(rec["crc32"]), int(rec["size"])):
                    return None
            k = min(n * m, m + 1)
            lead = np.arange(k, dtype=np.int64)
            for name, want in (("rows", lead // max(m, 1)), ("cols", lead % max(m, 1))):
                shape, _, dtype, header = self._header(name)
                if dtype.kind not in "iu" or shape != (n * m,):
                    return None
                if not np.array_equal(self._leading(name, header, dtype, k), want):
                    return None
            if not self._grades_fit(n, m):
                return None
        except _UNUSABLE:
            return None
        return n, m

    def _grades_fit(self, n: int, m: int) -> bool:
        shape, fortran, dtype, _ = self._header("grades")
        return dtype.kind in "iuf" and shape in ((n * m,), (n, m)) and not (fortran and len(shape) > 1)

    def _scanned_shape(self) -> tuple[int, int] | None:
        if any(k not in self.files for k in ("rows", "cols", "grades", "shape")):
            return None
        try:
            dims = [int(x) for x in np.asarray(self._z["shape"]).ravel()]
            if len(dims) != 2 or min(dims) < 0 or not self._grades_fit(dims[0], dims[1]):
                return None
            n, m = dims
            heads = [self._header(k) for k in ("rows", "cols")]
            if any(h[2].kind not in "iu" or h[0] != (n * m,) for h in heads):
                return None
            per = max(1, _STREAM_ITEMS // max(m, 1))
            tile = np.tile(np.arange(m, dtype=np.int64), per)
            with self._zip.open("rows.npy") as fr, self._zip.open("cols.npy") as fc:
                fr.read(heads[0][3])
                fc.read(heads[1][3])
                for a in range(0, n, per):
                    b = min(n, a + per)
                    k = (b - a) * m
                    r = np.frombuffer(fr.read(k * heads[0][2].itemsize), heads[0][2])
                    c = np.frombuffer(fc.read(k * heads[1][2].itemsize), heads[1][2])
                    if not np.array_equal(c, tile[:k]):
                        return None
                    if not np.array_equal(r, np.repeat(np.arange(a, b, dtype=np.int64), m)):
                        return None
                if fr.read(1) or fc.read(1):  # the end: zipfile checks the CRC-32s
                    return None
        except _UNUSABLE:
            return None
        return n, m

    def grid(self, threads: int | None = None, scan: bool = False) -> np.ndarray | None:
        """The grades of a verified full grid (:meth:`grid_shape`) as an ``n × m`` matrix, or None.

        The ``grades`` member is inflated straight into the matrix: on ``threads`` threads
        (default: the CPUs, at most 4) when the marker lists its independent deflate pieces
        (written by :class:`_ParallelDeflate`), checking each piece's length and the member's
        CRC-32; a member stored uncompressed, without a usable piece list, or whose pieces do
        not match is read in one stream by :mod:`zipfile` (which checks the CRC-32).
        """
        import os

        marked = self.marked_shape()
        shape = self.grid_shape(scan)
        if shape is None:
            return None
        n, m = shape
        _, _, dtype, header = self._header("grades")
        info = self._zip.getinfo("grades.npy")
        buf = np.empty(info.file_size, np.uint8)
        pieces = loads_bounded(str(self._z[GRID_MEMBER]))["grades"].get("pieces") if marked else None
        n_threads = max(1, min(4, os.cpu_count() or 1)) if threads is None else max(1, int(threads))
        if not (
            info.compress_type == zipfile.ZIP_DEFLATED and self._inflate_pieces(info, pieces, buf, n_threads)
        ):
            self._read_member(info, buf)
        return buf[header:].view(dtype).reshape(n, m)

    def _read_member(self, info: zipfile.ZipInfo, buf: np.ndarray) -> None:
        """One member's bytes into ``buf`` through :mod:`zipfile` (CRC-32 checked at the end)."""
        mv = memoryview(buf.data)
        step = 16 << 20
        with self._zip.open(info) as fp:
            for a in range(0, buf.size, step):
                data = fp.read(min(step, buf.size - a))
                if len(data) != min(step, buf.size - a):
                    raise EOFError(f"member {info.filename!r} is truncated")
                mv[a : a + len(data)] = data
            if fp.read(1):
                raise ValueError(f"member {info.filename!r} is longer than its header says")

    def _inflate_pieces(self, info: zipfile.ZipInfo, pieces: Any, buf: np.ndarray, threads: int) -> bool:
        """Inflate the independent deflate ``pieces`` of a member into ``buf`` in parallel.

        With the optional ``isal`` package (extra ``fast``) its zlib-compatible inflate and
        CRC-32 are used (about 2x and 5x faster than zlib's); the bytes are the same.

        Returns False, having checked nothing else, when the piece list does not add up to
        the member, when a piece does not inflate to its recorded length, or when the CRC-32
        of the whole differs: the caller then reads the member in one stream.
        """
        import os
        import struct
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        zl = _zlib_module()
        try:
            sizes = [(int(r), int(c)) for r, c in pieces]
        except (TypeError, ValueError):
            return False
        if (
            not sizes
            or any(r < 0 or c < 0 for r, c in sizes)
            or sum(r for r, _ in sizes) != info.file_size
            or sum(c for _, c in sizes) != info.compress_size
        ):
            return False
        with open(self.path, "rb") as fh:
            fd = fh.fileno()
            local = os.pread(fd, 30, info.header_offset)
            if len(local) != 30 or local[:4] != b"PK\x03\x04":
                return False
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            start = info.header_offset + 30 + name_len + extra_len
            offsets = np.concatenate([[0], np.cumsum([c for _, c in sizes])]).tolist()

            def inflate(i: int) -> bytes:
                raw_len, comp_len = sizes[i]
                data = os.pread(fd, comp_len, start + offsets[i])
                d = zl.decompressobj(-15)
                raw = d.decompress(data, raw_len) if raw_len else d.decompress(data)
                if len(data) != comp_len or len(raw) != raw_len or d.unconsumed_tail:
                    raise ValueError("deflate piece does not match the grid marker")
                return raw

            mv = memoryview(buf.data)
            crc, pos = 0, 0
            with ThreadPoolExecutor(max_workers=threads) as ex:
                todo = iter(range(len(sizes)))
                pending = deque(ex.submit(inflate, i) for _, i in zip(range(2 * threads), todo))
                try:
                    while pending:
                        raw = pending.popleft().result()
                        for i in todo:
                            pending.append(ex.submit(inflate, i))
                            break
                        mv[pos : pos + len(raw)] = raw
                        crc = zl.crc32(raw, crc)
                        pos += len(raw)
                except (ValueError, zlib.error, zl.error):
                    for f in pending:
                        f.cancel()
                    return False
        return crc == info.CRC

    # ------------------------------------------------------------------ general path
    def triples(self, chunk: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``(rows, cols, grades)`` in pieces of at most ``chunk`` items (default 4 Mi), in file order.

        Each member is inflated as it is consumed (the three at once), so memory stays at a
        few pieces whatever the file's size; :mod:`zipfile` checks each member's CRC-32 at
        its end. :class:`InputError` when the index arrays are not integers, the grades not
        numbers, or the three lengths differ.
        """
        heads = {k: self._header(k) for k in ("rows", "cols", "grades")}
        if heads["rows"][2].kind not in "iu" or heads["cols"][2].kind not in "iu":
            raise InputError("'rows' and 'cols' must be integer index arrays", source=self.path)
        if heads["grades"][2].kind not in "iuf":
            raise InputError(f"'grades' must be numbers, found dtype {heads['grades'][2]}", source=self.path)
        sizes = {math.prod(h[0]) for h in heads.values()}
        if len(sizes) != 1:
            raise InputError("rows, cols and grades differ in length", source=self.path)
        total = sizes.pop()
        step = int(chunk or _STREAM_ITEMS)
        if any(h[1] and len(h[0]) > 1 for h in heads.values()):  # Fortran order: read whole, C order
            yield self["rows"].ravel(), self["cols"].ravel(), self["grades"].ravel()
            return
        names = ("rows", "cols", "grades")
        fps = [self._zip.open(f"{k}.npy") for k in names]
        try:
            for fp, name in zip(fps, names):
                fp.read(heads[name][3])
            for a in range(0, total, step):
                k = min(step, total - a)
                out = []
                for fp, name in zip(fps, names):
                    dtype = heads[name][2]
                    data = fp.read(k * dtype.itemsize)
                    if len(data) != k * dtype.itemsize:
                        raise EOFError(f"member {name!r} is truncated")
                    out.append(np.frombuffer(data, dtype=dtype))
                yield out[0], out[1], out[2]
            for fp in fps:
                if fp.read(1):  # reaching the end checks the CRC-32
                    raise ValueError("a member is longer than its header says")
        finally:
            for fp in fps:
                fp.close()


def read_graded_labels(path: PathLike, collection: Collection) -> Judgments:
    """Read a graded ``.npz`` (see module docstring) onto ``collection``."""
    src = str(path)
    p = Path(path)
    if not p.exists():
        raise InputError("label file not found", source=src)
    if p.stat().st_size == 0:
        raise InputError("file is empty", source=src)
    try:
        with GradedNpz(p) as z:
            fast = _read_grid_labels(z, collection, src)
            if fast is not None:
                return fast
            data = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise InputError(f"cannot read graded labels: {exc}", source=src) from None
    missing = [k for k in ("rows", "cols", "grades", "source") if k not in data]
    if missing:
        raise InputError(f"missing array(s) {missing}; expected rows, cols, grades, source", source=src)
    rows = np.asarray(data["rows"]).ravel()
    cols = np.asarray(data["cols"]).ravel()
    if rows.dtype.kind not in "iu" or cols.dtype.kind not in "iu":
        raise InputError("'rows' and 'cols' must be integer index arrays", source=src)
    source = str(data["source"])
    if "caption_ids" in data and "video_ids" in data:
        cap_ids = [str(x) for x in data["caption_ids"].tolist()]
        vid_ids = [str(x) for x in data["video_ids"].tolist()]
        _check_unique(cap_ids, "caption_ids", src)  # a repeat would land one caption's labels on another
        _check_unique(vid_ids, "video_ids", src)
        if (rows.size and (rows.min() < 0 or rows.max() >= len(cap_ids))) or (
            cols.size and (cols.min() < 0 or cols.max() >= len(vid_ids))
        ):
            raise InputError("label index outside the file's caption_ids/video_ids", source=src)
        if tuple(cap_ids) != collection.caption_ids or tuple(vid_ids) != collection.video_ids:
            rows = _remap(rows, cap_ids, collection.caption_index, "caption", src)
            cols = _remap(cols, vid_ids, collection.video_index, "video", src)
    else:
        shape = tuple(int(x) for x in np.asarray(data.get("shape", [-1, -1])).ravel())
        if shape != collection.shape:
            raise InputError(
                f"labels are for a {shape} collection without ids; collection {collection.name!r} is "
                f"{collection.shape}",
                source=src,
            )
    grades = np.asarray(data["grades"]).ravel()
    if grades.dtype.kind not in "iuf":
        raise InputError(f"'grades' must be numbers, found dtype {grades.dtype}", source=src)
    check_grades(grades, source, src)
    return Judgments.from_arrays(collection.shape, rows, cols, grades, source, origin=src)


def _read_grid_labels(z: GradedNpz, collection: Collection, src: str) -> Judgments | None:
    """Labels of a full-grid file with ids (:meth:`GradedNpz.grid_shape`, marker or scan), or None.

    The same checks and errors as the general path of :func:`read_graded_labels`, in the same
    order, without its index arrays or sort: the grid's ``n × m`` grades are read into a dense
    matrix, checked in pieces, and, when the collection orders the ids otherwise, permuted
    (rows, then columns, in pieces) so that the entries come out sorted by (caption, video)
    of the collection, as :meth:`Judgments.from_arrays` leaves them. A file whose ids repeat
    gives None (the general path reports its conflicts).
    """
    from fireval.core.judgments import grade_dtype, index_dtype, mark_sorted, source_kind
    from fireval.formats.grades import GRADE_MAX, bad_grade, is_proxy

    if any(k not in z for k in ("source", "caption_ids", "video_ids")):
        return None
    shape = z.grid_shape(scan=True)
    if shape is None:
        return None
    n, m = shape
    cap_ids = [str(x) for x in z["caption_ids"].tolist()]
    vid_ids = [str(x) for x in z["video_ids"].tolist()]
    if (len(cap_ids), len(vid_ids)) != (n, m) or len(set(cap_ids)) < n or len(set(vid_ids)) < m:
        return None
    source = str(z["source"])
    same = tuple(cap_ids) == collection.caption_ids and tuple(vid_ids) == collection.video_ids
    rmap = cmap = None
    if not same:
        rmap, cmap = (
            _id_map(ids, index, what, src)
            for ids, index, what in (
                (cap_ids, collection.caption_index, "caption"),
                (vid_ids, collection.video_index, "video"),
            )
        )
    g = z.grid(scan=True)
    if g is None:
        return None
    flat = g.reshape(-1)
    # a piece whose grades are all in [0, GRADE_MAX] in their own dtype passes (NaN fails both
    # comparisons); others (and non-proxy float grades, which must be integers) go to bad_grade
    quick = flat.dtype.kind in "iu" or (flat.dtype.kind == "f" and is_proxy(source))
    for a in range(0, flat.size, _STREAM_ITEMS):
        piece = flat[a : a + _STREAM_ITEMS]
        if quick and bool(np.all((piece >= 0) & (piece <= GRADE_MAX))):
            continue
        found = bad_grade(piece, source)
        if found is not None:
            raise InputError(f"label {a + found[0]}: {found[1]}", source=src)
    source_kind(source)
    from concurrent.futures import ThreadPoolExecutor

    idx = index_dtype(collection.shape)
    if rmap is None or cmap is None:
        rows_of, cols_of = np.arange(n, dtype=idx), np.arange(m, dtype=idx)
        ro = co = None
    else:
        ro, co = np.argsort(rmap, kind="stable"), np.argsort(cmap, kind="stable")
        rows_of, cols_of = rmap[ro].astype(idx), cmap[co].astype(idx)
    if ro is None or co is None:
        # float32 grades stay float32 and are used where they were inflated (no copy)
        grades = np.asarray(g, grade_dtype(g.dtype))
    else:
        grades = np.empty((n, m), grade_dtype(g.dtype))
        step = max(1, _STREAM_ITEMS // max(m, 1))
        for a in range(0, n, step):
            grades[a : a + step] = g[ro[a : a + step]][:, co]
    del g, flat  # before the index arrays: the peak is the Judgments' own arrays
    # the two index arrays are written on two threads (numpy releases the GIL in the copies)
    with ThreadPoolExecutor(max_workers=2) as ex:
        rows = ex.submit(_expand, rows_of[:, None], (n, m))
        cols = ex.submit(_expand, cols_of, (n, m))
        r, c = rows.result(), cols.result()
    out = Judgments(
        shape=collection.shape,
        rows=r,
        cols=c,
        grades=grades.reshape(-1),
        # zeros from calloc: pages of zeros are not resident until written
        source_codes=np.zeros(n * m, dtype=np.int16),
        sources=(source,),
    )
    mark_sorted(out)  # row-major over sorted indices: no pass needed to know it
    return out


def _check_unique(ids: list[str], what: str, src: str) -> None:
    """A file's id array must not repeat an id: entries ``i`` and ``j`` of ``what`` (0-based)."""
    if len(set(ids)) == len(ids):
        return
    first: dict[str, int] = {}
    for i, x in enumerate(ids):
        if x in first:
            raise InputError(
                f"{what} repeats id {x!r} (entries {first[x]} and {i}); each id names one row", source=src
            )
        first[x] = i


def _expand(a: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``a`` broadcast to ``shape``, flattened into a new writeable array (one copy)."""
    out = np.broadcast_to(a, shape).reshape(-1)
    return out if out.flags.writeable else out.copy()


def _id_map(ids: list[str], index: Mapping[str, int], what: str, src: str) -> np.ndarray:
    """Collection index of each of the file's ids; the first unknown one is an :class:`InputError`."""
    out = np.empty(len(ids), np.int64)
    for i, x in enumerate(ids):
        j = index.get(x)
        if j is None:
            raise InputError(f"label on unknown {what} id {x!r}", source=src)
        out[i] = j
    return out


def _remap(idx: np.ndarray, ids: list[str], index: dict[str, int], what: str, src: str) -> np.ndarray:
    used = np.unique(idx)
    table = np.full(len(ids), -1, np.int64)
    for u in used.tolist():
        j = index.get(ids[u])
        if j is None:
            raise InputError(f"label on unknown {what} id {ids[u]!r}", source=src)
        table[u] = j
    return table[idx]


def read_labels(path: PathLike, collection: Collection, direction: Direction | str = "t2v") -> Judgments:
    """Read one label file, choosing the reader by what it holds, not by its name.

    :func:`fireval.formats.textio.label_format` tells the format from the bytes (zip → graded
    labels ``.npz``; JSON → FIRE JSON, source ``human``; other text → TREC qrels in
    ``direction``, source ``human``; gzip data is looked into; the name only breaks a tie when
    the content shows nothing). So FIRE JSON saved as ``labels.txt``, a gzipped one saved as
    ``labels.qrels``, a label ``.npz`` saved as ``labels.tsv`` and qrels saved as
    ``labels.json`` all read as what they are; content that is none of them is a one-line
    :class:`InputError` naming the file.

    FIRE JSON: see :func:`_fire` (no joined record is an error; the import's warnings are
    returned in ``Judgments.warnings``, not logged).
    """
    from fireval.formats.textio import label_format

    p = Path(path)
    kind = label_format(p)
    if kind == "npz":
        return read_graded_labels(p, collection)
    if kind == "fire":
        return _fire(p, collection)
    from fireval.formats.trec import read_trec_qrels  # imported here: writers do not need it

    return read_trec_qrels(p, collection, direction)


def _fire(path: Path, collection: Collection) -> Judgments:
    """FIRE JSON labels, with the import's warnings in ``Judgments.warnings`` (not logged).

    Threshold on joining: a file with records none of which joins the collection (unknown
    video, caption text not in the collection, other dataset) is an :class:`InputError`,
    since it means labels of another collection or dataset and would silently change nothing;
    a partly joined file (e.g. FIRE labels over all of MSR-VTT evaluated on the 1k-A split) is
    normal and gives one warning line with the counts by reason. Pairs whose annotation
    records conflict (left unjudged) also give a warning line.
    """
    import dataclasses

    from fireval.formats.fire_json import read_fire_json  # imported here: writers do not need it

    imp = read_fire_json(path, collection, log=False)
    n_records = imp.n_annotations + imp.disagreements
    warnings = list(imp.warnings)
    if imp.unmatched:
        reasons = imp.summary()["unmatched_by_reason"]
        why = ", ".join(f"{n} {r}" for r, n in reasons.items())
        if len(imp.unmatched) == n_records:
            raise InputError(
                f"none of its {n_records} FIRE record(s) match the captions/videos of collection "
                f"{collection.name!r} ({why}); are these labels for another collection or dataset "
                "(check -c/--collection)?",
                source=str(path),
            )
        warnings.append(
            f"{path}: {len(imp.unmatched)} of {n_records} FIRE records could not be joined to collection "
            f"{collection.name!r} ({why}); they are not used"
        )
    if imp.conflicts:
        warnings.append(
            f"{path}: {imp.conflicts} caption-video pair(s) have FIRE annotation records with different "
            "labels; they stay unjudged"
        )
    if not warnings:
        return imp.judgments
    return dataclasses.replace(imp.judgments, warnings=(*imp.judgments.warnings, *warnings))
