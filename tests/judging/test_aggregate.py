"""Majority vote, percent agreement and Krippendorff's alpha against hand-computed values."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from fireval.judging.aggregate import (
    DISAGREEMENT,
    IRRELEVANT,
    RELEVANT,
    UNLABELLED,
    VoteCounts,
    agreement_report,
    krippendorff_alpha,
    percent_agreement,
)

# items: 0 r,r | 1 r,i | 2 i,i | 3 r,r,i | 4 skip only | 5 i (+skip)
ITEMS = [0, 0, 1, 1, 2, 2, 3, 3, 3, 4, 5, 5]
LABELS = [
    "relevant",
    "relevant",
    "relevant",
    "irrelevant",
    "irrelevant",
    "irrelevant",
    "relevant",
    "relevant",
    "irrelevant",
    "skip",
    "irrelevant",
    "skip",
]


def counts() -> VoteCounts:
    return VoteCounts.from_votes(ITEMS, LABELS, 6)


def test_majority_decisions() -> None:
    c = counts()
    assert c.n.tolist() == [2, 2, 2, 3, 0, 1]
    assert c.r.tolist() == [2, 1, 0, 2, 0, 0]
    assert c.decisions().tolist() == [RELEVANT, DISAGREEMENT, IRRELEVANT, RELEVANT, UNLABELLED, IRRELEVANT]


def test_percent_agreement_by_votes() -> None:
    rep = percent_agreement(counts())
    assert rep["items"] == 4
    assert rep["unanimous"] == pytest.approx(0.5)
    assert rep["pairwise"] == pytest.approx(6 / 12)
    assert rep["by_votes"][2] == {"items": 3, "unanimous": pytest.approx(2 / 3)}
    assert rep["by_votes"][3] == {"items": 1, "unanimous": 0.0}


def test_alpha_hand_computed() -> None:
    # coincidences: o_rr = 3, o_ii = 2, o_ri = o_ir = 2; n = 9; D_o = 4/9, D_e = 2*5*4/(9*8) = 5/9
    assert krippendorff_alpha(counts()) == pytest.approx(1 - (4 / 9) / (5 / 9))


def test_alpha_matches_reliability_data_form() -> None:
    rng = np.random.default_rng(0)
    n_items, n_coders = 60, 4
    data = rng.integers(0, 2, size=(n_coders, n_items)).astype(float)
    data[rng.random(data.shape) < 0.4] = np.nan
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    items, labels = [], []
    for coder in range(n_coders):
        for i in range(n_items):
            if not np.isnan(data[coder, i]):
                items.append(i)
                labels.append("relevant" if data[coder, i] == 1 else "irrelevant")
    assert krippendorff_alpha(VoteCounts.from_votes(items, labels, n_items)) == pytest.approx(ref)


def test_alpha_undefined_cases() -> None:
    assert krippendorff_alpha(VoteCounts.from_votes([0, 1], ["relevant", "relevant"], 2)) is None
    assert krippendorff_alpha(VoteCounts.from_votes([0, 0], ["relevant", "relevant"], 1)) is None


def test_report_counts() -> None:
    rep = agreement_report(counts())
    assert (rep["relevant"], rep["irrelevant"], rep["disagreements"], rep["unlabelled"]) == (2, 2, 1, 1)


def test_stored_adjudications_decide_only_what_the_votes_leave_open() -> None:
    # item 0: a/b tie, adjudicated relevant -> relevant; item 1: no vote, adjudicated -> decided;
    # item 2: a/b agree relevant, adjudicated irrelevant -> the majority stands;
    # item 3: one vote, no adjudication -> that vote
    item = [0, 0, 0, 1, 2, 2, 2, 3]
    labels = [
        "relevant",
        "irrelevant",
        "relevant",
        "irrelevant",
        "relevant",
        "relevant",
        "irrelevant",
        "irrelevant",
    ]
    adj = [False, False, True, True, False, False, True, False]
    c = VoteCounts.from_votes(item, labels, 4, adj)
    assert c.n.tolist() == [2, 0, 2, 1] and c.r.tolist() == [1, 0, 2, 0]
    assert c.adj.tolist() == [RELEVANT, IRRELEVANT, IRRELEVANT, -1]
    assert c.decisions().tolist() == [RELEVANT, IRRELEVANT, RELEVANT, IRRELEVANT]
    assert c.adjudicated().tolist() == [True, True, False, False]
