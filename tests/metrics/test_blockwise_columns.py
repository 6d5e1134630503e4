"""v2t counted on the columns of the matrix (no transpose) equals the transposed t2v path."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.core import Judgments, Run
from fireval.metrics import evaluate, query_values
from fireval.metrics.counting import MAX_LAYERS, count_columns, count_direct
from fireval.metrics.kernel import make_entries

MEASURES = "C@1,C@5,C@10,MdR,MnR,RR,AP,nDCG@10,P@10,Recall@10,judged@10"


def _case(
    rng: np.random.Generator, n_c: int, n_v: int, levels: int, max_rel: int
) -> tuple[np.ndarray, Judgments]:
    s = rng.integers(0, levels, size=(n_c, n_v)).astype(np.float32)  # few levels: many ties
    s[rng.random(s.shape) < 0.05] = -np.inf
    # per video 1..max_rel judged captions, graded 0..2 (some judged irrelevant)
    rows, cols, grades = [], [], []
    for v in range(n_v):
        k = int(rng.integers(1, max_rel + 1))
        caps = rng.choice(n_c, size=min(k, n_c), replace=False)
        rows += caps.tolist()
        cols += [v] * caps.size
        grades += rng.integers(0, 3, size=caps.size).tolist()
    return s, Judgments.from_arrays((n_c, n_v), rows, cols, np.asarray(grades, float), "human")


@pytest.mark.parametrize("max_rel", [1, 3, MAX_LAYERS, 3 * MAX_LAYERS])
def test_count_columns_equals_direct(max_rel: int) -> None:
    rng = np.random.default_rng(max_rel)
    for _ in range(5):
        s, j = _case(rng, 97, 23, 4, max_rel)
        m = j.matrix("v2t")
        q = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr)).astype(np.int64)
        doc = m.indices.astype(np.int64)
        vals = s[doc, q]  # the entry's own score, read from the caption x video matrix
        g, t = count_columns(s, q, vals)
        g2, t2 = count_direct(np.ascontiguousarray(s.T), q, vals)
        np.testing.assert_array_equal(g, g2)
        np.testing.assert_array_equal(t, t2)


@pytest.mark.parametrize("ties", ["tie-aware", "optimistic", "pessimistic"])
@pytest.mark.parametrize("max_rel", [2, 3 * MAX_LAYERS])
def test_v2t_on_columns_equals_transposed_t2v(ties: str, max_rel: int) -> None:
    rng = np.random.default_rng(7 + max_rel)
    s, j = _case(rng, 120, 31, 3, max_rel)
    m = j.matrix("v2t").tocoo()
    jt = Judgments.from_arrays((31, 120), m.row, m.col, m.data, "human")  # the transposed labels
    for chunk_rows in (None, 4, 31):
        a = query_values(Run("r", scores=s), j, "v2t", MEASURES, ties=ties, chunk_rows=chunk_rows)
        b = query_values(Run("r", scores=np.ascontiguousarray(s.T)), jt, "t2v", MEASURES, ties=ties)
        for key in b:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_make_entries_view_equals_copy() -> None:
    rng = np.random.default_rng(3)
    s, j = _case(rng, 64, 20, 3, 4)
    m = j.matrix("v2t")
    args = (m.indptr.astype(np.int64), m.indices.astype(np.int64), np.asarray(m.data, float))
    view = s[:, 5:20].T
    assert not view.flags.c_contiguous
    lo, hi = m.indptr[5], m.indptr[20]
    sub = (args[0][5:21] - lo, args[1][lo:hi], args[2][lo:hi])
    for unjudged in ("lower", "upper", "condensed"):
        e1, g1, t1 = make_entries(
            view, *sub, unjudged=unjudged, ties="tie-aware", tie_rank=None, max_grade=2.0
        )
        e2, g2, t2 = make_entries(
            np.ascontiguousarray(view),
            *sub,
            unjudged=unjudged,
            ties="tie-aware",
            tie_rank=None,
            max_grade=2.0,
        )
        np.testing.assert_array_equal(g1, g2)
        np.testing.assert_array_equal(t1, t2)
        np.testing.assert_array_equal(e1.g, e2.g)


def test_evaluate_both_directions_unchanged_by_chunking() -> None:
    rng = np.random.default_rng(11)
    s, j = _case(rng, 80, 25, 3, 9)
    run = Run("r", scores=s)
    ref = evaluate(run, j, chunk_rows=1).table
    for cr in (None, 3, 25):
        got = evaluate(run, j, chunk_rows=cr).table
        np.testing.assert_array_equal(got["value"].to_numpy(), ref["value"].to_numpy())


def test_candidate_path_equals_direct_with_ties_and_signed_zeros(monkeypatch: pytest.MonkeyPatch) -> None:
    """Marked docs scoring high (a real model): only the candidates above them are sorted."""
    from fireval.metrics.counting import _count_candidates, _few_candidates

    rng = np.random.default_rng(5)
    n_c, n_v, per = 400, 12, 2 * MAX_LAYERS
    s = np.round(rng.standard_normal((n_c, n_v)), 1).astype(np.float32)  # rounded: ties
    s[rng.random(s.shape) < 0.05] = -np.inf
    q = np.repeat(np.arange(n_v), per)
    doc = np.concatenate([rng.choice(n_c, per, replace=False) for _ in range(n_v)])
    s[doc, q] = np.round(rng.uniform(1.5, 3.0, q.size), 1)  # the marked docs score high (tied values)
    s[doc[:3], q[:3]] = 2.0
    s[rng.integers(0, n_c, 20), 0] = 2.0  # unmarked docs tied with marked ones
    s[doc[per], q[per]] = 0.0  # a marked 0.0 against unmarked -0.0 (equal scores)
    s[rng.integers(0, n_c, 10), 1] = -0.0
    vals = s[doc, q]
    assert _few_candidates(s, np.arange(n_v), q, vals)  # few candidates: the candidate path is taken
    got = _count_candidates(s, np.arange(n_v), q, vals)
    g2, t2 = count_direct(np.ascontiguousarray(s.T), q, vals)
    np.testing.assert_array_equal(got[0], g2)
    np.testing.assert_array_equal(got[1], t2)
    g, t = count_columns(s, q, vals)
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(t, t2)
    from fireval.metrics import counting

    monkeypatch.setattr(counting, "_CAND_ELEMS", 5 * n_c)  # column ranges of 5: several ranges
    g, t = count_columns(s, q, vals)
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(t, t2)
