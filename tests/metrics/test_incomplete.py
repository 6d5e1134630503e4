"""bpref, infAP and infNDCG: pytrec_eval parity (docid ties), every ordering for the other tie
policies, and an oracle written from Yilmaz, Kanoulas & Aslam (2008) for infNDCG.

The per-order oracles below follow trec_eval's loops (m_bpref.c, m_infap.c) and the paper's
estimator, one query at a time with plain Python; they share nothing with the kernel.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fireval.core.errors import FirevalError
from fireval.metrics import evaluate, query_values

from .helpers import build, max_grade, random_case, to_trec, toy_collection
from .reference import consistent_orders, effective

pytrec_eval = pytest.importorskip("pytrec_eval")

EPS = 0.00001  # trec_eval's INFAP_EPSILON


def _classes(order, scores, gain, judged, kept):
    """Retrieved docs of a strict order as 'rel' / 'nonrel' / 'unjudged' (trec_eval's classes)."""
    out = []
    for d in order:
        if not kept[d] or scores[d] == float("-inf"):
            continue
        if gain[d] > 0:
            out.append("rel")
        elif judged[d]:
            out.append("nonrel")
        else:
            out.append("unjudged")
    return out


def oracle_bpref_infap(order, scores, gain, judged, kept) -> dict[str, float]:
    big_r = sum(1 for d in range(len(scores)) if kept[d] and gain[d] > 0)
    big_n = sum(1 for d in range(len(scores)) if kept[d] and judged[d] and gain[d] == 0)
    if big_r == 0:
        return {}
    bpref = infap = 0.0
    rel_so_far = nonrel_so_far = 0
    for j, c in enumerate(_classes(order, scores, gain, judged, kept)):
        if c == "unjudged":
            continue
        if c == "nonrel":
            nonrel_so_far += 1
            continue
        rel_so_far += 1
        bpref += 1.0 - min(nonrel_so_far, big_r) / min(big_n, big_r) if nonrel_so_far else 1.0
        if j == 0:
            infap += 1.0
        else:
            prec_above = (rel_so_far - 1 + EPS) / (rel_so_far - 1 + nonrel_so_far + 2 * EPS)
            infap += 1.0 / (j + 1) + (j / (j + 1)) * ((rel_so_far - 1 + nonrel_so_far) / j) * prec_above
    return {"bpref": bpref / big_r, "infAP": infap / big_r}


def oracle_infndcg(order, scores, gain, judged, kept, pool, prob, cut) -> float:
    """Yilmaz, Kanoulas & Aslam 2008, one stratum: E[gain] per rank (sampled: its gain; pooled but
    not sampled: the mean gain of the sampled docs; outside the pool: 0) over log2(rank + 1),
    divided by the DCG of the ideal ranking of the estimated counts per grade (count / prob)."""
    sampled = [d for d in range(len(scores)) if kept[d] and judged[d] and pool[d]]
    mean_gain = sum(gain[d] for d in sampled) / len(sampled) if sampled else 0.0
    ranked = [d for d in order if kept[d] and scores[d] != float("-inf")]
    est = [
        (gain[d] if (judged[d] and pool[d]) else mean_gain if pool[d] else 0.0) for d in ranked
    ]  # the unjudged docs of fireval's labels are outside the pool
    counts: dict[float, float] = {}
    for d in sampled:
        if gain[d] > 0:
            counts[gain[d]] = counts.get(gain[d], 0.0) + 1.0 / prob
    ideal: list[float] = []
    for gv in sorted(counts, reverse=True):
        ideal += [gv] * round(counts[gv])
    k = len(scores) if cut is None else (len(ideal) if cut == "R" else cut)
    dcg = sum(x / math.log2(i + 2) for i, x in enumerate(est[:k]))
    idcg = sum(x / math.log2(i + 2) for i, x in enumerate(ideal[:k]))
    return dcg / idcg


def _strict(scores, gain, judged, ties, doc_ids):
    n = len(scores)
    if ties == "optimistic":
        return sorted(range(n), key=lambda d: (-scores[d], -gain[d], -judged[d]))
    if ties == "pessimistic":
        return sorted(range(n), key=lambda d: (-scores[d], gain[d], judged[d]))
    order = sorted(range(n), key=lambda d: doc_ids[d], reverse=True)
    return sorted(order, key=lambda d: -scores[d])


def reference(scores, grades, mode, ties, maxg, doc_ids) -> dict[str, float]:
    gain, judged, kept = effective(grades, mode, maxg)
    if mode == "upper":  # every doc is labelled: unjudged ones relevant, in the judged sample
        judged = [True] * len(scores)
    pool = list(judged)
    orders = (
        consistent_orders(scores) if ties == "tie-aware" else [_strict(scores, gain, judged, ties, doc_ids)]
    )
    acc: dict[str, float] = {}
    for o in orders:
        vals = oracle_bpref_infap(o, scores, gain, judged, kept)
        if not vals:
            return {}
        for cut, key in ((None, "infNDCG"), (2, "infNDCG@2"), ("R", "infNDCG@R")):
            vals[key] = oracle_infndcg(o, scores, gain, judged, kept, pool, 1.0, cut)
        for k, v in vals.items():
            acc[k] = acc.get(k, 0.0) + v / len(orders)
    return acc


MEASURES = ["bpref", "infAP", "infNDCG", "infNDCG@2", "infNDCG@R"]


@pytest.mark.parametrize("ties", ["tie-aware", "optimistic", "pessimistic", "docid"])
@pytest.mark.parametrize("unjudged", ["lower", "upper", "condensed"])
def test_matches_every_ordering(ties: str, unjudged: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"inc{ties}{unjudged}".encode()))
    checked = 0
    for _ in range(10):
        n_d = int(rng.integers(1, 7))
        scores, grades = random_case(rng, 6, n_d, levels=int(rng.integers(1, 4)))
        run, judg = build(scores, grades)
        got = query_values(run, judg, "t2v", MEASURES, ties=ties, unjudged=unjudged, chunk_rows=2)
        ids = [str(i) for i in range(n_d)]
        for q in range(scores.shape[0]):
            ref = reference(list(scores[q]), grades[q], unjudged, ties, max_grade(grades), ids)
            for m in MEASURES:
                if not ref:
                    assert math.isnan(got[m][q])
                    continue
                assert got[m][q] == pytest.approx(ref[m], abs=1e-12), (m, q, list(scores[q]), grades[q])
                checked += 1
    assert checked > 60


