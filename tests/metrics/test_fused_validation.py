"""v2t on a dense matrix validates its scores inside the compiled column kernel.

``Run.block(view=True, validate=False)`` returns the v2t view unvalidated; the kernel counts the
NaN/``+inf`` scores while it copies each column tile, and on any calls ``check_scores`` on the
block. Checked here against the unfused path (``Run.block`` validating every block, as before)
and against ``check_scores`` on each dense transposed block (the oracle for the message): a bad
value anywhere, in columns without relevant captions (also four adjacent ones, which the kernel
only reads), in rows below every threshold (tiles that stop early) and in one-query chunks;
``-inf`` and signed zeros stay legal and give identical results.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fireval.core import Judgments, Run
from fireval.core.direction import Direction
from fireval.core.errors import InputError
from fireval.core.run import check_scores
from fireval.metrics import counting, evaluate
from fireval.metrics.counting import MAX_LAYERS, count_buckets

MEASURES = "C@1,C@5,MdR,MnR,RR,AP,nDCG@10,P@R,Recall@5,judged@10"


@contextmanager
def _setup(tile: int, unfused: bool) -> Iterator[list[Any]]:
    """Compiled path on any block size with ``tile`` rows per tile; ``unfused``: ``Run.block``
    validates every block as before the fusion. Yields the ``check`` of every compiled call."""
    assert counting._bucket_kernel() is not None  # numba is a dependency
    calls: list[Any] = []
    real_buckets = counting.count_buckets
    real_block = Run.block

    def spy(cols, q, s, **kw):  # type: ignore[no-untyped-def]
        calls.append(kw.get("check"))
        return real_buckets(cols, q, s, **kw)

    def block(self, *a, validate=True, **kw):  # type: ignore[no-untyped-def]
        return real_block(self, *a, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(counting, "BUCKET_MIN_ELEMS", 0)
        mp.setattr(counting, "BUCKET_MIN_ELEMS_WARM", 0)
        mp.setattr(counting, "TILE_ROWS", tile)
        mp.setattr(counting, "count_buckets", spy)
        if unfused:
            mp.setattr(Run, "block", block)
        yield calls


def _case(
    rng: np.random.Generator, n_c: int, n_v: int, model_like: bool, f64: bool
) -> tuple[np.ndarray, Judgments, np.ndarray]:
    """Scores, labels (columns 0..3 without any when ``n_v`` > 5, one more at random) and the
    mask of labelled entries."""
    s = rng.standard_normal((n_c, n_v))
    s[rng.random(s.shape) < 0.05] = -np.inf
    s[rng.random(s.shape) < 0.05] = 0.0
    s[rng.random(s.shape) < 0.05] = -0.0
    s = s.astype(np.float64 if f64 else np.float32)
    empty = {0, 1, 2, 3} if n_v > 5 else set()
    empty.add(int(rng.integers(n_v)))
    rows: list[int] = []
    cols: list[int] = []
    for v in range(n_v):
        if v in empty:
            continue
        k = int(rng.integers(1, min(n_c, 3 * MAX_LAYERS) + 1))  # many columns > MAX_LAYERS
        caps = rng.choice(n_c, size=k, replace=False)
        rows += caps.tolist()
        cols += [v] * k
        if model_like:  # relevant captions score high: most tiles stop after the lowest threshold
            x = s[caps, v]
            s[caps, v] = np.where(np.isfinite(x), np.abs(x) + 4, x)  # -inf stays
    mask = np.zeros((n_c, n_v), bool)
    mask[rows, cols] = True
    assert not np.isnan(s).any() and not np.isposinf(s).any()
    grades = rng.integers(0, 3, size=len(rows)).astype(float)
    return s, Judgments.from_arrays((n_c, n_v), rows, cols, grades, "human"), mask


def _run(s: np.ndarray, judg: Judgments, chunk_rows: int, tile: int, unfused: bool) -> tuple[Any, list[Any]]:
    """(records, per-query values) of a v2t evaluation, or the InputError's message."""
    with _setup(tile, unfused) as calls:
        try:
            ev = evaluate(
                Run("r", scores=s),
                judg,
                directions="v2t",
                measures=MEASURES,
                per_query=True,
                chunk_rows=chunk_rows,
            )
        except InputError as e:
            return str(e), calls
    pq = ev.per_query
    assert pq is not None
    return (ev.records, pq["value"].to_numpy()), calls


