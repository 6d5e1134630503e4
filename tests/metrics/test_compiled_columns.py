"""The compiled layer kernel for v2t columns (numba) gives exactly the pure-numpy counts.

``count_buckets`` is checked against ``count_direct`` (compare each entry with its whole row),
whole evaluations with the compiled path forced against the pure-numpy path (per-query values,
aggregates, tie report) and against brute force over orderings, on random and heavily tied
matrices, ties between relevant scores, ``-inf`` and signed zeros, many relevant docs per
column, columns where every doc is relevant, columns without entries and chunk boundaries.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fireval.core import Judgments, Run
from fireval.core.errors import InputError
from fireval.metrics import counting, evaluate, query_values
from fireval.metrics.counting import (
    BUCKET_MAX_LAYERS,
    MAX_LAYERS,
    count_buckets,
    count_columns,
    count_columns_numpy,
    count_direct,
)

from .helpers import build, random_case
from .reference import reference

MEASURES = "C@1,C@5,C@10,MdR,MnR,RR,AP,AP_hits@5,nDCG@10,nDCG,P@10,P@R,Recall@10,R-Prec,judged@10"


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Force the compiled path on any block size; returns a list that counts its calls."""
    assert counting._bucket_kernel() is not None  # numba is a dependency
    calls: list[int] = []
    real = counting.count_buckets

    def spy(cols, q, s, **kw):  # type: ignore[no-untyped-def]
        calls.append(q.size)
        return real(cols, q, s, **kw)

    monkeypatch.setattr(counting, "BUCKET_MIN_ELEMS", 0)
    monkeypatch.setattr(counting, "BUCKET_MIN_ELEMS_WARM", 0)
    monkeypatch.setattr(counting, "count_buckets", spy)
    return calls


def _entries(rng: np.random.Generator, d: int, per: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted column index and doc of each entry: ``per[j]`` distinct docs in column ``j``."""
    q = np.repeat(np.arange(per.size), per)
    doc = [rng.choice(d, int(k), replace=False) for k in per]
    return q.astype(np.int64), np.concatenate(doc).astype(np.int64) if doc else np.zeros(0, np.int64)


def _check(cols: np.ndarray, q: np.ndarray, doc: np.ndarray) -> None:
    s = cols[doc, q]
    g, t = count_buckets(cols, q, s)
    g2, t2 = count_direct(np.ascontiguousarray(cols.T), q, s)
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(t, t2)
    g3, t3 = count_columns_numpy(cols, q, s)
    np.testing.assert_array_equal(g, g3)
    np.testing.assert_array_equal(t, t3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["continuous", "model-like", "tied", "two-levels", "signed-zeros"])
def test_count_buckets_equals_direct(dtype: type, kind: str) -> None:
    rng = np.random.default_rng(abs(hash((kind, dtype.__name__))) % 2**32)
    for _ in range(6):
        d, n, pad = int(rng.integers(1, 400)), int(rng.integers(1, 40)), int(rng.integers(0, 4))
        if kind in ("continuous", "model-like"):
            big = rng.standard_normal((d, n + pad))
        elif kind == "tied":
            big = rng.integers(0, 6, size=(d, n + pad)).astype(float)
        elif kind == "two-levels":
            big = rng.integers(0, 2, size=(d, n + pad)).astype(float)
        else:
            big = rng.choice([-0.0, 0.0, 1.0], size=(d, n + pad))
        big[rng.random(big.shape) < 0.05] = -np.inf
        big = big.astype(dtype)
        a = int(rng.integers(0, pad + 1))
        cols = big[:, a : a + n]  # a strided view, as a v2t block of a wider matrix is
        per = rng.integers(0, min(d, 90) + 1, size=n)
        per[rng.random(n) < 0.2] = 0  # columns without entries
        if per.sum() == 0:
            per[0] = 1
        q, doc = _entries(rng, d, per)
        if kind == "model-like":  # entries score high: rows leave the layers early (sparse finish)
            big[doc, q + a] += dtype(3.0)
            i = np.arange(0, q.size - 1, 3)
            big[doc[i], q[i] + a] = big[doc[i + 1], q[i + 1] + a]  # entries tied with each other
        _check(cols, q, doc)


def test_count_buckets_all_docs_relevant_and_many_per_column() -> None:
    rng = np.random.default_rng(1)
    d = BUCKET_MAX_LAYERS + 9
    cols = rng.integers(0, 5, size=(d, 6)).astype(np.float32)
    cols[:3, 2] = -np.inf
    per = np.array([d, BUCKET_MAX_LAYERS, 1, MAX_LAYERS + 1, 0, d])
    _check(cols, *_entries(rng, d, per))
    one_row = rng.standard_normal((1, 5)).astype(np.float32)
    _check(one_row, np.arange(5), np.zeros(5, np.int64))
    one_col = rng.standard_normal((50, 1))
    _check(one_col, np.zeros(50, np.int64), np.arange(50))


def test_count_buckets_row_tiles_and_large_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel counts tile by tile (int32 per tile, int64 in total): many tiles, counts above
    2**16, a tile where every score is tied and a ragged last tile give the direct counts."""
    rng = np.random.default_rng(7)
    d = 70_000  # > 2**16 rows: counts above any 16-bit packing
    cols = np.zeros((d, 3), np.float32)  # column 0: every score tied (t = d)
    cols[:, 1] = rng.integers(0, 3, d)  # column 1: three big tie groups (~23k each)
    cols[:, 2] = rng.standard_normal(d)
    cols[: (1 << 16) - 1, 0] = 1.0  # column 0: an all-equal run (a whole tile of the largest size)
    per = np.array([MAX_LAYERS + 2, MAX_LAYERS + 3, 20])
    _check(cols, *_entries(rng, d, per))
    monkeypatch.setattr(counting, "TILE_ROWS", 1 << 16)  # clamped to 2**16 - 1: both 16-bit halves full
    _check(cols, *_entries(rng, d, per))
    monkeypatch.setattr(counting, "TILE_ROWS", 7)  # many small tiles, ragged last one
    small = rng.integers(0, 4, size=(101, 9)).astype(np.float32)
    _check(small, *_entries(rng, 101, np.full(9, MAX_LAYERS + 1)))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 30),
    st.integers(1, 6),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_count_buckets_property(d: int, n: int, levels: int, r) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(r.randrange(2**32))
    cols = rng.integers(0, levels, size=(d, n)).astype(np.float32)
    cols[rng.random(cols.shape) < 0.1] = -np.inf
    per = rng.integers(0, d + 1, size=n)
    if per.sum() == 0:
        per[0] = 1
    _check(cols, *_entries(rng, d, per))