def test_tie_aware_infap_with_large_groups() -> None:
    """Groups with many unjudged docs (the ragged sum over w and v) against every ordering."""
    scores = np.array([[1.0] * 3 + [0.0] * 6])
    grades = [[1.0, 0.0, None, 2.0, None, 1.0, None, 0.0, None]]
    run, judg = build(scores, grades)
    got = query_values(run, judg, "t2v", ["infAP", "bpref"])
    ref = reference(list(scores[0]), grades[0], "lower", "tie-aware", 2.0, [str(i) for i in range(9)])
    assert got["infAP"][0] == pytest.approx(ref["infAP"], abs=1e-12)
    assert got["bpref"][0] == pytest.approx(ref["bpref"], abs=1e-12)
    ap = query_values(run, judg, "t2v", ["AP"])["AP"][0]
    assert got["infAP"][0] != ap and abs(got["infAP"][0] - ap) < 1e-4  # only the eps terms differ


@st.composite
def cases(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_q, n_d = draw(st.integers(1, 12)), draw(st.integers(1, 14))
    scores, grades = random_case(
        rng,
        n_q,
        n_d,
        levels=draw(st.integers(1, 6)),
        p_inf=draw(st.sampled_from([0.0, 0.2])),
        p_judged=draw(st.sampled_from([0.2, 0.5, 1.0])),  # 1.0: all judged
    )
    if draw(st.booleans()):  # no judged irrelevant doc at all
        grades = [[(g if g is None or g > 0 else None) for g in row] for row in grades]
    return scores, grades, [f"d{j}" for j in rng.permutation(n_d)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), condensed=st.booleans(), level=st.sampled_from([None, 2]))
