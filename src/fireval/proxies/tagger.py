"""A part-of-speech tagger that needs no download.

NLTK's averaged perceptron (:class:`nltk.tag.perceptron.PerceptronTagger`, Honnibal's
design) trained on Universal Dependencies English-EWT *train* (UPOS column) by
``scripts/train_tagger.py``. The weights ship inside the package as gzip-compressed JSON
(``proxies/tagger_upos_ewt.json.gz``) — no pickle — and are loaded with
:meth:`PerceptronTagger.decode_json_params`. Tags are UPOS (``NOUN``, ``VERB``, ``ADJ`` ...).

Training data: every EWT sentence twice, once as written and once lowercased, because
retrieval captions (MSR-VTT, MSVD) are lowercase. UD EWT is CC BY-SA 4.0.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fireval.core.errors import FirevalError, InputError

WEIGHTS_PATH = Path(__file__).with_name("tagger_upos_ewt.json.gz")


def read_conllu_upos(path: str | Path) -> Iterator[list[tuple[str, str]]]:
    """Sentences of ``(form, UPOS)`` from a CoNLL-U file.

    Multi-word token lines (``1-2``) and empty nodes (``1.1``) are skipped: UPOS lives on
    the syntactic words.
    """
    sent: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line:
                if sent:
                    yield sent
                    sent = []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise InputError(
                    f"expected 10 tab-separated CoNLL-U columns, got {len(cols)}",
                    source=str(path),
                    line=lineno,
                )
            if "-" in cols[0] or "." in cols[0]:
                continue
            sent.append((cols[1], cols[3]))
    if sent:
        yield sent


def train(
    sentences: Iterable[Sequence[tuple[str, str]]],
    n_iter: int = 5,
    seed: int = 0,
    lowercase_copies: bool = True,
) -> Any:
    """Train an averaged-perceptron UPOS tagger (deterministic for a given ``seed``)."""
    import random

    from nltk.tag.perceptron import PerceptronTagger

    data = [list(s) for s in sentences]
    if lowercase_copies:
        data += [[(w.lower(), t) for w, t in s] for s in data]
    random.seed(seed)  # NLTK shuffles with the global generator between iterations
    tagger = PerceptronTagger(load=False)
    tagger.train(data, nr_iter=n_iter)
    return tagger


def save(tagger: Any, path: str | Path) -> None:
    """Write the tagger as gzip JSON ``{"weights", "tagdict", "classes"}`` (atomically)."""
    from fireval.atomic import atomic_write

    weights, tagdict, classes = tagger.encode_json_obj()
    # round weights: 6 significant digits change no argmax in practice and halve the file
    small = {f: {t: float(f"{v:.6g}") for t, v in ws.items() if v} for f, ws in weights.items()}
    small = {f: ws for f, ws in small.items() if ws}
    payload = json.dumps(
        {"weights": small, "tagdict": tagdict, "classes": sorted(classes)}, separators=(",", ":")
    )
    with atomic_write(path, "wb") as fh:
        fh.write(gzip.compress(payload.encode("utf-8"), compresslevel=9, mtime=0))
    Path(path).chmod(0o644)  # shipped package data: readable by everyone


@functools.lru_cache(maxsize=2)
def load_tagger(path: str | None = None) -> Any:
    """The shipped UPOS tagger (cached); ``path`` overrides the packaged weights."""
    from nltk.tag.perceptron import PerceptronTagger

    p = Path(path) if path else WEIGHTS_PATH
    if not p.is_file():
        raise FirevalError(f"tagger weights not found at {p}; run scripts/train_tagger.py")
    with gzip.open(p, "rt", encoding="utf-8") as fh:
        obj = json.load(fh)
    tagger = PerceptronTagger(load=False)
    tagger.decode_json_params((obj["weights"], obj["tagdict"], obj["classes"]))
    return tagger


def tag(tokens: Sequence[str], tagger: Any | None = None) -> list[str]:
    """UPOS tags of one tokenised sentence."""
    t = tagger or load_tagger()
    return [p for _, p in t.tag(list(tokens))] if tokens else []


def accuracy(
    sentences: Iterable[Sequence[tuple[str, str]]], tagger: Any | None = None, lowercase: bool = False
) -> tuple[float, int]:
    """Token accuracy of ``tagger`` on gold ``(form, UPOS)`` sentences: (accuracy, n_tokens)."""
    t = tagger or load_tagger()
    right = n = 0
    for sent in sentences:
        words = [w.lower() if lowercase else w for w, _ in sent]
        pred = tag(words, t)
        right += sum(p == g for p, (_, g) in zip(pred, sent))
        n += len(sent)
    return (right / n if n else 0.0), n


def tag_memo(tagger: Any, tokens: Sequence[str], memo: dict[tuple[str, ...], str]) -> list[str]:
    """UPOS tags of ``tokens``, exactly as ``tagger.tag(tokens)`` (NLTK's averaged perceptron).

    The perceptron's features for token ``i`` are a function of the word, the normalised
    words at ``i-2 .. i+2`` and the two previous tags only
    (:meth:`PerceptronTagger._get_features`), so its prediction is memoised in ``memo``
    under that tuple: captions repeat phrases ("a man is"), and most tokens are then a dict
    look-up instead of a feature build and a dot product. Words of the tag dictionary are
    tagged from it, as NLTK does. Same tags, in the same order, as ``tagger.tag``.
    """
    if not tokens:
        return []
    prev, prev2 = tagger.START
    norm = tagger.normalize
    context = [*tagger.START, *(norm(w) for w in tokens), *tagger.END]
    tagdict = tagger.tagdict
    out: list[str] = []
    for i, word in enumerate(tokens):
        tg = tagdict.get(word)
        if not tg:
            j = i + 2
            key = (word, context[j - 2], context[j - 1], context[j + 1], context[j + 2], prev, prev2)
            tg = memo.get(key)
            if tg is None:
                feats = tagger._get_features(i, word, context, prev, prev2)
                tg = tagger.model.predict(feats)[0]
                memo[key] = tg
        out.append(tg)
        prev2, prev = prev, tg
    return out
