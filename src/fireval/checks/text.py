"""The collection's own text as TF-IDF vectors, and similarities between queries and documents.

Algorithm (all sparse, no per-pair Python loop; numpy only: importing scipy.sparse is slow,
which every ``fireval evaluate`` with its default checks would pay):

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

Sparse matrices are :class:`Csr`: the three CSR arrays (``indptr``, sorted ``indices`` per row,
``data``) and the shape, with the few products the checks need, all vectorised: matrix-vector
products with ``bincount``, and a block of rows times the transpose of another matrix as a dense
array, by expanding every (query word, posting of that word) pair and summing with ``bincount``
over flattened ``(row, doc)`` keys, in bounded chunks of pairs.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core import Collection, Direction

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


_PAIR_CHUNK = 1 << 22


@dataclass(frozen=True, eq=False)
class Csr:
    """A compressed sparse row matrix (indices sorted within each row, no duplicates)."""

    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.int64]
    data: npt.NDArray[Any]
    shape: tuple[int, int]

    @classmethod
    def from_coo(
        cls,
        rows: npt.NDArray[np.int64],
        cols: npt.NDArray[np.int64],
        data: npt.NDArray[Any],
        shape: tuple[int, int],
    ) -> Csr:
        """From (row, col, value) triples without duplicates, in any order."""
        order = np.lexsort((cols, rows))
        indptr = np.zeros(shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
        return cls(indptr, np.asarray(cols, dtype=np.int64)[order], np.asarray(data)[order], shape)

    def row_ids(self) -> npt.NDArray[np.int64]:
        """The row of every stored entry."""
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))

    def __getitem__(self, rows: slice | npt.NDArray[np.int64]) -> Csr:
        """The rows ``rows`` (a slice with step 1, or an index array)."""
        if isinstance(rows, slice):
            lo, hi, _ = rows.indices(self.shape[0])
            hi = max(lo, hi)
            a, b = self.indptr[lo], self.indptr[hi]
            return Csr(
                self.indptr[lo : hi + 1] - a, self.indices[a:b], self.data[a:b], (hi - lo, self.shape[1])
            )
        rows = np.asarray(rows, dtype=np.int64)
        lens = np.diff(self.indptr)[rows]
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lens, out=indptr[1:])
        take = np.arange(int(indptr[-1])) - np.repeat(indptr[:-1], lens) + np.repeat(self.indptr[rows], lens)
        return Csr(indptr, self.indices[take], self.data[take], (rows.size, self.shape[1]))

    def transpose(self) -> Csr:
        """The transpose, as CSR (a stable sort of the entries by column)."""
        order = np.argsort(self.indices, kind="stable")
        indptr = np.zeros(self.shape[1] + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.indices, minlength=self.shape[1]), out=indptr[1:])
        return Csr(indptr, self.row_ids()[order], self.data[order], (self.shape[1], self.shape[0]))

    def matvec(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``self @ x``."""
        w = self.data * x[self.indices]
        return np.bincount(self.row_ids(), weights=w, minlength=self.shape[0]).astype(np.float64)

    def rmatvec(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``self.T @ x``."""
        w = self.data * x[self.row_ids()]
        return np.bincount(self.indices, weights=w, minlength=self.shape[1]).astype(np.float64)

    def dot_transposed(self, other_t: Csr) -> npt.NDArray[np.float64]:
        """``self @ other_t`` as a dense array, ``other_t`` being the transpose (words x docs) of the
        other matrix: every (entry of ``self``, posting of its word in ``other_t``) pair, summed by
        ``(row, doc)`` with ``bincount``, at most :data:`_PAIR_CHUNK` pairs at a time."""
        n, m = self.shape[0], other_t.shape[1]
        out: npt.NDArray[Any] | None = None
        rows = self.row_ids()
        post = np.diff(other_t.indptr)[self.indices]  # postings per entry of self
        ends = np.cumsum(post)
        lo = 0
        while lo < rows.size:
            start = int(ends[lo] - post[lo])
            hi = max(lo + 1, int(np.searchsorted(ends, start + _PAIR_CHUNK, side="right")))
            lens = post[lo:hi]
            total = int(lens.sum())
            if total:
                owner = np.repeat(np.arange(lo, hi), lens)
                offs = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
                offs += np.repeat(other_t.indptr[self.indices[lo:hi]], lens)
                keys = rows[owner] * m + other_t.indices[offs]
                part = np.bincount(keys, weights=self.data[owner] * other_t.data[offs], minlength=n * m)
                if out is None:  # the first chunk's counts are the sum so far (no zeros and add)
                    out = part
                else:
                    out += part
            lo = hi
        return (np.zeros(n * m) if out is None else out).reshape(n, m)


@dataclass(frozen=True, eq=False)
class TextModel:
    """TF-IDF vectors of a collection's captions and videos (rows L2-normalised, CSR)."""

    captions: Csr
    videos: Csr
    n_words: int
    #: figures that depend only on the text (e.g. the text's own top-K gain), keyed by their inputs
    cache: dict = field(default_factory=dict)

    def sides(self, direction: Direction) -> tuple[Csr, Csr]:
        """``(query vectors, document vectors)`` in ``direction``."""
        return (self.captions, self.videos) if direction is Direction.T2V else (self.videos, self.captions)


_CACHE: weakref.WeakKeyDictionary[Collection, TextModel] = weakref.WeakKeyDictionary()


def _l2_rows(rows: npt.NDArray[np.int64], data: npt.NDArray[np.float64], n: int) -> npt.NDArray[np.float64]:
    norms = np.sqrt(np.bincount(rows, weights=data * data, minlength=n))
    norms[norms == 0] = 1.0
    return data * (1.0 / norms)[rows]


def _summed(
    rows: npt.NDArray[np.int64], cols: npt.NDArray[np.int64], weights: npt.NDArray[np.float64], width: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Duplicate (row, col) entries summed, sorted by (row, col)."""
    keys, inverse = np.unique(rows * width + cols, return_inverse=True)
    summed = np.bincount(inverse.ravel(), weights=weights, minlength=keys.size).astype(np.float64)
    return keys // width, keys % width, summed


#: a word (what :func:`fireval.core.normalise` keeps between spaces), or a caption boundary
_TOKEN = re.compile(r"[^\W_]+|\n")


def _tokens(captions: Sequence[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """Word ids of all captions in order (stop words removed; ids by first appearance), the number
    of words of each caption, and the vocabulary size.

    The words of a caption are those of ``normalise(caption).split()``: maximal runs of letters
    and digits, lowercased. One regular expression over all captions joined by newlines (a newline
    inside a caption separates words, as a space does), not one call per caption.
    """
    if any("\n" in c for c in captions):
        captions = [c.replace("\n", " ") for c in captions]
    toks = [t for t in _TOKEN.findall("\n".join(captions).lower()) if t not in STOP_WORDS]
    vocab: dict[str, int] = {"\n": -1}  # the caption boundary: id -1, outside the vocabulary
    ids = np.fromiter((vocab.setdefault(t, len(vocab) - 1) for t in toks), dtype=np.int64, count=len(toks))
    boundary = ids < 0
    caption_of = np.cumsum(boundary)[~boundary]
    return ids[~boundary], np.bincount(caption_of, minlength=len(captions)).astype(np.int64), len(vocab) - 1


def text_model(collection: Collection) -> TextModel:
    """The :class:`TextModel` of ``collection`` (built once per collection object)."""
    cached = _CACHE.get(collection)
    if cached is not None:
        return cached
    n_c, n_v = collection.n_captions, collection.n_videos
    words, lengths, n_vocab = _tokens(collection.captions)
    width = max(n_vocab, 1)
    c_rows, c_cols, c_val = _summed(
        np.repeat(np.arange(n_c, dtype=np.int64), lengths), words, np.ones(words.size), width
    )
    video_of = np.asarray(collection.caption_video, dtype=np.int64)
    v_rows, v_cols, v_val = _summed(video_of[c_rows], c_cols, c_val, width)
    df = np.bincount(v_cols, minlength=width)  # videos using each word
    keep = np.flatnonzero(df >= 2)
    new_id = np.full(width, -1, dtype=np.int64)
    new_id[keep] = np.arange(keep.size)
    idf = np.log((1.0 + n_v) / (1.0 + df[keep])) + 1.0

    def weighted(rows: np.ndarray, cols: np.ndarray, val: np.ndarray, n: int) -> Csr:
        k = new_id[cols] >= 0
        rows, cols = rows[k], new_id[cols[k]]
        data = _l2_rows(rows, val[k] * idf[cols], n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return Csr(indptr, cols, data, (n, int(keep.size)))  # already sorted by (row, col)

    model = TextModel(
        captions=weighted(c_rows, c_cols, c_val, n_c),
        videos=weighted(v_rows, v_cols, v_val, n_v),
        n_words=int(keep.size),
    )
    _CACHE[collection] = model
    return model


def pair_similarity(
    queries: Csr,
    docs: Csr,
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


def positives(collection: Collection, direction: Direction) -> Csr:
    """Instance positives as a boolean :class:`Csr` matrix, queries × docs in ``direction``."""
    n_c, n_v = collection.n_captions, collection.n_videos
    video_of = np.asarray(collection.caption_video, dtype=np.int64)
    if direction is Direction.T2V:
        return Csr(np.arange(n_c + 1, dtype=np.int64), video_of, np.ones(n_c, dtype=bool), (n_c, n_v))
    return Csr(np.arange(n_c + 1, dtype=np.int64), video_of, np.ones(n_c, dtype=bool), (n_c, n_v)).transpose()