def test_pytrec_eval_parity(case, condensed: bool, level: int | None) -> None:
    """bpref and infAP equal pytrec_eval's per query (docid ties; trec_eval -J for condensed;
    relevance_level for --min-grade), on random incomplete graded judgments."""
    scores, grades, doc_ids = case
    run, judg = build(scores, grades)
    got = query_values(
        run,
        judg,
        "t2v",
        ["bpref", "infAP"],
        ties="docid",
        unjudged="condensed" if condensed else "lower",
        collection=toy_collection(len(grades), doc_ids),
        min_grade=level,
    )
    qrel, trec_run = to_trec(scores, grades, doc_ids)
    kw = {"judged_docs_only_flag": condensed, "relevance_level": level or 1}
    res = pytrec_eval.RelevanceEvaluator(qrel, {"bpref", "infAP"}, **kw).evaluate(trec_run)
    for i, row in enumerate(grades):
        has_rel = any(g is not None and g >= (level or 1) for g in row)
        if not has_rel:
            assert math.isnan(got["bpref"][i]) and math.isnan(got["infAP"][i])
            continue
        for m in ("bpref", "infAP"):
            want = res.get(f"q{i}", {}).get(m, 0.0)  # a query with no retrieved doc: 0
            assert got[m][i] == pytest.approx(want, abs=1e-12), (m, i)


def test_edge_cases_against_pytrec_eval() -> None:
    """R larger than N (the min(N, R) cap), N = 0, an unretrieved relevant doc, all judged."""
    doc_ids = [f"d{j}" for j in range(6)]
    scores = np.array(
        [
            [6, 5, 4, 3, 2, 1],  # R = 4 > N = 1
            [6, 5, 4, 3, 2, 1],  # N = 0
            [6, 5, 4, 3, 2, -np.inf],  # the last relevant doc is not retrieved
            [6, 5, 4, 3, 2, 1],  # all judged
        ],
        dtype=np.float64,
    )
    grades = [
        [0.0, 1.0, 1.0, None, 1.0, 1.0],
        [None, 1.0, None, 1.0, None, None],
        [0.0, 1.0, 0.0, None, 0.0, 1.0],
        [1.0, 0.0, 2.0, 0.0, 0.0, 1.0],
    ]
    run, judg = build(scores, grades)
    got = query_values(
        run, judg, "t2v", ["bpref", "infAP"], ties="docid", collection=toy_collection(4, doc_ids)
    )
    qrel, trec_run = to_trec(scores, grades, doc_ids)
    res = pytrec_eval.RelevanceEvaluator(qrel, {"bpref", "infAP"}).evaluate(trec_run)
    for i in range(4):
        for m in ("bpref", "infAP"):
            assert got[m][i] == pytest.approx(res[f"q{i}"][m], abs=1e-12), (m, i)
    assert got["bpref"][0] == pytest.approx((0 + 0 + 0 + 0) / 4)  # every relevant doc below the one N
    assert got["bpref"][1] == 1.0  # no judged irrelevant doc


def test_both_directions_and_worst_refused() -> None:
    rng = np.random.default_rng(5)
    scores, grades = random_case(rng, 9, 7, levels=3)
    run, judg = build(scores, grades)
    ev = evaluate(run, judg, measures="bpref,infAP,infNDCG@3", unjudged=("lower", "upper", "condensed"))
    assert set(ev.table.direction) == {"t2v", "v2t"}
    ms = ["bpref", "infAP", "infNDCG@3"]
    t_run, t_judg = build(scores.T.copy(), [list(c) for c in zip(*grades, strict=True)])
    for ties in ("tie-aware", "optimistic"):  # tie-aware v2t counts the matrix's columns in place
        v2t = query_values(run, judg, "v2t", ms, ties=ties)
        t2v = query_values(t_run, t_judg, "t2v", ms, ties=ties)
        for m in ms:
            np.testing.assert_allclose(v2t[m], t2v[m], rtol=0, atol=1e-12, err_msg=m)
    with pytest.raises(FirevalError, match="not available for bpref"):
        evaluate(run, judg, measures="bpref,C@1", unjudged="worst")


