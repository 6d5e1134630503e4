"""The collection's own text as TF-IDF vectors, and similarities between queries and documents.

Algorithm (all sparse, no per-pair Python loop):

* tokens: :func:`fireval.core.normalise` (lowercase, non-alphanumeric → space), split on spaces,
  a short list of English function words removed;
* the vocabulary keeps only words used by the captions of at least two videos: a word of one
  video's captions can only match that video, which the checks leave out (it is the instance
  positive), so it carries no signal and only costs memory;
* a caption's vector is its term counts times ``idf = ln((1 + V) / (1 + df)) + 1`` with ``df`` the
  number of videos whose captions use the word (Sparck Jones 1972; the smoothed form of
  scikit-learn), L2-normalised; a video's vector is the same over the counts of all its captions;
* the similarity of a query and a document is the cosine of their vectors. In ``t2v`` a query is
  a caption and a document a video (its captions pooled); in ``v2t`` the transpose.

:func:`pair_similarity` gives the cosine for arbitrary (query, doc) index pairs by looking up
the query's few words in the document matrix with one ``searchsorted``.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from fireval.core import Collection, Direction
from fireval.core.text import normalise

STOP_WORDS = frozenset(
    (
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "over",
        "under",
        "up",
        "down",
        "out",
        "off",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "he",
        "she",
        "they",
        "them",
        "his",
        "her",
        "their",
        "him",
        "we",
        "you",
        "i",
        "me",
        "my",
        "our",
        "your",
        "as",
        "while",
        "then",
        "than",
        "so",
        "very",
        "just",
        "also",
        "some",
        "any",
        "all",
        "who",
        "whom",
        "which",
        "what",
        "when",
        "where",
        "how",
        "not",
        "no",
        "s",
    )
)


@dataclass(frozen=True, eq=False)
class TextModel:
    """TF-IDF vectors of a collection's captions and videos (rows L2-normalised, CSR)."""

    captions: sp.csr_matrix
    videos: sp.csr_matrix
    n_words: int
    #: figures that depend only on the text (e.g. the text's own top-K gain), keyed by their inputs
    cache: dict = field(default_factory=dict)

    def sides(self, direction: Direction) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """``(query vectors, document vectors)`` in ``direction``."""
        return (self.captions, self.videos) if direction is Direction.T2V else (self.videos, self.captions)


_CACHE: weakref.WeakKeyDictionary[Collection, TextModel] = weakref.WeakKeyDictionary()


def _l2_rows(m: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ m)


def text_model(collection: Collection) -> TextModel:
    """The :class:`TextModel` of ``collection`` (built once per collection object)."""
    cached = _CACHE.get(collection)
    if cached is not None:
        return cached
    vocab: dict[str, int] = {}
    word_ids: list[int] = []
    lengths = np.zeros(collection.n_captions, dtype=np.int64)
    for i, text in enumerate(collection.captions):
        toks = [t for t in normalise(text).split() if t not in STOP_WORDS]
        lengths[i] = len(toks)
        word_ids.extend(vocab.setdefault(t, len(vocab)) for t in toks)
    n_c, n_v = collection.n_captions, collection.n_videos
    rows = np.repeat(np.arange(n_c), lengths)
    cols = np.asarray(word_ids, dtype=np.int64)
    counts = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(n_c, max(len(vocab), 1)))
    counts.sum_duplicates()
    incidence = sp.csr_matrix((np.ones(n_c), (collection.caption_video, np.arange(n_c))), shape=(n_v, n_c))
    video_counts = sp.csr_matrix(incidence @ counts)
    df = np.diff(video_counts.tocsc().indptr)  # videos using each word
    keep = np.flatnonzero(df >= 2)
    idf = np.log((1.0 + n_v) / (1.0 + df[keep])) + 1.0
    weight = sp.diags(idf)
    caps = _l2_rows(sp.csr_matrix(counts[:, keep] @ weight))
    vids = _l2_rows(sp.csr_matrix(video_counts[:, keep] @ weight))
    for m in (caps, vids):
        m.sort_indices()
    model = TextModel(captions=caps, videos=vids, n_words=int(keep.size))
    _CACHE[collection] = model
    return model


def pair_similarity(
    queries: sp.csr_matrix,
    docs: sp.csr_matrix,
    q: npt.NDArray[np.int64],
    d: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """Cosine of ``queries[q[i]]`` and ``docs[d[i]]`` for every ``i`` (rows already normalised).

    The shorter side's words are expanded and looked up in the other side's CSR keys
    (``row * n_words + word``, sorted) with one ``searchsorted``.
    """
    n = q.size
    if n == 0:
        return np.zeros(0)
    if np.diff(queries.indptr).mean() > np.diff(docs.indptr).mean():  # expand the shorter rows
        queries, docs, q, d = docs, queries, d, q
    lens = np.diff(queries.indptr)[q]
    total = int(lens.sum())
    if total == 0:
        return np.zeros(n)
    owner = np.repeat(np.arange(n), lens)
    offsets = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(queries.indptr[q], lens)
    words = queries.indices[offsets].astype(np.int64)
    weights = queries.data[offsets]
    width = np.int64(docs.shape[1])
    doc_rows = np.repeat(np.arange(docs.shape[0], dtype=np.int64), np.diff(docs.indptr))
    keys = doc_rows * width + docs.indices.astype(np.int64)
    want = d[owner] * width + words
    pos = np.searchsorted(keys, want)
    pos_c = np.minimum(pos, keys.size - 1)
    hit = keys[pos_c] == want if keys.size else np.zeros(total, dtype=bool)
    vals = np.where(hit, docs.data[pos_c] if keys.size else 0.0, 0.0)
    return np.bincount(owner, weights=weights * vals, minlength=n).astype(np.float64)


def positives(collection: Collection, direction: Direction) -> sp.csr_matrix:
    """Instance positives as a boolean CSR matrix, queries × docs in ``direction``."""
    n_c = collection.n_captions
    m = sp.csr_matrix(
        (np.ones(n_c, dtype=bool), (np.arange(n_c), collection.caption_video)),
        shape=(n_c, collection.n_videos),
    )
    return m if direction is Direction.T2V else sp.csr_matrix(m.T)
