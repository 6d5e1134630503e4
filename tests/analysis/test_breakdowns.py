from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fireval.analysis.breakdowns import (
    correctness_by_length,
    length_bins,
    length_vs_positives,
    overlap_length_correlation,
    positive_ranks_by_source,
    positives_histogram,
    positives_per_query,
    train_test_overlap,
)
from fireval.core.judgments import Judgments, merge
from fireval.core.run import Run


def test_length_bins_labels() -> None:
    idx, labels = length_bins([3, 6, 7, 9, 12, 20])
    assert labels == ["<=5", "6-7", "8-9", "10-12", ">=13"]
    np.testing.assert_array_equal(idx, [0, 1, 1, 2, 3, 4])


def test_correctness_categories() -> None:
    a = [1, 1, 0, 0, 1]
    b = [1, 0, 1, 0, 1]
    rows = correctness_by_length(a, b, [3, 3, 3, 8, 14])
    assert rows[0] == {"bin": "<=5", "both": 1, "only_a": 1, "only_b": 1, "neither": 0, "n": 3}
    assert rows[2]["neither"] == 1 and rows[4]["both"] == 1 and rows[1]["n"] == 0


def test_positives_and_histogram() -> None:
    j = merge(
        [
            Judgments.instance([0, 1, 2], 3),
            Judgments.from_arrays((3, 3), [0, 0, 1], [1, 2, 0], [1, 0, 1], "human"),
        ]
    )
    np.testing.assert_array_equal(positives_per_query(j, "t2v"), [2, 2, 1])
    np.testing.assert_array_equal(positives_per_query(j, "v2t"), [2, 2, 1])
    assert positives_histogram([2, 2, 1]) == [
        {"positives": 0, "queries": 0},
        {"positives": 1, "queries": 1},
        {"positives": 2, "queries": 2},
    ]
    res = length_vs_positives([4, 4, 9], [2, 2, 1])
    assert res["rows"][0] == {"length": 4, "queries": 2, "mean_positives": 2.0}
    assert res["spearman"] == pytest.approx(stats.spearmanr([4, 4, 9], [2, 2, 1]).statistic)


def test_positive_ranks_tie_aware_by_source() -> None:
    s = np.array([[0.9, 0.5, 0.5, 0.1], [0.2, 0.2, 0.2, 0.2]])
    run = Run("r", scores=s)
    j = merge(
        [
            Judgments.instance([0, 3], 4),
            Judgments.from_arrays((2, 4), [0, 1], [2, 0], [1, 1], "human"),
            Judgments.from_arrays((2, 4), [0], [1], [1], "proxy:bow"),
        ]
    )
    by = positive_ranks_by_source(run, j, "t2v")
    np.testing.assert_allclose(sorted(by["instance"]), [1.0, 2.5])  # 0.9 first; row 1 all tied: 1+3/2
    np.testing.assert_allclose(sorted(by["human"]), [2.5, 2.5])  # 0.5 tied with another 0.5 after one higher
    np.testing.assert_allclose(by["proxy"], [2.5])


def test_train_test_overlap_against_dense_computation() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    train = ["a man is cooking pasta", "a woman sings a song", "cars race on a track", "a dog runs"]
    test = ["a man cooking pasta in a kitchen", "people race cars", "a song"]
    ov = train_test_overlap(test, train, top=2, chunk=2)
    vec = TfidfVectorizer(analyzer="char", ngram_range=(5, 5)).fit(train)
    a, b = vec.transform(test).toarray(), vec.transform(train).toarray()
    sims = (a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-300)) @ (
        b / np.linalg.norm(b, axis=1, keepdims=True)
    ).T
    expected = np.sort(sims, axis=1)[:, -2:].mean(axis=1)
    np.testing.assert_allclose(ov, expected, atol=1e-12)
    assert ov[0] > ov[2] or ov[0] > 0
    corr = overlap_length_correlation(ov, [7, 3, 2])
    assert corr["kendall"] == pytest.approx(stats.kendalltau(ov, [7, 3, 2]).statistic)
