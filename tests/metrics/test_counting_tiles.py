"""The compiled tile kernel of ``count_buckets`` against a brute-force count.

For every entry (column ``j``, score ``s``) the oracle counts, over the whole column, the scores
strictly greater than ``s`` (``g``) and equal to it (``t``), NaN never counting (a NaN entry
gets ``g = t = 0``). Hypothesis draws the block (float32/float64, few levels for ties, ``-inf``,
``+inf``, NaN scores and signed zeros, a strided view with a leading dimension wider than the
block), the entries (many or few per column, columns without any) and the tile size and sparse
threshold of the kernel (tiles that do not divide the rows, tiles where a column reaches no
threshold, the dense and the one-by-one finish).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fireval.metrics import counting
from fireval.metrics.counting import compiled_ok, count_buckets


def brute(cols: np.ndarray, q: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``g`` and ``t`` entry by entry: compare the score with every score of its column."""
    g = np.zeros(q.size, np.int64)
    t = np.zeros(q.size, np.int64)
    with np.errstate(invalid="ignore"):
        for e in range(q.size):
            col = np.asarray(cols[:, q[e]], dtype=np.float64)
            g[e] = int(np.sum(col > float(s[e])))
            t[e] = int(np.sum(col == float(s[e])))
    return g, t


@contextmanager
def kernel_params(tile: int, sparse: int) -> Iterator[None]:
    old = counting.TILE_ROWS, counting.TILE_SPARSE
    counting.TILE_ROWS, counting.TILE_SPARSE = tile, sparse
    try:
        yield
    finally:
        counting.TILE_ROWS, counting.TILE_SPARSE = old


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    d = draw(st.integers(1, 90))
    n = draw(st.integers(1, 12))
    pad = draw(st.integers(0, 5))  # leading dimension n + pad: rows are not contiguous
    off = draw(st.integers(0, pad))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["levels", "normal", "model-like"]))
    if kind == "levels":
        big = rng.integers(0, draw(st.integers(1, 5)), size=(d, n + pad)).astype(dtype)
    else:
        big = rng.standard_normal((d, n + pad)).astype(dtype)
    for value, p in ((-np.inf, 0.1), (np.inf, 0.03), (np.nan, 0.05), (-0.0, 0.05), (0.0, 0.05)):
        if draw(st.booleans()):
            big[rng.random(big.shape) < p] = value
    cols = big[:, off : off + n]
    many = draw(st.booleans())
    per = rng.integers(0, (d if many else min(d, 3)) + 1, size=n)
    per[rng.random(n) < 0.25] = 0  # columns without entries
    if per.sum() == 0:
        per[int(rng.integers(0, n))] = 1
    q = np.repeat(np.arange(n), per).astype(np.int64)
    doc = np.concatenate([rng.choice(d, int(k), replace=False) for k in per]).astype(np.int64)
    if kind == "model-like":  # entries score high: most tiles reach no threshold, or few scores do
        big[doc, q + off] += dtype(4.0)
    tile = draw(st.integers(1, 40))
    sparse = draw(st.sampled_from([1, 2, 16, 64, 10**6]))
    return cols, q, cols[doc, q], tile, sparse


@settings(max_examples=300, deadline=None)
@given(cases())
def test_tile_kernel_matches_brute_force(case: tuple[np.ndarray, np.ndarray, np.ndarray, int, int]) -> None:
    cols, q, s, tile, sparse = case
    assert compiled_ok(cols)
    with kernel_params(tile, sparse):
        g, t = count_buckets(cols, q, s)
    g2, t2 = brute(cols, q, s)
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(t, t2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tile", [1, 7, 512, 4096, 1 << 20])
def test_tile_kernel_many_layers_and_ragged_tiles(dtype: type, tile: int) -> None:
    """Up to BUCKET_MAX_LAYERS thresholds per column, rows not a multiple of the tile size,
    random scores (every tile reaches every threshold) and tied levels."""
    rng = np.random.default_rng(tile)
    d, n = 1_300, 9
    big = rng.standard_normal((d, 2 * n)).astype(dtype)
    big[:, 1::2] = np.round(big[:, 1::2], 1)  # tied levels in every other column
    cols = big[:, 1 : n + 1] if tile % 2 else big[:, :n]  # rows 2n apart either way
    assert compiled_ok(cols)
    per = np.array([counting.BUCKET_MAX_LAYERS, 1, 0, 20, d, 7, 2, 64, 33])
    q = np.repeat(np.arange(n), per).astype(np.int64)
    doc = np.concatenate([rng.choice(d, int(k), replace=False) for k in per]).astype(np.int64)
    s = cols[doc, q]
    with kernel_params(tile, counting.TILE_SPARSE):
        g, t = count_buckets(cols, q, s)
    g2, t2 = brute(cols, q, s)
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(t, t2)


def test_tile_kernel_column_reaching_no_threshold_in_most_tiles() -> None:
    """Entries far above the rest: every tile but the entries' own stops after one threshold,
    and the sparse finish and the dense path give the same counts."""
    rng = np.random.default_rng(3)
    d, n = 2_000, 4
    cols = rng.standard_normal((d, n)).astype(np.float32)
    doc = np.array([5, 900, 1999, 17, 18, 19, 20, 21, 22, 23], np.int64)
    q = np.array([0, 0, 0, 1, 1, 1, 1, 1, 1, 1], np.int64)
    cols[doc, q] = np.float32(50.0)  # all tied with each other, far above the column
    cols[doc[3:6], q[3:6]] = np.float32(60.0)
    s = cols[doc, q]
    g2, t2 = brute(cols, q, s)
    for sparse in (1, 64, 10**6):
        with kernel_params(64, sparse):
            g, t = count_buckets(cols, q, s)
        np.testing.assert_array_equal(g, g2)
        np.testing.assert_array_equal(t, t2)
    assert t.tolist() == [3, 3, 3, 3, 3, 3, 4, 4, 4, 4] and g[:3].tolist() == [0, 0, 0]
