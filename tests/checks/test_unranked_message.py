"""The truncation check says truly how rows that rank nothing are scored (issue 9 follow-up).

A row of ``-inf`` retrieves nothing (C@K, RR, AP, nDCG are 0); a constant finite row is one tie
over the n documents, scored as the expectation over a random order of the tie: C@K = K/n with one
relevant document (25% C@1 on a 4-video gallery), not "about 0". The oracle is a brute force over
every order of the tie, written from the definitions, not from fireval's code.
"""

from __future__ import annotations

import itertools

import numpy as np

from fireval import api
from fireval.checks import run_checks
from fireval.core import Collection, Run

N = 4


def tiny() -> Collection:
    return Collection.from_pairs(
        "tiny", [(f"c{i}", f"v{i}", f"a caption about thing number {i}") for i in range(N)]
    )


def brute_tie(k: int) -> tuple[float, float]:
    """(C@k, RR) of one relevant document in a tie over N documents: mean over all N! orders."""
    hits, rr = [], []
    for order in itertools.permutations(range(N)):
        rank = order.index(0) + 1
        hits.append(rank <= k)
        rr.append(1 / rank)
    return float(np.mean(hits)), float(np.mean(rr))


def message(scores: np.ndarray) -> str:
    rep = run_checks(tiny(), {"r": Run("r", scores=scores)}, pairs=False, directions=("t2v",))
    return rep.runs["r"]["truncation"].message


def values(scores: np.ndarray) -> dict[str, float]:
    ev = api.evaluate(scores, tiny(), direction="t2v", measures=["C@1", "C@2", "RR", "AP", "nDCG"])
    return dict(zip(ev.table.measure, ev.table.value, strict=True))


def test_constant_rows_are_one_tie_not_nothing():
    scores = np.ones((N, N))
    msg = message(scores)
    assert "4 of 4 queries rank no document" in msg and "stay in the means" in msg
    assert "retrieving nothing" not in msg and "retrieve nothing" not in msg
    c1, rr = brute_tie(1)
    assert f"C@K = K/{N}" in msg and f"C@1 = {100 * c1:.3g}%" in msg, msg  # 25%
    got = values(scores)
    assert abs(got["C@1"] - c1) < 1e-12 and abs(got["C@2"] - brute_tie(2)[0]) < 1e-12
    assert abs(got["RR"] - rr) < 1e-12 and got["C@1"] > 0.2  # far from "about 0"


def test_minus_inf_rows_retrieve_nothing_and_mixed_rows_say_both():
    scores = np.full((N, N), -np.inf)
    msg = message(scores)
    assert "4 retrieve nothing" in msg and "are one tie" not in msg, msg
    got = values(scores)
    assert got["C@1"] == got["C@2"] == got["RR"] == got["AP"] == got["nDCG"] == 0.0
    scores[2:] = 1.0  # two rows -inf, two rows one finite tie
    msg = message(scores)
    assert "4 of 4 queries rank no document" in msg  # all four rank nothing, in two ways
    assert "2 retrieve nothing" in msg and "2 are one tie over all 4 documents" in msg, msg
    assert abs(values(scores)["C@1"] - brute_tie(1)[0] / 2) < 1e-12
