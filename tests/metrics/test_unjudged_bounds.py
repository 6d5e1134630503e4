"""``unjudged=worst|best`` against brute force over every labelling of the unjudged docs.

The oracle enumerates all 2^u labellings of a query's unjudged docs (each irrelevant or
relevant at the largest grade, as ``upper`` does) and scores each with the reference of
``tests/metrics/reference.py`` (every ordering inside tie groups, plain loops) or with
pytrec_eval (tie-free rankings). It never calls :mod:`fireval.metrics.bounds`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fireval.core.errors import FirevalError
from fireval.metrics import evaluate, query_values
from fireval.metrics.bounds import aggregate_bound
from fireval.metrics.measures import parse_measure

from .helpers import NEG, build
from .reference import reference

KS = (1, 2, 3)
EXACT = [
    "Recall@1",
    "Recall@3",
    "Recall@R",
    "R-Prec",
    "P@R",
    "AP",
    "AP@2",
    "nDCG",
    "nDCG@1",
    "nDCG@3",
    "nDCG@R",
    "nDCG_exp",
    "nDCG_exp@2",
    "nDCG_exp@R",
]
MONOTONE = ["C@1", "C@3", "P@2", "RR", "MnR", "MdR"]
ALL = EXACT + MONOTONE
RANKS = ("MnR", "MdR")
_REF_NAME = {"Recall@R": "R-Prec"}  # the reference names hits@R / R once


def _labellings(grades: list[float | None], maxg: float):
    """Every labelling of the unjudged docs (None -> 0 or maxg) that leaves a relevant doc."""
    unj = [i for i, g in enumerate(grades) if g is None]
    for lab in itertools.product((0.0, maxg), repeat=len(unj)):
        full = list(grades)
        for i, v in zip(unj, lab, strict=True):
            full[i] = v
        if any(g > 0 for g in full):  # type: ignore[operator]
            yield full


def _worst_best(lo: dict[str, float], hi: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """(worst, best) from the smallest and largest values seen: for ranks the larger is worse."""
    worst = {m: (hi if m in RANKS else lo)[m] for m in lo}
    best = {m: (lo if m in RANKS else hi)[m] for m in lo}
    return worst, best


def _oracle(scores, grades, maxg: float, ties: str) -> tuple[dict[str, float], dict[str, float]]:
    """(worst, best) per measure over all labellings; empty when no labelling has a relevant doc."""
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for full in _labellings(grades, maxg):
        ref = reference(list(scores), full, "lower", ties, KS, maxg=maxg)
        for m in ALL:
            v = ref[_REF_NAME.get(m, m)]
            lo[m] = min(lo.get(m, math.inf), v)
            hi[m] = max(hi.get(m, -math.inf), v)
    return _worst_best(lo, hi)


@st.composite
def cases(draw, max_q: int = 3, max_d: int = 6):
    """Small integer scores (ties), some -inf, graded or binary labels, up to 6 unjudged docs."""
    n_q = draw(st.integers(1, max_q))
    n_d = draw(st.integers(1, max_d))
    levels = draw(st.integers(0, 3))
    cell = st.one_of(st.integers(0, levels).map(float), st.just(NEG))
    scores = np.array(draw(st.lists(st.lists(cell, min_size=n_d, max_size=n_d), min_size=n_q, max_size=n_q)))
    top = draw(st.sampled_from([1, 1, 2, 3]))
    label = st.one_of(st.none(), st.integers(0, top).map(float))
    grades = draw(st.lists(st.lists(label, min_size=n_d, max_size=n_d), min_size=n_q, max_size=n_q))
    return scores, grades


def _maxg(grades) -> float:
    return max((g for row in grades for g in row if g is not None and g > 0), default=1.0)


@pytest.mark.parametrize("ties", ["tie-aware", "docid"])
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_per_query_bounds_equal_bruteforce_over_labellings(ties: str, case) -> None:
    scores, grades = case
    run, judg = build(scores, grades)
    maxg = _maxg(grades)
    worst = query_values(run, judg, "t2v", ALL, unjudged="worst", ties=ties, chunk_rows=2)
    best = query_values(run, judg, "t2v", ALL, unjudged="best", ties=ties)
    for q in range(scores.shape[0]):
        want_w, want_b = _oracle(scores[q], grades[q], maxg, ties)
        for m in ALL:
            key = str(parse_measure(m))
            if not want_w:  # no labelling gives the query a relevant doc
                assert math.isnan(worst[key][q]) and math.isnan(best[key][q]), (m, q)
                continue
            ctx = (m, q, list(scores[q]), grades[q])
            assert worst[key][q] == pytest.approx(want_w[m], abs=1e-9), ctx
            assert best[key][q] == pytest.approx(want_b[m], abs=1e-9), ctx


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_monotone_measures_bounds_are_lower_and_upper(case) -> None:
    """For C@K, P@K, RR, MnR, MdR the extremes are all-irrelevant and all-relevant (a query
    with a judged relevant doc); the ‡ measures lie between worst and best at both."""
    scores, grades = case
    run, judg = build(scores, grades)
    got = {u: query_values(run, judg, "t2v", ALL, unjudged=u) for u in ("lower", "upper", "worst", "best")}
    has_rel = np.array([any(g is not None and g > 0 for g in row) for row in grades])
    for m in ALL:
        key = str(parse_measure(m))
        w, b = got["worst"][key][has_rel], got["best"][key][has_rel]
        lo, up = got["lower"][key][has_rel], got["upper"][key][has_rel]
        if m in MONOTONE:
            np.testing.assert_allclose(w, lo, atol=1e-12)
            np.testing.assert_allclose(b, up, atol=1e-12)
        sign = -1.0 if m in RANKS else 1.0
        for v in (lo, up):
            assert np.all(sign * w <= sign * v + 1e-12) and np.all(sign * v <= sign * b + 1e-12), m


def test_tie_free_against_pytrec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(25):
        n_d = int(rng.integers(3, 9))
        scores = rng.permutation(n_d).astype(np.float64)[None, :] + 1.0
        grades = [[None if rng.random() < 0.5 else float(rng.integers(0, 2)) for _ in range(n_d)]]
        run, judg = build(scores, grades)
        ms = {"map": "AP", "ndcg": "nDCG", "ndcg_cut_3": "nDCG@3", "Rprec": "R-Prec", "recall_3": "Recall@3"}
        lo: dict[str, float] = {}
        hi: dict[str, float] = {}
        for full in _labellings(grades[0], 1.0):
            qrel = {"q": {f"d{i}": int(g) for i, g in enumerate(full)}}  # type: ignore[arg-type]
            res = {"q": {f"d{i}": float(scores[0, i]) for i in range(n_d)}}
            ev = pytrec_eval.RelevanceEvaluator(qrel, set(ms)).evaluate(res)["q"]
            for t, m in ms.items():
                lo[m] = min(lo.get(m, math.inf), ev[t])
                hi[m] = max(hi.get(m, -math.inf), ev[t])
        if not lo:
            continue
        w = query_values(run, judg, "t2v", list(ms.values()), unjudged="worst")
        b = query_values(run, judg, "t2v", list(ms.values()), unjudged="best")
        for m in ms.values():
            assert w[m][0] == pytest.approx(lo[m], abs=1e-6), (m, scores, grades)
            assert b[m][0] == pytest.approx(hi[m], abs=1e-6), (m, scores, grades)
            checked += 1
    assert checked > 50


MEAN_MEASURES = ["AP", "Recall@2", "nDCG@2", "R-Prec", "C@1", "RR", "MnR", "MdR"]


def _mean_oracle(scores, grades, queries: np.ndarray | None):
    """(worst, best) of each aggregate over every joint labelling of all queries' unjudged docs.

    Without ``queries`` a mean is over the queries with a relevant doc under the labelling (as
    fireval's means are); with it, over the set, a query without a relevant doc scoring 0
    (rank n_docs + 1).
    """
    maxg = _maxg(grades)
    n_d = scores.shape[1]
    per_q = []
    for q in range(scores.shape[0]):
        unj = [i for i, g in enumerate(grades[q]) if g is None]
        opts = []
        for lab in itertools.product((0.0, maxg), repeat=len(unj)):
            full = list(grades[q])
            for i, v in zip(unj, lab, strict=True):
                full[i] = v
            ref = reference(list(scores[q]), full, "lower", "tie-aware", (1, 2), maxg=maxg)
            opts.append(ref or None)
        per_q.append(opts)
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for combo in itertools.product(*per_q):
        for m in MEAN_MEASURES:
            vals = []
            for q, ref in enumerate(combo):
                if queries is not None and not queries[q]:
                    continue
                if ref is not None:
                    vals.append(ref[m])
                elif queries is not None:
                    vals.append(float(n_d + 1) if m in RANKS else 0.0)
            if not vals:
                continue
            v = float(np.median(vals)) if m == "MdR" else float(np.mean(vals))
            lo[m] = min(lo.get(m, math.inf), v)
            hi[m] = max(hi.get(m, -math.inf), v)
    return _worst_best(lo, hi)


@st.composite
def small_sets(draw):
    """Up to 4 queries, at most 9 unjudged docs in all, some queries without a judged relevant doc."""
    scores, grades = draw(cases(max_q=4, max_d=5))
    n_unj = sum(g is None for row in grades for g in row)
    if n_unj > 9:
        flat = [(q, i) for q, row in enumerate(grades) for i, g in enumerate(row) if g is None]
        for q, i in flat[9:]:
            grades[q][i] = 0.0
    return scores, grades


@pytest.mark.parametrize("fixed", [False, True])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=small_sets())
def test_mean_and_median_bounds_equal_bruteforce(fixed: bool, case) -> None:
    """Means (and MdR's median) of worst/best equal the extremes over joint labellings, also
    when a query without a judged relevant doc enters the mean only under some labellings."""
    scores, grades = case
    run, judg = build(scores, grades)
    queries = np.ones(scores.shape[0], dtype=bool) if fixed else None
    want_w, want_b = _mean_oracle(scores, grades, queries)
    ev = evaluate(
        run,
        judg,
        measures=MEAN_MEASURES,
        directions="t2v",
        unjudged=("worst", "best"),
        queries=None if queries is None else {"t2v": queries},
    )
    for m in MEAN_MEASURES:
        if m not in want_w:
            assert math.isnan(ev.value(m, "t2v", "worst")), m
            continue
        assert ev.value(m, "t2v", "worst") == pytest.approx(want_w[m], abs=1e-9), m
        assert ev.value(m, "t2v", "best") == pytest.approx(want_b[m], abs=1e-9), m


@settings(max_examples=200, deadline=None)
@given(
    req=st.lists(st.integers(0, 9), max_size=5),
    opt=st.lists(st.integers(0, 9), max_size=5),
    side=st.sampled_from(["worst", "best"]),
    name=st.sampled_from(["AP", "MdR"]),
)
def test_aggregate_bound_equals_best_subset(req, opt, side, name) -> None:
    """The chosen subset of optional queries is optimal: brute force over all subsets."""
    m = parse_measure(name)
    vals = np.array(req + opt, dtype=np.float64)
    required = np.array([True] * len(req) + [False] * len(opt))
    got, n = aggregate_bound(m, vals, required, side)
    agg = np.median if name == "MdR" else np.mean
    cands = []
    for r in range(len(opt) + 1):
        for sub in itertools.combinations(opt, r):
            if req or sub:
                cands.append(float(agg(np.array(req + list(sub), dtype=np.float64))))
    if not cands:
        assert math.isnan(got) and n == 0
        return
    maximize = (side == "best") != m.lower_is_better
    assert got == pytest.approx(max(cands) if maximize else min(cands), abs=1e-12)
    assert len(req) <= n <= len(req) + len(opt)


def test_bounds_refuse_label_dependent_tie_orders_and_clip4clip() -> None:
    run, judg = build(np.array([[1.0, 0.0]]), [[1.0, None]])
    with pytest.raises(FirevalError, match="tie-aware or docid"):
        evaluate(run, judg, unjudged="worst", ties="optimistic", directions="t2v")
    with pytest.raises(FirevalError, match="clip4clip"):
        evaluate(run, judg, unjudged="best", preset="clip4clip")
    with pytest.raises(FirevalError, match="worst"):
        evaluate(run, judg, unjudged="minimum", directions="t2v")


def test_unsupported_measures_are_left_out_with_a_warning() -> None:
    run, judg = build(np.array([[2.0, 1.0, 0.0]]), [[1.0, None, 0.0]])
    ev = evaluate(
        run, judg, measures=["AP", "AP_hits@2", "AP@R"], unjudged=("lower", "worst"), directions="t2v"
    )
    t = ev.table
    assert set(t[t.unjudged == "worst"].measure) == {"AP"}
    assert set(t[t.unjudged == "lower"].measure) == {"AP", "AP_hits@2", "AP@R"}
    assert any("no exact bound for AP_hits@2, AP@R" in w for w in ev.warnings)


def test_recall_bound_example_by_hand() -> None:
    """Ranking [unjudged, relevant, unjudged]: Recall@1 is 0 with both unjudged irrelevant, and
    at most 1/2 (the first one relevant too), at least 0 (none, or the last one: 0/2)."""
    run, judg = build(np.array([[3.0, 2.0, 1.0]]), [[None, 1.0, None]])
    got = {u: query_values(run, judg, "t2v", ["Recall@1", "AP"], unjudged=u) for u in ("worst", "best")}
    assert got["best"]["Recall@1"][0] == pytest.approx(0.5)
    assert got["worst"]["Recall@1"][0] == 0.0
    # AP: best = all relevant (1.0); worst = none relevant (1/2), below the last alone (7/12)
    assert got["best"]["AP"][0] == pytest.approx(1.0)
    assert got["worst"]["AP"][0] == pytest.approx(0.5)


LEMMA = ["AP", "AP@2", "nDCG", "nDCG@2", "nDCG@R", "nDCG_exp", "Recall@2", "R-Prec", "C@1", "P@2", "RR"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(max_q=1, max_d=5))
def test_exchange_lemma_from_the_definitions(case) -> None:
    """The theory behind the prefix/suffix search, checked on the reference alone: moving a
    relevant label from an unjudged doc to a higher-scored unjudged doc never lowers a measure
    (nor raises MnR); inside a tie group it changes nothing."""
    scores, grades = case
    row, s = grades[0], list(scores[0])
    maxg = _maxg(grades)
    unj = [i for i, g in enumerate(row) if g is None]
    for full in _labellings(row, maxg):
        base = reference(s, full, "lower", "tie-aware", (1, 2), maxg=maxg)
        for a, b in itertools.permutations(unj, 2):
            if not (full[a] == 0.0 and full[b] == maxg and s[a] >= s[b]):
                continue
            moved = list(full)
            moved[a], moved[b] = maxg, 0.0
            new = reference(s, moved, "lower", "tie-aware", (1, 2), maxg=maxg)
            for m in LEMMA:
                if s[a] == s[b]:
                    assert new[m] == pytest.approx(base[m], abs=1e-12), (m, s, full, a, b)
                else:
                    assert new[m] >= base[m] - 1e-12, (m, s, full, a, b)
            assert new["MnR"] <= base["MnR"] + 1e-12


def test_ap_hits_breaks_the_exchange_lemma() -> None:
    """Why AP_hits@K has no bound here: a relevant doc moving up into the top K can lower it."""
    s = [4.0, 3.0, 2.0, 1.0]  # judged relevant, judged irrelevant, unjudged, unjudged
    low = reference(s, [1.0, 0.0, 0.0, 1.0], "lower", "tie-aware", (3,))["AP_hits@3"]
    high = reference(s, [1.0, 0.0, 1.0, 0.0], "lower", "tie-aware", (3,))["AP_hits@3"]
    assert low == 1.0 and high == pytest.approx((1 + 2 / 3) / 2) and high < low