def _brute(cols: np.ndarray, q: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Test-only oracle from the definitions: per entry, the scores of its column strictly above
    its score and equal to it (NaN is neither)."""
    g = np.array([int(np.sum(cols[:, j] > v)) for j, v in zip(q, s)], dtype=np.int64)
    t = np.array([int(np.sum(cols[:, j] == v)) for j, v in zip(q, s)], dtype=np.int64)
    return g, t


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 300),
    st.integers(1, 6),
    st.integers(0, 3),
    st.sampled_from([1, 2, 3, 5, 8, 100, 512]),
    st.booleans(),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_count_buckets_special_values_property(  # type: ignore[no-untyped-def]
    d: int, n: int, pad: int, tile: int, f64: bool, lift: bool, r
) -> None:
    """Every path of the kernel (dense passes of one and of two thresholds, early stop, sparse
    finish, tiny and ragged tiles) on ties, +-inf, NaN and signed zeros in a strided view
    gives the brute-force counts."""
    rng = np.random.default_rng(r.randrange(2**32))
    pool = np.array([-np.inf, -1.5, -0.0, 0.0, 0.5, 1.0, np.inf, np.nan])
    big = rng.choice(pool, size=(d, n + pad))
    cont = rng.random(big.shape) < rng.random()  # some continuous scores, some tied values
    big[cont] = rng.standard_normal(int(cont.sum()))
    big = big.astype(np.float64 if f64 else np.float32)
    a = int(rng.integers(0, pad + 1))
    cols = big[:, a : a + n]  # a strided view, as a v2t block of a wider matrix is
    per = rng.integers(0, min(d, 4 if lift else 70) + 1, size=n)
    if per.sum() == 0:
        per[0] = 1
    q, doc = _entries(rng, d, per)
    if lift:  # entries score high: few scores reach a column's lowest entry (sparse finish)
        big[doc, q + a] += 3.0
    s = cols[doc, q]
    saved = counting.TILE_ROWS
    counting.TILE_ROWS = tile
    try:
        g, t = count_buckets(cols, q, s)
    finally:
        counting.TILE_ROWS = saved
    g2, t2 = _brute(cols, q, s)
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(t, t2)


def test_count_columns_takes_the_compiled_path_and_matches_numpy(
    compiled: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(2)
    s = rng.integers(0, 7, size=(300, 40)).astype(np.float32)
    per = rng.integers(1, 30, size=40)
    per[5] = MAX_LAYERS + 1  # at least one column above the numpy layer limit
    q, doc = _entries(rng, 300, per)
    vals = s[doc, q]
    g, t = count_columns(s, q, vals)
    assert compiled == [q.size]
    monkeypatch.setattr(counting, "USE_COMPILED", False)
    g2, t2 = count_columns(s, q, vals)
    assert compiled == [q.size]  # not called again
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(t, t2)
    # a column above BUCKET_MAX_LAYERS sends the block to numpy
    monkeypatch.setattr(counting, "USE_COMPILED", True)
    monkeypatch.setattr(counting, "BUCKET_MAX_LAYERS", 10)
    count_columns(s, q, vals)
    assert compiled == [q.size]


def _labels(rng: np.random.Generator, n_c: int, n_v: int, lo: int, hi: int) -> Judgments:
    rows, cols, grades = [], [], []
    for v in range(n_v):
        k = int(rng.integers(lo, hi + 1))
        caps = rng.choice(n_c, size=min(k, n_c), replace=False)
        rows += caps.tolist()
        cols += [v] * caps.size
        grades += rng.integers(0, 3, size=caps.size).tolist()  # some judged irrelevant
    return Judgments.from_arrays((n_c, n_v), rows, cols, np.asarray(grades, float), "human")


@pytest.mark.parametrize("kind", ["continuous", "tied"])
def test_evaluation_identical_to_numpy_path(
    kind: str, compiled: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3 if kind == "tied" else 4)
    n_c, n_v = 500, 37
    if kind == "tied":
        s = rng.integers(0, 4, size=(n_c, n_v)).astype(np.float32)
    else:
        s = rng.standard_normal((n_c, n_v)).astype(np.float32)
    s[rng.random(s.shape) < 0.03] = -np.inf
    judg = _labels(rng, n_c, n_v, 1, 40)
    run = Run("r", scores=s)
    results = {}
    for path in ("compiled", "numpy"):
        monkeypatch.setattr(counting, "USE_COMPILED", path == "compiled")
        for cr in (None, 5, 16, n_v):  # chunk boundaries inside and at the edge
            ev = evaluate(run, judg, measures=MEASURES, per_query=True, chunk_rows=cr, ties="tie-aware")
            pq = ev.per_query
            assert pq is not None
            results[(path, cr)] = (ev.records, pq["value"].to_numpy(), ev.tie_report)
            for ties in ("optimistic", "pessimistic"):
                results[(path, cr, ties)] = query_values(run, judg, "v2t", MEASURES, ties=ties, chunk_rows=cr)
    assert compiled  # the compiled path ran
    ref = results[("numpy", None)]
    for key, val in results.items():
        if len(key) == 3:
            other = results[("numpy", None, key[2])]
            for m in other:
                np.testing.assert_array_equal(val[m], other[m], err_msg=f"{key} {m}")
            continue
        assert val[0] == ref[0], key
        np.testing.assert_array_equal(val[1], ref[1], err_msg=str(key))
        assert val[2] == ref[2], key


def test_v2t_compiled_matches_bruteforce(compiled: list[int]) -> None:
    """v2t with every caption judged (8 > MAX_LAYERS entries per video) against all orderings."""
    rng = np.random.default_rng(5)
    ms = ["C@1", "C@3", "P@3", "Recall@3", "AP", "RR", "nDCG@3", "MnR", "R-Prec"]
    checked = 0
    for _ in range(6):
        # built as video x caption, evaluated as v2t on the caption x video transpose
        scores, grades = random_case(rng, 4, 8, levels=3, p_inf=0.1, p_judged=1.0)
        run_t, judg_t = build(scores, grades)
        m = judg_t.matrix("t2v").tocoo()
        judg = Judgments.from_arrays((8, 4), m.col, m.row, m.data, "human")
        run = Run("r", scores=np.ascontiguousarray(scores.T))
        got = query_values(run, judg, "v2t", ms, ties="tie-aware")
        maxg = max([g for row in grades for g in row if g], default=1.0)
        for v in range(4):
            ref = reference(list(scores[v]), grades[v], "lower", "tie-aware", (1, 3), maxg=maxg)
            for name in ms:
                val = got[name][v]
                if not ref:
                    assert math.isnan(val)
                    continue
                assert val == pytest.approx(ref[name], abs=1e-9), (name, v)
                checked += 1
    assert compiled and checked > 50


def test_block_size_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below the block-size threshold (cold or warm) the numpy path runs; above, the compiled."""
    calls: list[int] = []
    real = counting.count_buckets
    monkeypatch.setattr(
        counting, "count_buckets", lambda c, q, s, **kw: calls.append(1) or real(c, q, s, **kw)
    )
    rng = np.random.default_rng(7)
    s = rng.standard_normal((100, 10)).astype(np.float32)
    q, doc = _entries(rng, 100, np.full(10, MAX_LAYERS + 2))
    monkeypatch.setattr(counting, "_WARM", [])
    monkeypatch.setattr(counting, "BUCKET_MIN_ELEMS", 1001)
    monkeypatch.setattr(counting, "BUCKET_MIN_ELEMS_WARM", 0)
    count_columns(s, q, s[doc, q])
    assert calls == []  # cold: 1,000 scores < 1,001
    monkeypatch.setattr(counting, "BUCKET_MIN_ELEMS", 1000)
    count_columns(s, q, s[doc, q])
    assert calls == [1] and counting._WARM
    monkeypatch.setattr(counting, "BUCKET_MIN_ELEMS", 10**9)
    count_columns(s, q, s[doc, q])
    assert calls == [1, 1]  # warm: the smaller threshold applies


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_bad_scores_raise_as_before(bad: float, compiled: list[int]) -> None:
    rng = np.random.default_rng(6)
    s = rng.standard_normal((60, 4)).astype(np.float32)
    s[17, 2] = bad
    judg = _labels(rng, 60, 4, MAX_LAYERS + 1, 20)
    with pytest.raises(InputError, match="17"):
        evaluate(Run("r", scores=s), judg, directions="v2t")
