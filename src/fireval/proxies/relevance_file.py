"""A proxy's caption × video relevance as a value and a file: :class:`ProxyRelevance`.

``grades[i, v]`` ∈ [0, 1] for query caption ``caption_ids[i]`` and video ``video_ids[v]``, with
provenance in ``meta``; as :class:`~fireval.core.judgments.Judgments` (source
``proxy:<name>``; every pair judged, grade 0 = judged irrelevant, unless zeros are dropped),
saved as the graded-label ``.npz`` of :mod:`fireval.formats.labels` (readable by ``fireval
evaluate --labels``) and read back, a full grid straight into the matrix and any other file
streamed in pieces; :func:`load_relevances` reads several files of one collection aligned to the
first one's order.

The proxies that compute it are in :mod:`fireval.proxies.relevance`, which re-exports these names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.errors import FirevalError, InputError
from fireval.core.judgments import Judgments


def _labelled_pairs(
    g: npt.NDArray[np.floating], with_zeros: bool, index_dtype: type = np.int64
) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.integer], npt.NDArray[np.floating]]:
    """``(rows, cols, grades)`` of every cell of ``g`` (row-major), or only of its non-zero cells.

    Indices are built directly in ``index_dtype`` and the grades of every cell are a view of
    ``g``: no int64 index grid is materialised (59,800 × 2,990 cells would take 2.9 GB).
    """
    if with_zeros:
        n, m = g.shape
        r: npt.NDArray[np.integer] = np.repeat(np.arange(n, dtype=index_dtype), m)
        c: npt.NDArray[np.integer] = np.tile(np.arange(m, dtype=index_dtype), n)
        return r, c, g.ravel()
    r, c = (x.astype(index_dtype) for x in np.nonzero(g))
    return r, c, g[r, c]


@dataclass
class ProxyRelevance:
    """Graded caption × video relevance from one proxy, with provenance.

    ``grades[i, v]`` ∈ [0, 1] is the proxy relevance of query caption ``caption_ids[i]`` to
    video ``video_ids[v]`` (the orientation of the query :class:`Collection`).
    """

    grades: npt.NDArray[np.float32]
    caption_ids: tuple[str, ...]
    video_ids: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The label source name, ``proxy:<name>``."""
        return f"proxy:{self.meta.get('proxy', 'unknown')}"

    def to_judgments(self, min_grade: float = 0.0, keep_zeros: bool = True) -> Judgments:
        """As :class:`Judgments` with source ``proxy:<name>``.

        Every pair is judged (grade 0 = judged irrelevant) unless ``keep_zeros`` is False;
        grades below ``min_grade`` become 0.
        """
        g = np.where(self.grades >= min_grade, self.grades, 0).astype(np.float64)
        r, c, vals = _labelled_pairs(g, keep_zeros)
        return Judgments.from_arrays(g.shape, r, c, vals, self.source, origin=self.meta.get("path"))

    def save(self, path: str | Path, judge_zeros: bool = True) -> None:
        """Write the graded-label ``.npz`` of :mod:`fireval.formats.labels` plus ``meta`` (JSON).

        ``rows``/``cols``/``grades``/``source``/``shape``/``caption_ids``/``video_ids`` make
        it readable by ``fireval evaluate --labels``; with ``judge_zeros`` every pair is
        stored (grade 0 = judged irrelevant), otherwise only pairs with a grade > 0.
        """
        from fireval.formats.labels import write_graded_dense

        write_graded_dense(
            path,
            np.asarray(self.grades, dtype=np.float32),
            source=self.source,
            caption_ids=self.caption_ids,
            video_ids=self.video_ids,
            meta={k: v for k, v in self.meta.items() if k != "path"},
            judge_zeros=judge_zeros,
        )

    @classmethod
    def load(cls, path: str | Path) -> ProxyRelevance:
        """Read what :meth:`save` wrote; :class:`InputError` names what is missing or wrong.

        A full grid with a verified ``grid`` marker (:meth:`fireval.formats.labels.GradedNpz.grid`)
        is read straight into the matrix, its index arrays skipped; a full grid without one
        (older files) is recognised by scanning its index arrays, then read the same way; any
        other file (labels on some pairs, another order) is streamed: the ``rows``/``cols``/
        ``grades`` members are inflated together in pieces and scattered into the matrix piece
        by piece. Memory: the matrix plus a few 16 MB pieces either way.
        """
        import zipfile
        import zlib

        from fireval.formats.labels import GradedNpz
        from fireval.formats.textio import loads_bounded

        src = str(path)
        if not Path(path).is_file():
            raise InputError("proxy relevance file not found", source=src)
        try:
            with GradedNpz(path) as z:
                need = ("rows", "cols", "grades", "shape", "caption_ids", "video_ids")
                missing = [k for k in need if k not in z.files]
                if missing:
                    raise InputError(f"not a proxy relevance file: missing {', '.join(missing)}", source=src)
                shape = tuple(int(x) for x in z["shape"].ravel())
                caps, vids = tuple(z["caption_ids"].tolist()), tuple(z["video_ids"].tolist())
                meta = loads_bounded(str(z["meta"])) if "meta" in z.files else {}
                if "source" in z.files and "proxy" not in meta:
                    meta["proxy"] = str(z["source"]).split(":", 1)[-1]
                if shape != (len(caps), len(vids)):
                    raise InputError(
                        f"shape {shape} does not match {len(caps)} caption ids x {len(vids)} video ids",
                        source=src,
                    )
                grid = z.grid(scan=True)
                if grid is not None and grid.shape == shape:
                    cls._check_grades(grid.reshape(-1), src)
                    grades = np.asarray(grid, dtype=np.float32)
                else:
                    grades = cls._scatter(z, shape, src)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise InputError(f"cannot read proxy relevance .npz: {exc}", source=src) from None
        meta["path"] = src
        return cls(grades, caps, vids, meta)

    @staticmethod
    def _check_grades(vals: npt.NDArray[Any], src: str) -> None:
        """:class:`InputError` unless every grade is a number in [0, 1] (checked in pieces)."""
        step = 1 << 22
        for a in range(0, vals.size, step):
            v = vals[a : a + step]
            if np.isnan(v).any() or v.min() < 0 or v.max() > 1:
                raise InputError("proxy grades must lie in [0, 1]", source=src)

    @staticmethod
    def _scatter(z: Any, shape: tuple[int, int], src: str) -> npt.NDArray[np.float32]:
        """The dense matrix of any graded-label file, its labels streamed and scattered in
        pieces (a pair listed twice keeps its last grade); absent pairs are 0."""
        n, m = shape
        grades = np.zeros(shape, dtype=np.float32)
        flat = grades.reshape(-1)
        for r, c, v in z.triples():
            ProxyRelevance._check_grades(v, src)
            if r.size and (r.min() < 0 or r.max() >= n or c.min() < 0 or c.max() >= m):
                raise InputError(f"label index outside the {n} x {m} grid", source=src)
            flat[r.astype(np.int64) * m + c] = v
        return grades

    def aligned(self, collection: Collection) -> ProxyRelevance:
        """The same grades reordered to ``collection``'s caption and video order (ids must match)."""
        if self.caption_ids == collection.caption_ids and self.video_ids == collection.video_ids:
            return self
        ci = {c: i for i, c in enumerate(self.caption_ids)}
        vi = {v: i for i, v in enumerate(self.video_ids)}
        miss = [c for c in collection.caption_ids if c not in ci] + [
            v for v in collection.video_ids if v not in vi
        ]
        if miss:
            raise InputError(
                f"proxy relevance has no entry for id {miss[0]!r} of collection {collection.name!r}",
                source=self.meta.get("path"),
            )
        g = self.grades[np.array([ci[c] for c in collection.caption_ids])][
            :, np.array([vi[v] for v in collection.video_ids])
        ]
        return ProxyRelevance(g, collection.caption_ids, collection.video_ids, self.meta)

    def judgments_for(self, collection: Collection, **kw: Any) -> Judgments:
        """Judgments aligned to ``collection`` (ids must match, in any order)."""
        return self.aligned(collection).to_judgments(**kw)


