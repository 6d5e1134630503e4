"""Slow, obviously-correct reference implementations used only by the tests.

Everything here works on one query at a time with plain Python lists: a ranking is a
list of doc indices in order; a doc's *grade* is ``None`` when unjudged.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

NEG = float("-inf")


def effective(
    grades: Sequence[float | None], mode: str, maxg: float = 1.0
) -> tuple[list[float], list[bool], list[bool]]:
    """(gain, judged, kept) per doc under an unjudged mode (upper: unjudged gain = ``maxg``)."""
    gain, judged, kept = [], [], []
    for g in grades:
        judged.append(g is not None)
        if g is None:
            gain.append(maxg if mode == "upper" else 0.0)
            kept.append(mode != "condensed")
        else:
            gain.append(float(g))
            kept.append(True)
    return gain, judged, kept


def measures_for_order(
    order: list[int],
    scores: Sequence[float],
    gain: list[float],
    judged: list[bool],
    kept: list[bool],
    k_list: Sequence[int],
) -> dict[str, float]:
    """All measures for one strict order (docs with -inf score come last and are not retrieved)."""
    order = [d for d in order if kept[d]]
    retrieved = [d for d in order if scores[d] != NEG]
    rel_all = [d for d in range(len(scores)) if kept[d] and gain[d] > 0]
    R = len(rel_all)
    out: dict[str, float] = {}
    if R == 0:
        return out
    is_rel = [gain[d] > 0 for d in retrieved]

    def hits(k: int) -> int:
        return sum(is_rel[:k])

    for k in k_list:
        out[f"C@{k}"] = float(hits(k) > 0)
        out[f"P@{k}"] = hits(k) / k
        out[f"Recall@{k}"] = hits(k) / R
        out[f"judged@{k}"] = sum(judged[d] for d in retrieved[:k]) / k
        # AP@K (trec map_cut) and FIRE's AP over the top K divided by hits
        s, h = 0.0, 0
        for i, d in enumerate(retrieved[:k]):
            if gain[d] > 0:
                h += 1
                s += h / (i + 1)
        out[f"AP@{k}"] = s / R
        out[f"AP_hits@{k}"] = s / h if h else 0.0
        for name, gf in (("nDCG", lambda x: x), ("nDCG_exp", lambda x: 2.0**x - 1.0)):
            dcg = sum(gf(gain[d]) / math.log2(i + 2) for i, d in enumerate(retrieved[:k]) if gain[d] > 0)
            ideal = sorted((gf(gain[d]) for d in rel_all), reverse=True)[:k]
            idcg = sum(x / math.log2(i + 2) for i, x in enumerate(ideal))
            out[f"{name}@{k}"] = dcg / idcg
    s, h = 0.0, 0
    for i, d in enumerate(retrieved):
        if gain[d] > 0:
            h += 1
            s += h / (i + 1)
    out["AP"] = s / R
    out["R-Prec"] = hits(R) / R
    out["P@R"] = hits(R) / R
    first = next((i for i, d in enumerate(retrieved) if gain[d] > 0), None)
    out["RR"] = 0.0 if first is None else 1.0 / (first + 1)
    out["MdR"] = out["MnR"] = float(next(i for i, d in enumerate(order) if gain[d] > 0) + 1)
    for name, gf in (("nDCG", lambda x: x), ("nDCG_exp", lambda x: 2.0**x - 1.0)):
        ideal = sorted((gf(gain[d]) for d in rel_all), reverse=True)
        for tag, cut in (("", len(scores) + 1), ("@R", R)):
            dcg = sum(gf(gain[d]) / math.log2(i + 2) for i, d in enumerate(retrieved[:cut]) if gain[d] > 0)
            idcg = sum(x / math.log2(i + 2) for i, x in enumerate(ideal[:cut]))
            out[f"{name}{tag}"] = dcg / idcg
    return out


def consistent_orders(scores: Sequence[float]) -> list[list[int]]:
    """Every order of the docs by decreasing score (all permutations inside tie groups)."""
    values = sorted(set(scores), reverse=True)
    groups = [[d for d in range(len(scores)) if scores[d] == v] for v in values]
    return [
        list(itertools.chain.from_iterable(p))
        for p in itertools.product(*(itertools.permutations(g) for g in groups))
    ]


def reference(
    scores: Sequence[float],
    grades: Sequence[float | None],
    mode: str,
    ties: str,
    k_list: Sequence[int],
    doc_ids: Sequence[str] | None = None,
    maxg: float = 1.0,
) -> dict[str, float]:
    """Reference values for one query under a tie policy and an unjudged mode."""
    gain, judged, kept = effective(grades, mode, maxg)
    n = len(scores)
    if ties == "tie-aware":
        orders = consistent_orders(scores)
        acc: dict[str, float] = {}
        for o in orders:
            for k, v in measures_for_order(o, scores, gain, judged, kept, k_list).items():
                acc[k] = acc.get(k, 0.0) + v
        return {k: v / len(orders) for k, v in acc.items()}
    if ties == "optimistic":
        order = sorted(range(n), key=lambda d: (-scores[d], -gain[d], -judged[d]))
    elif ties == "pessimistic":
        order = sorted(range(n), key=lambda d: (-scores[d], gain[d], judged[d]))
    elif ties == "docid":
        ids = doc_ids or [str(i) for i in range(n)]
        order = sorted(range(n), key=lambda d: ids[d], reverse=True)
        order = sorted(order, key=lambda d: -scores[d])  # stable: ties keep docid-descending order
    else:
        raise ValueError(ties)
    return measures_for_order(order, scores, gain, judged, kept, k_list)
