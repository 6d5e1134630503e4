"""Descriptive statistics of a collection: Wray et al. (2021) Table 1, FIRE (2023) §2.1.

:func:`collection_stats` counts, for one :class:`~fireval.core.collection.Collection`:

* ``videos``, ``captions``; **captions per video** (min / mean / median / max over *every*
  video, a video without captions counting 0);
* **caption length** in words (``len(text.split())``: whitespace-separated tokens, punctuation
  attached, as in Wray's ``caption.split(" ")`` but without empty strings) and in characters
  (``len(text)`` of the text as stored), min / mean / median / max;
* ``vocabulary``: distinct words of the normalised texts (below);
* **repeated captions**, ``exact`` (the stored text) and ``normalised``
  (:func:`fireval.core.text.normalise`: lowercase, every run of non-alphanumeric characters one
  space, stripped; the key ``Collection.normalised_index`` and FIRE-JSON joins use): ``distinct`` texts, ``repeated_texts`` (texts held by two or more captions),
  ``repeated_captions`` (captions whose text another caption also has), ``across_videos``
  (texts held by captions of two or more videos: a caption of one video that also describes
  another, a would-be false negative under instance labels) and ``captions_across_videos``.

Vectorised with numpy (texts to ids by one dict pass, then ``bincount``/``unique`` on integers); no per-caption Python beyond computing the
lengths and keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection


def _summary(x: npt.NDArray[np.int64]) -> dict[str, float]:
    if x.size == 0:
        return {"min": float("nan"), "mean": float("nan"), "median": float("nan"), "max": float("nan")}
    return {
        "min": float(x.min()),
        "mean": float(x.mean()),
        "median": float(np.median(x)),
        "max": float(x.max()),
    }


def repeats(keys: Sequence[str], caption_video: npt.NDArray[np.int64]) -> dict[str, int]:
    """Repeated texts among ``keys`` (one per caption), with each caption's video index."""
    ids: dict[str, int] = {}
    inv = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), np.int64, len(keys))
    counts = np.bincount(inv, minlength=len(ids))
    cv = np.asarray(caption_video, np.int64)
    nv = int(cv.max(initial=0)) + 1
    pair_text = np.unique(inv * nv + cv) // nv  # one entry per distinct (text, video)
    n_vid = np.bincount(pair_text, minlength=len(ids))  # distinct videos per text
    return {
        "distinct": int(counts.size),
        "repeated_texts": int((counts > 1).sum()),
        "repeated_captions": int(counts[counts > 1].sum()),
        "across_videos": int((n_vid > 1).sum()),
        "captions_across_videos": int(counts[n_vid > 1].sum()),
    }


def collection_stats(coll: Collection) -> dict[str, Any]:
    """The statistics of the module docstring as a JSON-ready dict."""
    from fireval.core.text import normalise

    per_video = np.bincount(coll.caption_video, minlength=coll.n_videos).astype(np.int64)
    words = np.fromiter((len(t.split()) for t in coll.captions), np.int64, coll.n_captions)
    chars = np.fromiter((len(t) for t in coll.captions), np.int64, coll.n_captions)
    norm = [normalise(t) for t in coll.captions]
    vocab = {w for t in norm for w in t.split()}
    return {
        "collection": coll.name,
        "videos": coll.n_videos,
        "captions": coll.n_captions,
        "captions_per_video": _summary(per_video),
        "videos_without_captions": int((per_video == 0).sum()),
        "caption_words": _summary(words),
        "caption_characters": _summary(chars),
        "vocabulary": len(vocab),
        "repeated": {
            "exact": repeats(list(coll.captions), coll.caption_video),
            "normalised": repeats(norm, coll.caption_video),
        },
        "definitions": {
            "words": "len(text.split()): whitespace-separated tokens, punctuation attached",
            "characters": "len(text) of the stored text",
            "vocabulary": "distinct words of the normalised texts",
            "normalised": "lowercase, each run of non-alphanumeric characters one space, stripped",
            "repeated_captions": "captions whose text at least one other caption has",
            "across_videos": "texts held by captions of two or more videos",
        },
    }
