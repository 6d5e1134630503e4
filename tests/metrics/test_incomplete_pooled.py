"""TREC qrels ``rel < 0`` (in the pool, not judged: ``Judgments.pooled``) against trec_eval.

trec_eval (form_res_rels.c) gives such a doc RELVALUE_UNJUDGED: it counts in no relevance level,
``-J`` drops it like a doc outside the pool, and only infAP (m_infap.c) tells it apart, counting it
among the docs above a relevant one whose precision it estimates. The oracles: pytrec_eval per
query (docid ties), and for the other tie policies trec_eval's infAP loop written out here over
every ordering of the tie groups (it shares nothing with the kernel).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fireval.core import Judgments, Run, merge
from fireval.core.errors import InputError
from fireval.metrics import evaluate, query_values

from .helpers import toy_collection
from .reference import consistent_orders

pytrec_eval = pytest.importorskip("pytrec_eval")

EPS = 0.00001  # trec_eval's INFAP_EPSILON
ABSENT, POOLED = -9, -1  # label codes of the tables below: not in the qrels / rel -1 in the qrels

K = (1, 3, 5)
TREC = {  # trec_eval measure -> fireval measure
    **{f"P_{k}": f"P@{k}" for k in K},
    **{f"recall_{k}": f"Recall@{k}" for k in K},
    **{f"map_cut_{k}": f"AP@{k}" for k in K},
    **{f"ndcg_cut_{k}": f"nDCG@{k}" for k in K},
    **{f"success_{k}": f"C@{k}" for k in K},
    "map": "AP",
    "Rprec": "R-Prec",
    "recip_rank": "RR",
    "ndcg": "nDCG",
    "bpref": "bpref",
    "infAP": "infAP",
}
GRADED = {"nDCG", "nDCG@1", "nDCG@3", "nDCG@5"}  # keep the grades under relevance_level


def build(scores: np.ndarray, labels: np.ndarray) -> tuple[Run, Judgments]:
    """A run and judgments from a label table: grade >= 0, POOLED or ABSENT per pair."""
    r, c = np.nonzero(labels >= 0)
    pr, pc = np.nonzero(labels == POOLED)
    j = Judgments.from_arrays(
        labels.shape, r, c, labels[r, c].astype(float), "human", pooled=np.stack([pr, pc], axis=1)
    )
    return Run("r", scores=np.asarray(scores, np.float64)), j


def to_trec(scores, labels, doc_ids):
    """pytrec_eval's qrels (rel -1 for POOLED) and run. A query whose qrels lines are all
    negative is left out: trec_eval's form_res_rels then sizes its level counts from max_rel = -1
    and reads memory it does not own (pytrec_eval crashes); such a query has no relevant doc."""
    qrel, run = {}, {}
    for i, row in enumerate(labels):
        if (row >= 0).any():
            qrel[f"q{i}"] = {doc_ids[j]: int(g) for j, g in enumerate(row) if g != ABSENT}
        run[f"q{i}"] = {doc_ids[j]: float(s) for j, s in enumerate(scores[i]) if np.isfinite(s)}
    return qrel, run


@st.composite
def cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_q, n_d = draw(st.integers(1, 10), label="n_q"), draw(st.integers(1, 14), label="n_d")
    levels = draw(st.integers(1, 6), label="score levels")  # few levels: many ties
    scores = rng.integers(0, levels, (n_q, n_d)).astype(np.float64)
    scores[rng.random((n_q, n_d)) < draw(st.sampled_from([0.0, 0.2]))] = -np.inf
    p = np.array(draw(st.sampled_from([(3, 3, 2, 2, 1), (1, 4, 1, 1, 1), (2, 1, 0, 2, 1)])), float)
    labels = rng.choice([ABSENT, POOLED, 0, 1, 2], size=(n_q, n_d), p=p / p.sum())
    return scores, labels, [f"d{j}" for j in rng.permutation(n_d)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), condensed=st.booleans(), level=st.sampled_from([None, 2]))
def test_pytrec_eval_parity_with_pooled_docs(case, condensed: bool, level: int | None) -> None:
    """Every shared measure equals pytrec_eval's per query on qrels with rel -1 lines (docid
    ties; trec_eval -J for condensed; relevance_level for --min-grade)."""
    scores, labels, doc_ids = case
    run, judg = build(scores, labels)
    got = query_values(
        run,
        judg,
        "t2v",
        list(TREC.values()),
        ties="docid",
        unjudged="condensed" if condensed else "lower",
        collection=toy_collection(len(labels), doc_ids),
        min_grade=level,
    )
    qrel, trec_run = to_trec(scores, labels, doc_ids)
    kw = {"judged_docs_only_flag": condensed, "relevance_level": level or 1}
    res = pytrec_eval.RelevanceEvaluator(qrel, set(TREC), **kw).evaluate(trec_run)
    for i, row in enumerate(labels):
        for tm, fm in TREC.items():
            if not (row >= (1 if fm in GRADED else level or 1)).any():
                assert math.isnan(got[fm][i]), (fm, i)
                continue
            want = res.get(f"q{i}", {}).get(tm, 0.0)  # a query with no retrieved doc: 0
            assert got[fm][i] == pytest.approx(want, abs=1e-12), (tm, i, row.tolist())


def test_the_pooled_mark_changes_infap_only() -> None:
    """Guard for the parity test: on this data the marks move infAP (the same pairs absent give
    other values), and every other measure is the same with the marks or without them."""
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 4, (60, 10)).astype(float)
    labels = rng.choice([ABSENT, POOLED, 0, 1, 2], size=(60, 10), p=[0.3, 0.3, 0.15, 0.15, 0.1])
    run, judg = build(scores, labels)
    _, absent = build(scores, np.where(labels == POOLED, ABSENT, labels))
    assert judg.pooled.size and not absent.pooled.size
    ms = [*TREC.values(), "judged@5"]
    for ties in ("docid", "tie-aware"):
        a = query_values(run, judg, "t2v", ms, ties=ties)
        b = query_values(run, absent, "t2v", ms, ties=ties)
        for m in ms:
            if m == "infAP":
                assert np.nanmax(np.abs(a[m] - b[m])) > 0.05
            else:
                np.testing.assert_array_equal(a[m], b[m], err_msg=m)


def oracle_infap(order, scores, labels) -> float:
    """trec_eval's m_infap.c loop over one strict order (``-inf``: not retrieved)."""
    big_r = sum(1 for x in labels if x > 0)
    inf_ap = 0.0
    rel = nonrel = pool = 0
    ranked = [d for d in order if scores[d] != -math.inf]
    for j, d in enumerate(ranked):
        if labels[d] == ABSENT:
            continue
        if labels[d] == POOLED:
            pool += 1
            continue
        if labels[d] == 0:
            nonrel += 1
            continue
        rel += 1
        if j == 0:
            inf_ap += 1.0
        else:
            prec = (rel - 1 + EPS) / (rel - 1 + nonrel + 2 * EPS)
            inf_ap += 1.0 / (j + 1) + (j / (j + 1)) * ((rel - 1 + nonrel + pool) / j) * prec
    return inf_ap / big_r


