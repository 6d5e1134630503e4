"""FIRE's Figs. 3, 8, 12 and Tables 5–7 as published, against oracles written from the definitions."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from fireval.analysis import breakdowns
from fireval.core import Collection, Judgments, merge

TRAIN = ["a man plays a guitar", "a woman is cooking pasta", "two dogs run on the beach", "a car drives fast"]
TEST = ["a man is playing guitar", "dogs running at the beach", "completely unrelated words here", "a car"]


def tfidf_oracle(docs_fit: list[str], n: int = 5) -> tuple[dict[str, int], dict[str, float]]:
    """scikit-learn's smooth idf, written out: idf(t) = ln((1 + N) / (1 + df(t))) + 1, char n-grams."""
    grams = [{d.lower()[i : i + n] for i in range(len(d) - n + 1)} for d in docs_fit]
    df = Counter(g for gs in grams for g in gs)
    vocab = {t: i for i, t in enumerate(sorted(df))}
    idf = {t: math.log((1 + len(docs_fit)) / (1 + df[t])) + 1 for t in df}
    return vocab, idf


def vec(doc: str, idf: dict[str, float], n: int = 5) -> dict[str, float]:
    tf = Counter(doc.lower()[i : i + n] for i in range(len(doc) - n + 1))
    v = {t: c * idf[t] for t, c in tf.items() if t in idf}
    norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
    return {t: x / norm for t, x in v.items()}


def cos(a: dict[str, float], b: dict[str, float]) -> float:
    return sum(x * b.get(t, 0.0) for t, x in a.items())


@pytest.mark.parametrize("fit", ["all", "train"])
def test_tfidf_fit_matches_the_definition(fit: str) -> None:
    _, idf = tfidf_oracle(TRAIN + TEST if fit == "all" else TRAIN)
    top = 2
    ov, best = breakdowns.train_similarities(TEST, TRAIN, top=top, fit=fit)
    for i, t in enumerate(TEST):
        sims = sorted((cos(vec(t, idf), vec(r, idf)) for r in TRAIN), reverse=True)
        assert ov[i] == pytest.approx(np.mean(sims[:top]), abs=1e-12)
        assert best[i] == pytest.approx(sims[0], abs=1e-12)
    with pytest.raises(Exception, match="TF-IDF fit"):
        breakdowns.train_similarities(TEST, TRAIN, fit="test")


def test_the_two_fits_differ() -> None:
    a = breakdowns.train_test_overlap(TEST, TRAIN, top=2, fit="all")
    b = breakdowns.train_test_overlap(TEST, TRAIN, top=2, fit="train")
    assert not np.allclose(a, b)


def test_table7_has_word_and_character_rows() -> None:
    from scipy import stats

    rng = np.random.default_rng(0)
    ov = rng.random(40)
    words = rng.integers(3, 20, 40)
    chars = words * 5 + rng.integers(0, 5, 40)
    rows = breakdowns.overlap_length_table(ov, words, chars)
    assert [r["length"] for r in rows] == ["words", "characters"]
    for r, ln in zip(rows, (words, chars), strict=True):
        assert r["spearman"] == pytest.approx(stats.spearmanr(ov, ln).statistic)
        assert r["kendall"] == pytest.approx(stats.kendalltau(ov, ln).statistic)


def test_examples_rank_by_words_ten_per_group() -> None:
    # words and characters disagree: few long words vs many short ones
    caps = [("x" * 40 + " y") if i % 2 else " ".join(["a"] * (3 + i)) for i in range(40)]
    pairs = [(f"c{i}", f"v{i}", c) for i, c in enumerate(caps)]
    coll = Collection.from_pairs("t", pairs)
    j = merge([coll.instance_judgments(), Judgments.from_arrays(coll.shape, [0], [5], [1.0], "human")])
    rows = breakdowns.caption_examples(coll.captions, j, coll.video_ids)
    groups = Counter(r["group"] for r in rows)
    assert groups == {"shortest": 10, "median": 10, "longest": 10}
    words = [len(c.split()) for c in caps]
    order = sorted(range(40), key=lambda i: (words[i], i))  # stable: ties in collection order
    assert [r["caption"] for r in rows[:10]] == [caps[i] for i in order[:10]]
    assert [r["caption"] for r in rows[-10:]] == [caps[i] for i in order[-10:][::-1]]
    mid = 40 // 2 - 10 // 2
    assert [r["caption"] for r in rows[10:20]] == [caps[i] for i in order[mid : mid + 10]]
    by_chars = breakdowns.caption_examples(coll.captions, j, coll.video_ids, by="chars", per_group=3)
    corder = sorted(range(40), key=lambda i: (len(caps[i]), i))
    assert [r["caption"] for r in by_chars[:3]] == [caps[i] for i in corder[:3]]
    assert rows[0]["caption"] != by_chars[0]["caption"] or words[order[0]] == 2


def test_rank_histogram_counts_by_rank_and_source() -> None:
    ranks = {"instance": np.array([1.0, 1.0, 2.5, 11.0, 80.0]), "human": np.array([3.0, 3.9, 50.0, 51.0])}
    rows = breakdowns.rank_histogram(ranks, max_rank=50)
    assert len(rows) == 51 and rows[-1]["beyond"] and rows[-1]["rank"] == 51
    got = {r["rank"]: (r["instance"], r["human"]) for r in rows}
    assert got[1] == (2, 0) and got[2] == (1, 0) and got[3] == (0, 2) and got[11] == (1, 0)
    assert got[50] == (0, 1) and got[51] == (1, 1)
    for src, rs in ranks.items():
        assert sum(r[src] for r in rows) == rs.size
