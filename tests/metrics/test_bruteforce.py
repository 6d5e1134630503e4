"""Tie-aware values equal the mean over all orderings of tied docs; strict policies equal sorting.

The reference (tests/metrics/reference.py) enumerates every ranking consistent with the
scores (itertools.permutations inside each tie group) and scores each with plain loops.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from fireval.metrics import query_values

from .helpers import build, max_grade, random_case
from .reference import reference

KS = (1, 2, 3, 5)
MEASURES = [
    f"{m}@{k}" for m in ("C", "P", "Recall", "judged", "AP", "AP_hits", "nDCG", "nDCG_exp") for k in KS
] + ["AP", "R-Prec", "RR", "MdR", "MnR", "nDCG", "nDCG_exp", "nDCG@R", "nDCG_exp@R", "P@R"]


@pytest.mark.parametrize("ties", ["tie-aware", "optimistic", "pessimistic", "docid"])
@pytest.mark.parametrize("unjudged", ["lower", "upper", "condensed"])
def test_matches_bruteforce(ties: str, unjudged: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{ties}{unjudged}".encode()))
    checked = 0
    for trial in range(12):
        n_d = int(rng.integers(1, 7))
        scores, grades = random_case(rng, 6, n_d, levels=int(rng.integers(1, 4)))
        run, judg = build(scores, grades)
        maxg = max_grade(grades)
        # chunk_rows=2 exercises chunking; both counting strategies are hit via the random sizes
        got = query_values(run, judg, "t2v", MEASURES, ties=ties, unjudged=unjudged, chunk_rows=2)
        for q in range(scores.shape[0]):
            ref = reference(list(scores[q]), grades[q], unjudged, ties, KS, maxg=maxg)
            for m in MEASURES:
                v = got[m][q]
                if not ref:
                    assert math.isnan(v), (m, q, trial)
                    continue
                assert v == pytest.approx(ref[m], abs=1e-9), (m, q, trial, list(scores[q]), grades[q])
                checked += 1
    assert checked > 100


def test_large_tie_groups_against_sampling_free_formulas() -> None:
    """A 7-doc row that is one tie group: tie-aware C@K and RR have simple closed forms."""
    scores = np.zeros((1, 7))
    grades = [[1.0, 1.0, None, None, None, None, 0.0]]
    run, judg = build(scores, grades)
    got = query_values(run, judg, "t2v", ["C@1", "C@3", "RR", "MnR", "AP"])
    # P(no relevant in the first 3 of 7 with 2 relevant) = C(5,3)/C(7,3) = 10/35
    assert got["C@3"][0] == pytest.approx(1 - 10 / 35)
    assert got["C@1"][0] == pytest.approx(2 / 7)
    # expected first-relevant rank = (t+1)/(r+1) = 8/3
    assert got["MnR"][0] == pytest.approx(8 / 3)
    ref = reference([0.0] * 7, grades[0], "lower", "tie-aware", (1, 3))
    assert got["RR"][0] == pytest.approx(ref["RR"])
    assert got["AP"][0] == pytest.approx(ref["AP"])


def test_sorted_strategy_matches_direct() -> None:
    """Many marked docs per row (sort + binary search) and few (direct) give the same values."""
    from fireval.metrics import entries  # (make_entries reads its DIRECT_MAX_PER_ROW)

    rng = np.random.default_rng(3)
    scores, grades = random_case(rng, 20, 30, levels=4, p_judged=0.9)
    run, judg = build(scores, grades)
    ms = ["C@5", "AP", "nDCG@10", "RR", "MnR", "judged@10"]
    old = entries.DIRECT_MAX_PER_ROW
    try:
        entries.DIRECT_MAX_PER_ROW = 1e9
        a = query_values(run, judg, "t2v", ms, unjudged="condensed")
        entries.DIRECT_MAX_PER_ROW = 0.0
        b = query_values(run, judg, "t2v", ms, unjudged="condensed")
    finally:
        entries.DIRECT_MAX_PER_ROW = old
    for m in ms:
        np.testing.assert_allclose(a[m], b[m], rtol=0, atol=1e-12)
