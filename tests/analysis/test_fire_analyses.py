"""FIRE's remaining analyses: Fig. 3 in characters, Fig. 8, Tables 5/6, budget for explicit n."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.analysis import breakdowns
from fireval.analysis.budget import error_curve
from fireval.core import Collection, Judgments


def test_char_lengths_and_bins() -> None:
    caps = ["a dog", " a man is cooking ", "x" * 31, "y" * 40, "z" * 61]
    ln = breakdowns.caption_char_lengths(caps)
    assert ln.tolist() == [5, 16, 31, 40, 61]
    idx, labels = breakdowns.length_bins(ln, breakdowns.CHAR_EDGES)
    assert labels == ["<=30", "31-40", "41-50", "51-60", ">=61"]
    assert idx.tolist() == [0, 0, 1, 1, 4]


def test_correctness_by_similarity_against_a_loop() -> None:
    rng = np.random.default_rng(3)
    n = 503
    sim = rng.random(n)
    sim[:40] = 0.5  # repeated values
    a = (rng.random(n) < 0.4).astype(float)
    b = (rng.random(n) < 0.6).astype(float)
    b[7] = np.nan  # left out for every run
    rows = breakdowns.correctness_by_similarity({"A": a, "B": b}, sim, n_bins=4)
    ok = ~np.isnan(b)
    s = sim[ok]
    edges = np.unique(np.quantile(s, [0, 0.25, 0.5, 0.75, 1.0]))
    assert len(rows) == len(edges) - 1
    assert sum(r["n"] for r in rows) == ok.sum()
    for i, r in enumerate(rows):
        lo, hi = edges[i], edges[i + 1]
        inside = [
            q for q in range(n) if ok[q] and (lo <= sim[q] < hi or (i == len(rows) - 1 and sim[q] == hi))
        ]
        assert r["n"] == len(inside)
        assert r["A"] == pytest.approx(np.mean([a[q] for q in inside]))
        assert r["B"] == pytest.approx(np.mean([b[q] for q in inside]))
        assert r["low"] == pytest.approx(lo) and r["high"] == pytest.approx(hi)


def test_max_train_similarity_is_the_best_cosine() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    train = ["a man plays a guitar", "a woman is cooking pasta", "two dogs run on the beach", "a car drives"]
    test = ["a man is playing guitar", "dogs running at the beach", "completely unrelated words here"]
    got = breakdowns.max_train_similarity(test, train, fit="train")
    vec = TfidfVectorizer(analyzer="char", ngram_range=(5, 5)).fit(train)
    tr = vec.transform(train).toarray()
    te = vec.transform(test).toarray()
    for i in range(len(test)):
        cos = [
            float(te[i] @ tr[j] / (np.linalg.norm(te[i]) * np.linalg.norm(tr[j]) or 1.0))
            for j in range(len(train))
        ]
        assert got[i] == pytest.approx(max(cos))
    assert got[0] > got[2]


def test_caption_examples_shortest_median_longest() -> None:
    caps = [f"{'w ' * k}end" for k in range(1, 12)]  # lengths increase with the index
    pairs = [(f"c{i}", f"v{i % 4}", c) for i, c in enumerate(caps)]
    coll = Collection.from_pairs("t", pairs)
    extra = Judgments.from_arrays(coll.shape, [0, 0, 10], [1, 2, 3], [1.0, 0.0, 1.0], "human")
    from fireval.core import merge

    j = merge([coll.instance_judgments(), extra])
    rows = breakdowns.caption_examples(coll.captions, j, coll.video_ids, per_group=2)
    groups = [(r["group"], r["caption"]) for r in rows]
    assert groups[:2] == [("shortest", caps[0]), ("shortest", caps[1])]
    assert groups[-2:] == [("longest", caps[10]), ("longest", caps[9])]
    assert [g for g, _ in groups[2:4]] == ["median", "median"] and groups[2][1] == caps[4]
    first = rows[0]
    assert first["positives"] == 2 and first["videos"] == ["v0", "v1"]  # the irrelevant v2 is not a positive
    assert first["chars"] == len(caps[0]) and first["words"] == 2
    assert rows[-2]["positives"] == 2 and set(rows[-2]["videos"]) == {"v2", "v3"}


def test_budget_for_explicit_n_matches_the_binomial_quantile() -> None:
    """Oracle: for 0/1 values with mean 1/2 and n = 100 the error |X/100 - 1/2| has
    P(<= 0.09) = 0.943 and P(<= 0.10) = 0.965 (X ~ Bin(100, 1/2)), so its 95th percentile is 0.10."""
    v = np.tile([0.0, 1.0], 500)
    curve = error_curve(v, [100, 400, 1000], n_resamples=10_000, seed=1)
    assert [r["n"] for r in curve] == [100, 400, 1000]
    assert curve[0]["error"] == pytest.approx(0.10, abs=0.006)
    # n = 400: Bin(400, 1/2) -> P(|X - 200| <= 19) = 0.949, <= 20: 0.960 -> 0.05 (granularity 1/400)
    assert curve[1]["error"] == pytest.approx(0.05, abs=0.004)
    assert curve[0]["error"] > curve[1]["error"] > curve[2]["error"]


def test_budget_recommendations_only_for_percentage_measures() -> None:
    """MnR rows of the report's budget table said '–' (more than all queries) for a 2-'point' target
    compared with errors in ranks; rank measures get a curve but no recommendation."""
    from fireval.analysis.trust import analyse
    from fireval.core import Collection, Run

    rng = np.random.default_rng(0)
    coll = Collection.from_pairs("t", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(40)])
    runs = {"r": Run("r", scores=rng.normal(size=(40, 40)) + 2 * np.eye(40))}

    def values(run, judgments, direction, measures):  # type: ignore[no-untyped-def]
        from fireval.metrics import query_values

        return query_values(run, judgments, direction, list(measures), collection=coll)

    a = analyse(
        coll,
        runs,
        {"original": coll.instance_judgments()},
        measures=["C@1", "MnR"],
        values_fn=values,
        n_resamples=50,
        budget_resamples=20,
    )
    assert [r["measure"] for r in a.recommended] == ["C@1"]
    assert {r["measure"] for r in a.budget} == {"C@1", "MnR"}
