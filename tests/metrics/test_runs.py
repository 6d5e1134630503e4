"""Run variants: ranked lists, memory-mapped matrices, chunking, progress."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.core import Direction, Judgments, RankedLists, Run
from fireval.metrics import evaluate, query_values

MS = ["C@1", "C@5", "AP", "nDCG@10", "RR", "MnR", "judged@10", "P@10", "bpref", "infAP", "infNDCG@10"]


def _labels(rng, n_q, n_d):
    rows = np.repeat(np.arange(n_q), 3)
    cols = rng.integers(0, n_d, rows.size)
    grades = rng.integers(0, 3, rows.size).astype(float)
    keep = np.unique(rows * n_d + cols, return_index=True)[1]
    return Judgments.from_arrays((n_q, n_d), rows[keep], cols[keep], grades[keep], "human")


def test_ranked_lists_equal_dense_with_minus_inf() -> None:
    rng = np.random.default_rng(4)
    n_q, n_d, k = 50, 40, 12
    dense = np.full((n_q, n_d), -np.inf)
    docs, scores = [], []
    for q in range(n_q):
        d = rng.choice(n_d, size=k, replace=False)
        s = rng.integers(0, 5, size=k).astype(float)  # ties inside the lists
        dense[q, d] = s
        docs.append(d)
        scores.append(s)
    lists = RankedLists(
        Direction.T2V, (n_q, n_d), np.arange(0, n_q * k + 1, k), np.concatenate(docs), np.concatenate(scores)
    )
    judg = _labels(rng, n_q, n_d)
    a = query_values(Run("l", lists=lists), judg, "t2v", MS)
    b = query_values(Run("d", scores=dense), judg, "t2v", MS)
    for m in MS:
        np.testing.assert_array_equal(a[m], b[m])
    # a t2v ranked list cannot be evaluated in v2t: that direction is skipped
    ev = evaluate(Run("l", lists=lists), judg, measures=["C@1"])
    assert set(ev.table.direction) == {"t2v"}


def test_memmap_chunking_and_progress(tmp_path) -> None:
    rng = np.random.default_rng(6)
    n_q, n_d = 300, 70
    s = rng.standard_normal((n_q, n_d)).astype(np.float32)
    path = tmp_path / "s.npy"
    np.save(path, s)
    mm = np.load(path, mmap_mode="r")
    judg = _labels(rng, n_q, n_d)
    calls: list[tuple[int, int]] = []
    ev1 = evaluate(
        Run("m", scores=mm), judg, measures=MS, chunk_rows=7, progress=lambda d, t: calls.append((d, t))
    )
    ev2 = evaluate(Run("m", scores=s), judg, measures=MS)
    np.testing.assert_allclose(ev1.table.value.to_numpy(), ev2.table.value.to_numpy(), atol=1e-12)
    assert calls[-1] == (n_q + n_d, n_q + n_d)
    assert all(b[0] >= a[0] for a, b in zip(calls, calls[1:], strict=False))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_agree(dtype) -> None:
    rng = np.random.default_rng(7)
    s = rng.integers(0, 20, size=(60, 50)).astype(dtype)
    judg = _labels(rng, 60, 50)
    a = query_values(Run("a", scores=s), judg, "v2t", MS)
    b = query_values(Run("b", scores=s.astype(np.float64)), judg, "v2t", MS)
    for m in MS:
        np.testing.assert_allclose(a[m], b[m], atol=1e-12)


def test_threads_do_not_change_results(monkeypatch) -> None:
    import sys

    ev_mod = sys.modules["fireval.metrics.driver"]  # (the driver runs the chunks on its THREADS)

    rng = np.random.default_rng(12)
    s = rng.integers(0, 6, size=(90, 40)).astype(np.float32)
    judg = _labels(rng, 90, 40)
    monkeypatch.setattr(ev_mod, "THREADS", 1)
    a = evaluate(
        Run("a", scores=s), judg, measures=MS, chunk_rows=8, unjudged=("lower", "upper", "condensed")
    )
    monkeypatch.setattr(ev_mod, "THREADS", 2)
    b = evaluate(
        Run("a", scores=s), judg, measures=MS, chunk_rows=8, unjudged=("lower", "upper", "condensed")
    )
    np.testing.assert_array_equal(a.table.value.to_numpy(), b.table.value.to_numpy())
    assert a.tie_report == b.tie_report
