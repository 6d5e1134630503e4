"""Randomised cross-checks against independent implementations: pytrec_eval and ranx."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.metrics import query_values

from .helpers import build, random_case, to_trec, toy_collection

pytrec_eval = pytest.importorskip("pytrec_eval")

K = (1, 3, 5, 10)
TREC = {  # trec_eval measure -> fireval measure
    **{f"P_{k}": f"P@{k}" for k in K},
    **{f"recall_{k}": f"Recall@{k}" for k in K},
    **{f"map_cut_{k}": f"AP@{k}" for k in K},
    **{f"ndcg_cut_{k}": f"nDCG@{k}" for k in K},
    "success_1": "C@1",
    "success_5": "C@5",
    "success_10": "C@10",
    "map": "AP",
    "Rprec": "R-Prec",
    "recip_rank": "RR",
    "ndcg": "nDCG",
}


@pytest.mark.parametrize("seed", range(6))
def test_pytrec_eval_docid_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q, n_d = 40, int(rng.integers(5, 40))
    scores, grades = random_case(rng, n_q, n_d, levels=int(rng.integers(2, 8)), p_inf=0.15, p_judged=0.5)
    # ids whose string order differs from their index order ("d10" < "d2"), to test strcmp ties
    doc_ids = [f"d{j}" for j in rng.permutation(n_d)]
    run, judg = build(scores, grades)
    coll = toy_collection(n_q, doc_ids)
    got = query_values(run, judg, "t2v", list(TREC.values()), ties="docid", collection=coll)
    qrel, trec_run = to_trec(scores, grades, doc_ids)
    ev = pytrec_eval.RelevanceEvaluator(qrel, set(TREC))
    res = ev.evaluate(trec_run)
    compared = 0
    for i in range(n_q):
        has_rel = any(g is not None and g > 0 for g in grades[i])
        if not has_rel or f"q{i}" not in res:
            assert np.isnan(got["AP"][i]) or not has_rel
            continue
        for tm, fm in TREC.items():
            assert got[fm][i] == pytest.approx(res[f"q{i}"][tm], abs=1e-9), (tm, i)
            compared += 1
    assert compared > 100


def test_pytrec_eval_ties_actually_matter() -> None:
    """Guard: on this data docid and tie-aware differ, so the check above tests the tie order."""
    rng = np.random.default_rng(0)
    scores, grades = random_case(rng, 40, 20, levels=2, p_inf=0.0, p_judged=0.5)
    run, judg = build(scores, grades)
    a = query_values(run, judg, "t2v", ["AP"], ties="docid")["AP"]
    b = query_values(run, judg, "t2v", ["AP"], ties="tie-aware")["AP"]
    assert np.nanmax(np.abs(a - b)) > 1e-3


def test_ranx_tie_free() -> None:
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(11)
    n_q, n_d = 30, 25
    scores = np.stack([rng.permutation(n_d) for _ in range(n_q)]).astype(np.float64)  # no ties
    grades = [
        [(float(rng.integers(1, 3)) if rng.random() < 0.2 else None) for _ in range(n_d)] for _ in range(n_q)
    ]
    for row in grades:
        if all(g is None for g in row):
            row[0] = 1.0
    doc_ids = [f"d{j}" for j in range(n_d)]
    run, judg = build(scores, grades)
    qrels = ranx.Qrels(
        {
            f"q{i}": {doc_ids[j]: int(g) for j, g in enumerate(r) if g is not None}
            for i, r in enumerate(grades)
        }
    )
    rr = ranx.Run({f"q{i}": {doc_ids[j]: float(scores[i, j]) for j in range(n_d)} for i in range(n_q)})
    pairs = {
        "hit_rate@5": "C@5",
        "map": "AP",
        "mrr": "RR",
        "ndcg@5": "nDCG@5",
        "ndcg_burges@5": "nDCG_exp@5",
        "r-precision": "R-Prec",
    }
    res = ranx.evaluate(qrels, rr, list(pairs), return_mean=False)
    got = query_values(run, judg, "t2v", list(pairs.values()))
    order = [int(q[1:]) for q in sorted(qrels.keys())]  # ranx reports queries in sorted id order
    for rm, fm in pairs.items():
        np.testing.assert_allclose(got[fm][order], np.asarray(res[rm]), rtol=0, atol=1e-9, err_msg=rm)


@pytest.mark.parametrize("seed", range(3))
def test_condensed_matches_trec_eval_judged_only(seed: int) -> None:
    """trec_eval -J (judged_docs_only_flag) removes unjudged docs: our ``condensed`` list."""
    rng = np.random.default_rng(100 + seed)
    n_q, n_d = 30, 25
    scores, grades = random_case(rng, n_q, n_d, levels=6, p_inf=0.1, p_judged=0.5)
    doc_ids = [f"d{j}" for j in rng.permutation(n_d)]
    run, judg = build(scores, grades)
    measures = {"P_5": "P@5", "map": "AP", "recip_rank": "RR", "ndcg_cut_10": "nDCG@10", "Rprec": "R-Prec"}
    got = query_values(
        run,
        judg,
        "t2v",
        list(measures.values()),
        ties="docid",
        unjudged="condensed",
        collection=toy_collection(n_q, doc_ids),
    )
    qrel, trec_run = to_trec(scores, grades, doc_ids)
    res = pytrec_eval.RelevanceEvaluator(qrel, set(measures), judged_docs_only_flag=True).evaluate(trec_run)
    compared = 0
    for i in range(n_q):
        if not any(g for g in grades[i] if g is not None) or f"q{i}" not in res:
            continue
        for tm, fm in measures.items():
            assert got[fm][i] == pytest.approx(res[f"q{i}"][tm], abs=1e-9), (tm, i)
            compared += 1
    assert compared > 50
