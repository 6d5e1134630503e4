from __future__ import annotations

import random

import numpy as np
import pytest

from fireval.core.collection import Collection
from fireval.core.errors import FirevalError
from fireval.core.judgments import merge
from fireval.proxies.matchers import auto_labels, edit_similarity, levenshtein, match_scores


def _lev(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def test_levenshtein_equals_textbook_dp() -> None:
    rng = random.Random(2)
    a = ["".join(rng.choice("abcé ") for _ in range(rng.randint(0, 15))) for _ in range(400)]
    b = ["".join(rng.choice("abcé ") for _ in range(rng.randint(0, 15))) for _ in range(400)]
    a += ["kitten", "", "flaw"]
    b += ["sitting", "", "lawn"]
    got = levenshtein(a, b, batch=64)
    assert got.tolist() == [_lev(x, y) for x, y in zip(a, b)]
    assert got[-3:].tolist() == [3, 0, 2]
    np.testing.assert_allclose(edit_similarity(["kitten"], ["sitting"]), [1 - 3 / 7])


def _toy() -> tuple[Collection, Collection]:
    q = Collection.from_pairs(
        "q",
        [
            ("q0", "v0", "A man is riding a horse."),
            ("q1", "v1", "a woman slices onions"),
            ("q2", "v2", "cars racing on a track"),
        ],
    )
    vc = Collection.from_pairs(
        "vc",
        [
            ("c0", "v0", "a man rides a horse"),
            ("c1", "v0", "horse riding"),
            ("c2", "v1", "someone cuts an onion"),
            ("c3", "v2", "a man is riding a horse"),
            ("c4", "v2", "race cars on a track"),
        ],
        video_ids=["v0", "v1", "v2"],
    )
    return q, vc


def test_tfidf_scores_are_max_cosine_over_video_captions() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    from fireval.core.text import normalise

    q, vc = _toy()
    got = match_scores(q, "word", vc)
    qt = [normalise(t) for t in q.captions]
    dt = [normalise(t) for t in vc.captions]
    vec = TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b").fit(qt + dt)
    cos = cosine_similarity(vec.transform(qt), vec.transform(dt))
    want = np.stack([cos[:, vc.caption_video == v].max(1) for v in range(3)], axis=1)
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert got[0, 2] == pytest.approx(1.0, abs=1e-6)  # identical normalised text in v2


def test_auto_labels_threshold_percentile_and_merge() -> None:
    q, vc = _toy()
    j = auto_labels(q, "char", vc, threshold=0.99)
    assert j.sources == ("auto:char",)
    assert set(zip(j.rows.tolist(), j.cols.tolist())) == {(0, 2)}
    je = auto_labels(q, "edit", vc, threshold=0.99)
    assert set(zip(je.rows.tolist(), je.cols.tolist())) == {(0, 2)}
    jp = auto_labels(q, "word", vc, percentile=50)
    assert 1 <= len(jp) <= 9 and np.all(jp.grades == 1)
    merged = merge([q.instance_judgments(), j])
    assert len(merged) == 4 and set(merged.sources) == {"instance", "auto:char"}
    js = auto_labels(q, "char", vc, threshold=0.99, exclude_self=True)
    assert len(js) == 0
    with pytest.raises(FirevalError):
        auto_labels(q, "char", vc)
    with pytest.raises(FirevalError):
        match_scores(q, "nope", vc)
