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
    import gzip
    import json

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
    import gzip
    import json

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


def tag_batch(tagger: Any, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
    """UPOS tags of many sentences at once, exactly as ``tagger.tag`` on each.

    The averaged perceptron scores a token by summing, in its feature order, the weight
    vectors of its 14 features (:meth:`PerceptronTagger._get_features`); the best tag is the
    highest score, ties to the alphabetically last tag. Sentences are walked position by
    position together (a tag depends on the two previous tags of its sentence): at each
    position the feature strings of all still-running sentences are mapped to rows of a
    dense weight table (built lazily, one row per feature met), and the rows are added in
    the same order in float64 with numpy, giving the same sums bit for bit; words of the tag
    dictionary take their tag from it, as NLTK does. Tokens must not contain spaces (a
    sentence that has one is tagged with :func:`tag_memo`).
    """
    import numpy as np

    classes = sorted(tagger.classes)
    col = {c: j for j, c in enumerate(classes)}
    weights = tagger.model.weights
    tagdict = tagger.tagdict
    s1, s2 = tagger.START
    e1, e2 = tagger.END
    norm = tagger.normalize
    out: list[list[str]] = [[] for _ in sentences]
    todo = []
    memo: dict[tuple[str, ...], str] = {}
    for k, toks in enumerate(sentences):
        if any(" " in w for w in toks):
            out[k] = tag_memo(tagger, toks, memo)
        elif toks:
            todo.append(k)
    table = np.zeros((1024, len(classes)))  # row 0: features without weights
    row_of: dict[str, int] = {}
    n_rows = 1

    def row(feat: str) -> int:
        nonlocal table, n_rows
        r = row_of.get(feat)
        if r is None:
            ws = weights.get(feat)
            if not ws:
                r = 0
            else:
                if n_rows == table.shape[0]:
                    table = np.concatenate([table, np.zeros_like(table)])
                for label, w in ws.items():
                    table[n_rows, col[label]] = w
                r = n_rows
                n_rows += 1
            row_of[feat] = r
        return r

    ctx = {k: [s1, s2, *(norm(w) for w in sentences[k]), e1, e2] for k in todo}
    prev = dict.fromkeys(todo, s1)
    prev2 = dict.fromkeys(todo, s2)
    active = todo
    pos = 0
    last = len(classes) - 1
    while active:
        need: list[int] = []
        ids: list[list[int]] = []
        for k in active:
            word = sentences[k][pos]
            t = tagdict.get(word)
            if t:
                out[k].append(t)
                continue
            c = ctx[k]
            i = pos + 2
            p, p2 = prev[k], prev2[k]
            ids.append(
                [
                    row("bias"),
                    row("i suffix " + word[-3:]),
                    row("i pref1 " + (word[0] if word else "")),
                    row("i-1 tag " + p),
                    row("i-2 tag " + p2),
                    row(f"i tag+i-2 tag {p} {p2}"),
                    row("i word " + c[i]),
                    row(f"i-1 tag+i word {p} {c[i]}"),
                    row("i-1 word " + c[i - 1]),
                    row("i-1 suffix " + c[i - 1][-3:]),
                    row("i-2 word " + c[i - 2]),
                    row("i+1 word " + c[i + 1]),
                    row("i+1 suffix " + c[i + 1][-3:]),
                    row("i+2 word " + c[i + 2]),
                ]
            )
            need.append(k)
            out[k].append("")  # filled below
        if need:
            idx = np.asarray(ids, dtype=np.int64)
            tab = table[:n_rows]
            acc = np.zeros((len(need), len(classes)))
            for f in range(idx.shape[1]):
                acc += tab[idx[:, f]]
            best = last - np.argmax(acc[:, ::-1], axis=1)  # ties: the last label alphabetically
            for k, b in zip(need, best.tolist()):
                out[k][pos] = classes[b]
        for k in active:
            prev2[k], prev[k] = prev[k], out[k][pos]
        pos += 1
        active = [k for k in active if len(sentences[k]) > pos]
    return out