def load_relevances(paths: Sequence[str | Path]) -> dict[str, ProxyRelevance]:
    """Several proxy files of one collection, keyed by proxy name (file stems if names repeat).

    Every file is aligned to the caption and video order of the first; :class:`InputError`
    names a file that covers other ids.
    """
    if not paths:
        raise FirevalError("no proxy relevance file given")
    rels = [ProxyRelevance.load(p) for p in paths]
    names = [str(r.meta.get("proxy", Path(p).stem)) for r, p in zip(rels, paths)]
    if len(set(names)) < len(names):
        names = [Path(p).stem for p in paths]
    if len(set(names)) < len(names):
        names = [str(p) for p in paths]
    first = rels[0]
    out = {}
    for n, r, p in zip(names, rels, paths):
        if r.caption_ids != first.caption_ids or r.video_ids != first.video_ids:
            if set(r.caption_ids) != set(first.caption_ids) or set(r.video_ids) != set(first.video_ids):
                raise InputError(f"covers other captions or videos than {paths[0]}", source=str(p))
            ci = {c: i for i, c in enumerate(r.caption_ids)}
            vi = {v: i for i, v in enumerate(r.video_ids)}
            g = r.grades[np.array([ci[c] for c in first.caption_ids])][
                :, np.array([vi[v] for v in first.video_ids])
            ]
            r = ProxyRelevance(g, first.caption_ids, first.video_ids, r.meta)
        out[n] = r
    return out
