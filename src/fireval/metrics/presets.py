"""Compatibility presets: reproduce what papers computed, on our data model.

``fire2023`` — Rodriguez et al. 2023, "Fighting FIRe with FIRE: Assessing the Validity of
Text-to-Video Retrieval Benchmarks" (EACL Findings 2023), code facebookresearch/mm-retrieval-evaluation
(``mmr/analysis.py``). Confirmed from that code: per caption it keeps the top ``max_preds=20``
videos of ``np.argsort(-scores)``; ``P@n = |top_n ∩ gold| / n``; ``R@n = |top_n ∩ gold| / max(1, |gold|)``
(IR recall); ``C@n = 1`` if any gold in the top n, for n in (1, 5, 10); ``AP`` = mean of the
precisions at the hit ranks of the (top-20) list, 0 when there is no hit; the share of the top 10
that is labelled (gold or annotated) is reported as ``p_annotated_preds`` (our ``judged@10``).
Ties: ``np.argsort`` (quicksort, order within ties unspecified) — here the chosen tie policy
applies (default tie-aware). Not reproduced: their MSVD ``score_model`` recomputes the
augmented metrics on the top 10 only (``result["preds"][:10]``), so AP there is over 10, not 20;
pass ``AP_hits@10`` to get that. Their joins use raw caption strings; ours use normalised text
(the formats layer). Labels: their augmented set is the original ground truth *plus* the
annotated positives, so an instance positive is never removed by a human "irrelevant"; that is
the default merge policy (:data:`fireval.core.judgments.FIRE_PRECEDENCE`, conflicts counted and
warned about), and an explicit ``--precedence`` that overrules instance positives is flagged as
a deviation from this preset. Original and augmented are compared over the same queries
(:func:`fireval.api.common_queries`).

``clip4clip`` — Luo et al. 2021, ``compute_metrics`` in CLIP4Clip's ``metrics.py``::

    sx = np.sort(-x, axis=1); d = np.diag(-x)[:, None]; ind = np.where(sx - d == 0)[1]
    R@K = 100 * sum(ind < K) / len(ind); MdR = median(ind) + 1; MnR = mean(ind) + 1

With ties, a ground truth tied with t-1 other docs below g better ones puts *every* position
g, g+1, ..., g+t-1 into ``ind`` (and into the denominator ``len(ind)``). A ground truth scored
``-inf`` gives ``inf - inf = nan`` and drops out. CLIP4Clip assumes one ground truth per query row
(the diagonal); with several relevant docs we apply the same procedure to every (query,
relevant doc) pair, which is what its multi-sentence t2v code does (one row per caption). Its
multi-sentence v2t collapses captions into videos by max (``tensor_video_to_text_sim``); that
changes the document set and is not reproduced. R@K is reported as a fraction (x100 for %).

``wray2021`` — Wray et al. 2021, "On Semantic Similarity in Video Retrieval" (CVPR), code
mwray/Semantic-Video-Retrieval ``NDCG.py``: ``k_counts`` keeps, per query, as many ranks as it
has items with relevance > 0; DCG = sum over those first R ranks of rel / log2(rank+1) (linear
gain), IDCG the same over the relevancies sorted in decreasing order; nDCG = DCG / IDCG, mean over
queries. That is our ``nDCG@R``. A query with no item of relevance > 0 scores 0 and stays in the
mean (:data:`ALL_QUERIES_PRESETS`): a choice, as Falcon et al.'s patched copy (``ranp``) does;
JPoSE's ``nDCG.py`` gives NaN there (0 / 0), see ``fireval.proxies.ndcg.ZERO_RELEVANT``.
The relevance matrix is videos × captions (v2t rows; t2v is its transpose). Their ranking is ``np.argsort(sim)[:, ::-1]`` (ties in an unspecified order); here
the chosen tie policy applies. The paper reports Eq. 3, the mean of the two directions
(:func:`fireval.proxies.ndcg.eq3`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.core.errors import FirevalError
from fireval.metrics.measures import Measure, parse_measures

PRESETS = ("fire2023", "clip4clip", "wray2021")

PRESET_MEASURES: dict[str, tuple[Measure, ...]] = {
    "fire2023": parse_measures("C@1,C@5,C@10,P@1,P@5,P@10,Recall@1,Recall@5,Recall@10,AP_hits@20,judged@10"),
    "clip4clip": parse_measures("C@1,C@5,C@10,MdR,MnR"),
    "wray2021": parse_measures("nDCG@R"),
}

#: presets whose means run over *every* query: a query with no item of relevance > 0 scores 0
#: (IDCG = 0), as Falcon et al.'s patched copy (``ranp``) does; JPoSE's ``nDCG.py`` gives NaN
#: there. A choice, not left out as fireval's default does (``fireval.proxies.ndcg.ZERO_RELEVANT``)
ALL_QUERIES_PRESETS = frozenset({"wray2021"})


#: what a query with no relevant item does to a mean (``evaluate(zero_relevant=...)``)
ZERO_RELEVANT_RULES = ("zero", "drop", "nan")


def check_zero_relevant(rule: str | None, preset: str | None) -> str | None:
    """The empty-query rule in force: ``rule`` when given (checked), else ``zero`` for the presets of
    :data:`ALL_QUERIES_PRESETS` and ``None`` (= ``drop``, fireval's default) otherwise."""
    if rule is None:
        return "zero" if preset in ALL_QUERIES_PRESETS else None
    r = str(rule).strip().lower()
    if r not in ZERO_RELEVANT_RULES:
        raise FirevalError(f"zero_relevant: expected one of {', '.join(ZERO_RELEVANT_RULES)}, got {rule!r}")
    return None if r == "drop" else r


def check_preset(preset: str | None) -> str | None:
    if preset is None:
        return None
    p = str(preset).strip().lower()
    if p not in PRESETS:
        raise FirevalError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    return p


def clip4clip_values(
    q: npt.NDArray[np.int64],
    g: npt.NDArray[np.int64],
    t: npt.NDArray[np.int64],
    n_queries: int,
    ks: tuple[int, ...] = (1, 5, 10),
) -> tuple[dict[str, float], dict[str, npt.NDArray[np.float64]]]:
    """CLIP4Clip's R@K, MdR and MnR from the tie groups of the ground truths.

    Each (query, relevant doc) pair with ``g`` docs above and ``t`` in its tie group adds
    the 0-based positions ``g .. g+t-1`` to CLIP4Clip's ``ind``. Returns the aggregate values
    (pooled over ``ind`` as CLIP4Clip does) and per-query values (mean over the query's own
    positions; NaN for a query with no finite ground truth).
    """
    total = float(t.sum())
    agg: dict[str, float] = {}
    per: dict[str, npt.NDArray[np.float64]] = {}
    cnt = np.bincount(q, weights=t.astype(np.float64), minlength=n_queries)
    has = cnt > 0
    safe = np.where(has, cnt, 1.0)
    for k in ks:
        inside = np.clip(k - g, 0, t).astype(np.float64)
        agg[f"C@{k}"] = float(inside.sum() / total) if total else float("nan")
        per[f"C@{k}"] = np.where(has, np.bincount(q, weights=inside, minlength=n_queries) / safe, np.nan)
    sum_pos = t * g + t * (t - 1) / 2.0  # sum of g..g+t-1
    agg["MnR"] = float(sum_pos.sum() / total + 1.0) if total else float("nan")
    per_mean = np.where(has, np.bincount(q, weights=sum_pos, minlength=n_queries) / safe + 1.0, np.nan)
    per["MnR"] = per_mean
    per["MdR"] = per_mean.copy()
    agg["MdR"] = _median_of_ranges(g, t) + 1.0 if total else float("nan")
    return agg, per


def clip4clip_warnings(
    q: npt.NDArray[np.int64],
    g: npt.NDArray[np.int64],
    t: npt.NDArray[np.int64],
    values: dict[str, float],
    n_pairs: int,
    ks: tuple[int, ...] = (1, 5, 10),
) -> list[str]:
    """Warnings when CLIP4Clip's procedure moves a preset value (empty list when it does not).

    ``q, g, t`` are the retrieved (query, ground truth) pairs given to :func:`clip4clip_values`,
    ``values`` its aggregates and ``n_pairs`` the number of pairs including unretrieved ones.

    * Dropped pairs: a ground truth scored ``-inf`` leaves CLIP4Clip's ``ind`` (``inf - inf``
      is NaN), so the denominator shrinks and the run looks better than counting it a miss.
    * Ties: the values are compared with the same formulas when every pair counts *once*, with
      the mean over its ``t`` tied positions (R@K: ``clip(K-g, 0, t)/t``; rank: ``g + (t+1)/2``;
      MdR = median of those ranks). Without ties both agree exactly; with ties ``ind`` holds
      ``t`` positions per pair, so heavily tied pairs dominate the pooled R@K, MdR and MnR.
    """
    out = []
    if n_pairs > q.size:
        out.append(
            f"clip4clip preset: {n_pairs - q.size} of {n_pairs} (query, ground truth) pairs are not "
            "retrieved (score -inf); CLIP4Clip's sx - d is NaN for them, so they drop out of R@K, MdR "
            f"and MnR (denominator {q.size}, not {n_pairs}) instead of counting as misses; without the "
            "preset fireval ranks them below every retrieved doc (docs/metrics.md, Unretrieved documents)."
        )
    tie = _tie_warning(q, g, t, values, ks)
    return out if tie is None else [*out, tie]


def _tie_warning(
    q: npt.NDArray[np.int64],
    g: npt.NDArray[np.int64],
    t: npt.NDArray[np.int64],
    values: dict[str, float],
    ks: tuple[int, ...],
) -> str | None:
    tied = t > 1
    if q.size == 0 or not tied.any():
        return None
    tf = t.astype(np.float64)
    rank = g + (tf + 1.0) / 2.0
    once = {f"C@{k}": float(np.mean(np.clip(k - g, 0, t) / tf)) for k in ks}
    once["MdR"] = float(np.median(rank))
    once["MnR"] = float(rank.mean())
    moved = [
        f"{key} {values[key]:.4g} (each pair once: {v:.4g})"
        for key, v in once.items()
        if key in values and not np.isclose(values[key], v, rtol=1e-9, atol=1e-12)
    ]
    if not moved:
        return None
    return (
        f"clip4clip preset: {int(np.unique(q[tied]).size)} queries have a ground truth tied with other "
        f"docs (largest tie group: {int(t.max())} docs). CLIP4Clip's np.where counts every tied "
        f"position, so its ind holds {int(t.sum())} positions for {q.size} (query, ground truth) "
        f"pairs and the tied pairs dominate: {'; '.join(moved)}. This is faithful to CLIP4Clip, "
        "not a bug; without the preset fireval reports tie-aware values (docs/metrics.md, Presets)."
    )


def _median_of_ranges(g: npt.NDArray[np.int64], t: npt.NDArray[np.int64]) -> float:
    """np.median of the multiset union of the integer ranges [g, g+t), without expanding it."""
    total = int(t.sum())

    def kth(k: int) -> float:  # k-th smallest (0-based): smallest v with count(<= v) > k
        lo, hi = int(g.min()), int((g + t).max())
        while lo < hi:
            mid = (lo + hi) // 2
            c = int(np.clip(mid - g + 1, 0, t).sum())
            if c > k:
                hi = mid
            else:
                lo = mid + 1
        return float(lo)

    if total % 2:
        return kth(total // 2)
    return (kth(total // 2 - 1) + kth(total // 2)) / 2.0
