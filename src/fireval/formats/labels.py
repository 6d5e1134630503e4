"""Graded-label ``.npz`` files and :func:`read_labels`, which dispatches on the file type.

Graded ``.npz`` (written by :func:`write_graded_labels`; used for proxy and auto labels):

- ``rows``, ``cols``: int arrays, caption and video indices (caption × video orientation);
- ``grades``: number array, 0 = judged irrelevant; integers from 0 to 100
  (:data:`~fireval.formats.grades.GRADE_MAX`), any real in that range for ``proxy:*`` sources;
- ``source``: 0-d string array, e.g. ``"proxy:bow"`` or ``"auto:exact"``;
- optional ``caption_ids`` / ``video_ids``: string arrays naming the collection the indices
  refer to. When present the indices are mapped onto the target collection by id (labels on
  ids the target lacks raise :class:`InputError` naming the id); when absent the file's
  ``shape`` (2 ints) must equal the collection's shape.
"""

from __future__ import annotations

import json
import logging
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fireval.atomic import atomic_write
from fireval.core import Collection, Direction, InputError, Judgments
from fireval.formats.grades import check_grades
from fireval.formats.textio import PathLike

log = logging.getLogger(__name__)


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
    full-test proxy's grades for about 40% more bytes, and the rest at level 6 (the index
    arrays repeat with a period of a few kB, which level 1's short hash chains miss: on a
    59,800 × 2,990 grid the column indices take 5 MB at level 6 and 248 MB at level 1);
    ``"none"`` stores the members uncompressed. Members of 8 MB or more are deflated on
    ``threads`` threads (default: the CPUs, at most 4; see :class:`_ParallelDeflate`); the
    bytes read back are the same.
    """
    _check_compress(compress)
    members: dict[str, Any] = {"rows": rows, "cols": cols, "grades": grades}
    _write_npz(path, members, _small_members(source, shape, caption_ids, video_ids, meta), compress, threads)


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
    period repeated, deflated once by :class:`_ParallelDeflate`) at level 6.
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
    per = max(1, (4 << 20) // max(m, 1))  # rows per 16 MB int32 piece
    tile = np.tile(np.arange(m, dtype=np.int32), per)

    def row_pieces() -> Any:
        for a in range(0, n, per):
            b = min(n, a + per)
            yield np.repeat(np.arange(a, b, dtype=np.int32), m)

    def col_pieces() -> Any:
        for a in range(0, n, per):
            yield tile[: (min(n, a + per) - a) * m]

    members = {
        # runs of one value: level 1 is several times faster than 6 there, for a few MB more
        "rows": _Streamed(np.dtype(np.int32), n * m, row_pieces, fast_level=1),
        "cols": _Streamed(np.dtype(np.int32), n * m, col_pieces),
        "grades": np.ascontiguousarray(g).reshape(-1),
    }
    _write_npz(path, members, small, compress, threads)


class _Streamed:
    """A 1-d array given as a generator of pieces (dtype, total length, piece factory), and the
    zlib level that ``compress="fast"`` uses for it."""

    def __init__(self, dtype: np.dtype, size: int, pieces: Any, fast_level: int = 6) -> None:
        self.dtype, self.size, self.pieces, self.fast_level = dtype, size, pieces, fast_level


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


def _write_npz(
    path: PathLike, big: Mapping[str, Any], small: Mapping[str, Any], compress: str, threads: int | None
) -> None:
    """Zip of ``.npy`` members (``big`` first, then ``small``), written atomically."""
    import os

    from numpy.lib import format as npy_format

    method = zipfile.ZIP_STORED if compress == "none" else zipfile.ZIP_DEFLATED
    n_threads = max(1, min(4, os.cpu_count() or 1)) if threads is None else max(1, int(threads))
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
                level = value.fast_level if isinstance(value, _Streamed) else 1 if dtype.kind == "f" else 6
            zf.compresslevel = level  # read by ZipFile.open when it creates the member
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                if compress != "none" and n_threads > 1 and nbytes >= _PARALLEL_MIN_BYTES:
                    _use_parallel_deflate(member, level, n_threads)
                if isinstance(value, _Streamed):
                    header = {
                        "descr": npy_format.dtype_to_descr(dtype),
                        "fortran_order": False,
                        "shape": (size,),
                    }
                    npy_format.write_array_header_1_0(member, header)
                    for piece in value.pieces():
                        member.write(np.ascontiguousarray(piece, dtype=dtype).data)
                else:
                    npy_format.write_array(member, value, allow_pickle=False)


def _use_parallel_deflate(member: Any, level: int, threads: int) -> None:
    """Swap the zlib compressor of an open zip member for a :class:`_ParallelDeflate`.

    :class:`zipfile.ZipFile` has no public hook for this: the member object keeps its
    compressor in ``_compressor`` (CPython 3.11 to 3.13) and only calls its ``compress`` and
    ``flush``. When that attribute is not a plain zlib compressor (another Python), nothing is
    changed and the member is deflated on one thread.
    """
    import zlib

    if type(getattr(member, "_compressor", None)) is type(zlib.compressobj()):
        member._compressor = _ParallelDeflate(level, threads)


class _ParallelDeflate:
    """Raw deflate of a byte stream on several threads, with ``compress``/``flush`` as zlib's.

    Each ``compress`` call's data is cut into pieces of at most 4 MB (small calls are
    buffered); each piece is deflated independently (zlib releases the GIL) and ended with a
    sync flush (byte-aligned, not final), and the outputs are concatenated in order, then
    closed by an empty final block: one valid deflate stream (the scheme of pigz) that
    inflates to exactly the input. The pieces do not see each other's history, which costs a
    few bytes per piece. A piece equal to the piece at the same place of the previous call is
    not deflated again (its output is the same): a periodic array written in whole periods,
    such as the column indices of a full grid, is deflated once. At most ``2 × threads`` pieces
    are in flight.
    """

    PIECE = 4 << 20

    def __init__(self, level: int, threads: int) -> None:
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        self.level = level
        self._pool = ThreadPoolExecutor(max_workers=threads)
        self._pending: Any = deque()
        self._limit = 2 * threads
        self._buf = bytearray()
        self._prev: list[tuple[bytes, Any]] = []  # (piece, future) of the previous call

    def _deflate(self, data: bytes) -> bytes:
        import zlib

        c = zlib.compressobj(self.level, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)

    def _collect(self, wait_until: int) -> bytes:
        out = []
        while self._pending and (len(self._pending) > wait_until or self._pending[0].done()):
            out.append(self._pending.popleft().result())
        return b"".join(out)

    def compress(self, data: Any) -> bytes:
        mv = memoryview(data).cast("B")
        if self._buf or len(mv) < self.PIECE // 4:
            self._buf += mv
            if len(self._buf) < self.PIECE:
                return self._collect(self._limit)
            mv, self._buf = memoryview(bytes(self._buf)), bytearray()
        prev, self._prev = self._prev, []
        for i, pos in enumerate(range(0, len(mv), self.PIECE)):
            piece = bytes(mv[pos : pos + self.PIECE])  # a copy: the caller may reuse its buffer
            if i < len(prev) and prev[i][0] == piece:
                fut = prev[i][1]
            else:
                fut = self._pool.submit(self._deflate, piece)
            self._prev.append((piece, fut))
            self._pending.append(fut)
        return self._collect(self._limit)

    def flush(self) -> bytes:
        import zlib

        try:
            if self._buf:
                self._pending.append(self._pool.submit(self._deflate, bytes(self._buf)))
                self._buf = bytearray()
            body = self._collect(0)
        finally:
            self._pool.shutdown(wait=True)
            self._prev = []
        return body + zlib.compressobj(self.level, zlib.DEFLATED, -15).flush()


def read_graded_labels(path: PathLike, collection: Collection) -> Judgments:
    """Read a graded ``.npz`` (see module docstring) onto ``collection``."""
    src = str(path)
    p = Path(path)
    if not p.exists():
        raise InputError("label file not found", source=src)
    if p.stat().st_size == 0:
        raise InputError("file is empty", source=src)
    try:
        with np.load(p, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
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
    """Read one label file, choosing the reader by extension, then by content.

    ``.json`` (or content starting with ``{``): FIRE JSON (source ``human``); ``.npz``: graded
    labels; ``.qrels``/``.txt``/anything else: TREC qrels in ``direction`` (source ``human``).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".npz":
        return read_graded_labels(p, collection)
    if suffix == ".json" or suffix == ".gz" and p.name.lower().endswith(".json.gz"):
        return _fire(p, collection)
    if suffix not in (".qrels", ".txt", ".tsv"):
        try:
            with p.open("rb") as fh:
                head = fh.read(512).lstrip()
        except FileNotFoundError:
            raise InputError("label file not found", source=str(p)) from None
        if head.startswith(b"{"):
            return _fire(p, collection)
        if head.startswith(b"PK"):
            return read_graded_labels(p, collection)
    from fireval.formats.trec import read_trec_qrels  # imported here: writers do not need it

    return read_trec_qrels(p, collection, direction)


def _fire(path: Path, collection: Collection) -> Judgments:
    """FIRE JSON labels; records that could not be joined are logged as a warning."""
    from fireval.formats.fire_json import read_fire_json  # imported here: writers do not need it

    imp = read_fire_json(path, collection)
    if imp.unmatched:
        s = imp.summary()
        log.warning(
            "%s: %d FIRE records could not be joined (%s)", path, len(imp.unmatched), s["unmatched_by_reason"]
        )
    return imp.judgments