def reference_infap(scores, labels, ties: str) -> float:
    if ties == "tie-aware":
        orders = consistent_orders(scores)
        return sum(oracle_infap(o, scores, labels) for o in orders) / len(orders)
    n = len(scores)
    # optimistic: relevant docs first in their tie group, by grade; pessimistic: last
    sign = -1 if ties == "optimistic" else 1
    order = sorted(range(n), key=lambda d: (-scores[d], sign * max(labels[d], 0), sign * (labels[d] >= 0)))
    return oracle_infap(order, scores, labels)


@pytest.mark.parametrize("ties", ["tie-aware", "optimistic", "pessimistic"])
def test_infap_with_pooled_docs_over_every_ordering(ties: str) -> None:
    """Tie-aware infAP (the exact sum over w and z of the module docstring) and the strict policies
    against trec_eval's loop over every ordering, on groups mixing every kind of doc."""
    rng = np.random.default_rng(31 + len(ties))
    checked = 0
    for _ in range(40):
        n_d = int(rng.integers(2, 9))
        scores = rng.integers(0, int(rng.integers(1, 4)), (1, n_d)).astype(float)
        scores[rng.random((1, n_d)) < 0.1] = -np.inf
        labels = rng.choice([ABSENT, POOLED, 0, 1, 2], size=(1, n_d), p=[0.25, 0.3, 0.15, 0.2, 0.1])
        if not (labels > 0).any():
            continue
        run, judg = build(scores, labels)
        got = query_values(run, judg, "t2v", ["infAP"], ties=ties)["infAP"][0]
        want = reference_infap(list(scores[0]), list(labels[0]), ties)
        assert got == pytest.approx(want, abs=1e-12), (list(scores[0]), labels[0].tolist())
        checked += 1
    assert checked > 25


