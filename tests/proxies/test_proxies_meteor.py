from __future__ import annotations

import random

import numpy as np
import pytest
from nltk.translate.meteor_score import single_meteor_score

from fireval.proxies.meteor import MeteorScorer
from fireval.proxies.text import tokenize

CRAFTED = [
    # (hypothesis, reference): repeats, stems, synonyms, empty, no match
    ("a man a man runs a", "a man runs man a a"),
    ("the dog the cat dogs", "dog the cats the"),
    ("a man is making his cat dance", "a man holds a camera and walks down a hallway"),
    ("a kid is running quickly", "a child runs fast"),
    ("", "something here"),
    ("nothing matches", "at all here"),
    ("a a a a", "a"),
    ("a", "a a a a"),
    ("people dancing dancing dance", "dance dances dancing people"),
    ("the car drives the automobile", "an automobile is driven car"),
]


def _nltk(h: list[str], r: list[str], wn) -> float:  # type: ignore[no-untyped-def]
    return single_meteor_score(r, h, wordnet=wn)


def test_crafted_pairs_equal_nltk(wn) -> None:  # type: ignore[no-untyped-def]
    hyp = [tokenize(h) for h, _ in CRAFTED]
    ref = [tokenize(r) for _, r in CRAFTED]
    want = np.array([_nltk(h, r, wn) for h, r in zip(hyp, ref)])
    got = MeteorScorer(wn).pairs(hyp, ref)
    np.testing.assert_allclose(got, want, atol=1e-12, rtol=0)
    assert want[3] > 0.5  # synonyms/stems matter


@pytest.mark.shared
def test_random_msrvtt_pairs_equal_nltk(wn, msrvtt_captions) -> None:  # type: ignore[no-untyped-def]
    caps = [c for cs in msrvtt_captions.values() for c in cs]
    rng = random.Random(11)
    hyp = [tokenize(rng.choice(caps)) for _ in range(1500)]
    ref = [tokenize(rng.choice(caps)) for _ in range(1500)]
    # also pairs from the same video: many stem/synonym matches
    vids = list(msrvtt_captions)
    for _ in range(300):
        cs = msrvtt_captions[rng.choice(vids)]
        hyp.append(tokenize(rng.choice(cs)))
        ref.append(tokenize(rng.choice(cs)))
    want = np.array([_nltk(h, r, wn) for h, r in zip(hyp, ref)])
    got = MeteorScorer(wn, budget=200_000).pairs(hyp, ref)
    assert np.abs(got - want).max() <= 1e-9


def test_matrix_and_video_relevance_agree_with_pairs(wn) -> None:  # type: ignore[no-untyped-def]
    q = [tokenize(t) for t in ["a man runs", "a woman is cooking food", "dogs play outside", ""]]
    d = [
        tokenize(t)
        for t in ["a man is running", "someone cooks", "a dog playing", "a woman cooking", "a car", "men run"]
    ]
    sc = MeteorScorer(wn, budget=50)
    m = sc.matrix(q, d, block=2, n_jobs=2)
    want = np.array([[_nltk(h, r, wn) for r in d] for h in q])
    np.testing.assert_allclose(m, want, atol=1e-12)
    dv = np.array([0, 1, 0, 1, 2, 0])
    mx = sc.video_relevance(q, d, dv, 3, "max")
    mn = sc.video_relevance(q, d, dv, 3, "mean", n_jobs=2)
    for v in range(3):
        np.testing.assert_allclose(mx[:, v], want[:, dv == v].max(1), atol=1e-6)
        np.testing.assert_allclose(mn[:, v], want[:, dv == v].mean(1), atol=1e-6)


def test_too_long_caption_is_a_user_error(wn) -> None:  # type: ignore[no-untyped-def]
    from fireval.core.errors import FirevalError

    with pytest.raises(FirevalError, match="caption 1 has 5000 tokens"):
        MeteorScorer(wn).matrix([["a"], ["w"] * 5000], [["a"]])
