"""Each preset against the peer's formula, reimplemented here from its published code."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.core import Judgments, Run
from fireval.metrics import evaluate

from .helpers import build


def clip4clip_compute_metrics(x: np.ndarray) -> dict[str, float]:
    """CLIP4Clip's metrics.compute_metrics (diagonal ground truth), as published."""
    sx = np.sort(-x, axis=1)
    d = np.diag(-x)[:, np.newaxis]
    ind = np.where(sx - d == 0)[1]
    return {
        "R1": float(np.sum(ind == 0)) * 100 / len(ind),
        "R5": float(np.sum(ind < 5)) * 100 / len(ind),
        "R10": float(np.sum(ind < 10)) * 100 / len(ind),
        "MedianR": float(np.median(ind) + 1),
        "MeanR": float(np.mean(ind) + 1),
    }


def _check_clip(x: np.ndarray) -> None:
    run = Run("x", scores=x)
    judg = Judgments.instance(np.arange(x.shape[0]), x.shape[1])
    ev = evaluate(run, judg, preset="clip4clip", directions="t2v")
    ref = clip4clip_compute_metrics(x)
    assert 100 * ev.value("C@1") == pytest.approx(ref["R1"], abs=1e-9)
    assert 100 * ev.value("C@5") == pytest.approx(ref["R5"], abs=1e-9)
    assert 100 * ev.value("C@10") == pytest.approx(ref["R10"], abs=1e-9)
    assert ev.value("MdR") == pytest.approx(ref["MedianR"], abs=1e-9)
    assert ev.value("MnR") == pytest.approx(ref["MeanR"], abs=1e-9)
    assert set(ev.table.ties) == {"clip4clip"}


def test_clip4clip_with_heavy_ties() -> None:
    rng = np.random.default_rng(5)
    for levels in (2, 3, 10, 1000):
        _check_clip(rng.integers(0, levels, size=(60, 60)).astype(np.float32))


def test_clip4clip_real_sparsified(shared_data) -> None:
    for name in ("GRAM", "clip4clip"):
        _check_clip(np.load(shared_data / "msrvtt" / "sims" / f"{name}_msrvtt.npy"))


def fire_metrics(gold: set[int], top: list[int]) -> dict[str, float]:
    """FIRE's mmr/analysis.py compute_metrics on a top-20 list, as published."""
    out = {}
    for n in (1, 5, 10):
        h = len(set(top[:n]) & gold)
        out[f"P@{n}"] = h / n
        out[f"R@{n}"] = h / max(1, len(gold))
        out[f"C@{n}"] = float(h > 0)
    precisions, hits = [], []
    for d in top:
        hits.append(1 if d in gold else 0)
        if d in gold:
            precisions.append(np.mean(hits))
    out["AP"] = float(np.mean(precisions)) if precisions else 0.0
    return out


def test_fire2023_against_reference() -> None:
    rng = np.random.default_rng(8)
    n_q, n_d = 50, 60
    scores = rng.standard_normal((n_q, n_d))  # continuous: no ties, so argsort order is the ranking
    gold = [set(rng.choice(n_d, size=int(rng.integers(1, 6)), replace=False).tolist()) for _ in range(n_q)]
    grades = [[1.0 if j in gold[i] else None for j in range(n_d)] for i in range(n_q)]
    run, judg = build(scores, grades)
    ev = evaluate(run, judg, preset="fire2023", directions="t2v", per_query=True)
    pq = ev.per_query
    for i in range(n_q):
        top = list(np.argsort(-scores[i])[:20])
        ref = fire_metrics(gold[i], top)
        row = pq[pq["query"] == str(i)].set_index("measure").value
        for n in (1, 5, 10):
            assert row[f"P@{n}"] == pytest.approx(ref[f"P@{n}"])
            assert row[f"Recall@{n}"] == pytest.approx(ref[f"R@{n}"])
            assert row[f"C@{n}"] == pytest.approx(ref[f"C@{n}"])
        assert row["AP_hits@20"] == pytest.approx(ref["AP"], abs=1e-12)
    assert ev.value("AP_hits@20") == pytest.approx(
        np.mean([fire_metrics(gold[i], list(np.argsort(-scores[i])[:20]))["AP"] for i in range(n_q)])
    )


