"""Simulated runs for measuring the checks: aligned runs (the null) and misaligned copies.

* :func:`text_consistent_scores`: an *aligned* run built from the collection's text with a
  representation unlike the alignment check's (hashed character 3-grams, randomly projected to
  ``dim`` dimensions, instead of TF-IDF over words): ``score = signal * cos(caption, video) +
  noise * N(0, 1)``, a video's vector being the mean of its captions'. ``signal = 0`` gives a run
  that ranks at random (the limit where "aligned" stops meaning anything).
* :func:`permuted`: a misaligned copy of a score matrix: rows, columns, or both shuffled by the
  same permutation (as GRAM and VAST against the JSFusion CSV: the diagonal is kept), optionally
  only a ``fraction`` of them.

Used by ``benchmarks/bench_checks.py`` (false-alarm and detection rates in ``docs/checks.md``)
and by the tests. Not used by the checks themselves.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.core import Collection


def text_similarity(collection: Collection, *, seed: int = 0, dim: int = 128) -> npt.NDArray[np.float32]:
    """Caption × video cosine of hashed character 3-gram vectors, randomly projected to ``dim``."""
    from sklearn.feature_extraction.text import HashingVectorizer

    rng = np.random.default_rng(seed)
    hv = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 3), n_features=1 << 16, alternate_sign=False)
    grams = hv.transform(collection.captions)
    proj = rng.standard_normal((grams.shape[1], dim)).astype(np.float32) / np.sqrt(dim)
    cap = np.asarray(grams @ proj, dtype=np.float32)
    cap /= np.maximum(np.linalg.norm(cap, axis=1, keepdims=True), 1e-12)
    vid = np.zeros((collection.n_videos, dim), dtype=np.float32)
    np.add.at(vid, collection.caption_video, cap)
    vid /= np.maximum(np.linalg.norm(vid, axis=1, keepdims=True), 1e-12)
    return cap @ vid.T


def text_consistent_scores(
    collection: Collection,
    *,
    signal: float = 1.0,
    noise: float = 0.1,
    seed: int = 0,
    dim: int = 128,
    similarity: npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[np.float32]:
    """An aligned caption × video score matrix: ``signal * text_similarity + noise * N(0, 1)``.

    ``similarity`` reuses a :func:`text_similarity` matrix (it is not modified).
    """
    rng = np.random.default_rng(seed + 7919)
    sim = text_similarity(collection, seed=seed, dim=dim) if similarity is None else similarity
    scores = np.float32(signal) * sim
    if noise:
        scores += np.float32(noise) * rng.standard_normal(scores.shape, dtype=np.float32)
    return scores


def permuted(
    scores: npt.NDArray[np.floating], how: str = "both", *, seed: int = 0, fraction: float = 1.0
) -> npt.NDArray[np.floating]:
    """A copy of ``scores`` with ``fraction`` of its rows (``"rows"``), columns (``"cols"``) or both
    (``"both"``, one permutation of a square matrix, diagonal kept) shuffled among themselves."""
    if how not in ("rows", "cols", "both"):
        raise ValueError(f"how must be rows, cols or both, got {how!r}")
    rng = np.random.default_rng(seed)
    n = scores.shape[1] if how == "cols" else scores.shape[0]
    perm = np.arange(n)
    chosen = rng.choice(n, size=int(round(fraction * n)), replace=False)
    perm[chosen] = rng.permutation(chosen)
    out = np.asarray(scores)
    if how in ("rows", "both"):
        out = out[perm]
    if how in ("cols", "both"):
        out = out[:, perm]
    return np.ascontiguousarray(out)
