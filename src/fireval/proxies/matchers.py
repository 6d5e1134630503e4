"""Automatic positives from caption matching (the matcher idea of FIRE, Rodriguez et al. 2023).

A query caption is matched against every caption written for a video; the (query, video)
score is the best match over that video's captions. Pairs scoring at or above a threshold
become positives with source ``auto:<matcher>`` (grade 1); all other pairs stay unjudged, so
the labels merge into any qrels via :func:`fireval.core.merge`.

Matchers:

* ``char``: cosine of character n-gram TF-IDF vectors (``analyzer="char_wb"``, n = 1..5;
  scikit-learn's ``TfidfVectorizer``, fitted on the union of both caption sets);
* ``word``: cosine of word 1–2-gram TF-IDF vectors;
* ``edit``: normalised Levenshtein similarity ``1 − lev(a, b) / max(|a|, |b|)`` on the
  normalised caption text (:func:`fireval.core.normalise`). Levenshtein is computed by a
  numpy dynamic programme over batches of pairs (one row of the DP table per step, the
  insertion chain resolved with a running minimum). To stay tractable it scores the
  ``edit_candidates`` most char-TF-IDF-similar captions of every query (default 50); other
  pairs count 0.

Thresholds are absolute (``threshold=0.9``) or a percentile of all (query, video) scores
(``percentile=99.9``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from fireval.core.collection import Collection
from fireval.core.errors import FirevalError
from fireval.core.judgments import Judgments
from fireval.core.text import normalise
from fireval.proxies.relevance import doc_captions, reduce_to_videos

MATCHERS = ("char", "word", "edit")


def _tfidf(q: Sequence[str], d: Sequence[str], kind: str) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    if kind == "char":
        vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 5), lowercase=True, dtype=np.float32)
    else:
        vec = TfidfVectorizer(
            analyzer="word",
            ngram_range=(1, 2),
            lowercase=True,
            token_pattern=r"(?u)\b\w+\b",
            dtype=np.float32,
        )
    vec.fit(list(q) + list(d))
    return vec.transform(q).tocsr(), vec.transform(d).tocsr()


def levenshtein(a: Sequence[str], b: Sequence[str], batch: int = 4096) -> npt.NDArray[np.int64]:
    """Edit distance (unit insert/delete/substitute) of each pair ``(a[k], b[k])``, vectorised.

    Row recurrence over the characters of ``a``: with ``T[j] = min(D[i-1][j] + 1,
    D[i-1][j-1] + [a_i != b_j])`` the new row is ``D[i][j] = j + min_{k<=j}(T[k] - k)``
    (insertions along the row), i.e. a cumulative minimum — no loop over ``j`` or pairs.
    """
    if len(a) != len(b):
        raise ValueError("a and b differ in length")
    out = np.zeros(len(a), dtype=np.int64)
    for s in range(0, len(a), batch):
        aa, bb = a[s : s + batch], b[s : s + batch]
        la = np.fromiter((len(x) for x in aa), np.int64, len(aa))
        lb = np.fromiter((len(x) for x in bb), np.int64, len(bb))
        wa, wb = max(1, int(la.max(initial=0))), max(1, int(lb.max(initial=0)))
        ca = np.full((len(aa), wa), -1, np.int32)
        cb = np.full((len(bb), wb), -2, np.int32)
        for k, x in enumerate(aa):
            if x:
                ca[k, : len(x)] = np.frombuffer(x.encode("utf-32-le"), dtype=np.int32)
        for k, x in enumerate(bb):
            if x:
                cb[k, : len(x)] = np.frombuffer(x.encode("utf-32-le"), dtype=np.int32)
        j = np.arange(wb + 1)
        prev = np.broadcast_to(j, (len(aa), wb + 1)).copy()
        result = np.where(la == 0, lb, 0)
        for i in range(1, wa + 1):
            cost = (ca[:, i - 1 : i] != cb).astype(np.int64)
            t = np.empty_like(prev)
            t[:, 0] = i
            t[:, 1:] = np.minimum(prev[:, 1:] + 1, prev[:, :-1] + cost)
            cur = np.minimum.accumulate(t - j, axis=1) + j
            done = la == i
            if done.any():
                result[done] = cur[done, lb[done]]
            prev = cur
        out[s : s + len(aa)] = result
    return out


def edit_similarity(a: Sequence[str], b: Sequence[str]) -> npt.NDArray[np.float64]:
    """``1 − lev(a, b) / max(|a|, |b|)`` per pair (1 for two empty strings)."""
    d = levenshtein(a, b).astype(np.float64)
    m = np.maximum([len(x) for x in a], [len(x) for x in b]).astype(np.float64)
    return np.where(m > 0, 1.0 - d / np.maximum(m, 1), 1.0)


def match_scores(
    queries: Collection,
    matcher: str,
    video_captions: Collection | None = None,
    *,
    chunk: int = 1024,
    edit_candidates: int = 50,
    exclude_self: bool = False,
) -> npt.NDArray[np.float32]:
    """Dense (query caption × video) best-match score of ``matcher`` over each video's captions.

    ``exclude_self`` ignores doc captions whose normalised text equals the query's (so a
    query does not match itself when the query captions are among the video captions).
    """
    if matcher not in MATCHERS:
        raise FirevalError(f"unknown matcher {matcher!r}; expected one of {', '.join(MATCHERS)}")
    vc, keep, doc_video = doc_captions(queries, video_captions)
    q_text = [normalise(t) for t in queries.captions]
    d_text = [normalise(vc.captions[i]) for i in keep]
    nv = queries.n_videos
    out = np.zeros(queries.shape, dtype=np.float32)
    qm, dm = _tfidf(q_text, d_text, "char" if matcher == "edit" else matcher)
    dmt = dm.T.tocsc()
    d_arr = np.asarray(d_text, dtype=object)
    # equal normalised texts share a code, so "same text" is an integer comparison per pair
    codes: dict[str, int] = {}
    q_code = np.fromiter((codes.setdefault(t, len(codes)) for t in q_text), np.int64, len(q_text))
    d_code = np.fromiter((codes.setdefault(t, len(codes)) for t in d_text), np.int64, len(d_text))
    for s in range(0, len(q_text), chunk):
        blk = (qm[s : s + chunk] @ dmt).tocsr()
        if exclude_self:
            coo = blk.tocoo()
            coo.data[q_code[s + coo.row] == d_code[coo.col]] = 0
            blk = coo.tocsr()
            blk.eliminate_zeros()
        if matcher == "edit":
            dense = blk.toarray()
            k = min(edit_candidates, dense.shape[1])
            top = np.argpartition(-dense, k - 1, axis=1)[:, :k]
            rows = np.repeat(np.arange(dense.shape[0]), k)
            cols = top.ravel()
            sim = edit_similarity([q_text[s + r] for r in rows], list(d_arr[cols]))
            if exclude_self:
                sim[q_code[s + rows] == d_code[cols]] = 0
            blk = sp.csr_matrix((sim.astype(np.float32), (rows, cols)), shape=dense.shape)
        blk.data = np.clip(blk.data, 0, 1).astype(np.float32)
        out[s : s + blk.shape[0]] = reduce_to_videos(blk, doc_video, nv, "max")
    return out


def auto_labels(
    queries: Collection,
    matcher: str,
    video_captions: Collection | None = None,
    *,
    threshold: float | None = None,
    percentile: float | None = None,
    scores: npt.NDArray[np.float32] | None = None,
    **kw: object,
) -> Judgments:
    """Positives (grade 1, source ``auto:<matcher>``) for pairs whose match score is at or
    above ``threshold``, or above the ``percentile``-th percentile of all pair scores."""
    if (threshold is None) == (percentile is None):
        raise FirevalError("give exactly one of threshold (absolute) or percentile")
    if percentile is not None and not 0 <= percentile <= 100:
        raise FirevalError(f"percentile must be within [0, 100], got {percentile}")
    sc = scores if scores is not None else match_scores(queries, matcher, video_captions, **kw)  # type: ignore[arg-type]
    thr = float(threshold) if threshold is not None else float(np.percentile(sc, float(percentile or 0)))
    r, c = np.nonzero(sc >= thr)
    if percentile is not None:  # a percentile of mostly-zero scores must not label zeros
        ok = sc[r, c] > 0
        r, c = r[ok], c[ok]
    return Judgments.from_arrays(queries.shape, r, c, np.ones(r.size), f"auto:{matcher}")