def wray_ndcg(sim: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """Wray et al.'s NDCG.py (k_counts = number of items with relevance > 0), per query."""
    ranks = np.argsort(sim)[:, ::-1]
    k_counts = (np.sort(rel)[:, ::-1] > 0).astype(int)
    logs = np.log2(np.arange(sim.shape[1]) + 2)
    rows = np.arange(sim.shape[0])[:, None]
    dcg = np.sum(rel[rows, ranks] * k_counts / logs, axis=1)
    ideal = np.sort(rel)[:, ::-1]
    idcg = np.sum(ideal * k_counts / logs, axis=1)
    return dcg / idcg


def test_wray2021_against_reference() -> None:
    rng = np.random.default_rng(9)
    n_q, n_d = 40, 35
    sim = rng.standard_normal((n_q, n_d))
    rel = np.where(rng.random((n_q, n_d)) < 0.4, rng.random((n_q, n_d)), 0.0)  # dense graded, in [0,1]
    rel[:, 0] = np.maximum(rel[:, 0], 0.1)
    judg = Judgments.from_arrays(
        (n_q, n_d), np.repeat(np.arange(n_q), n_d), np.tile(np.arange(n_d), n_q), rel.ravel(), "proxy:bow"
    )
    ev = evaluate(Run("s", scores=sim), judg, preset="wray2021", directions="t2v", per_query=True)
    pq = ev.per_query
    np.testing.assert_allclose(pq[pq.measure == "nDCG@R"].value.to_numpy(), wray_ndcg(sim, rel), atol=1e-12)
    assert ev.value("nDCG@R") == pytest.approx(wray_ndcg(sim, rel).mean())


def test_clip4clip_warns_when_ties_move_a_value() -> None:
    # query 0: ground truth alone at rank 1; query 1: ground truth tied with all 4 docs.
    # CLIP4Clip's ind = [0] + [0, 1, 2, 3]: R@1 = 2/5, MdR = median + 1 = 2, MnR = 1.2 + 1 = 2.2.
    # Each pair once (mean over its tied positions): R@1 = (1 + 1/4)/2, ranks 1 and 2.5.
    x = np.array([[1.0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    run = Run("x", scores=x)
    judg = Judgments.instance(np.arange(4), 4)
    ev = evaluate(run, judg, preset="clip4clip", directions="t2v")
    # rows 2 and 3 are tie-free hits: ind = [0, 0, 1, 2, 3, 0, 0]
    assert ev.value("C@1") == pytest.approx(4 / 7)
    assert ev.value("MnR") == pytest.approx(6 / 7 + 1)
    (w,) = ev.warnings
    assert ev.tie_report["t2v"]["warnings"] == [w]
    assert "C@1 0.5714 (each pair once: 0.8125)" in w  # (1 + 1/4 + 1 + 1) / 4
    assert "MnR 1.857 (each pair once: 1.375)" in w  # (1 + 2.5 + 1 + 1) / 4
    assert "MdR" not in w  # median 1 either way
    assert "1 queries" in w and "7 positions for 4" in w
    assert ev.to_dict()["warnings"] == [w]
    # no ties at the ground truth: no warning, and none without the preset
    tie_free = Run("y", scores=np.eye(4) + 0.01 * np.arange(4))
    assert evaluate(tie_free, judg, preset="clip4clip").warnings == []
    assert evaluate(run, judg, directions="t2v").warnings == []


def test_clip4clip_warns_when_unretrieved_ground_truths_drop_out() -> None:
    # row 1's ground truth is not retrieved: CLIP4Clip's ind = [0, 0] (rows 0 and 2), R@1 = 1
    x = np.array([[1.0, 0, 0], [0.5, -np.inf, 0.2], [0, 0.1, 1.0]])
    judg = Judgments.instance(np.arange(3), 3)
    ev = evaluate(Run("x", scores=x), judg, preset="clip4clip", directions="t2v")
    assert ev.value("C@1") == 1.0
    (w,) = ev.warnings
    assert "1 of 3 (query, ground truth) pairs are not retrieved" in w
    assert "denominator 2, not 3" in w
    assert evaluate(Run("x", scores=x), judg, directions="t2v").value("C@1") == pytest.approx(2 / 3)


def test_fire2023_keeps_gold_and_compares_the_same_queries(shared_data, tmp_path) -> None:
    """1k-A: a human 'irrelevant' on 2 instance pairs no longer removes them (FIRE: gold ∪ annotated),
    and original vs augmented are means over the same 1000 captions, also when --precedence lets the
    human labels win (the 2 captions then count as misses instead of leaving the augmented mean)."""
    import json

    from fireval import api
    from fireval.core import normalise

    coll = api.load_collection(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
    sims = np.load(shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy")
    runs = {"clip4clip": Run("clip4clip", scores=sims)}
    gold = coll.instance_judgments()
    norm = [normalise(t) for t in coll.captions]
    unique = [i for i in range(coll.n_captions) if norm.count(norm[i]) == 1]
    # two captions the run gets right at rank 1, so removing their gold changes C@1
    hit = [i for i in unique if int(np.argmax(sims[i])) == int(gold.cols[gold.rows == i][0])][:2]
    assert len(hit) == 2
    recs = [
        {
            "annotator_ids": [7],
            "label": "irrelevant",
            "video_id": coll.video_ids[int(gold.cols[gold.rows == i][0])],
            "query": coll.captions[i],
            "annotator_labels": ["irrelevant"],
            "response_ids": [1],
            "queue_ids": [1],
            "models": ["CLIP4CLIP"],
            "dataset": "MSRVTT",
        }
        for i in hit
    ]
    path = tmp_path / "fire.json"
    path.write_text(json.dumps({"annotations": recs, "disagreements": []}))

    sets = api.label_sets(coll, [path])  # default: FIRE semantics
    aug = sets["augmented"]
    kept = {(int(r), int(c)): g for r, c, g in zip(aug.rows, aug.cols, aug.grades, strict=True)}
    for i in hit:
        assert kept[(i, int(gold.cols[gold.rows == i][0]))] == 1.0
    assert aug.overruled == {"human": 2}
    (warn,) = api.label_warnings(sets)
    assert "2 human label(s)" in warn and "instance positives are kept" in warn
    res = api.evaluate_runs(runs, sets, preset="fire2023", directions="t2v")
    c1 = res.table[res.table.measure == "C@1"].set_index("labels")
    assert c1.loc["original", "n"] == c1.loc["augmented", "n"] == 1000
    assert c1.loc["augmented", "value"] == c1.loc["original", "value"]

    # explicit precedence: the human labels win, the 2 captions have no relevant video left and
    # score 0 inside the same 1000-caption mean (oracle: argmax hits over the remaining gold)
    sets_h = api.label_sets(coll, [path], precedence=("human", "instance"))
    assert sets_h["augmented"].overruled == {"instance": 2}
    assert "overrides the fire2023 preset" in api.label_warnings(sets_h, preset="fire2023", explicit=True)[0]
    res_h = api.evaluate_runs(runs, sets_h, preset="fire2023", directions="t2v")
    c1h = res_h.table[res_h.table.measure == "C@1"].set_index("labels")
    assert c1h.loc["original", "n"] == c1h.loc["augmented", "n"] == 1000
    top1 = sims.argmax(axis=1)
    hits = top1 == gold.cols[np.argsort(gold.rows)]
    hits[hit] = False
    assert c1h.loc["augmented", "value"] == pytest.approx(hits.mean())
    assert c1h.loc["original", "value"] - c1h.loc["augmented", "value"] == pytest.approx(2 / 1000)
