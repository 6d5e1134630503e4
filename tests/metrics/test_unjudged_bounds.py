"""``unjudged=worst|best`` against brute force over every labelling of the unjudged docs.

The oracle enumerates all 2^u labellings of a query's unjudged docs (each irrelevant or
relevant at the largest grade, as ``upper`` does) and scores each with the reference of
``tests/metrics/reference.py`` (every ordering inside tie groups, plain loops) or with
pytrec_eval (tie-free rankings). It never calls :mod:`fireval.metrics.bounds`. AP@R is the
reference's AP@K (trec_eval ``map_cut``) at K = the labelling's own number of relevant docs;
AP_hits@K is the reference's FIRE AP (precisions at the hits in the top K / hits, 0 without).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fireval.core.errors import FirevalError
from fireval.metrics import evaluate, query_values
from fireval.metrics.bounds import _AP, _Dense, aggregate_bound
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
    "AP@R",
    "AP_hits@1",
    "AP_hits@2",
    "AP_hits@3",
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


def _ref(scores, full, ties: str, ks, maxg: float) -> dict[str, float]:
    """The reference's values for one labelling, plus AP@R (AP@K at K = its |relevant|)."""
    n_rel = sum(1 for g in full if g > 0)
    if n_rel == 0:
        return {}
    out = reference(list(scores), full, "lower", ties, tuple(ks) + (n_rel,), maxg=maxg)
    out["AP@R"] = out[f"AP@{n_rel}"]
    return out


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
        ref = _ref(scores, full, ties, KS, maxg)
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


MEAN_MEASURES = ["AP", "AP@R", "AP_hits@2", "Recall@2", "nDCG@2", "R-Prec", "C@1", "RR", "MnR", "MdR"]


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
            ref = _ref(scores[q], full, "tie-aware", (1, 2), maxg)
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


def test_ap_at_r_and_ap_hits_get_bounds_without_warning() -> None:
    """AP@R and AP_hits@K are bounded now (they used to be left out with a warning)."""
    run, judg = build(np.array([[2.0, 1.0, 0.0]]), [[1.0, None, 0.0]])
    ev = evaluate(
        run, judg, measures=["AP", "AP_hits@2", "AP@R"], unjudged=("lower", "worst", "best"), directions="t2v"
    )
    t = ev.table
    for mode in ("worst", "best"):
        assert set(t[t.unjudged == mode].measure) == {"AP", "AP_hits@2", "AP@R"}
    assert not any("no exact bound" in w for w in ev.warnings)
    # unjudged doc 2nd: AP_hits@2 is 1 either way; AP@R is 1 (irrelevant) or 1 (relevant: 2/2)
    assert ev.value("AP_hits@2", "t2v", "worst") == 1.0 == ev.value("AP_hits@2", "t2v", "best")
    assert ev.value("AP@R", "t2v", "worst") == pytest.approx(1.0)


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


LEMMA = [
    "AP",
    "AP@2",
    "AP@R",
    "nDCG",
    "nDCG@2",
    "nDCG@R",
    "nDCG_exp",
    "Recall@2",
    "R-Prec",
    "C@1",
    "P@2",
    "RR",
]


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
        base = _ref(s, full, "tie-aware", (1, 2), maxg)
        for a, b in itertools.permutations(unj, 2):
            if not (full[a] == 0.0 and full[b] == maxg and s[a] >= s[b]):
                continue
            moved = list(full)
            moved[a], moved[b] = maxg, 0.0
            new = _ref(s, moved, "tie-aware", (1, 2), maxg)
            for m in LEMMA:
                if s[a] == s[b]:
                    assert new[m] == pytest.approx(base[m], abs=1e-12), (m, s, full, a, b)
                else:
                    assert new[m] >= base[m] - 1e-12, (m, s, full, a, b)
            assert new["MnR"] <= base["MnR"] + 1e-12


def test_ap_hits_breaks_the_exchange_lemma() -> None:
    """Why AP_hits@K needs its own search: a relevant doc moving up into the top K can lower it."""
    s = [4.0, 3.0, 2.0, 1.0]  # judged relevant, judged irrelevant, unjudged, unjudged
    low = reference(s, [1.0, 0.0, 0.0, 1.0], "lower", "tie-aware", (3,))["AP_hits@3"]
    high = reference(s, [1.0, 0.0, 1.0, 0.0], "lower", "tie-aware", (3,))["AP_hits@3"]
    assert low == 1.0 and high == pytest.approx((1 + 2 / 3) / 2) and high < low


def _suffix_values(scores, grades, k: int) -> list[float]:
    """AP_hits@k of the plain suffix labellings (the J lowest-scored unjudged docs relevant)."""
    unj = sorted((i for i, g in enumerate(grades) if g is None), key=lambda i: -scores[i])
    out = []
    for j in range(len(unj) + 1):
        full = [(1.0 if i in unj[len(unj) - j :] else 0.0) if g is None else g for i, g in enumerate(grades)]
        if any(g > 0 for g in full):
            out.append(reference(scores, full, "lower", "tie-aware", (k,))[f"AP_hits@{k}"])
    return out


