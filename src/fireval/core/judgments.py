"""Judgments (qrels): sparse graded labels, the judged mask, and provenance per label.

Storage is caption × video (t2v orientation) as coordinate arrays. A pair is *judged* when it
has an entry; its grade is ``> 0`` for relevant and ``0`` for judged irrelevant. A pair with
no entry is *unjudged*. Each entry names its source: ``instance``, ``human``,
``proxy:<name>`` or ``auto:<matcher>``. An unjudged pair may be marked *pooled* (``pooled``:
in the assessment pool but not judged, trec_eval's qrels ``rel < 0``): it stays unjudged for
every measure, and only infAP reads the mark (its estimate of the precision above a relevant doc
extends to the pooled docs there; :mod:`fireval.metrics.incomplete`). A judgment of the pair
from any source overrides the mark, so ``pooled`` never holds a judged pair.

Dtypes (so that a full 59,800 × 2,990 proxy grid fits in memory): ``rows``/``cols`` are int64,
or int32 when the collection has fewer than 2^31 cells (:func:`index_dtype`; then
``rows * n_cols + cols`` cannot overflow int32 either); ``grades`` are float64, or float32 when
the source gave float32 grades (:func:`grade_dtype`; no grade is ever rounded); ``source_codes``
are int16. Code reading the arrays must not assume int64/float64 (cast with
``np.asarray(x, np.int64)`` where wider arithmetic is needed) and never writes into them.

Order: :meth:`Judgments.from_arrays`, the grid reader of :mod:`fireval.formats.labels` and
:func:`merge` leave the entries sorted by (row, col), each pair once. :meth:`Judgments.is_sorted`
checks it in one vectorised pass (cached), and :func:`merge` then combines the parts without a
sort: the small parts are looked up in the largest by a vectorised binary search and only the
pairs they touch go through the precedence rules; the largest part's index arrays are shared, not
copied, when the small parts add no new pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # scipy loads on first use, so `import fireval` stays light
    import scipy.sparse as sp

from fireval.core.direction import Direction
from fireval.core.errors import ConflictError, InputError

SOURCE_KINDS = ("instance", "human", "proxy", "auto")

DEFAULT_PRECEDENCE: tuple[str, ...] = ("human", "instance", "auto", "proxy")
"""Default order of :func:`merge`: the first kind listed wins a conflict (human overrides instance)."""

FIRE_PRECEDENCE: tuple[str, ...] = ("instance", "human", "auto", "proxy")
"""FIRE's semantics (Rodriguez et al. 2023): the benchmark's own positives are always kept, so the
augmented labels are gold ∪ annotated. A human "irrelevant" on an instance positive is a
*conflict*: the instance label stays and the human label is counted in ``Judgments.overruled``.
This is the default of :func:`fireval.api.label_sets` and the CLI (``--precedence`` overrides)."""


def source_kind(source: str) -> str:
    """``"proxy:bow"`` → ``"proxy"``; validates the kind."""
    kind = source.split(":", 1)[0]
    if kind not in SOURCE_KINDS:
        raise InputError(f"unknown label source {source!r}; expected one of {', '.join(SOURCE_KINDS)}")
    return kind


#: entries per piece of the vectorised passes over the index arrays (bounded temporaries)
_PIECE = 1 << 22


def index_dtype(shape: tuple[int, int]) -> np.dtype[Any]:
    """int32 when the ``n × m`` collection has fewer than 2^31 cells (so ``row * m + col`` fits
    int32 too), else int64: the dtype a reader may use for ``rows``/``cols``."""
    return np.dtype(np.int32) if int(shape[0]) * int(shape[1]) < 2**31 else np.dtype(np.int64)


def grade_dtype(dtype: npt.DTypeLike) -> np.dtype[Any]:
    """float32 for float16/float32 grades (exactly representable), float64 for any other input."""
    d = np.dtype(dtype)
    return np.dtype(np.float32) if d.kind == "f" and d.itemsize <= 4 else np.dtype(np.float64)


def _as_index(x: npt.ArrayLike, idx: np.dtype[Any]) -> npt.NDArray[np.signedinteger[Any]]:
    """A flat integer array: ``idx`` when every value of the input's dtype fits it (checked
    against the collection by the caller), else int64 (narrowed by the caller after the check)."""
    a = np.asarray(x)
    if a.dtype.kind in "iub" and np.can_cast(a.dtype, idx, "safe"):
        return np.asarray(a, idx).ravel()
    return np.asarray(a, np.int64).ravel()


def mark_sorted(judgments: Judgments) -> None:
    """Record that ``judgments`` is sorted by (row, col) with each pair once, for a builder that
    knows it (e.g. a reader of a row-major grid), so :meth:`Judgments.is_sorted` skips its pass."""
    object.__setattr__(judgments, "_sorted", True)


def _strictly_sorted(rows: npt.NDArray[np.integer[Any]], cols: npt.NDArray[np.integer[Any]]) -> bool:
    """Whether (rows[i], cols[i]) strictly increase (pieces overlap by one entry)."""
    for a in range(0, max(rows.size - 1, 0), _PIECE):
        r, c = rows[a : a + _PIECE + 1], cols[a : a + _PIECE + 1]
        up = r[1:] > r[:-1]
        same = r[1:] == r[:-1]
        if not bool(np.all(up | (same & (c[1:] > c[:-1])))):
            return False
    return True


def _search_pairs(
    rows: npt.NDArray[np.integer[Any]],
    cols: npt.NDArray[np.integer[Any]],
    n_cols: int,
    keys: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Left insertion points of ``keys`` (``row * n_cols + col``) in entries sorted by (row, col).

    A binary search vectorised over the keys (about log2(len) gathers of ``keys.size``), so the
    large array's keys are never built.
    """
    n = int(rows.size)
    lo = np.zeros(keys.size, np.int64)
    hi = np.full(keys.size, n, np.int64)
    while True:
        active = lo < hi
        if not bool(active.any()):
            return lo
        mid = (lo + hi) // 2
        at = np.minimum(mid, max(n - 1, 0))
        less = active & (rows[at].astype(np.int64) * n_cols + cols[at] < keys)
        lo = np.where(less, mid + 1, lo)
        hi = np.where(active & ~less, mid, hi)