def test_tie_aware_infap_with_a_large_pooled_group() -> None:
    """One group of 8 docs (3 judged, 3 pooled, 2 outside the pool) below pooled and judged docs:
    the ragged expansion against all 8! orderings, in both directions."""
    scores = np.array([[2.0, 2.0, 1.0] + [0.0] * 8])
    labels = np.array([[POOLED, 0, POOLED, 1, 0, 2, POOLED, POOLED, POOLED, ABSENT, ABSENT]])
    run, judg = build(scores, labels)
    want = reference_infap(list(scores[0]), list(labels[0]), "tie-aware")
    assert query_values(run, judg, "t2v", ["infAP"])["infAP"][0] == pytest.approx(want, abs=1e-12)
    # v2t: three video queries over a caption x video matrix (its columns counted in place)
    t_run, t_judg = build(np.repeat(scores.T, 3, axis=1), np.repeat(labels.T, 3, axis=1))
    got = query_values(t_run, t_judg, "v2t", ["infAP"])["infAP"]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_judgments_carry_the_pooled_pairs() -> None:
    """A judgment overrides the mark (in one source and across merged sources); select and
    binarised keep it; bad pairs are one-line input errors."""
    j = Judgments.from_arrays(
        (3, 4), [0, 1], [0, 1], [2.0, 0.0], "human", pooled=[[1, 1], [2, 3], [2, 3], [0, 2]]
    )
    assert j.pooled.tolist() == [[0, 2], [2, 3]]  # sorted, once, less the judged (1, 1)
    assert len(j) == 2 and j.matrix(judged=True).nnz == 2  # pooled pairs stay unjudged
    assert j.binarised(1).pooled.tolist() == j.relevant().pooled.tolist() == [[0, 2], [2, 3]]
    other = Judgments.from_arrays((3, 4), [2], [3], [1.0], "instance", pooled=[[1, 2]])
    m = merge([j, other])
    assert m.pooled.tolist() == [[0, 2], [1, 2]] and m.matrix().toarray()[2, 3] == 1.0
    assert not merge([Judgments.from_arrays((3, 4), [0], [0], [1.0], "human")]).pooled.size
    with pytest.raises(InputError, match="pooled pair outside the 3 x 4 collection"):
        Judgments.from_arrays((3, 4), [0], [0], [1.0], "human", pooled=[[3, 0]])


def test_infndcg_warns_that_it_does_not_use_the_marks() -> None:
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 3, (6, 5)).astype(float)
    labels = np.array([[1, POOLED, 0, ABSENT, 2]] * 6)
    run, judg = build(scores, labels)
    ev = evaluate(run, judg, measures="infNDCG@3,nDCG@3,infAP", directions="t2v")
    assert [w for w in ev.warnings if "infNDCG does not use the 6 pooled-but-unjudged pairs" in w]
    assert ev.value("infNDCG@3") == ev.value("nDCG@3")
    assert not [w for w in evaluate(run, judg, measures="infAP", directions="t2v").warnings if "pooled" in w]