def test_ap_hits_worst_needs_more_than_suffixes() -> None:
    """A tie group straddling K: the worst labelling makes an unjudged doc above the group
    relevant but not all of the group's unjudged docs; no suffix in score order does that."""
    scores = [2.0, 3.0, NEG, 3.0, NEG, 0.0, 3.0, 0.0]
    grades: list[float | None] = [None, 1.0, 1.0, None, 0.0, None, None, 0.0]
    k = 5  # ranks 1-3: the 3.0 group; 4: doc 0; 5-6: the 0.0 group straddles K
    lo = min(
        reference(scores, full, "lower", "tie-aware", (k,))[f"AP_hits@{k}"]
        for full in _labellings(grades, 1.0)
    )
    assert min(_suffix_values(scores, grades, k)) > lo + 1e-3
    run, judg = build(np.array([scores]), [grades])
    got = query_values(run, judg, "t2v", [f"AP_hits@{k}"], unjudged="worst")
    assert got[f"AP_hits@{k}"][0] == pytest.approx(lo, abs=1e-12)


@pytest.mark.parametrize("ties", ["tie-aware", "docid"])
def test_ties_straddling_k_and_r_by_brute_force(ties: str) -> None:
    """Deterministic cases with a tie group across K (AP_hits) and across R (AP@R), -inf docs
    and a query without a judged relevant doc."""
    scores = np.array(
        [
            [3.0, 2.0, 2.0, 2.0, 2.0, 1.0],  # 4-group over ranks 2-5: straddles K = 2, 3 and R
            [1.0, 1.0, 1.0, 1.0, NEG, NEG],  # one 4-group, then unretrieved docs
            [2.0, 2.0, 1.0, 1.0, 1.0, 0.0],  # no judged relevant doc
        ]
    )
    grades: list[list[float | None]] = [
        [0.0, 1.0, None, None, 0.0, None],
        [None, 1.0, None, 0.0, None, 1.0],
        [None, 0.0, None, None, 0.0, None],
    ]
    ms = ["AP@R", "AP_hits@1", "AP_hits@2", "AP_hits@3"]
    run, judg = build(scores, grades)
    worst = query_values(run, judg, "t2v", ms, unjudged="worst", ties=ties)
    best = query_values(run, judg, "t2v", ms, unjudged="best", ties=ties)
    for q in range(scores.shape[0]):
        want_w, want_b = _oracle(scores[q], grades[q], 1.0, ties)
        for m in ms:
            assert worst[m][q] == pytest.approx(want_w[m], abs=1e-12), (m, q)
            assert best[m][q] == pytest.approx(want_b[m], abs=1e-12), (m, q)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(max_q=1, max_d=6))
@example(case=(np.array([[5.0, 3.0, 3.0, 3.0]]), [[None, 0.0, 0.0, 1.0]]))  # worst: R's group below u
@example(case=(np.array([[3.0, 3.0, 2.0, 2.0, 2.0, NEG]]), [[1.0, None, None, 0.0, None, None]]))
@example(case=(np.array([[6.0, 5.0, 3.0, 3.0, 3.0]]), [[None, None, 1.0, 1.0, 0.0]]))
def test_ap_at_r_every_prefix_and_suffix_candidate(case) -> None:
    """White box: AP@R of *every* prefix (best) and suffix (worst) labelling, not only the
    extreme one, equals the reference's AP@K at K = that labelling's |relevant| (an error that
    made a non-extreme candidate look worse than it is would not show in the bounds)."""
    scores, grades = case
    row, s = grades[0], scores[0]
    maxg = _maxg(grades)
    judged = [i for i, g in enumerate(row) if g is not None]
    x = _Dense(
        s[None, :],
        np.array([0, len(judged)], np.int64),
        np.array(judged, np.int64),
        np.array([row[i] for i in judged], np.float64),
        None,
    )
    if x.uq.size == 0:
        return
    order = np.argsort(-s, kind="stable")  # the order _Dense sorts in
    unj = [int(order[p]) for p in x.up]  # unjudged docs by decreasing score
    ap = _AP(x, x.n_at(x.d))
    rj = float(x.RJ[0])
    for best in (True, False):
        n_rel = rj + (x.idx if best else x.m[0] - x.idx + 1.0)
        got = ap.cut_at_r(x.uq, n_rel.astype(np.int64), x.idx, best) / n_rel
        for e, i in enumerate(x.idx.astype(int)):
            chosen = unj[:i] if best else unj[i - 1 :]
            full = [(maxg if d in chosen else 0.0) if g is None else g for d, g in enumerate(row)]
            want = _ref(s, full, "tie-aware", (1,), maxg)["AP@R"]
            assert got[e] == pytest.approx(want, abs=1e-12), (best, i, list(s), row)
