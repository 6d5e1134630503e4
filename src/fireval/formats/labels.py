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
from fireval.formats.fire_json import read_fire_json
from fireval.formats.grades import check_grades
from fireval.formats.textio import PathLike
from fireval.formats.trec import read_trec_qrels

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
) -> None:
    """Write the graded-label ``.npz`` layout (module docstring) atomically.

    ``meta`` (JSON-serialisable provenance, e.g. a proxy's parameters) is stored as a JSON
    string under ``meta``; readers that do not know it ignore it.

    The file is the zip of ``.npy`` members that :func:`numpy.savez_compressed` writes (so
    :func:`numpy.load` reads it), each array streamed into its member with
    :func:`numpy.lib.format.write_array`. ``compress``: ``"best"`` deflates every member at zlib
    level 6 (as ``savez_compressed``); ``"fast"`` (default) deflates float arrays (the grades) at
    level 1, several times faster on a full-test proxy's cosines for about 40% more bytes, and
    the rest at level 6 (the index arrays repeat with a short period: level 6 is as fast there
    and ten or more times smaller than level 1); ``"none"`` stores the members uncompressed.
    """
    arrays: dict[str, Any] = {
        "rows": rows,
        "cols": cols,
        "grades": grades,
        "source": np.array(source),
        "shape": np.asarray(shape, np.int64),
        "caption_ids": np.asarray(caption_ids, dtype=str),
        "video_ids": np.asarray(video_ids, dtype=str),
    }
    if meta is not None:
        arrays["meta"] = np.asarray(json.dumps(dict(meta), sort_keys=True))
    from numpy.lib import format as npy_format

    if compress not in ("fast", "best", "none"):
        raise ValueError(f"compress must be 'fast', 'best' or 'none', not {compress!r}")
    method = zipfile.ZIP_STORED if compress == "none" else zipfile.ZIP_DEFLATED
    with (
        atomic_write(path, "wb") as fh,
        zipfile.ZipFile(fh, "w", compression=method, allowZip64=True) as zf,
    ):
        for name, value in arrays.items():
            value = np.asanyarray(value)
            if compress != "none":  # read by ZipFile.open when it creates the member
                zf.compresslevel = 1 if compress == "fast" and value.dtype.kind == "f" else 6
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy_format.write_array(member, value, allow_pickle=False)


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
    return read_trec_qrels(p, collection, direction)


def _fire(path: Path, collection: Collection) -> Judgments:
    """FIRE JSON labels; records that could not be joined are logged as a warning."""
    imp = read_fire_json(path, collection)
    if imp.unmatched:
        s = imp.summary()
        log.warning(
            "%s: %d FIRE records could not be joined (%s)", path, len(imp.unmatched), s["unmatched_by_reason"]
        )
    return imp.judgments