def test_upper_counts_pooled_docs_as_unjudged() -> None:
    """``upper`` labels every unjudged doc relevant, pooled or not: the marks change nothing."""
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 3, (20, 8)).astype(float)
    labels = rng.choice([ABSENT, POOLED, 0, 1], size=(20, 8))
    run, judg = build(scores, labels)
    _, absent = build(scores, np.where(labels == POOLED, ABSENT, labels))
    a = query_values(run, judg, "t2v", ["infAP", "AP", "bpref"], unjudged="upper")
    b = query_values(run, absent, "t2v", ["infAP", "AP", "bpref"], unjudged="upper")
    for m in a:
        np.testing.assert_array_equal(a[m], b[m], err_msg=m)


def test_torch_kernel_counts_the_pooled_docs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scores on a device: the torch counting kernel counts the pooled entries too (CPU tensors
    through the accelerator's path), with the numpy path's values."""
    torch = pytest.importorskip("torch")
    import fireval.torch
    from fireval.torch import counting

    monkeypatch.setattr(fireval.torch, "HOST_DEVICES", frozenset())
    monkeypatch.setattr(counting, "DIRECT_MAX_BY_DEVICE", {})
    calls: list[int] = []
    real = counting.count_marked

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr("fireval.torch.sources.count_marked", spy)
    rng = np.random.default_rng(8)
    scores = rng.integers(0, 3, (12, 7)).astype(np.float64)
    labels = rng.choice([ABSENT, POOLED, 0, 1, 2], size=(12, 7), p=[0.3, 0.3, 0.15, 0.15, 0.1])
    labels[:, 0] = 1
    _, judg = build(scores, labels)
    coll = toy_collection(12, [f"d{j}" for j in range(7)])
    _, absent = build(scores, np.where(labels == POOLED, ABSENT, labels))
    for ties in ("tie-aware", "docid"):
        kw = dict(collection=coll, measures="infAP,bpref,AP", ties=ties, direction="both")
        want = fireval.evaluate(scores, labels=judg, **kw)
        got = fireval.evaluate(torch.from_numpy(scores), labels=judg, **kw)
        other = fireval.evaluate(scores, labels=absent, **kw)
        for d in ("t2v", "v2t"):
            assert got.value("infAP", d) == pytest.approx(want.value("infAP", d), abs=1e-12)
            assert abs(want.value("infAP", d) - other.value("infAP", d)) > 1e-3
    assert calls


@pytest.mark.parametrize("huge", [False, True])
def test_pooled_loops_equal_the_numpy_sums(huge: bool) -> None:
    """infAP's pooled term: the plain loops (compiled by numba for large sums) and the numpy
    expansion agree, on strict ranks, small groups and (``huge``: C(m+u, u) > e^600) in log space."""
    from fireval.metrics import incomplete as inc

    rng = np.random.default_rng(22)
    n = 3 if huge else 200
    r = rng.integers(1, 6, n).astype(float) + (120 if huge else 0)
    j = rng.integers(0, 6, n).astype(float) + (180 if huge else 0)
    u = rng.integers(0, 40, n) * (rng.random(n) < 0.7) + (700 if huge else 0)
    t = r + j + u
    pp = np.floor(u * rng.random(n))
    g = rng.integers(0, 50, n).astype(float)
    c0, n0, p0 = (rng.integers(0, 5, n).astype(float) for _ in range(3))
    want = inc._mean_pooled(g, t, r, j, pp, c0, n0, p0)
    got = np.zeros(n)
    inc._pooled_loops(g, r, r + j, t - r - j, pp, c0, n0, p0, inc.INFAP_EPSILON, got)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)
    kernel = inc._loops_kernel(inc._pooled_loops)
    if kernel is not None:
        compiled = np.zeros(n)
        kernel(g, r, r + j, t - r - j, pp, c0, n0, p0, inc.INFAP_EPSILON, compiled)
        np.testing.assert_allclose(compiled, want, rtol=1e-10, atol=0)
    assert np.all(want >= 0) and np.any(want > 0)
