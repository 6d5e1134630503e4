from __future__ import annotations

import random

from fireval.proxies.text import STOP_WORDS, tokenize


def test_tokenize() -> None:
    assert tokenize("A woman  creating a fondant/ baby! It's 3D") == [
        "a",
        "woman",
        "creating",
        "a",
        "fondant",
        "baby",
        "it",
        "s",
        "3d",
    ]
    assert tokenize("") == []


def test_stop_words_are_the_glasgow_list_of_scikit_learn() -> None:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    assert frozenset(ENGLISH_STOP_WORDS) == STOP_WORDS
    assert len(STOP_WORDS) == 318


def test_analysis_lemmas_and_sets(pipeline) -> None:  # type: ignore[no-untyped-def]
    a = pipeline.analyse("a man is running with his dogs in the park")
    assert a.tokens[3] == "running" and a.lemmas[3] == "run"
    assert a.content_lemmas() == ["man", "run", "dog", "park"]
    assert a.lemmas_tagged("VERB") == ["run"]
    assert a.lemmas_tagged("NOUN") == ["man", "dog", "park"]


def test_lesk_equals_nltk(pipeline, wn) -> None:  # type: ignore[no-untyped-def]
    from nltk.wsd import lesk

    random.seed(3)
    sents = [
        "a man is cooking pasta in a kitchen",
        "people are dancing at a party on the beach",
        "a girl plays the piano while a dog watches",
        "a car drives fast down a road",
        "someone is cutting a cake with a knife",
    ]
    n = 0
    for s in sents:
        a = pipeline.analyse(s)
        for upos, p in (("VERB", "v"), ("NOUN", "n")):
            for lem in a.lemmas_tagged(upos):
                ref = lesk(list(a.tokens), lem, p, synsets=wn.synsets(lem))
                ours = pipeline.lesk(a.tokens, lem, p)
                assert ours == (ref.name() if ref is not None else None)
                n += 1
    assert n >= 15