@pytest.mark.parametrize("seed", range(3))
def test_min_grade_is_trec_eval_relevance_level(seed: int) -> None:
    """``min_grade=G`` is trec_eval's ``-l G``: binary measures see grade >= G as relevant, nDCG
    keeps the grades (pytrec_eval's ``relevance_level``)."""
    rng = np.random.default_rng(300 + seed)
    scores, grades = random_case(rng, 30, 12, levels=4, p_inf=0.1, p_judged=0.6)
    grades = [[(g + 1.0 if g else g) for g in row] for row in grades]  # grades 0..3
    doc_ids = [f"d{j}" for j in rng.permutation(12)]
    pairs = {"map": "AP", "P_5": "P@5", "recall_5": "Recall@5", "Rprec": "R-Prec", "recip_rank": "RR"}
    pairs |= {"success_5": "C@5", "bpref": "bpref", "infAP": "infAP", "ndcg_cut_5": "nDCG@5"}
    run, judg = build(scores, grades)
    got = query_values(
        run,
        judg,
        "t2v",
        list(pairs.values()),
        ties="docid",
        collection=toy_collection(30, doc_ids),
        min_grade=2,
    )
    qrel, trec_run = to_trec(scores, grades, doc_ids)
    res = pytrec_eval.RelevanceEvaluator(qrel, set(pairs), relevance_level=2).evaluate(trec_run)
    compared = 0
    for i, row in enumerate(grades):
        for tm, fm in pairs.items():
            binary_rel = any(g is not None and g >= 2 for g in row)
            graded_rel = any(g is not None and g > 0 for g in row)
            if not (graded_rel if fm == "nDCG@5" else binary_rel):
                assert math.isnan(got[fm][i]), (fm, i)
                continue
            assert got[fm][i] == pytest.approx(res[f"q{i}"][tm], abs=1e-12), (tm, i)
            compared += 1
    assert compared > 150


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "x"])
def test_min_grade_must_be_positive_and_finite(bad) -> None:
    rng = np.random.default_rng(1)
    run, judg = build(*random_case(rng, 3, 4))
    with pytest.raises(FirevalError, match="min_grade"):
        evaluate(run, judg, measures="C@1", min_grade=bad)


def test_api_and_embeddings_paths_take_the_measures_and_min_grade() -> None:
    """``fireval.evaluate`` on a score matrix and on embeddings (blocks computed on demand, v2t
    columns counted in place) gives the metrics layer's values, with ``min_grade``."""
    import fireval

    rng = np.random.default_rng(9)
    n_q, n_d, dim = 40, 30, 8
    t, v = rng.standard_normal((n_q, dim)), rng.standard_normal((n_d, dim))
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    scores = t @ v.T
    _, grades = random_case(rng, n_q, n_d, levels=3, p_inf=0.0, p_judged=0.5)
    run, judg = build(scores, grades)
    coll = toy_collection(n_q, [f"d{j}" for j in range(n_d)])
    ms = "bpref,infAP,infNDCG@5,C@3"
    want = evaluate(run, judg, measures=ms, min_grade=2, collection=coll)
    dense = fireval.evaluate(scores, coll, judg, measures=ms, min_grade=2)
    emb = fireval.evaluate(
        collection=coll, labels=judg, text_emb=t, video_emb=v, sim="dot", measures=ms, min_grade=2
    )
    for ev in (dense, emb):
        for d in ("t2v", "v2t"):
            for m in ms.split(","):
                assert ev.value(m, d) == pytest.approx(want.value(m, d), abs=1e-9), (m, d)


