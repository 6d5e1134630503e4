"""Descriptive statistics of proxy relevance: Wray et al. (2021) Fig. 4 and Appendix B.

* :func:`relevant_counts` / :func:`threshold_curve` — **Fig. 4**: the number of relevant items
  per query as a function of the relevance threshold. For threshold ``t > 0`` an item is
  relevant when ``rel >= t``; ``t = 0`` means ``rel > 0`` (the R of nDCG@R). Per direction:
  t2v queries are captions (items: videos), v2t queries are videos (items: captions).
* :func:`proxy_correlations` / :func:`correlation_table` — **App. B**: the Pearson correlation
  between two proxies' relevance vectors, per query (default: per video, i.e. v2t rows of
  Wray's videos × captions matrix), summarised over queries. A query whose vector is constant
  under either proxy has no correlation (NaN) and is counted, not averaged.

:func:`random_sweep` computes the exact random-ranking nDCG@R under each processing setting.

Inputs are caption × video matrices (:attr:`fireval.proxies.relevance.ProxyRelevance.grades`).
Everything is vectorised over queries and bounded in memory by ``chunk`` queries at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError

DEFAULT_THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _oriented(grades: npt.NDArray[np.floating], direction: Direction | str) -> npt.NDArray[np.floating]:
    return grades if Direction.parse(direction) is Direction.T2V else grades.T


def _thresholds(thresholds: Sequence[float]) -> npt.NDArray[np.float64]:
    t = np.asarray(list(thresholds), dtype=np.float64)
    if t.size == 0 or np.isnan(t).any() or (t < 0).any() or (t > 1).any():
        raise FirevalError(f"thresholds must be numbers in [0, 1], got {list(thresholds)}")
    return t


def relevant_counts(
    grades: npt.NDArray[np.floating],
    direction: Direction | str,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    chunk: int = 512,
) -> npt.NDArray[np.int64]:
    """``counts[k, q]``: items of query ``q`` relevant at ``thresholds[k]`` (``>= t``; ``> 0`` at 0)."""
    t = _thresholds(thresholds)
    g = _oriented(np.asarray(grades), direction)
    nq = g.shape[0]
    out = np.zeros((t.size, nq), dtype=np.int64)
    for s in range(0, nq, chunk):
        blk = np.asarray(g[s : s + chunk], dtype=np.float64)
        for k, th in enumerate(t):
            out[k, s : s + blk.shape[0]] = np.count_nonzero(blk > 0 if th == 0 else blk >= th, axis=1)
    return out


def threshold_curve(
    grades: npt.NDArray[np.floating],
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    directions: Sequence[str] = ("t2v", "v2t"),
    proxy: str = "",
) -> pd.DataFrame:
    """Fig. 4 data: per direction and threshold, summary of the relevant-item counts per query.

    Columns ``proxy, direction, threshold, op (">" or ">="), n_queries, mean, median, q25, q75,
    min, max, share_zero`` (share of queries with no relevant item).
    """
    rows = []
    t = _thresholds(thresholds)
    for d in directions:
        counts = relevant_counts(grades, d, t.tolist())
        for k, th in enumerate(t):
            c = counts[k].astype(np.float64)
            rows.append(
                {
                    "proxy": proxy,
                    "direction": Direction.parse(d).value,
                    "threshold": float(th),
                    "op": ">" if th == 0 else ">=",
                    "n_queries": int(c.size),
                    "mean": float(c.mean()) if c.size else float("nan"),
                    "median": float(np.median(c)) if c.size else float("nan"),
                    "q25": float(np.quantile(c, 0.25)) if c.size else float("nan"),
                    "q75": float(np.quantile(c, 0.75)) if c.size else float("nan"),
                    "min": float(c.min()) if c.size else float("nan"),
                    "max": float(c.max()) if c.size else float("nan"),
                    "share_zero": float((c == 0).mean()) if c.size else float("nan"),
                }
            )
    return pd.DataFrame(rows)


def proxy_correlations(
    a: npt.NDArray[np.floating],
    b: npt.NDArray[np.floating],
    direction: Direction | str = "v2t",
    chunk: int = 256,
) -> npt.NDArray[np.float64]:
    """Pearson r between the relevance vectors of two proxies, per query of ``direction``.

    ``a`` and ``b`` are caption × video matrices of one collection. NaN where either vector
    is constant (zero variance).
    """
    if a.shape != b.shape:
        raise FirevalError(f"relevance matrices differ in shape: {a.shape} vs {b.shape}")
    ga, gb = _oriented(np.asarray(a), direction), _oriented(np.asarray(b), direction)
    nq = ga.shape[0]
    out = np.full(nq, np.nan)
    for s in range(0, nq, chunk):
        x = np.asarray(ga[s : s + chunk], dtype=np.float64)
        y = np.asarray(gb[s : s + chunk], dtype=np.float64)
        x = x - x.mean(axis=1, keepdims=True)
        y = y - y.mean(axis=1, keepdims=True)
        sxy = np.einsum("ij,ij->i", x, y)
        sxx = np.einsum("ij,ij->i", x, x)
        syy = np.einsum("ij,ij->i", y, y)
        ok = (sxx > 0) & (syy > 0)
        r = np.full(x.shape[0], np.nan)
        r[ok] = np.clip(sxy[ok] / np.sqrt(sxx[ok] * syy[ok]), -1.0, 1.0)
        out[s : s + x.shape[0]] = r
    return out


def correlation_table(
    relevances: Mapping[str, npt.NDArray[np.floating]], direction: Direction | str = "v2t"
) -> pd.DataFrame:
    """App. B data: for every pair of proxies, the per-query Pearson r summarised over queries.

    Columns ``proxy_a, proxy_b, direction, n_queries, n_defined, mean, median, std, min, max``
    (``n_defined``: queries where both vectors vary).
    """
    names = list(relevances)
    d = Direction.parse(direction).value
    rows = []
    for i, na in enumerate(names):
        for nb in names[i + 1 :]:
            r = proxy_correlations(relevances[na], relevances[nb], d)
            ok = r[~np.isnan(r)]
            rows.append(
                {
                    "proxy_a": na,
                    "proxy_b": nb,
                    "direction": d,
                    "n_queries": int(r.size),
                    "n_defined": int(ok.size),
                    "mean": float(ok.mean()) if ok.size else float("nan"),
                    "median": float(np.median(ok)) if ok.size else float("nan"),
                    "std": float(ok.std()) if ok.size else float("nan"),
                    "min": float(ok.min()) if ok.size else float("nan"),
                    "max": float(ok.max()) if ok.size else float("nan"),
                }
            )
    return pd.DataFrame(rows)


def random_sweep(
    queries: Collection,
    video_captions: Collection | None = None,
    *,
    proxies: Sequence[str] = ("bow", "pos", "syn"),
    text: Sequence[tuple[str, str]] = (("surface", "spacy"), ("lemma", "glasgow")),
    aggs: Mapping[str, Sequence[str]] | None = None,
    n_jobs: int = 1,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Expected random nDCG@R under each setting: word form × stop list × aggregation × zero policy.

    For finding which processing step moves the Random row (docs/proxies.md). ``text`` lists
    ``(words, stop)`` pairs; ``aggs`` maps a proxy to its aggregations (default: max, mean,
    words25 for set proxies; max, mean, match for meteor). One :class:`TextPipeline` is shared,
    so captions are analysed once. ``on_row`` sees each row as soon as it is computed.
    Columns ``proxy, words, stop, agg, zero_relevant, t2v, v2t, mean, zero_t2v, zero_v2t``.
    """
    from fireval.proxies.ndcg import expected_random_ndcg
    from fireval.proxies.relevance import video_relevance
    from fireval.proxies.text import TextOptions, TextPipeline

    pl = TextPipeline()
    rows = []
    for proxy in proxies:
        default = ("max", "mean", "match") if proxy == "meteor" else ("max", "mean", "words25")
        # METEOR uses no stop list: one run per word form
        settings = list(dict.fromkeys((w, "-") for w, _ in text)) if proxy == "meteor" else list(text)
        for words, stop in settings:
            opts = TextOptions(words, "glasgow" if stop == "-" else stop)
            for agg in (aggs or {}).get(proxy, default):
                rel = video_relevance(
                    queries, proxy, agg, video_captions, pipeline=pl, n_jobs=n_jobs, options=opts
                )
                for z in ("zero", "drop"):
                    r = expected_random_ndcg(rel.grades, z)
                    row = {
                        "proxy": proxy,
                        "words": words,
                        "stop": stop,
                        "agg": agg,
                        "zero_relevant": z,
                        "t2v": r["t2v"],
                        "v2t": r["v2t"],
                        "mean": r["mean"],
                        "zero_t2v": r["n_zero_relevant"]["t2v"],
                        "zero_v2t": r["n_zero_relevant"]["v2t"],
                    }
                    rows.append(row)
                    if on_row is not None:
                        on_row(row)
                del rel
    return pd.DataFrame(rows)


def caption_ranking(
    reference: str,
    captions: Sequence[str],
    proxy: str,
    options: Any = None,
    pipeline: Any = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Wray et al. Fig. 3: ``captions`` ranked by their proxy score against ``reference``.

    The score is the caption–caption proxy itself (``bow``/``pos``/``syn`` IoU; METEOR with
    ``reference`` in the query caption's role, NLTK's hypothesis, and each other caption in a
    video caption's role, NLTK's reference, as in the proxy files), computed from the proxy's
    definition by :func:`fireval.proxies.relevance.caption_similarity`: a proxy ``.npz`` holds
    caption × video grades (aggregated over a video's captions), not caption × caption scores.
    Returns ``(order, scores)``: indices into ``captions`` by decreasing score (ties in input
    order), and every caption's score.
    """
    from fireval.proxies.relevance import caption_similarity
    from fireval.proxies.text import LEMMA_TEXT

    opts = LEMMA_TEXT if options is None else options
    scores = caption_similarity([reference], list(captions), proxy, pipeline, opts)[0]
    order = np.argsort(-scores, kind="stable").astype(np.int64)
    return order, scores