def _nan_safe(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with NaN replaced by a string, so that equal records compare equal."""
    return [{k: "NaN" if isinstance(v, float) and v != v else v for k, v in r.items()} for r in records]


def _oracle(s: np.ndarray, chunk_rows: int) -> str | None:
    """The message of ``check_scores`` on the first dense transposed block that holds a bad score."""
    n_v = s.shape[1]
    for start in range(0, n_v, chunk_rows):
        stop = min(n_v, start + chunk_rows)
        try:
            check_scores(np.ascontiguousarray(s[:, start:stop].T), "r", start, Direction.V2T)
        except InputError as e:
            return str(e)
    return None


@settings(max_examples=60, deadline=None)
@given(
    n_c=st.integers(MAX_LAYERS + 2, 120),
    n_v=st.integers(1, 13),
    tile=st.sampled_from([4, 7, 16, 512]),
    chunk=st.sampled_from([1, 3, 8, 100]),
    model_like=st.booleans(),
    f64=st.booleans(),
    bad=st.sampled_from([np.nan, np.inf, None]),
    where=st.sampled_from(["any", "unlabelled column", "below thresholds", "two"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_v2t_fused_validation_matches_unfused(  # type: ignore[no-untyped-def]
    n_c, n_v, tile, chunk, model_like, f64, bad, where, seed
) -> None:
    rng = np.random.default_rng(seed)
    s, judg, mask = _case(rng, n_c, n_v, model_like, f64)
    if bad is not None:
        if where == "unlabelled column":
            v = int(np.flatnonzero(~mask.any(axis=0))[rng.integers((~mask.any(axis=0)).sum())])
            cells = np.flatnonzero(np.ones(n_c, bool))
        elif where == "below thresholds":  # under the column's lowest labelled score
            v = int(rng.integers(n_v))
            labelled = s[mask[:, v], v]
            low = labelled.min() if labelled.size else np.inf
            cells = np.flatnonzero((s[:, v] < low) & ~mask[:, v])
            if cells.size == 0:
                cells = np.arange(n_c)
        else:
            v = int(rng.integers(n_v))
            cells = np.arange(n_c)
        s[int(rng.choice(cells)), v] = bad
        if where == "two":
            s[int(rng.integers(n_c)), int(rng.integers(n_v))] = np.nan
    want = _oracle(s, chunk)
    fused, calls = _run(s, judg, chunk, tile, unfused=False)
    before, _ = _run(s, judg, chunk, tile, unfused=True)
    if want is None:
        assert not isinstance(fused, str), fused  # -inf and signed zeros are legal
        assert _nan_safe(fused[0]) == _nan_safe(before[0])
        np.testing.assert_array_equal(fused[1], before[1])
    else:
        assert fused == before == want
    per = mask.sum(axis=0)
    starts = range(0, n_v, chunk)
    if want is None and any(
        per[a : a + chunk].max() > MAX_LAYERS and min(n_v, a + chunk) - a > 1 for a in starts
    ):
        assert calls and all(c is not None for c in calls)  # the fused kernel ran


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_count_buckets_calls_check_only_on_bad_scores(bad: float, dtype: type) -> None:
    """Every score is counted, including columns without entries (four adjacent: read only) and
    tiles that stop early; ``-inf`` and signed zeros are not bad."""
    rng = np.random.default_rng(11)
    d, n = 300, 11
    cols = rng.standard_normal((d, n)).astype(dtype)
    per = np.array([0, 0, 0, 0, 9, 8, 0, 12, 7, 0, 10])
    q = np.repeat(np.arange(n), per).astype(np.int64)
    doc = np.concatenate([rng.choice(d, k, replace=False) for k in per]).astype(np.int64)
    order = np.lexsort((doc, q))
    q, doc = q[order], doc[order]
    cols[doc, q] = np.abs(cols[doc, q]) + 5  # model-like: the other scores never reach a later threshold
    other = np.ones(cols.shape, bool)
    other[doc, q] = False
    cols[other & (np.arange(d)[:, None] % 7 == 0) & (np.arange(n) == 5)] = -np.inf
    cols[other & (np.arange(d)[:, None] % 5 == 0) & (np.arange(n) == 6)] = -0.0
    assert np.isneginf(cols).sum() > 30 and not np.isnan(cols).any() and not np.isposinf(cols).any()
    calls: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(counting, "TILE_ROWS", 64)
        ref = count_buckets(cols, q, cols[doc, q], check=lambda: calls.append(1))
        assert calls == []
        plain = count_buckets(cols, q, cols[doc, q])  # the counts do not depend on the check
        np.testing.assert_array_equal(ref, plain)
        for r, c in [(1, 2), (299, 6), (130, 9), (64, 4), (0, 10), (200, 7)]:
            bad_cols = cols.copy()
            bad_cols[r, c] = bad
            keep = ~((doc == r) & (q == c))
            count_buckets(bad_cols, q[keep], bad_cols[doc[keep], q[keep]], check=lambda: calls.append(1))
            assert calls == [1], (r, c)
            calls.clear()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("model_like", [False, True])
def test_v2t_bad_score_in_every_column(bad: float, model_like: bool) -> None:
    """A bad score in each column in turn (labelled or not, in the first, a middle and the last
    row tile, below every threshold of its column or not) raises the oracle's error."""
    rng = np.random.default_rng(5)
    s0, judg, mask = _case(rng, 100, 12, model_like, False)
    assert (~mask.any(axis=0)).sum() >= 4 and mask.sum(axis=0).max() > MAX_LAYERS
    for v in range(s0.shape[1]):
        for r in (0, 49, 99, int(np.argmin(np.where(mask[:, v], np.inf, s0[:, v])))):
            s = s0.copy()
            s[r, v] = bad
            want = _oracle(s, 100)
            assert want is not None
            got, calls = _run(s, judg, 100, 16, unfused=False)
            assert got == want, (v, r)
            assert calls and calls[0] is not None  # one chunk, counted by the fused kernel
