"""Property tests (hypothesis): bounds, monotonicity, tie invariance, direction symmetry, bounds order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fireval.core import Judgments, Run
from fireval.metrics import evaluate, query_values

from .helpers import build

HIGHER = [
    "C@1",
    "C@3",
    "P@3",
    "Recall@3",
    "AP",
    "AP@3",
    "nDCG@3",
    "nDCG",
    "RR",
    "R-Prec",
    "judged@3",
    "AP_hits@3",
]
UNIT = HIGHER


@st.composite
def cases(draw, max_q=4, max_d=8):
    n_q = draw(st.integers(1, max_q))
    n_d = draw(st.integers(1, max_d))
    levels = draw(st.integers(1, 4))
    scores = np.array(
        draw(
            st.lists(st.lists(st.integers(0, levels), min_size=n_d, max_size=n_d), min_size=n_q, max_size=n_q)
        ),
        dtype=np.float64,
    )
    grades = draw(
        st.lists(
            st.lists(st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.0])), min_size=n_d, max_size=n_d),
            min_size=n_q,
            max_size=n_q,
        )
    )
    return scores, grades


SETTINGS = settings(max_examples=40, deadline=None)


@SETTINGS
@given(
    cases(),
    st.sampled_from(["tie-aware", "optimistic", "pessimistic", "docid"]),
    st.sampled_from(["lower", "upper", "condensed"]),
)
def test_bounds(case, ties, unjudged) -> None:
    scores, grades = case
    run, judg = build(scores, grades)
    v = query_values(run, judg, "t2v", HIGHER + ["MnR"], ties=ties, unjudged=unjudged)
    for m in UNIT:
        ok = v[m][~np.isnan(v[m])]
        assert np.all(ok >= -1e-12) and np.all(ok <= 1 + 1e-12), m
    r = v["MnR"][~np.isnan(v["MnR"])]
    assert np.all(r >= 1) and np.all(r <= scores.shape[1])


@SETTINGS
@given(cases(), st.data())
def test_raising_a_relevant_doc_never_hurts(case, data) -> None:
    scores, grades = case
    # binary labels: with grades, lifting a grade-1 doc above a grade-2 doc may lower nDCG
    grades = [[(1.0 if g else g) for g in row] for row in grades]
    rel = [(i, j) for i, row in enumerate(grades) for j, g in enumerate(row) if g]
    if not rel:
        return
    i, j = data.draw(st.sampled_from(rel))
    bump = data.draw(st.integers(1, 3))
    run, judg = build(scores, grades)
    s2 = scores.copy()
    s2[i, j] += bump
    run2, _ = build(s2, grades)
    ms = ["C@1", "C@3", "AP", "nDCG@3", "nDCG", "RR"]
    a = query_values(run, judg, "t2v", ms)
    b = query_values(run2, judg, "t2v", ms)
    for m in ms:
        assert b[m][i] >= a[m][i] - 1e-12, m
    assert (
        query_values(run2, judg, "t2v", ["MnR"])["MnR"][i]
        <= query_values(run, judg, "t2v", ["MnR"])["MnR"][i] + 1e-12
    )


@SETTINGS
@given(cases(), st.data())
def test_permuting_docs_is_invariant_under_tie_aware(case, data) -> None:
    scores, grades = case
    perm = np.array(data.draw(st.permutations(range(scores.shape[1]))))
    run, judg = build(scores, grades)
    run2, judg2 = build(scores[:, perm], [[row[p] for p in perm] for row in grades])
    ms = HIGHER + ["MnR"]
    for unjudged in ("lower", "upper", "condensed"):
        a = query_values(run, judg, "t2v", ms, unjudged=unjudged)
        b = query_values(run2, judg2, "t2v", ms, unjudged=unjudged)
        for m in ms:
            np.testing.assert_allclose(a[m], b[m], atol=1e-12, err_msg=m)


@SETTINGS
@given(cases(), st.sampled_from(["tie-aware", "docid", "optimistic"]))
def test_v2t_equals_t2v_of_transpose(case, ties) -> None:
    scores, grades = case
    run, judg = build(scores, grades)
    gt = [list(col) for col in zip(*grades, strict=True)]
    run_t, judg_t = build(scores.T.copy(), gt)
    ms = HIGHER + ["MnR"]
    a = query_values(run, judg, "v2t", ms, ties=ties)
    b = query_values(run_t, judg_t, "t2v", ms, ties=ties)
    for m in ms:
        np.testing.assert_allclose(a[m], b[m], atol=1e-12, err_msg=m)


@SETTINGS
@given(cases())
def test_lower_le_upper_and_policy_order(case) -> None:
    scores, grades = case
    run, judg = build(scores, grades)
    # lower <= upper holds where the query has a relevant doc in both
    ms = ["C@1", "C@3", "P@3", "judged@3"]
    lo = query_values(run, judg, "t2v", ms, unjudged="lower")
    up = query_values(run, judg, "t2v", ms, unjudged="upper")
    for m in ["C@1", "C@3", "P@3"]:
        ok = ~np.isnan(lo[m])
        assert np.all(lo[m][ok] <= up[m][ok] + 1e-12), m
    # FIRE's AP_hits@K divides by the hits found, so it is not monotone in where a relevant doc
    # lands (a second hit at rank K can lower it); the policy order does not apply to it
    ms = [m for m in HIGHER if not m.startswith("AP_hits")]
    opt = query_values(run, judg, "t2v", ms + ["MnR"], ties="optimistic")
    mid = query_values(run, judg, "t2v", ms + ["MnR"], ties="tie-aware")
    pes = query_values(run, judg, "t2v", ms + ["MnR"], ties="pessimistic")
    for m in ms:
        ok = ~np.isnan(mid[m])
        assert np.all(pes[m][ok] <= mid[m][ok] + 1e-12) and np.all(mid[m][ok] <= opt[m][ok] + 1e-12), m
    ok = ~np.isnan(mid["MnR"])
    assert np.all(opt["MnR"][ok] <= mid["MnR"][ok] + 1e-12) and np.all(
        mid["MnR"][ok] <= pes["MnR"][ok] + 1e-12
    )


def test_evaluate_table_shape_and_aggregates() -> None:
    rng = np.random.default_rng(2)
    s = rng.standard_normal((30, 12))
    judg = Judgments.from_arrays((30, 12), np.arange(30), np.arange(30) % 12, np.ones(30), "instance")
    ev = evaluate(
        Run("m", scores=s),
        judg,
        unjudged=("lower", "upper"),
        per_query=True,
        run_name="M",
        labels_name="orig",
    )
    t = ev.table
    assert list(t.columns) == ["run", "labels", "direction", "unjudged", "ties", "measure", "value", "n"]
    assert set(t.direction) == {"t2v", "v2t", "both"}
    assert set(t.run) == {"M"} and set(t.labels) == {"orig"}
    for mode in ("lower", "upper"):
        cs = [ev.value(f"C@{k}", d, mode) for d in ("t2v", "v2t") for k in (1, 5, 10)]
        assert ev.value("meanR", "both", mode) == np.mean(cs)
        c3 = [ev.value(f"C@{k}", "t2v", mode) for k in (1, 5, 10)]
        assert abs(ev.value("geoC", "t2v", mode) - float(np.prod(c3)) ** (1 / 3)) < 1e-12
    pq = ev.per_query
    assert list(pq.columns) == ["run", "labels", "direction", "unjudged", "query", "measure", "value"]
    t2v = pq[(pq.direction == "t2v") & (pq.unjudged == "lower") & (pq.measure == "AP")]
    assert len(t2v) == 30 and abs(t2v.value.mean() - ev.value("AP")) < 1e-12
    v = pq[(pq.direction == "t2v") & (pq.unjudged == "lower") & (pq.measure == "MdR")].value
    assert ev.value("MdR") == float(np.median(v))
    import json

    json.dumps(ev.to_dict())
