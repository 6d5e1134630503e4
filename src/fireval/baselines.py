"""Built-in text baselines that need no model: the *caption oracle*.

The caption oracle scores a query caption against a video by comparing it with the video's
*other* captions (the descriptions), which a real model never sees. It is the demo's example
run: strong but imperfect, and its top 10 holds many plausible, unjudged videos.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer

from fireval.core import Collection, InputError, normalise

_CHUNK_ELEMS = 4 * 2**20


def caption_oracle_scores(queries: Collection, descriptions: Collection) -> npt.NDArray[np.float32]:
    """TF-IDF caption oracle: ``S[q, v] = max_{c in C'(q, v)} cos(tfidf(q), tfidf(c))``.

    - Rows: the queries' captions in ``queries`` order; columns: ``queries.video_ids`` order.
      Every query video must be described in ``descriptions`` (matched by video id).
    - ``C'(q, v)``: the captions of video ``v`` in ``descriptions``, *leaving out* every caption
      that is written for the query's own video and equals the query after
      :func:`fireval.core.normalise` (its source caption and verbatim repeats of it). For
      MSR-VTT 1k-A this removes each JSFusion sentence's own official caption.
    - TF-IDF: scikit-learn ``TfidfVectorizer`` with its defaults (lowercase, tokens of >= 2
      word characters, smoothed idf ``ln((1+n)/(1+df)) + 1``, l2-normalised rows), fitted on the
      description captions; the cosine is the dot product of the l2-normalised vectors.
    - A left-out caption counts as similarity 0 (all cosines are >= 0), so a video whose only
      caption is left out scores 0; so does a video without descriptions.

    One sparse matmul per block of queries, then a segmented max (``np.maximum.reduceat``)
    over each video's captions; memory is bounded by the block size.
    """
    vindex = descriptions.video_index
    missing = [v for v in queries.video_ids if v not in vindex]
    if missing:
        raise InputError(f"video {missing[0]!r} of the queries has no descriptions ({len(missing)} in all)")
    vec = TfidfVectorizer()
    try:
        dmat = vec.fit_transform(descriptions.captions)
    except ValueError as exc:
        raise InputError(f"descriptions have no usable words: {exc}") from None
    qmat = vec.transform(queries.captions)

    # description captions grouped by their video's column in the output (others dropped)
    col_of_desc_video = np.array([queries.video_index.get(v, -1) for v in descriptions.video_ids], np.int64)
    dcol = col_of_desc_video[descriptions.caption_video]
    keep = np.flatnonzero(dcol >= 0)
    order = keep[np.argsort(dcol[keep], kind="stable")]
    dmat_t = dmat[order].T.tocsc()
    sorted_cols = dcol[order]
    counts = np.bincount(sorted_cols, minlength=queries.n_videos)
    has = counts > 0
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[has]

    # left-out pairs (query, position in `order`): same normalised text and same video
    qtext = pd.Series([normalise(t) for t in queries.captions])
    dtext = pd.Series([normalise(descriptions.captions[i]) for i in order])
    left = pd.DataFrame({"q": np.arange(queries.n_captions), "t": qtext, "v": queries.caption_video})
    right = pd.DataFrame({"p": np.arange(order.size), "t": dtext, "v": sorted_cols})
    excl = left.merge(right, on=["t", "v"])
    eq, ep = excl["q"].to_numpy(), excl["p"].to_numpy()

    out = np.zeros((queries.n_captions, queries.n_videos), dtype=np.float32)
    step = max(1, _CHUNK_ELEMS // max(1, order.size))
    for start in range(0, queries.n_captions, step):
        stop = min(queries.n_captions, start + step)
        sims = (qmat[start:stop] @ dmat_t).toarray().astype(np.float32)
        m = (eq >= start) & (eq < stop)
        sims[eq[m] - start, ep[m]] = 0.0
        if starts.size:
            out[start:stop, has] = np.maximum.reduceat(sims, starts, axis=1)
    return out
