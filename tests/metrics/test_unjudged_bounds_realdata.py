"""``unjudged=worst|best`` on a real run: MSR-VTT 1k-A CLIP4Clip (../shared/data).

Labels: the instance labels (grade 2) plus a word-overlap proxy on a random 5% subset of the
other caption x video pairs (grade 1 when the caption shares >= 40% of its words with the
video's 1k-A sentence, else judged irrelevant); the other pairs stay unjudged. Checked: every
labelling value fireval computes (lower, upper) lies between worst and best per query and in
the means; for the monotone measures worst/best are lower/upper; condensed is no labelling and
lies between worst and best only for the monotone measures (where the math says so).
AP_hits@20 (the ``fire2023`` preset's AP) is also checked against an oracle written from FIRE's
definition on the tie-free t2v rankings, and against random labellings.
"""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from fireval.core import Judgments, Run
from fireval.metrics import evaluate, query_values
from fireval.metrics.measures import parse_measure

pytestmark = pytest.mark.shared

MEASURES = [
    "C@1",
    "C@10",
    "P@10",
    "RR",
    "MnR",
    "AP",
    "AP@10",
    "AP@R",
    "AP_hits@10",
    "AP_hits@20",
    "nDCG",
    "nDCG@10",
    "nDCG@R",
    "Recall@10",
    "R-Prec",
]


def _labels(shared_data, n: int) -> Judgments:
    with open(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv", newline="") as f:
        words = [set(re.findall(r"[a-z0-9]+", row["sentence"].lower())) for row in csv.DictReader(f)]
    rng = np.random.default_rng(0)
    rows, cols = np.nonzero(rng.random((n, n)) < 0.05)
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    share = np.array(
        [len(words[r] & words[c]) / max(1, len(words[r])) for r, c in zip(rows, cols, strict=True)]
    )
    grades = np.where(share >= 0.4, 1.0, 0.0)
    idx = np.arange(n)
    return Judgments.from_arrays(
        (n, n), np.r_[idx, rows], np.r_[idx, cols], np.r_[np.full(n, 2.0), grades], "proxy"
    )


@pytest.fixture(scope="module")
def case(shared_data):
    s = np.load(shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy")
    return Run("clip4clip", scores=s), _labels(shared_data, s.shape[0])


@pytest.mark.parametrize("direction", ["t2v", "v2t"])
def test_per_query_values_lie_between_worst_and_best(case, direction: str) -> None:
    run, judg = case
    got = {
        u: query_values(run, judg, direction, MEASURES, unjudged=u)
        for u in ("lower", "upper", "condensed", "worst", "best")
    }
    proxy_pos = int((judg.grades == 1.0).sum())
    assert proxy_pos > 50  # the proxy adds relevant pairs beyond the instance ones
    for m in MEASURES:
        sign = -1.0 if parse_measure(m).lower_is_better else 1.0
        w, b = sign * got["worst"][m], sign * got["best"][m]
        assert not np.isnan(w).any() and not np.isnan(b).any()  # every query has its instance pair
        for mode in ("lower", "upper"):
            v = sign * got[mode][m]
            assert np.all(w <= v + 1e-9) and np.all(v <= b + 1e-9), (m, mode)
        c = sign * got["condensed"][m]
        inside = bool(np.all(w <= c + 1e-9) and np.all(c <= b + 1e-9))
        if parse_measure(m).monotone_in_relevance:
            np.testing.assert_allclose(got["worst"][m], got["lower"][m], atol=1e-12)
            np.testing.assert_allclose(got["best"][m], got["upper"][m], atol=1e-12)
            assert inside, m
        if m == "Recall@10":  # condensed drops the unjudged videos: above every labelling
            assert not inside and np.any(c > b + 1e-9)
        if m in ("AP", "nDCG", "R-Prec", "Recall@10"):  # the bounds are informative, not lower/upper
            assert np.any(w < sign * got["lower"][m] - 1e-6)


def test_means_lie_between_worst_and_best(case) -> None:
    run, judg = case
    ev = evaluate(run, judg, measures=MEASURES, unjudged=("lower", "upper", "worst", "best"))
    for d in ("t2v", "v2t"):
        for m in MEASURES:
            sign = -1.0 if parse_measure(m).lower_is_better else 1.0
            w, b = sign * ev.value(m, d, "worst"), sign * ev.value(m, d, "best")
            for mode in ("lower", "upper"):
                assert w <= sign * ev.value(m, d, mode) + 1e-12 <= b + 2e-12, (d, m, mode)
    t = ev.table
    assert set(t[t.unjudged == "worst"].n) == {1000}  # every query has a judged relevant doc


def _fire_ap(rel_top: np.ndarray) -> float:
    """FIRE's AP over one top-K list (rel_top: 0/1 by rank): mean precision at the hits, 0 without."""
    hits = np.flatnonzero(rel_top)
    if hits.size == 0:
        return 0.0
    return float(np.mean(np.arange(1, hits.size + 1) / (hits + 1.0)))


def test_ap_hits_t2v_against_fire_definition(case) -> None:
    """clip4clip t2v has no ties: per caption the top 20 is a strict list. For a fixed number
    m of unjudged videos in it made relevant, moving a label up inside the top 20 raises FIRE's
    AP, so the extremes are the first / last m (m = 0..u); videos below rank 20 do not count.
    Random labellings of the top 20 must lie between worst and best."""
    run, judg = case
    k = 20
    s = np.asarray(run.scores, dtype=np.float64)
    rows, cols, gr = np.asarray(judg.rows), np.asarray(judg.cols), np.asarray(judg.grades)
    lab = np.full(s.shape, np.nan)
    lab[rows, cols] = gr
    worst = query_values(run, judg, "t2v", [f"AP_hits@{k}"], unjudged="worst")[f"AP_hits@{k}"]
    best = query_values(run, judg, "t2v", [f"AP_hits@{k}"], unjudged="best")[f"AP_hits@{k}"]
    rng = np.random.default_rng(1)
    for q in range(s.shape[0]):
        top = np.argsort(-s[q], kind="stable")[:k]
        assert np.unique(s[q][top]).size == k and s[q][top[-1]] > np.sort(s[q])[-k - 1]  # no ties
        judged_rel = np.nan_to_num(lab[q, top], nan=0.0) > 0
        unj = np.flatnonzero(np.isnan(lab[q, top]))
        vals_w, vals_b = [], []
        for m in range(unj.size + 1):
            for chosen, out in ((unj[unj.size - m :], vals_w), (unj[:m], vals_b)):
                rel = judged_rel.copy()
                rel[chosen] = True
                out.append(_fire_ap(rel))
        assert worst[q] == pytest.approx(min(vals_w), abs=1e-12), q
        assert best[q] == pytest.approx(max(vals_b), abs=1e-12), q
        if q < 200:
            for _ in range(20):
                rel = judged_rel.copy()
                rel[unj] = rng.random(unj.size) < rng.random()
                v = _fire_ap(rel)
                assert worst[q] - 1e-12 <= v <= best[q] + 1e-12
    assert np.mean(worst) < np.mean(best)
