"""Tiny rankings with values worked out by hand (arithmetic in the comments)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fireval.metrics import DEFAULT_MEASURES, Measure, evaluate, parse_measure, query_values

from .helpers import build


def test_strict_ranking_by_hand() -> None:
    # scores rank docs d0 > d1 > d2 > d3 > d4; relevant: d1 (grade 2) and d3 (grade 1); d4 judged 0
    scores = np.array([[5.0, 4.0, 3.0, 2.0, 1.0]])
    grades = [[None, 2.0, None, 1.0, 0.0]]
    run, judg = build(scores, grades)
    v = query_values(
        run,
        judg,
        "t2v",
        [
            "C@1",
            "C@2",
            "P@2",
            "Recall@2",
            "AP",
            "AP@2",
            "RR",
            "MnR",
            "nDCG@2",
            "nDCG",
            "nDCG_exp@2",
            "judged@4",
            "R-Prec",
            "AP_hits@4",
        ],
    )
    assert v["C@1"][0] == 0.0  # d0 is not relevant
    assert v["C@2"][0] == 1.0  # d1 at rank 2
    assert v["P@2"][0] == 0.5  # 1 hit / 2
    assert v["Recall@2"][0] == 0.5  # 1 hit / 2 relevant
    # AP = (1/2 + 2/4) / 2 = 0.5 ; AP@2 = (1/2) / 2 = 0.25
    assert v["AP"][0] == pytest.approx(0.5)
    assert v["AP@2"][0] == pytest.approx(0.25)
    assert v["RR"][0] == 0.5 and v["MnR"][0] == 2.0
    # DCG@2 = 2/log2(3); IDCG@2 = 2/log2(2) + 1/log2(3)
    assert v["nDCG@2"][0] == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    # full: DCG = 2/log2(3) + 1/log2(5)
    assert v["nDCG"][0] == pytest.approx((2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3)))
    # exponential gain: 2^2-1 = 3 and 2^1-1 = 1
    assert v["nDCG_exp@2"][0] == pytest.approx((3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert v["judged@4"][0] == 0.5  # d1, d3 judged among d0..d3
    assert v["R-Prec"][0] == 0.5  # R = 2: one hit in the top 2
    assert v["AP_hits@4"][0] == pytest.approx(0.5)  # (1/2 + 2/4) / 2 hits


def test_tie_by_hand() -> None:
    # d0 = 3 above a tie of d1, d2, d3 (score 1); d2 is the only relevant doc
    scores = np.array([[3.0, 1.0, 1.0, 1.0]])
    grades = [[0.0, None, 1.0, None]]
    run, judg = build(scores, grades)
    ta = query_values(run, judg, "t2v", ["C@2", "RR", "MnR", "AP"])
    # d2 lands at rank 2, 3 or 4 with probability 1/3 each
    assert ta["C@2"][0] == pytest.approx(1 / 3)
    assert ta["RR"][0] == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    assert ta["MnR"][0] == pytest.approx(3.0)
    assert ta["AP"][0] == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    op = query_values(run, judg, "t2v", ["C@2", "MnR"], ties="optimistic")
    pe = query_values(run, judg, "t2v", ["C@2", "MnR"], ties="pessimistic")
    assert (op["C@2"][0], op["MnR"][0]) == (1.0, 2.0)
    assert (pe["C@2"][0], pe["MnR"][0]) == (0.0, 4.0)
    # docid: ids "0".."3"; the tie is ordered "3" > "2" > "1": d3, d2, d1 → d2 at rank 3
    dd = query_values(run, judg, "t2v", ["RR"], ties="docid")
    assert dd["RR"][0] == pytest.approx(1 / 3)


def test_unjudged_modes_by_hand() -> None:
    # ranking d0 > d1 > d2; d0 unjudged, d1 judged irrelevant, d2 relevant
    scores = np.array([[3.0, 2.0, 1.0]])
    grades = [[None, 0.0, 1.0]]
    run, judg = build(scores, grades)
    ev = evaluate(
        run,
        judg,
        measures=["RR", "P@1", "judged@2"],
        directions="t2v",
        unjudged=("lower", "upper", "condensed"),
    )
    assert ev.value("RR", unjudged="lower") == pytest.approx(1 / 3)
    assert ev.value("RR", unjudged="upper") == 1.0  # d0 counts as relevant
    assert ev.value("P@1", unjudged="upper") == 1.0
    assert ev.value("RR", unjudged="condensed") == 0.5  # d0 removed: d1, d2
    assert ev.value("judged@2", unjudged="lower") == 0.5
    assert ev.value("judged@2", unjudged="condensed") == 1.0


def test_unretrieved_relevant() -> None:
    # the relevant doc is excluded (-inf): no credit; its rank is the expected slot in the -inf block
    scores = np.array([[2.0, 1.0, -np.inf, -np.inf]])
    grades = [[0.0, None, 1.0, None]]
    run, judg = build(scores, grades)
    v = query_values(run, judg, "t2v", ["C@4", "RR", "AP", "MnR", "nDCG"])
    assert v["C@4"][0] == 0.0 and v["RR"][0] == 0.0 and v["AP"][0] == 0.0 and v["nDCG"][0] == 0.0
    assert v["MnR"][0] == 3.5  # g=2, t=2, r=1 → 2 + 3/2


def test_no_relevant_is_nan_and_reported() -> None:
    scores = np.array([[1.0, 2.0], [2.0, 1.0]])
    grades = [[0.0, None], [1.0, None]]
    run, judg = build(scores, grades)
    ev = evaluate(run, judg, measures=["AP"], directions="t2v", per_query=True)
    assert ev.tie_report["t2v"]["no_relevant"] == 1
    assert ev.value("AP") == 1.0  # mean over the one query with a relevant doc
    assert math.isnan(ev.per_query.value.iloc[0])


@pytest.mark.parametrize(
    "text",
    [
        "C@1",
        "P@10",
        "Recall@5",
        "AP",
        "AP@20",
        "AP_hits@20",
        "R-Prec",
        "RR",
        "MdR",
        "MnR",
        "nDCG@10",
        "nDCG",
        "nDCG_exp@10",
        "nDCG@R",
        "judged@10",
        "meanR",
        "geoC",
    ],
)
def test_measure_round_trip(text: str) -> None:
    m = parse_measure(text)
    assert str(m) == text and parse_measure(str(m)) == m


def test_measure_properties() -> None:
    assert parse_measure("ndcg@10") == Measure("nDCG", 10)
    assert parse_measure("MdR").lower_is_better and not parse_measure("C@1").lower_is_better
    assert "R@1" in parse_measure("C@1").note
    assert parse_measure("C@1") in DEFAULT_MEASURES