@pytest.mark.parametrize("preset", ["fire2023", "clip4clip", "wray2021"])
def test_presets_with_the_measures_and_min_grade(preset: str) -> None:
    rng = np.random.default_rng(12)
    scores, grades = random_case(rng, 30, 12, levels=4, p_inf=0.0)
    run, judg = build(scores, grades)
    ev = evaluate(run, judg, measures="bpref,infAP,nDCG@5,C@1", preset=preset, min_grade=2)
    plain = evaluate(run, judg.binarised(2), measures="bpref,infAP", preset=preset)
    graded = evaluate(run, judg, measures="nDCG@5", preset=preset)
    for d in ("t2v", "v2t"):
        for m in ("bpref", "infAP"):
            assert ev.value(m, d) == pytest.approx(plain.value(m, d), abs=1e-12)
        assert ev.value("nDCG@5", d) == pytest.approx(graded.value("nDCG@5", d), abs=1e-12)


def test_correction_loops_equal_the_numpy_sums() -> None:
    """infAP's tie correction: the loops (compiled by numba for large sums) and the numpy
    expansion give the same values, on groups with and without unjudged docs."""
    from fireval.metrics import incomplete as inc

    rng = np.random.default_rng(21)
    n = 200
    r = rng.integers(1, 6, n).astype(float)
    j = rng.integers(0, 6, n).astype(float)
    t = r + j + rng.integers(0, 40, n) * (rng.random(n) < 0.7)
    g = rng.integers(0, 50, n).astype(float)
    c0 = rng.integers(0, 5, n).astype(float)
    n0 = rng.integers(0, 5, n).astype(float)
    want = inc._mean_correction(g, t, r, j, c0, n0)
    got = np.zeros(n)
    inc._correction_loops(g, r, r + j, t - r - j, c0, n0, inc.INFAP_EPSILON, got)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    kernel = inc._loops_kernel()
    if kernel is not None:
        compiled = np.zeros(n)
        kernel(g, r, r + j, t - r - j, c0, n0, inc.INFAP_EPSILON, compiled)
        np.testing.assert_allclose(compiled, want, rtol=1e-12, atol=0)


def test_correction_loops_in_log_space_for_huge_groups() -> None:
    """C(m+u, u) > e^600 (300 judged docs tied with 700 unjudged): the loops sum in log space."""
    from fireval.metrics import incomplete as inc

    g, t, r, j = (np.array([x], dtype=float) for x in (3, 1000, 120, 180))
    c0, n0 = np.array([2.0]), np.array([4.0])
    assert math.lgamma(1001) - math.lgamma(701) - math.lgamma(301) > 600
    want = inc._mean_correction(g, t, r, j, c0, n0)
    got = np.zeros(1)
    inc._correction_loops(g, r, r + j, t - r - j, c0, n0, inc.INFAP_EPSILON, got)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)
    assert 0 < got[0] < 2 * inc.INFAP_EPSILON


def test_bpref_warns_when_nothing_is_judged_irrelevant() -> None:
    scores = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]])
    run, judg = build(scores, [[None, 1.0, None], [0.0, 1.0, None]])
    ev = evaluate(run, judg, measures="bpref", directions="t2v")
    assert ev.value("bpref") == pytest.approx((1.0 + 0.0) / 2)
    assert len(ev.warnings) == 1 and "bpref is 1 for the 1 of 2 queries" in ev.warnings[0]
    run, judg = build(scores, [[0.0, 1.0, None], [0.0, 1.0, None]])
    assert not evaluate(run, judg, measures="bpref,infAP", directions="t2v").warnings


def test_min_grade_above_every_grade_leaves_binary_measures_undefined() -> None:
    rng = np.random.default_rng(0)
    run, judg = build(*random_case(rng, 5, 6))
    ev = evaluate(run, judg, measures="C@1,bpref,nDCG@3,geoC", min_grade=50)
    t = ev.table.set_index(["direction", "measure"])
    for d in ("t2v", "v2t"):
        assert math.isnan(t.loc[(d, "C@1"), "value"]) and t.loc[(d, "C@1"), "n"] == 0
        assert math.isnan(t.loc[(d, "bpref"), "value"]) and math.isnan(t.loc[(d, "geoC"), "value"])
        assert t.loc[(d, "nDCG@3"), "value"] > 0  # graded: every grade > 0 still counts
