"""Designs of the relevance matrix behind a Random row (Wray et al. 2021, Table 3).

The published MSR-VTT Random row cannot be recomputed from one documented procedure (see
docs/proxies.md, "The published Random row"). What *can* be computed exactly is the expected
nDCG@R of a uniformly random ranking (:func:`fireval.proxies.ndcg.expected_random_ndcg`) on the
relevance matrix each candidate design gives. A design is two choices:

* **how a video is represented** (``design``):

  - ``words25``: the robust word set of its captions (items in >= 25% of them; set proxies),
    the ``wray2021`` preset's choice for BoW/PoS/SYN;
  - ``max`` / ``mean``: the proxy's max / mean over its captions;
  - ``match``: the matching kernel ½(max + mean) (the preset's choice for METEOR);
  - ``single``: one caption, its first in the video-caption file: relevance compares single
    captions (caption × caption, the query's own video's caption included);

* **which captions are the queries** (``query_captions``):

  - ``given``: the captions of the query collection (1k-A: the 1,000 JSFusion captions, one per
    video);
  - ``first``: the first caption of each video in the video-caption file (one per video);
  - ``all``: every caption of the query videos in the video-caption file;
  - ``nth:K``: the K-th caption (1-based, file order) of each video (how much the choice of the
    one query caption per video moves the row).

Text processing (word form, stop list) is a :class:`~fireval.proxies.text.TextOptions`, by
default the ``wray2021`` preset's. The matrix is built by
:func:`fireval.proxies.relevance.video_relevance`; this module only selects captions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fireval.core.collection import Collection
from fireval.core.errors import FirevalError, InputError

DESIGNS = ("words25", "max", "mean", "match", "single")
QUERY_CAPTIONS = ("given", "first", "all")


def check_design(proxy: str, design: str, query_captions: str) -> None:
    """:class:`FirevalError` for an unknown design or query choice, or words25 with METEOR."""
    if design not in DESIGNS:
        raise FirevalError(f"unknown design {design!r}; expected one of {', '.join(DESIGNS)}")
    if query_captions not in QUERY_CAPTIONS and _nth(query_captions) is None:
        raise FirevalError(
            f"unknown query-caption choice {query_captions!r}; expected one of {', '.join(QUERY_CAPTIONS)} or nth:K"
        )
    if proxy == "meteor" and design == "words25":
        raise FirevalError("the 25% robust word set applies to set proxies (bow, pos, syn), not meteor")


def _nth(query_captions: str) -> int | None:
    """K of ``nth:K`` (K >= 1), else None."""
    head, _, k = query_captions.partition(":")
    if head == "nth" and k.isdigit() and int(k) >= 1:
        return int(k)
    return None


def _subset(vc: Collection, idx: np.ndarray, videos: Sequence[str], name: str) -> Collection:
    """The captions ``idx`` of ``vc`` as a collection over ``videos`` (in that order)."""
    vi = {v: i for i, v in enumerate(videos)}
    cv = np.array([vi[vc.video_ids[int(vc.caption_video[i])]] for i in idx], dtype=np.int64)
    return Collection(
        name=name,
        video_ids=tuple(videos),
        caption_ids=tuple(vc.caption_ids[i] for i in idx),
        captions=tuple(vc.captions[i] for i in idx),
        caption_video=cv,
        source=vc.source,
    )


def first_captions(queries: Collection, video_captions: Collection | None = None, nth: int = 1) -> Collection:
    """One caption per video of ``queries``: its ``nth`` (1-based) caption in ``video_captions``
    (file order); :class:`InputError` when a video has fewer."""
    from fireval.proxies.relevance import doc_captions

    vc, keep, doc_video = doc_captions(queries, video_captions)
    order = np.argsort(doc_video, kind="stable")  # each video's captions, in file order
    starts = np.searchsorted(doc_video[order], np.arange(queries.n_videos))
    counts = np.bincount(doc_video, minlength=queries.n_videos)
    short = np.flatnonzero(counts < nth)
    if short.size:
        raise InputError(
            f"video {queries.video_ids[int(short[0])]!r} has {int(counts[short[0]])} captions, fewer than "
            f"{nth} ({short.size} such videos)",
            source=vc.source,
        )
    pick = keep[order[starts + nth - 1]]
    return _subset(vc, pick, queries.video_ids, f"{vc.name}-{'first' if nth == 1 else f'nth{nth}'}")


def all_captions(queries: Collection, video_captions: Collection | None = None) -> Collection:
    """Every caption of ``queries``' videos in ``video_captions``."""
    from fireval.proxies.relevance import doc_captions

    vc, keep, _ = doc_captions(queries, video_captions)
    return _subset(vc, keep, queries.video_ids, f"{vc.name}-all")


def query_collection(
    queries: Collection, video_captions: Collection | None, query_captions: str
) -> Collection:
    """The query captions a design uses (``given`` | ``first`` | ``all``)."""
    if query_captions == "given":
        return queries
    if query_captions == "first":
        return first_captions(queries, video_captions)
    if query_captions == "all":
        return all_captions(queries, video_captions)
    k = _nth(query_captions)
    if k is not None:
        return first_captions(queries, video_captions, k)
    raise FirevalError(
        f"unknown query-caption choice {query_captions!r}; expected given, first, all or nth:K"
    )


