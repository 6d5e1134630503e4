"""Score matrices: ``.npy`` (memory-mapped), ``.npz``, id files, v2t orientation, MSVD 3-D layout.

A :class:`~fireval.core.Run` always holds caption × video scores in collection order. This
module maps a file onto that:

- **No ids**: the matrix must already be in collection order, shape ``(n_captions, n_videos)``
  for ``direction="t2v"`` or ``(n_videos, n_captions)`` for ``"v2t"`` (then transposed lazily:
  ``.T`` of a memory map is a view, nothing is copied).
- **Ids** (``query_ids``/``doc_ids``: text files with one id per line, sequences of str, or
  ``query_ids``/``doc_ids`` string arrays inside an ``.npz``) name the rows and columns in the
  file's orientation (rows = queries of ``direction``). They must list every collection
  query/doc exactly once. Rows/columns already in collection order are used without copying;
  otherwise they are gathered once (one copy of the matrix in memory).
- **3-D MSVD layout** ``(n_videos, max_captions, n_videos)``: ``[v, j, :]`` holds the scores of
  the ``j``-th caption of video ``v`` (CLIP4Clip's multi-sentence layout), rows ``j >= number of
  captions of v`` are padding (by convention ``-inf``; their content is ignored). It is
  flattened to captions × videos in collection order.

Checks: shape mismatches name the file, the shape found and the shape expected. NaN and
``+inf`` are errors (``-inf`` means "excluded"); matrices up to :data:`CHECK_AT_LOAD_BYTES` are
checked at load, larger memory maps block by block when evaluated (:meth:`Run.block`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core import Collection, Direction, InputError, Run
from fireval.formats.textio import PathLike, id_list

CHECK_AT_LOAD_BYTES = 256 * 2**20
"""Matrices up to this size are scanned for NaN/+inf when read (in row chunks)."""

_CHUNK_ELEMS = 8 * 2**20


def _check_finite(
    arr: npt.NDArray[np.floating], src: str, row_ids: Sequence[str], col_ids: Sequence[str]
) -> None:
    """Raise on the first NaN / +inf, naming its row and column ids; scans in bounded row chunks."""
    if arr.dtype.kind != "f":
        return
    step = max(1, _CHUNK_ELEMS // max(1, arr.shape[1]))
    for start in range(0, arr.shape[0], step):
        block = np.asarray(arr[start : start + step])
        bad = np.isnan(block) | np.isposinf(block)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            what = "NaN" if np.isnan(block[r, c]) else "+inf"
            # count over the whole matrix, and name the rows that hold them (not the scan chunk)
            n = int(bad.sum())
            rows: set[int] = set((np.flatnonzero(bad.any(axis=1)) + start).tolist())
            for s2 in range(start + step, arr.shape[0], step):
                more = np.asarray(arr[s2 : s2 + step])
                bad2 = np.isnan(more) | np.isposinf(more)
                n += int(bad2.sum())
                rows.update((np.flatnonzero(bad2.any(axis=1)) + s2).tolist())
            first, last = min(rows), max(rows)
            span = f"row {first}" if len(rows) == 1 else f"{len(rows)} rows between {first} and {last}"
            raise InputError(
                f"score is {what} at row {start + r} ({row_ids[start + r]!r}), column {c} ({col_ids[c]!r}); "
                f"{n} NaN/+inf value{'s' if n != 1 else ''} in {span}. Use -inf to exclude a pair.",
                source=src,
            )


def _as_float(arr: npt.NDArray, src: str) -> npt.NDArray[np.floating]:
    if arr.dtype.kind == "f":
        return arr
    if arr.dtype.kind in "iub":
        return np.asarray(arr, dtype=np.float64)
    raise InputError(f"scores must be numbers, found dtype {arr.dtype}", source=src)


def _bad_zip() -> type[Exception]:
    import zipfile

    return zipfile.BadZipFile


def _load(path: Path, mmap: bool) -> tuple[npt.NDArray, list[str] | None, list[str] | None]:
    src = str(path)
    if not path.exists():
        raise InputError("score file not found", source=src)
    if path.stat().st_size == 0:
        raise InputError("file is empty", source=src)
    suffix = path.suffix.lower()
    with path.open("rb") as fh:
        magic = fh.read(6)
    try:
        if suffix == ".npz" or magic.startswith(b"PK\x03\x04"):
            import zipfile  # only for .npz (start-up of `fireval evaluate run.npy`, issue 14)

            if not zipfile.is_zipfile(path):
                raise InputError(
                    "cannot read score matrix: not an .npz archive (not a zip file); save scores with numpy.savez",
                    source=src,
                )
            with np.load(path, allow_pickle=False) as z:
                if "scores" not in z.files:
                    raise InputError(
                        f".npz has keys {sorted(z.files)}; expected 'scores' (+ optional "
                        "'query_ids', 'doc_ids')",
                        source=src,
                    )
                scores = z["scores"]
                ids: dict[str, list[str] | None] = {}
                for key in ("query_ids", "doc_ids"):
                    if key in z.files:
                        a = z[key]
                        if a.dtype.kind not in "US" or a.ndim != 1:
                            raise InputError(
                                f"'{key}' must be a 1-D string array, found {a.dtype} {a.shape}", source=src
                            )
                        # bytes ids (dtype 'S', e.g. from h5py) are UTF-8 text, not "b'...'"
                        ids[key] = [
                            x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)
                            for x in a.tolist()
                        ]
                    else:
                        ids[key] = None
            return scores, ids["query_ids"], ids["doc_ids"]
        if magic != b"\x93NUMPY":
            from fireval.formats.runs import SAVE_HINT

            raise InputError(
                f"cannot read score matrix: not a NumPy .npy file (no \\x93NUMPY header); {SAVE_HINT}",
                source=src,
            )
        arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except InputError:
        raise
    except (ValueError, OSError, EOFError, _bad_zip()) as exc:  # (evaluated only on an error)
        if "allow_pickle" in str(exc) or "Python objects" in str(exc):  # object arrays (memory-mapped or not)
            raise InputError(
                "cannot read score matrix: it holds Python objects, which fireval never unpickles; save "
                "scores as floats and ids as strings, e.g. numpy.savez(path, scores=S, "
                "query_ids=numpy.array(ids, dtype=str))",
                source=src,
            ) from None
        raise InputError(f"cannot read score matrix: {exc}", source=src) from None
    if not isinstance(arr, np.ndarray):
        raise InputError("expected a single array (.npy) or an .npz with 'scores'", source=src)
    return arr, None, None


def _positions(
    ids: list[str], index: dict[str, int], n: int, what: str, where: str, src: str
) -> npt.NDArray[np.int64]:
    """For each collection item (0..n-1), the file position holding it.

    ``ids`` must name every collection item exactly once (an unknown or repeated id raises).
    """
    if len(ids) != n:
        given = set(ids)
        missing = [k for k in index if k not in given][:3]
        extra = f"; e.g. missing {missing}" if missing else ""
        raise InputError(f"{where} lists {len(ids)} {what} ids but the collection has {n}{extra}", source=src)
    pos = np.full(n, -1, dtype=np.int64)
    for i, x in enumerate(ids):
        j = index.get(x)
        if j is None:
            raise InputError(f"unknown {what} id {x!r} (entry {i + 1} of {where})", source=src)
        if pos[j] >= 0:
            raise InputError(
                f"duplicate {what} id {x!r} (entries {pos[j] + 1} and {i + 1} of {where})", source=src
            )
        pos[j] = i
    return pos


def read_scores(
    path: PathLike,
    collection: Collection,
    *,
    direction: Direction | str = "t2v",
    query_ids: PathLike | Sequence[str] | None = None,
    doc_ids: PathLike | Sequence[str] | None = None,
    name: str | None = None,
    mmap: bool = True,
) -> Run:
    """Read a score matrix into a dense :class:`Run` over ``collection`` (see module docstring).

    ``direction`` is the orientation of the matrix in the file: ``t2v`` = rows are captions,
    ``v2t`` = rows are videos. ``.npy`` files are memory-mapped read-only when ``mmap``.
    """
    p = Path(path)
    src = str(p)
    d = Direction.parse(direction)
    arr, z_q, z_d = _load(p, mmap)
    arr = _as_float(arr, src)
    run_name = name or p.stem
    nq, nd = (
        (collection.n_captions, collection.n_videos)
        if d is Direction.T2V
        else (collection.n_videos, collection.n_captions)
    )

    if arr.ndim == 3:
        if d is not Direction.T2V:
            raise InputError(
                "a 3-D (video, caption, video) matrix holds caption rows; use direction t2v", source=src
            )
        if query_ids is not None or doc_ids is not None or z_q is not None or z_d is not None:
            raise InputError(
                "ids cannot be combined with a 3-D matrix (its layout follows the collection)", source=src
            )
        scores = _flatten_3d(arr, collection, src)
        _check_finite(scores, src, collection.caption_ids, collection.video_ids)
        return Run(name=run_name, scores=scores, source=src)
    if arr.ndim != 2:
        raise InputError(
            f"score matrix has shape {arr.shape}; expected 2-D {(nq, nd)} ({d.value}) "
            f"or 3-D (videos, max_captions, videos)",
            source=src,
        )

    q_ids, q_where = (z_q, "the .npz 'query_ids'") if query_ids is None else id_list(query_ids, "query")
    d_ids, d_where = (z_d, "the .npz 'doc_ids'") if doc_ids is None else id_list(doc_ids, "doc")
    exp_rows = nq if q_ids is None else len(q_ids)
    exp_cols = nd if d_ids is None else len(d_ids)
    if arr.shape != (exp_rows, exp_cols):
        hint = ""
        if arr.shape == (exp_cols, exp_rows):
            other = "v2t" if d is Direction.T2V else "t2v"
            hint = (
                f" (it looks transposed: read it with direction {other!r}; on the command line that is "
                f"--run-direction {other}, while -d/--direction only picks the direction to evaluate)"
            )
        raise InputError(
            f"score matrix has shape {arr.shape} but {d.value} over collection {collection.name!r} "
            f"({collection.n_captions} captions x {collection.n_videos} videos) expects {(exp_rows, exp_cols)}{hint}",
            source=src,
        )
    qidx = collection.caption_index if d is Direction.T2V else collection.video_index
    didx = collection.video_index if d is Direction.T2V else collection.caption_index
    qwhat, dwhat = ("caption", "video") if d is Direction.T2V else ("video", "caption")
    m = arr
    if q_ids and q_ids[0] not in qidx and q_ids[0] in didx:
        other = "v2t" if d is Direction.T2V else "t2v"
        raise InputError(
            f"{q_where} names {dwhat} ids (e.g. {q_ids[0]!r}) where {qwhat} ids were expected: the matrix "
            f"looks transposed; read it with direction {other!r} (on the command line --run-direction "
            f"{other})",
            source=src,
        )
    if q_ids is not None:
        rpos = _positions(q_ids, qidx, nq, qwhat, q_where, src)
        if not np.array_equal(rpos, np.arange(nq)):
            m = m[rpos]
    if d_ids is not None:
        cpos = _positions(d_ids, didx, nd, dwhat, d_where, src)
        if not np.array_equal(cpos, np.arange(nd)):
            m = _gather_cols(m, cpos)
    if m.nbytes <= CHECK_AT_LOAD_BYTES or p.suffix.lower() == ".npz":
        _check_finite(m, src, collection.query_ids(d), collection.doc_ids(d))
    scores = m if d is Direction.T2V else m.T
    return Run(name=run_name, scores=scores, source=src)


def frame_scores(frame: object, collection: Collection, direction: Direction | str = "t2v") -> npt.NDArray:
    """The values of a labelled table (a pandas DataFrame) in collection order.

    A DataFrame carries its row and column labels, and those win over positions: rows must be
    the query ids of ``direction`` (caption ids for ``t2v``) and columns the doc ids, each id
    exactly once, in any order (they are gathered into collection order). An axis with default
    labels (``RangeIndex`` 0..n-1) is taken in collection order; an integer axis that is a
    permutation of 0..n-1 (a sorted or shuffled frame) is read as collection positions. Labels
    of the other side (video ids as rows for ``t2v``) are refused with a hint to transpose.
    Anything else raises :class:`InputError` naming the first id that does not fit.
    """
    d = Direction.parse(direction)
    index, columns = frame.index, frame.columns  # type: ignore[attr-defined]
    values = np.asarray(frame)
    if values.ndim != 2:
        return values
    qidx = collection.caption_index if d is Direction.T2V else collection.video_index
    didx = collection.video_index if d is Direction.T2V else collection.caption_index
    qwhat, dwhat = ("caption", "video") if d is Direction.T2V else ("video", "caption")

    def positions(labels: object, index: dict[str, int], other: dict[str, int], what: str, axis: str) -> Any:
        raw = list(labels)  # type: ignore[call-overload]
        n = len(index)
        if all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in raw):
            ints = np.asarray(raw, dtype=np.int64)
            if len(raw) == n and np.array_equal(np.sort(ints), np.arange(n)):
                pos = np.empty(n, dtype=np.int64)
                pos[ints] = np.arange(n)  # collection position ints[i] is held by row i
                as_ids = [str(x) for x in raw]
                if type(labels).__name__ != "RangeIndex" and all(x in index for x in as_ids):
                    # the integers are also the collection's own ids ("0".."n-1" in another
                    # order): labels and positions would gather different rows
                    by_label = _positions(as_ids, index, n, what, f"the DataFrame's {axis}", "DataFrame")
                    if not np.array_equal(by_label, pos):
                        raise InputError(
                            f"the DataFrame's {axis} hold integers 0..{n - 1} that are both {what} "
                            f"positions and {what} ids of the collection, in different orders: make "
                            f"them str ids (frame.{'index' if axis.startswith('index') else 'columns'}"
                            f".astype(str)) or reset them to positions"
                        )
                return None if np.array_equal(ints, np.arange(n)) else pos
        ids = [str(x) for x in raw]
        if ids and ids[0] not in index and ids[0] in other:
            raise InputError(
                f"the DataFrame's {axis} are {'video' if what == 'caption' else 'caption'} ids "
                f"(e.g. {ids[0]!r}) where {what} ids were expected: it looks transposed; pass frame.T, or "
                f"fireval.api.load_run(frame, collection, direction={'v2t' if d is Direction.T2V else 't2v'!r})"
            )
        pos = _positions(ids, index, n, what, f"the DataFrame's {axis}", "DataFrame")
        return None if np.array_equal(pos, np.arange(n)) else pos

    rpos = positions(index, qidx, didx, qwhat, "index (rows)")
    cpos = positions(columns, didx, qidx, dwhat, "columns")
    if rpos is not None:
        values = values[rpos]
    if cpos is not None:
        values = values[:, cpos]
    return values


def _gather_cols(m: npt.NDArray, cpos: npt.NDArray[np.int64]) -> npt.NDArray:
    """``m[:, cpos]`` built in row chunks so a memory map is read once, sequentially."""
    out = np.empty((m.shape[0], cpos.size), dtype=m.dtype)
    step = max(1, _CHUNK_ELEMS // max(1, m.shape[1]))
    for start in range(0, m.shape[0], step):
        out[start : start + step] = np.asarray(m[start : start + step])[:, cpos]
    return out


def _flatten_3d(arr: npt.NDArray, collection: Collection, src: str) -> npt.NDArray:
    """(videos, max_captions, videos) → captions × videos: caption j of video v is ``arr[v, j]``."""
    nv = collection.n_videos
    cv = collection.caption_video
    counts = np.bincount(cv, minlength=nv)
    if arr.shape[0] != nv or arr.shape[2] != nv or arr.shape[1] < counts.max():
        raise InputError(
            f"3-D score matrix has shape {arr.shape}; collection {collection.name!r} expects "
            f"({nv}, >= {int(counts.max())}, {nv}) (videos, max captions per video, videos)",
            source=src,
        )
    # rank of each caption among its video's captions, in collection order (vectorised)
    order = np.argsort(cv, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.empty_like(cv)
    slot[order] = np.arange(cv.size) - np.repeat(starts, counts)
    flat = arr.reshape(nv * arr.shape[1], nv)
    out = np.asarray(flat[cv * arr.shape[1] + slot])
    empty = np.isneginf(out).all(axis=1)
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise InputError(
            f"caption {collection.caption_ids[i]!r} (slot {int(slot[i])} of video {collection.video_ids[cv[i]]!r}) "
            f"has only -inf scores: it looks like padding, so the caption counts per video do not match "
            f"the collection",
            source=src,
        )
    return out


def write_scores(
    path: PathLike, scores: npt.ArrayLike | Run, collection: Collection, *, direction: Direction | str = "t2v"
) -> None:
    """Write a caption × video score matrix atomically, oriented for ``direction``.

    ``.npz``: keys ``scores``, ``query_ids``, ``doc_ids`` (self-describing; :func:`read_scores`
    maps it back by id). Any other name: a plain ``.npy`` in collection order.
    """
    m = scores.scores if isinstance(scores, Run) else np.asarray(scores)
    if m is None:
        raise InputError("only dense runs can be written as a score matrix; use write_trec_run")
    if tuple(m.shape) != collection.shape:
        raise InputError(f"scores have shape {tuple(m.shape)} but the collection is {collection.shape}")
    d = Direction.parse(direction)
    out = np.asarray(m) if d is Direction.T2V else np.asarray(m).T
    from fireval.atomic import atomic_write  # (tempfile: not on the readers' start-up path)

    with atomic_write(path, "wb") as fh:
        if str(path).lower().endswith(".npz"):
            np.savez(
                fh,
                scores=out,
                query_ids=np.asarray(collection.query_ids(d), dtype=str),
                doc_ids=np.asarray(collection.doc_ids(d), dtype=str),
            )
        else:
            np.save(fh, out)