def _unjudged_pairs(
    pairs: npt.ArrayLike | None,
    shape: tuple[int, int],
    rows: npt.NDArray[np.integer[Any]],
    cols: npt.NDArray[np.integer[Any]],
    origin: str | None,
) -> npt.NDArray[np.int64]:
    """``pairs`` as a sorted ``(k, 2)`` int64 array, each once, less the pairs that
    ``rows``/``cols`` (sorted by (row, col)) judge; out-of-range pairs raise :class:`InputError`."""
    if pairs is None:
        return np.zeros((0, 2), np.int64)
    p = np.asarray(pairs, np.int64).reshape(-1, 2)
    if p.size == 0:
        return np.zeros((0, 2), np.int64)
    n_rows, n_cols = shape
    if p.min() < 0 or p[:, 0].max() >= n_rows or p[:, 1].max() >= n_cols:
        raise InputError(f"pooled pair outside the {n_rows} x {n_cols} collection", source=origin)
    keys = np.unique(p[:, 0] * n_cols + p[:, 1])
    if rows.size:
        pos = _search_pairs(rows, cols, n_cols, keys)
        at = np.minimum(pos, rows.size - 1)
        judged = (pos < rows.size) & (np.asarray(rows[at], np.int64) * n_cols + cols[at] == keys)
        keys = keys[~judged]
    return np.stack([keys // n_cols, keys % n_cols], axis=1)


@dataclass(frozen=True, eq=False)
class Judgments:
    """Sparse graded labels over a caption × video grid.

    ``rows``/``cols`` index captions/videos of a :class:`~fireval.core.Collection`; every
    (row, col) appears at most once. ``details`` optionally maps an entry's ``(row, col)`` to
    free-form provenance (annotator ids, votes, runs that proposed the pair).
    ``unresolved`` holds pairs that a source looked at but could not decide (human
    disagreements); they stay unjudged and are only reported.
    """

    shape: tuple[int, int]
    rows: npt.NDArray[np.signedinteger[Any]]
    cols: npt.NDArray[np.signedinteger[Any]]
    grades: npt.NDArray[np.floating[Any]]
    source_codes: npt.NDArray[np.int16]
    sources: tuple[str, ...]
    details: Mapping[tuple[int, int], Mapping[str, Any]] = field(default_factory=dict)
    unresolved: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    overruled: Mapping[str, int] = field(default_factory=dict)
    """Per source: labels that :func:`merge` did not use because a source earlier in the
    precedence labelled the same pair with the other relevance (relevant vs irrelevant)."""
    regraded: Mapping[str, int] = field(default_factory=dict)
    """Per source: instance positives whose grade :func:`merge` took from this source's label
    (instance labels say "relevant", not how relevant), counted where the grade changed."""
    warnings: tuple[str, ...] = ()
    """One line each about how a reader built these labels (e.g. FIRE records that could not be
    joined, texts shared by several captions); kept by :func:`merge`, ``select`` and
    ``binarised``, and reported by :func:`fireval.api.label_warnings`."""
    pooled: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    """(caption, video) pairs in the assessment pool but not judged (trec_eval's qrels ``rel < 0``,
    its ``RELVALUE_UNJUDGED``), sorted, each once, never a judged pair: unjudged for every
    measure; infAP counts them among the docs whose precision it estimates. Kept by ``select``
    and ``binarised``; :func:`merge` takes their union less the pairs any part judges."""

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_arrays(
        cls,
        shape: tuple[int, int],
        rows: npt.ArrayLike,
        cols: npt.ArrayLike,
        grades: npt.ArrayLike,
        source: str,
        *,
        details: Mapping[tuple[int, int], Mapping[str, Any]] | None = None,
        unresolved: npt.ArrayLike | None = None,
        origin: str | None = None,
        pooled: npt.ArrayLike | None = None,
    ) -> Judgments:
        """Labels from one source. Repeated pairs must agree, else :class:`ConflictError`.

        ``origin`` names the file the labels came from, for error messages. ``pooled``: ``(k, 2)``
        (caption, video) pairs in the pool but not judged (see ``Judgments.pooled``; a pair that
        is also judged here is judged, not pooled).
        """
        source_kind(source)
        idx = index_dtype(shape)
        r, c = (_as_index(x, idx) for x in (rows, cols))
        g = np.asarray(grades)
        g = np.asarray(g, dtype=grade_dtype(g.dtype)).ravel()
        if not (r.shape == c.shape == g.shape):
            raise InputError("rows, cols and grades differ in length", source=origin)
        if not np.all(np.isfinite(g)):
            raise InputError("grades must be finite numbers", source=origin)
        if np.any(g < 0):
            raise InputError("grades must be >= 0 (0 = judged irrelevant)", source=origin)
        n_rows, n_cols = shape
        if r.size and (r.min() < 0 or r.max() >= n_rows or c.min() < 0 or c.max() >= n_cols):
            raise InputError(f"label index outside the {n_rows} x {n_cols} collection", source=origin)
        r, c = r.astype(idx, copy=False), c.astype(idx, copy=False)  # in range: narrowing is exact
        key = r * n_cols + c
        order = np.argsort(key, kind="stable")
        key, r, c, g = key[order], r[order], c[order], g[order]
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        # a repeated pair must carry the same grade as the first occurrence
        group_start = np.maximum.accumulate(np.where(first, np.arange(key.size), 0))
        bad = np.flatnonzero(g != g[group_start])
        if bad.size:
            i = bad[0]
            raise ConflictError(
                f"conflicting grades {g[group_start[i]]:g} and {g[i]:g} for caption #{r[i]} "
                f"and video #{c[i]} in source {source!r}",
                source=origin,
            )
        u = (
            np.zeros((0, 2), np.int64)
            if unresolved is None
            else np.asarray(unresolved, np.int64).reshape(-1, 2)
        )
        rows_out, cols_out = r[first], c[first]
        return cls(
            shape=(int(n_rows), int(n_cols)),
            rows=rows_out,
            cols=cols_out,
            grades=g[first],
            source_codes=np.zeros(int(first.sum()), dtype=np.int16),
            sources=(source,),
            details=dict(details or {}),
            unresolved=u,
            pooled=_unjudged_pairs(pooled, (int(n_rows), int(n_cols)), rows_out, cols_out, origin),
        )

    @classmethod
    def empty(cls, shape: tuple[int, int]) -> Judgments:
        z = np.zeros(0, np.int64)
        return cls(shape, z, z.copy(), np.zeros(0), np.zeros(0, np.int16), ())

    @classmethod
    def instance(cls, caption_video: npt.ArrayLike, n_videos: int) -> Judgments:
        """The benchmark's own labels: caption *i* is relevant (grade 1) to its video only.

        The grade 1 is a placeholder (relevant, grade unknown): :func:`merge` gives such a pair
        the grade of another source that labels it relevant.

        Only those pairs are judged; every other pair is unjudged (counting it as
        irrelevant is the lower bound, which reproduces the papers' numbers).
        """
        cv = np.asarray(caption_video, dtype=np.int64)
        return cls.from_arrays((cv.size, n_videos), np.arange(cv.size), cv, np.ones(cv.size), "instance")

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return int(self.rows.size)

    def is_sorted(self) -> bool:
        """Whether the entries are in strictly increasing (row, col) order (so each pair once).

        One vectorised pass in pieces (no int64 copy of the index arrays), cached on the object
        (the arrays are never modified in place).
        """
        cached = self.__dict__.get("_sorted")
        if cached is None:
            cached = _strictly_sorted(self.rows, self.cols)
            object.__setattr__(self, "_sorted", cached)
        return bool(cached)

    def has_relevant(self, direction: Direction | str = Direction.T2V) -> npt.NDArray[np.bool_]:
        """Per query of ``direction``: whether it has a relevant (grade > 0) doc.

        The same as ``np.diff(self.relevant().matrix(direction).indptr) > 0``, in pieces,
        without building the matrix.
        """
        d = Direction.parse(direction)
        q = self.rows if d is Direction.T2V else self.cols
        out = np.zeros(self.shape[0] if d is Direction.T2V else self.shape[1], dtype=bool)
        for a in range(0, q.size, _PIECE):
            out[q[a : a + _PIECE][self.grades[a : a + _PIECE] > 0]] = True
        return out

    @property
    def source_per_label(self) -> npt.NDArray[np.object_]:
        """The source name of every entry."""
        names = np.asarray(self.sources, dtype=object)
        return names[self.source_codes] if names.size else np.zeros(0, dtype=object)

    def matrix(self, direction: Direction | str = Direction.T2V, *, judged: bool = False) -> sp.csr_matrix:
        """Query × doc CSR of grades (or of 1 for every judged pair when ``judged``).

        Judged-irrelevant entries are kept as explicit zeros in the grade matrix, so
        ``matrix(d).nnz == matrix(d, judged=True).nnz``.
        """
        import scipy.sparse as sp

        d = Direction.parse(direction)
        # float64 data whatever the grades' dtype (float32 grades convert exactly)
        data = np.ones(self.rows.size) if judged else np.asarray(self.grades, np.float64)
        r, c = (self.rows, self.cols) if d is Direction.T2V else (self.cols, self.rows)
        shape = self.shape if d is Direction.T2V else (self.shape[1], self.shape[0])
        m = sp.csr_matrix((data, (r, c)), shape=shape)
        m.sort_indices()
        return m

    def relevant(self) -> Judgments:
        """Only the entries with grade > 0."""
        return self.select(self.grades > 0)

    def from_source(self, *kinds_or_sources: str) -> Judgments:
        """Only the entries whose source or source kind is listed (``"human"``, ``"proxy:bow"``)."""
        names = self.source_per_label.astype(str)
        kinds = np.array([n.split(":", 1)[0] for n in self.sources], dtype=object)
        keep_code = np.array(
            [n in kinds_or_sources or k in kinds_or_sources for n, k in zip(self.sources, kinds)], dtype=bool
        )
        mask = keep_code[self.source_codes] if names.size else np.zeros(0, bool)
        return self.select(mask)

    def binarised(self, threshold: float) -> Judgments:
        """Grades ``>= threshold`` become 1, the rest 0 (still judged)."""
        g = (self.grades >= threshold).astype(np.float64)
        return Judgments(
            self.shape,
            self.rows,
            self.cols,
            g,
            self.source_codes,
            self.sources,
            self.details,
            self.unresolved,
            self.overruled,
            self.regraded,
            self.warnings,
            self.pooled,
        )

    def select(self, mask: npt.NDArray[np.bool_]) -> Judgments:
        """The entries where ``mask`` is true (provenance details kept for the survivors)."""
        keep = {(int(r), int(c)) for r, c in zip(self.rows[mask], self.cols[mask])} if self.details else set()
        details = {k: v for k, v in self.details.items() if k in keep}
        return Judgments(
            self.shape,
            self.rows[mask],
            self.cols[mask],
            self.grades[mask],
            self.source_codes[mask],
            self.sources,
            details,
            self.unresolved,
            self.overruled,
            self.regraded,
            self.warnings,
            self.pooled,
        )

    def counts_by_source(self) -> dict[str, dict[str, int]]:
        """``{source: {"relevant": n, "irrelevant": n}}`` for reports."""
        k = len(self.sources)
        rel, irr = np.zeros(k, np.int64), np.zeros(k, np.int64)
        for a in range(0, len(self), _PIECE):  # in pieces: no mask or copy of every entry
            code = self.source_codes[a : a + _PIECE].astype(np.int64)
            g = self.grades[a : a + _PIECE]
            rel += np.bincount(code[g > 0], minlength=k)[:k]
            irr += np.bincount(code[g == 0], minlength=k)[:k]
        return {
            name: {"relevant": int(rel[i]), "irrelevant": int(irr[i])} for i, name in enumerate(self.sources)
        }

    def csr_arrays(
        self, direction: Direction | str = Direction.T2V
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.floating[Any]]]:
        """``(indptr, doc indices, grades)`` of the query × doc CSR of sorted judgments, without a sort.

        Requires :meth:`is_sorted` (else :class:`ValueError`). The arrays are those of
        :meth:`matrix` (judged-irrelevant pairs kept as explicit zeros) in this object's own
        dtypes: for t2v the index arrays themselves (no copy); for v2t a counting sort by video
        in pieces (each piece sorted by video, then scattered to where its videos' runs continue),
        so no permutation of all the entries is ever held.
        """
        if not self.is_sorted():
            raise ValueError("csr_arrays needs judgments sorted by (row, col)")
        d = Direction.parse(direction)
        n = len(self)
        if d is Direction.T2V:
            q = self.rows
            bounds = np.arange(self.shape[0] + 1, dtype=np.int64)
            if q.dtype.kind in "iu" and np.iinfo(q.dtype).max >= bounds[-1]:
                bounds = bounds.astype(q.dtype)  # searched in the rows' dtype: no copy of the rows
            return np.searchsorted(q, bounds).astype(np.int64), self.cols, self.grades
        n_q = int(self.shape[1])
        piece = max(_PIECE, n_q)  # each piece costs O(n_q) for its counts
        small = n_q <= 1 << 16  # video numbers as uint16: numpy's stable sort is then a radix sort
        counts = np.zeros(n_q, np.int64)
        for a in range(0, n, piece):
            counts += np.bincount(self.cols[a : a + piece], minlength=n_q)
        indptr = np.zeros(n_q + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.empty(n, self.rows.dtype)
        grades = np.empty(n, self.grades.dtype)
        nxt = indptr[:-1].copy()
        for a in range(0, n, piece):
            q = self.cols[a : a + piece]
            o = np.argsort(q.astype(np.uint16) if small else q, kind="stable")
            qs = q[o].astype(np.int64)
            cnt = np.bincount(qs, minlength=n_q)
            first = np.cumsum(cnt) - cnt  # where each video's run starts inside the sorted piece
            dest = nxt[qs] + np.arange(qs.size) - first[qs]
            indices[dest] = self.rows[a : a + piece][o]
            grades[dest] = self.grades[a : a + piece][o]
            nxt += cnt
        return indptr, indices, grades


def merge(parts: Sequence[Judgments], precedence: Sequence[str] = DEFAULT_PRECEDENCE) -> Judgments:
    """Merge several label sources into one qrels by an explicit policy.

    For a pair labelled by several sources, the label of the source whose kind (or exact
    name) comes first in ``precedence`` wins; among equal precedence the earlier part wins.
    Unresolved pairs (disagreements) stay unjudged unless another source labels them.
    A losing label whose relevance (``grade > 0``) differs from the winner's is a *conflict*:
    it is counted per losing source in ``overruled`` of the result (for FIRE's semantics,
    :data:`FIRE_PRECEDENCE`, these are human "irrelevant" labels on instance positives).

    Instance positives are "relevant, grade unknown": when the winner of a pair is an
    ``instance`` label with grade > 0 and another source labels the same pair relevant
    (grade > 0), the pair takes the grade of the first such label in precedence order (a human
    grade 3 on a gold pair stays 3 under :data:`FIRE_PRECEDENCE`). Relevance is still decided
    by the precedence alone, and the pair keeps ``instance`` as its source. Pairs whose grade
    changed this way are counted per grading source in ``regraded`` of the result.

    When every part is sorted (:meth:`Judgments.is_sorted`) and the parts other than the largest
    hold at most a quarter of its entries, the result is built without sorting the largest part
    (module docstring): the same entries, grades, sources and counts as the general path; the
    index arrays keep the largest part's dtype, the grades too when every other grade fits it
    exactly (else float64).
    """
    parts = [p for p in parts if p is not None]
    if not parts:
        raise InputError("no label sources to merge")
    shape = parts[0].shape
    for p in parts[1:]:
        if p.shape != shape:
            raise InputError(f"label sources cover different collections: {shape} vs {p.shape}")
    sources: list[str] = []
    for p in parts:
        for s in p.sources:
            if s not in sources:
                sources.append(s)

    def rank_of(source: str) -> int:
        for i, key in enumerate(precedence):
            if source == key or source.split(":", 1)[0] == key:
                return i
        return len(precedence)

    rank_by_code = np.array([rank_of(s) for s in sources], dtype=np.int64)
    remaps = [np.array([sources.index(s) for s in p.sources], dtype=np.int16) for p in parts]
    overruled: dict[str, int] = {}
    regraded: dict[str, int] = {}
    fast = _merge_sorted(parts, remaps, rank_by_code, sources, overruled, regraded)
    if fast is None:
        rows, cols, grades, codes, prio = [], [], [], [], []
        for part_no, (p, remap) in enumerate(zip(parts, remaps, strict=True)):
            part_codes = remap[p.source_codes] if remap.size else p.source_codes
            rank = rank_by_code[part_codes] if part_codes.size else np.zeros(0, np.int64)
            rows.append(p.rows)
            cols.append(p.cols)
            grades.append(p.grades)
            codes.append(part_codes)
            prio.append(rank * len(parts) + part_no)
        r, c, g = np.concatenate(rows), np.concatenate(cols), np.concatenate(grades)
        code, pr = np.concatenate(codes).astype(np.int16), np.concatenate(prio)
        key = np.asarray(r, np.int64) * shape[1] + c  # int64 whatever the parts' dtypes
        sel, win_grades = _resolve(key, pr, g, code, sources, overruled, regraded)
        out_rows, out_cols, out_codes = r[sel], c[sel], code[sel]
    else:
        out_rows, out_cols, win_grades, out_codes = fast
    for p in parts:  # labels already overruled (or regraded) inside a part stay counted
        for s, n in p.overruled.items():
            overruled[s] = overruled.get(s, 0) + int(n)
    for p in parts:
        for s, n in p.regraded.items():
            regraded[s] = regraded.get(s, 0) + int(n)
    details: dict[tuple[int, int], Mapping[str, Any]] = {}
    for p in reversed(parts):
        details.update(p.details)
    unresolved = np.concatenate([p.unresolved for p in parts]) if parts else np.zeros((0, 2), np.int64)
    warnings = tuple(dict.fromkeys(w for p in parts for w in p.warnings))
    pooled_parts = [p.pooled for p in parts if p.pooled.size]
    pooled = (
        _unjudged_pairs(np.concatenate(pooled_parts), shape, out_rows, out_cols, None)
        if pooled_parts
        else np.zeros((0, 2), np.int64)
    )
    out = Judgments(
        shape,
        out_rows,
        out_cols,
        win_grades,
        out_codes,
        tuple(sources),
        details,
        unresolved,
        overruled,
        regraded,
        warnings,
        pooled,
    )
    mark_sorted(out)  # by construction: one entry per pair, in key order
    return out


def _resolve(
    unsorted_key: npt.NDArray[np.integer[Any]],
    pr: npt.NDArray[np.int64],
    g: npt.NDArray[np.floating[Any]],
    code: npt.NDArray[np.int16],
    sources: Sequence[str],
    overruled: dict[str, int],
    regraded: dict[str, int],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.floating[Any]]]:
    """The precedence rules of :func:`merge` on concatenated entries (pair key, priority, grade,
    source code): the winning entry of each pair in key order and its grade after
    :func:`_grade_instance_positives`; the conflicts and regradings are added to ``overruled`` /
    ``regraded`` (per source name)."""
    order = np.lexsort((pr, unsorted_key))
    key = unsorted_key[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    sel = order[first]
    # conflicts: a losing entry whose relevance differs from its pair's winner
    starts = np.flatnonzero(first)
    winner = np.repeat(sel, np.diff(np.append(starts, key.size)))
    lost = order[~first]
    differs = (g[lost] > 0) != (g[winner[~first]] > 0)
    lost_codes = np.bincount(code[lost[differs]].astype(np.int64), minlength=len(sources))
    for s, n in zip(sources, lost_codes.tolist(), strict=True):
        if n:
            overruled[s] = overruled.get(s, 0) + int(n)
    win_grades = g[sel].copy()
    regraded_codes = _grade_instance_positives(order, starts, key, unsorted_key, code, g, sources, win_grades)
    for s, n in zip(sources, regraded_codes.tolist(), strict=True):
        if n:
            regraded[s] = regraded.get(s, 0) + int(n)
    return sel, win_grades


def _merge_sorted(
    parts: Sequence[Judgments],
    remaps: Sequence[npt.NDArray[np.int16]],
    rank_by_code: npt.NDArray[np.int64],
    sources: Sequence[str],
    overruled: dict[str, int],
    regraded: dict[str, int],
) -> (
    tuple[
        npt.NDArray[np.signedinteger[Any]],
        npt.NDArray[np.signedinteger[Any]],
        npt.NDArray[np.floating[Any]],
        npt.NDArray[np.int16],
    ]
    | None
):
    """:func:`merge` of sorted parts around the largest one, or None (then the general path).

    The entries of the other parts are looked up in the largest (:func:`_search_pairs`); those
    and the largest part's entries they hit go through :func:`_resolve`; the rest of the largest
    part wins unopposed. Its arrays are shared when nothing changes them.
    """
    sizes = [len(p) for p in parts]
    big = int(np.argmax(sizes))
    b = parts[big]
    n_big, n_small = sizes[big], sum(sizes) - sizes[big]
    idx = b.rows.dtype
    if n_small > max(1 << 16, n_big // 4) or idx not in (np.int32, np.int64) or b.cols.dtype != idx:
        return None
    if idx == np.int32 and index_dtype(b.shape) != idx:
        return None
    if not all(p.is_sorted() for p in parts):
        return None
    n_cols = int(b.shape[1])
    others = [i for i in range(len(parts)) if i != big]
    code_b = remaps[big]
    # the other parts' entries (small): key, priority, grade, source code
    keys = [np.asarray(parts[i].rows, np.int64) * n_cols + parts[i].cols for i in others]
    codes = [(remaps[i][parts[i].source_codes] if remaps[i].size else parts[i].source_codes) for i in others]
    prio = [rank_by_code[c] * len(parts) + i for c, i in zip(codes, others, strict=True)]
    grades = [np.asarray(parts[i].grades) for i in others]
    gdt = b.grades.dtype
    if gdt not in (np.float32, np.float64) or not all(
        np.array_equal(g.astype(gdt).astype(np.float64), g.astype(np.float64)) for g in grades
    ):
        gdt = np.dtype(np.float64)  # a grade the largest part's dtype would round
    sk = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    pos = _search_pairs(b.rows, b.cols, n_cols, sk)
    at = np.minimum(pos, max(n_big - 1, 0))
    hit = (pos < n_big) & (b.rows[at].astype(np.int64) * n_cols + b.cols[at] == sk)
    bpos = np.unique(pos[hit])  # the largest part's entries that something else labels too
    bcode = code_b[b.source_codes[bpos]] if code_b.size else np.zeros(0, np.int16)
    bkey = b.rows[bpos].astype(np.int64) * n_cols + b.cols[bpos]
    key = np.concatenate([sk, bkey])
    pr = np.concatenate([*prio, rank_by_code[bcode] * len(parts) + big]).astype(np.int64)
    g = np.concatenate([*[x.astype(np.float64) for x in grades], b.grades[bpos].astype(np.float64)])
    code = np.concatenate([*codes, bcode]).astype(np.int16)
    sel, win = _resolve(key, pr, g, code, sources, overruled, regraded)
    wkey, wcode = key[sel], code[sel]
    j = np.minimum(np.searchsorted(bkey, wkey), max(bkey.size - 1, 0))
    in_b = (j < bkey.size) & (bkey[j] == wkey) if bkey.size else np.zeros(wkey.size, bool)
    upd, upd_grade, upd_code = bpos[j[in_b]], win[in_b], wcode[in_b]
    new_key = wkey[~in_b]
    # the largest part's codes in the merged numbering: shared when the numbering is the same,
    # one value filled in when it has one source
    identity = bool(code_b.size and np.array_equal(code_b, np.arange(code_b.size)))

    def renumbered() -> npt.NDArray[np.int16]:
        if code_b.size == 1:  # zeros come from calloc: not resident until written
            fill = int(code_b[0])
            return np.zeros(n_big, np.int16) if fill == 0 else np.full(n_big, fill, np.int16)
        return np.array(code_b[b.source_codes] if code_b.size else b.source_codes, dtype=np.int16)

    if new_key.size == 0:
        out_rows, out_cols = b.rows, b.cols
        g_same = gdt == b.grades.dtype and bool(np.array_equal(b.grades[upd], upd_grade))
        out_grades = b.grades if g_same else b.grades.astype(gdt)  # astype copies
        c_same = identity and bool(np.array_equal(b.source_codes[upd], upd_code))
        out_codes = b.source_codes if c_same else renumbered()
        if not g_same:
            out_grades[upd] = upd_grade
        if not c_same:
            out_codes[upd] = upd_code
        return out_rows, out_cols, out_grades, out_codes
    ins = _search_pairs(b.rows, b.cols, n_cols, new_key)  # ascending, as new_key is
    new_at = ins + np.arange(new_key.size)  # where the new pairs land in the result
    upd = upd + np.searchsorted(ins, upd, "right")  # where the largest part's entries land
    total = n_big + new_key.size
    keep = np.ones(total, bool)
    keep[new_at] = False

    def spread(old: npt.NDArray[Any], new: npt.NDArray[Any], dtype: Any) -> npt.NDArray[Any]:
        out = np.empty(total, dtype)
        out[keep] = old
        out[new_at] = new
        return out

    out_rows = spread(b.rows, new_key // n_cols, idx)
    out_cols = spread(b.cols, new_key % n_cols, idx)
    out_grades = spread(b.grades, win[~in_b], gdt)
    out_codes = spread(b.source_codes if identity else renumbered(), wcode[~in_b], np.int16)
    out_grades[upd] = upd_grade
    out_codes[upd] = upd_code
    return out_rows, out_cols, out_grades, out_codes


def _grade_instance_positives(
    order: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    sorted_key: npt.NDArray[np.integer[Any]],
    key: npt.NDArray[np.integer[Any]],
    code: npt.NDArray[np.int16],
    g: npt.NDArray[np.floating[Any]],
    sources: Sequence[str],
    win_grades: npt.NDArray[np.floating[Any]],
) -> npt.NDArray[np.int64]:
    """Give instance-won positives the grade of the pair's best-ranked other relevant label.

    ``order`` sorts the concatenated entries (pair ``key``, grade ``g``, source ``code``) by
    (pair, precedence), ``sorted_key = key[order]``; ``starts`` are the positions in that order
    where a pair begins (its winner); ``win_grades`` (one per pair) is updated in place. Work
    starts from the instance entries, so a full proxy grid costs one pass over the codes.
    Returns, per source code, how many pairs changed grade.
    """
    n_src = len(sources)
    none = np.zeros(n_src, np.int64)
    is_inst = np.array([s.split(":", 1)[0] == "instance" for s in sources], dtype=bool)
    if not is_inst.any() or order.size == 0:
        return none
    inst_keys = np.unique(key[is_inst[code]])
    lo = np.searchsorted(sorted_key, inst_keys, "left")
    hi = np.searchsorted(sorted_key, inst_keys, "right")
    won = order[lo]
    keep = is_inst[code[won]] & (g[won] > 0) & (hi - lo > 1)  # an instance positive won; others exist
    lo, hi = lo[keep], hi[keep]
    if lo.size == 0:
        return none
    lens = hi - lo
    offset = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    entries = order[np.repeat(lo, lens) + offset]  # the entries of those pairs, best ranked first
    pair = np.repeat(np.searchsorted(starts, lo), lens)  # pair number = index into win_grades
    cand = np.flatnonzero(~is_inst[code[entries]] & (g[entries] > 0))
    if cand.size == 0:
        return none
    pairs_with, idx = np.unique(pair[cand], return_index=True)  # first candidate = best ranked
    best = entries[cand[idx]]
    new = g[best]
    changed = new != win_grades[pairs_with]
    win_grades[pairs_with] = new
    return np.bincount(code[best][changed].astype(np.int64), minlength=n_src)
