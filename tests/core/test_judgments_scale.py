"""Judgments at scale: narrow dtypes, the sorted-merge path, CSR arrays without a sort.

Oracles, written from the definitions rather than from the code under test:

- merge: per pair, order its labels by (position of the source's kind or name in the precedence,
  part number); the first wins (grade and source). A losing label whose relevance (grade > 0)
  differs from the winner's is counted in ``overruled`` for its source. When the winner is an
  ``instance`` label with grade > 0, the pair takes the grade of the first non-instance label
  of the pair with grade > 0, counted in ``regraded`` for that label's source when it changes.
- the CSR of a direction is :meth:`Judgments.matrix` (scipy), and the per-query "has a relevant
  doc" mask is ``np.diff(relevant().matrix(d).indptr) > 0``;
- counts by source: the masks of each source's entries.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fireval.core.judgments as jmod
from fireval.core import Judgments, merge
from fireval.core.judgments import DEFAULT_PRECEDENCE, FIRE_PRECEDENCE, index_dtype

SOURCES = ("instance", "human", "proxy:bow", "auto:exact", "proxy:pos")


def _oracle_merge(parts: list[Judgments], precedence: tuple[str, ...]) -> dict[str, Any]:
    def rank(s: str) -> int:
        for i, k in enumerate(precedence):
            if s == k or s.split(":", 1)[0] == k:
                return i
        return len(precedence)

    pairs: dict[tuple[int, int], list[tuple[int, int, float, str]]] = {}
    for no, p in enumerate(parts):
        names = p.source_per_label
        for r, c, g, s in zip(p.rows.tolist(), p.cols.tolist(), p.grades.tolist(), names, strict=True):
            pairs.setdefault((r, c), []).append((rank(s), no, float(g), str(s)))
    out: dict[tuple[int, int], tuple[float, str]] = {}
    overruled: dict[str, int] = {}
    regraded: dict[str, int] = {}
    for key, labels in pairs.items():
        labels.sort(key=lambda x: (x[0], x[1]))
        _, _, g, s = labels[0]
        for _, _, lg, ls in labels[1:]:
            if (lg > 0) != (g > 0):
                overruled[ls] = overruled.get(ls, 0) + 1
        if s.split(":", 1)[0] == "instance" and g > 0:
            others = [x for x in labels[1:] if x[3].split(":", 1)[0] != "instance" and x[2] > 0]
            if others:
                if others[0][2] != g:
                    regraded[others[0][3]] = regraded.get(others[0][3], 0) + 1
                g = others[0][2]
        out[key] = (g, s)
    return {"labels": out, "overruled": overruled, "regraded": regraded}


def _as_oracle(m: Judgments) -> dict[str, Any]:
    names = m.source_per_label
    labels = {
        (r, c): (float(g), str(s))
        for r, c, g, s in zip(m.rows.tolist(), m.cols.tolist(), m.grades.tolist(), names, strict=True)
    }
    return {"labels": labels, "overruled": dict(m.overruled), "regraded": dict(m.regraded)}


@st.composite
def parts_strategy(draw: st.DrawFn) -> tuple[tuple[int, int], list[Judgments]]:
    n, m = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    cells = n * m
    grades = st.sampled_from([0.0, 0.0, 1.0, 2.0, 0.25, 3.0])
    parts = []
    big_cells = draw(st.sets(st.integers(0, cells - 1), min_size=0, max_size=cells))
    big = sorted(big_cells)
    src_big = draw(st.sampled_from(SOURCES[1:]))
    as32 = draw(st.booleans())
    g_big = np.array([draw(grades) for _ in big], np.float32 if as32 else np.float64)
    parts.append(
        Judgments.from_arrays((n, m), np.array(big, int) // m, np.array(big, int) % m, g_big, src_big)
    )
    for _ in range(draw(st.integers(0, 3))):
        cs = sorted(draw(st.sets(st.integers(0, cells - 1), max_size=min(cells, 6))))
        src = draw(st.sampled_from(SOURCES))
        g = np.array([1.0 if src == "instance" else draw(grades) for _ in cs])
        if draw(st.booleans()):
            g = g + 0.1  # not exact in float32: the merged grades must widen to float64
        parts.insert(
            draw(st.integers(0, len(parts))),
            Judgments.from_arrays((n, m), np.array(cs, int) // m, np.array(cs, int) % m, g, src),
        )
    return (n, m), parts


@settings(max_examples=300, deadline=None)
@given(parts_strategy(), st.sampled_from([DEFAULT_PRECEDENCE, FIRE_PRECEDENCE, ("proxy", "human")]))
def test_merge_equals_the_definition_and_the_general_path(case: Any, precedence: tuple[str, ...]) -> None:
    _, parts = case
    got = merge(parts, precedence)
    assert _as_oracle(got) == _oracle_merge(parts, precedence)
    assert got.is_sorted() and jmod._strictly_sorted(got.rows, got.cols)
    # no grade rounded: every merged grade is one of the inputs' grades, in a dtype that holds it
    for p in parts:
        if p.grades.size and not np.array_equal(p.grades.astype(got.grades.dtype), p.grades):
            raise AssertionError("a grade was rounded")
    # the same result with the sorted path disabled (the general path: one lexsort)
    orig = jmod._merge_sorted
    try:
        jmod._merge_sorted = lambda *a, **k: None  # type: ignore[assignment]
        ref = merge(parts, precedence)
    finally:
        jmod._merge_sorted = orig
    for k in ("rows", "cols", "grades", "source_codes"):
        assert np.array_equal(getattr(got, k), getattr(ref, k)), k
    assert got.sources == ref.sources and dict(got.overruled) == dict(ref.overruled)
    assert dict(got.regraded) == dict(ref.regraded)


def test_sorted_merge_shares_the_large_part_and_does_not_sort_it(monkeypatch: pytest.MonkeyPatch) -> None:
    n, m = 40, 30
    rng = np.random.default_rng(1)
    grid = Judgments.from_arrays(
        (n, m),
        np.repeat(np.arange(n), m),
        np.tile(np.arange(m), n),
        (rng.integers(0, 4, n * m) / 4).astype(np.float32),
        "proxy:bow",
    )
    gold = Judgments.instance(np.arange(n) % m, m)
    calls: list[int] = []
    real = np.lexsort
    monkeypatch.setattr(np, "lexsort", lambda keys: calls.append(len(keys[0])) or real(keys))
    out = merge([gold, grid], FIRE_PRECEDENCE)
    assert out.rows is grid.rows and out.cols is grid.cols  # shared, not copied
    assert max(calls) <= 2 * n  # only the pairs the instance labels touch are sorted
    assert out.grades.dtype == np.float32  # instance grades (1.0) fit the grid's float32
    assert _as_oracle(out) == _oracle_merge([gold, grid], FIRE_PRECEDENCE)


def test_from_arrays_keeps_float32_grades_and_narrows_indices() -> None:
    j = Judgments.from_arrays((5, 4), [3, 1], [2, 0], np.array([0.1, 0.5], np.float32), "proxy:bow")
    assert j.rows.dtype == np.int32 and j.cols.dtype == np.int32
    assert j.grades.dtype == np.float32 and j.grades.tolist() == [np.float32(0.5), np.float32(0.1)]
    k = Judgments.from_arrays((5, 4), [3], [2], [0.1], "proxy:bow")
    assert k.grades.dtype == np.float64 and k.grades[0] == 0.1  # float64 stays float64
    assert index_dtype((46341, 46341)) == np.int64 and index_dtype((46340, 46340)) == np.int32


def test_from_arrays_checks_the_range_before_narrowing() -> None:
    from fireval.core import InputError

    with pytest.raises(InputError, match="outside"):
        Judgments.from_arrays((5, 4), np.array([2**32 + 1], np.int64), [0], [1.0], "human")
    with pytest.raises(InputError, match="outside"):
        Judgments.from_arrays((5, 4), np.array([2**31 + 1], np.uint32), [0], [1.0], "human")


def _random_judgments(seed: int, n: int, m: int) -> Judgments:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(0, n * m + 1))
    cells = rng.choice(n * m, size=k, replace=False)
    g = rng.choice([0.0, 0.0, 1.0, 2.5], size=k).astype(np.float32 if seed % 2 else np.float64)
    src = rng.choice(["human", "proxy:bow"], size=k)
    parts = [
        Judgments.from_arrays((n, m), cells[src == s] // m, cells[src == s] % m, g[src == s], s)
        for s in ("human", "proxy:bow")
    ]
    return merge(parts)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("direction", ["t2v", "v2t"])
def test_csr_arrays_equal_the_scipy_matrix(
    seed: int, direction: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jmod, "_PIECE", 5)  # many pieces
    n, m = 9, 7
    j = _random_judgments(seed, n, m)
    indptr, indices, grades = j.csr_arrays(direction)
    ref = j.matrix(direction)
    assert indptr.dtype == np.int64
    assert np.array_equal(indptr, ref.indptr) and np.array_equal(indices, ref.indices)
    assert np.array_equal(grades, ref.data) and grades.dtype == j.grades.dtype
    assert ref.data.dtype == np.float64  # matrix() stays float64 for every consumer
    assert np.array_equal(j.has_relevant(direction), np.diff(j.relevant().matrix(direction).indptr) > 0)


@pytest.mark.parametrize("seed", range(6))
def test_counts_by_source_and_is_sorted(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jmod, "_PIECE", 4)
    j = _random_judgments(seed, 8, 6)
    names = j.source_per_label
    want = {
        s: {
            "relevant": int(((names == s) & (j.grades > 0)).sum()),
            "irrelevant": int(((names == s) & (j.grades == 0)).sum()),
        }
        for s in j.sources
    }
    assert j.counts_by_source() == want
    assert j.is_sorted()
    if len(j) > 1:  # the same entries in another order
        perm = np.roll(np.arange(len(j)), 1)
        shuffled = Judgments(
            j.shape, j.rows[perm], j.cols[perm], j.grades[perm], j.source_codes[perm], j.sources
        )
        assert not shuffled.is_sorted()
        with pytest.raises(ValueError):
            shuffled.csr_arrays("t2v")
        dup = Judgments(
            j.shape, j.rows[[0, 0]], j.cols[[0, 0]], j.grades[[0, 0]], j.source_codes[[0, 0]], j.sources
        )
        assert not dup.is_sorted()
