"""Judgments (qrels): sparse graded labels, the judged mask, and provenance per label.

Storage is caption × video (t2v orientation) as coordinate arrays. A pair is *judged* when it
has an entry; its grade is ``> 0`` for relevant and ``0`` for judged irrelevant. A pair with
no entry is *unjudged*. Each entry names its source: ``instance``, ``human``,
``proxy:<name>`` or ``auto:<matcher>``.
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
    rows: npt.NDArray[np.int64]
    cols: npt.NDArray[np.int64]
    grades: npt.NDArray[np.float64]
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
    ) -> Judgments:
        """Labels from one source. Repeated pairs must agree, else :class:`ConflictError`.

        ``origin`` names the file the labels came from, for error messages.
        """
        source_kind(source)
        r = np.asarray(rows, dtype=np.int64).ravel()
        c = np.asarray(cols, dtype=np.int64).ravel()
        g = np.asarray(grades, dtype=np.float64).ravel()
        if not (r.shape == c.shape == g.shape):
            raise InputError("rows, cols and grades differ in length", source=origin)
        if not np.all(np.isfinite(g)):
            raise InputError("grades must be finite numbers", source=origin)
        if np.any(g < 0):
            raise InputError("grades must be >= 0 (0 = judged irrelevant)", source=origin)
        n_rows, n_cols = shape
        if r.size and (r.min() < 0 or r.max() >= n_rows or c.min() < 0 or c.max() >= n_cols):
            raise InputError(f"label index outside the {n_rows} x {n_cols} collection", source=origin)
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
        return cls(
            shape=(int(n_rows), int(n_cols)),
            rows=r[first],
            cols=c[first],
            grades=g[first],
            source_codes=np.zeros(int(first.sum()), dtype=np.int16),
            sources=(source,),
            details=dict(details or {}),
            unresolved=u,
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
        data = np.ones(self.rows.size) if judged else self.grades
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
        )

    def counts_by_source(self) -> dict[str, dict[str, int]]:
        """``{source: {"relevant": n, "irrelevant": n}}`` for reports."""
        out: dict[str, dict[str, int]] = {}
        for code, name in enumerate(self.sources):
            m = self.source_codes == code
            out[name] = {
                "relevant": int((self.grades[m] > 0).sum()),
                "irrelevant": int((self.grades[m] == 0).sum()),
            }
        return out


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

    rows, cols, grades, codes, prio = [], [], [], [], []
    for part_no, p in enumerate(parts):
        remap = np.array([sources.index(s) for s in p.sources], dtype=np.int16)
        part_codes = remap[p.source_codes] if remap.size else p.source_codes
        rank = np.array([rank_of(s) for s in sources])[part_codes] if part_codes.size else np.zeros(0, int)
        rows.append(p.rows)
        cols.append(p.cols)
        grades.append(p.grades)
        codes.append(part_codes)
        prio.append(rank * len(parts) + part_no)
    r, c, g = np.concatenate(rows), np.concatenate(cols), np.concatenate(grades)
    code, pr = np.concatenate(codes).astype(np.int16), np.concatenate(prio)
    unsorted_key = r * shape[1] + c
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
    overruled = {s: int(n) for s, n in zip(sources, lost_codes.tolist(), strict=True) if n}
    for p in parts:  # labels already overruled inside a part stay counted
        for s, n in p.overruled.items():
            overruled[s] = overruled.get(s, 0) + int(n)
    win_grades = g[sel].copy()
    regraded_codes = _grade_instance_positives(order, starts, key, unsorted_key, code, g, sources, win_grades)
    regraded = {s: int(n) for s, n in zip(sources, regraded_codes.tolist(), strict=True) if n}
    for p in parts:
        for s, n in p.regraded.items():
            regraded[s] = regraded.get(s, 0) + int(n)
    details: dict[tuple[int, int], Mapping[str, Any]] = {}
    for p in reversed(parts):
        details.update(p.details)
    unresolved = np.concatenate([p.unresolved for p in parts]) if parts else np.zeros((0, 2), np.int64)
    warnings = tuple(dict.fromkeys(w for p in parts for w in p.warnings))
    return Judgments(
        shape,
        r[sel],
        c[sel],
        win_grades,
        code[sel],
        tuple(sources),
        details,
        unresolved,
        overruled,
        regraded,
        warnings,
    )


def _grade_instance_positives(
    order: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    sorted_key: npt.NDArray[np.int64],
    key: npt.NDArray[np.int64],
    code: npt.NDArray[np.int16],
    g: npt.NDArray[np.float64],
    sources: Sequence[str],
    win_grades: npt.NDArray[np.float64],
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