def design_relevance(
    queries: Collection,
    proxy: str,
    design: str,
    video_captions: Collection | None = None,
    *,
    query_captions: str = "given",
    options: Any = None,
    pipeline: Any = None,
    presence: float = 0.25,
    n_jobs: int = 1,
) -> Any:
    """Caption × video :class:`~fireval.proxies.relevance.ProxyRelevance` under one design.

    ``options`` default: the ``wray2021`` preset's text options (surface words, spaCy list).
    ``meta`` records ``design`` and ``query_captions``.
    """
    from fireval.proxies.relevance import video_relevance
    from fireval.proxies.text import WRAY2021_TEXT

    check_design(proxy, design, query_captions)
    q = query_collection(queries, video_captions, query_captions)
    if design == "single":
        docs, agg = first_captions(queries, video_captions), "max"  # one caption: max = mean = it
    else:
        docs, agg = (video_captions or queries), design
    rel = video_relevance(
        q,
        proxy,
        agg,
        docs,
        presence=presence,
        pipeline=pipeline,
        n_jobs=n_jobs,
        options=WRAY2021_TEXT if options is None else options,
    )
    rel.meta["design"] = design
    rel.meta["query_captions"] = query_captions
    return rel


def random_designs(
    queries: Collection,
    video_captions: Collection | None = None,
    *,
    proxies: Sequence[str] = ("bow",),
    designs: Sequence[str] = ("words25",),
    query_captions: Sequence[str] = ("given",),
    zero_relevant: str = "zero",
    options: Any = None,
    pipeline: Any = None,
    n_jobs: int = 1,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Exact expected random nDCG@R for every proxy × design × query choice (skipping words25
    for METEOR). Columns ``proxy, design, query_captions, words, stop, n_captions, n_videos,
    zero_relevant, t2v, v2t, mean, zero_t2v, zero_v2t, share_positive`` (values are fractions;
    ``share_positive``, the share of pairs with relevance > 0, bounds t2v and v2t from above)."""
    from fireval.proxies.ndcg import expected_random_ndcg
    from fireval.proxies.text import WRAY2021_TEXT, TextPipeline

    opts = WRAY2021_TEXT if options is None else options
    pl = pipeline or TextPipeline()
    for p in proxies:
        for d in designs:
            for qc in query_captions:
                if not (p == "meteor" and d == "words25"):
                    check_design(p, d, qc)
    rows = []
    for p in proxies:
        for d in designs:
            if p == "meteor" and d == "words25":
                continue
            for qc in query_captions:
                rel = design_relevance(
                    queries, p, d, video_captions, query_captions=qc, options=opts, pipeline=pl, n_jobs=n_jobs
                )
                r = expected_random_ndcg(rel.grades, zero_relevant)
                row = {
                    "proxy": p,
                    "design": d,
                    "query_captions": qc,
                    "words": opts.words,
                    "stop": "-" if p == "meteor" else opts.stop,
                    "n_captions": int(rel.grades.shape[0]),
                    "n_videos": int(rel.grades.shape[1]),
                    "zero_relevant": zero_relevant,
                    "t2v": r["t2v"],
                    "v2t": r["v2t"],
                    "mean": r["mean"],
                    "zero_t2v": r["n_zero_relevant"]["t2v"],
                    "zero_v2t": r["n_zero_relevant"]["v2t"],
                    # an upper bound on both directions' expected nDCG@R (zero rule): per query
                    # E <= R / N (Chebyshev's sum inequality), averaged = the share of pairs > 0
                    "share_positive": float(np.count_nonzero(rel.grades) / rel.grades.size),
                }
                rows.append(row)
                if on_row is not None:
                    on_row(row)
                del rel
    return pd.DataFrame(rows)


def options_from_meta(meta: dict[str, Any], verb_classes: Any = None, noun_classes: Any = None) -> Any:
    """The :class:`TextOptions` a proxy file was built with (its ``meta``); class lists are
    stored by name only, so a file built with them needs the same CSVs again."""
    from fireval.proxies.text import TextOptions, read_class_csv

    words = str(meta.get("words") or ("lemma" if meta.get("lemmas", True) else "surface"))
    stop = "spacy" if str(meta.get("stop_words", "")).startswith("spacy") else "glasgow"
    for key, given in (("verb_classes", verb_classes), ("noun_classes", noun_classes)):
        if meta.get(key) and given is None:
            raise FirevalError(
                f"the proxy file was built with {key.replace('_', '-')} {meta[key]!r}; give "
                f"--{key.replace('_', '-')} with that CSV"
            )
    return TextOptions(
        words,
        stop,
        verb_classes=None if verb_classes is None else read_class_csv(verb_classes),
        noun_classes=None if noun_classes is None else read_class_csv(noun_classes),
    )
