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
    ov = train_test_overlap(test, train, top=2, chunk=2, fit="train")
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


def test_correctness_with_ties_is_an_expected_count() -> None:
    """A query whose scores all tie has C@1 = 1/n; it used to be counted as 'right' (> 0)."""
    from itertools import product

    a = np.array([1.0, 0.001, 0.5, 0.0])
    b = np.array([1.0, 0.0, 0.5, 0.25])
    rows = correctness_by_length(a, b, [3, 3, 3, 3])
    got = {k: rows[0][k] for k in ("both", "only_a", "only_b", "neither")}
    # oracle: enumerate each query's outcome pair with its probability (independent tie orders)
    want = dict.fromkeys(got, 0.0)
    for pa, pb in zip(a, b, strict=True):
        for ra, rb in product([1, 0], repeat=2):
            p = (pa if ra else 1 - pa) * (pb if rb else 1 - pb)
            key = "both" if ra and rb else "only_a" if ra else "only_b" if rb else "neither"
            want[key] += p
    assert got == pytest.approx(want)
    assert got["both"] + got["only_a"] == pytest.approx(a.sum())  # = the run's C@1 sum
    assert rows[0]["n"] == 4 and sum(got.values()) == pytest.approx(4)


def test_correctness_by_similarity_uses_the_tie_aware_value() -> None:
    from fireval.analysis.breakdowns import correctness_by_similarity

    rows = correctness_by_similarity({"r": [0.001, 0.001, 1.0, 0.0]}, [0.1, 0.2, 0.3, 0.4], n_bins=1)
    assert rows[0]["r"] == pytest.approx((0.001 + 0.001 + 1.0) / 4)


def test_pair_keys_split_on_run_names_that_contain_vs() -> None:
    """A run file 'clip vs gram.npy' used to shift every column label of its breakdown tables."""
    from fireval.analysis.trust import split_pair

    runs = ["clip vs gram", "vast", "a"]
    assert split_pair("clip vs gram vs vast", runs) == ("clip vs gram", "vast")
    assert split_pair("vast vs clip vs gram", runs) == ("vast", "clip vs gram")
    assert split_pair("vast vs a", runs) == ("vast", "a")


@pytest.mark.parametrize("k", [1, 3, 10])
def test_top_k_values_equal_a_full_sort(k: int) -> None:
    """The thresholded selection returns exactly the k largest values of each row (sorted)."""
    from fireval.analysis.breakdowns import top_k_values

    rng = np.random.default_rng(k)
    n_cols = 8000
    a = rng.random((40, n_cols))
    a[:10] = np.round(a[:10], 2)  # heavy ties
    a[10:20] *= rng.random((10, n_cols)) < 0.001  # mostly zeros: fewer than k nonzeros in some rows
    a[20] = 0.0  # a row of one value
    a[21, :5] = 2.0  # the largest values in the first columns only
    expected = np.sort(a, axis=1)[:, -k:]
    got = top_k_values(a, k)
    assert got.shape == (40, k)
    np.testing.assert_array_equal(got, expected)
    small = a[:, :30]  # too few columns to sample: partition of whole rows
    np.testing.assert_array_equal(top_k_values(small, k), np.sort(small, axis=1)[:, -k:])


def test_train_similarities_is_one_pass_of_both_measures() -> None:
    from fireval.analysis.breakdowns import max_train_similarity, train_similarities

    train = ["a man is cooking pasta", "a woman sings a song", "cars race on a track", "a dog runs"]
    test = ["a man cooking pasta in a kitchen", "people race cars", "a song", "zzzz"]
    ov, best = train_similarities(test, train, top=2, chunk=3)
    np.testing.assert_array_equal(ov, train_test_overlap(test, train, top=2, chunk=1))
    np.testing.assert_array_equal(best, max_train_similarity(test, train))
    assert best[3] == 0.0 and np.all(best >= ov)
