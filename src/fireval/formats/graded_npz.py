"""Reading graded-label ``.npz`` files (the format: :mod:`fireval.formats.labels`).

:class:`GradedNpz`: a file whose ``grid`` marker checks out against the zip
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

:func:`read_graded_labels` maps a file onto a collection (by ids when the file has them, else
by shape). The writers (:mod:`fireval.formats.labels`) import the marker's name and version
from here, so this module sits below them and below :mod:`fireval.formats.trec`.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fireval.core import Collection, InputError, Judgments
from fireval.formats.grades import check_grades
from fireval.formats.textio import PathLike, loads_bounded

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
