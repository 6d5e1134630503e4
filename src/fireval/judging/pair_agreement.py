"""Agreement of each pair of annotators on the items both voted on (:func:`pair_agreement`).

From the store's votes (skips and adjudications excluded): ``agree / both`` for each pair,
computed as matrix products of item × annotator indicator matrices (``R^T R + I^T I`` over
``(R + I)^T (R + I)``, ``R`` relevant and ``I`` irrelevant votes), and each annotator's agreement
with all others (pooled over pairs). The admin status page shows it next to gold accuracy
(:meth:`fireval.judging.gold.Gold.accuracy`); :mod:`fireval.judging.gold` re-exports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fireval.judging.gold_items import ANSWERS


def pair_agreement(
    item_ids: np.ndarray, annotator_ids: np.ndarray, labels: np.ndarray, names: dict[int, str]
) -> dict[str, Any]:
    """Agreement of each annotator pair on the items both voted on, and of each annotator with the others.

    Inputs are parallel arrays of votes (``relevant``/``irrelevant`` only). Returns
    ``{"annotators": [names], "both": n×n counts, "agree": n×n counts, "matrix": n×n share or
    None, "with_others": {name: share or None}}`` (the diagonal is None).
    """
    keep = np.isin(labels.astype(str), ANSWERS)
    items, ann, lab = item_ids[keep], annotator_ids[keep], labels[keep].astype(str)
    ids = np.asarray(sorted(names), np.int64)
    order = [names[int(i)] for i in ids]
    n = ids.size
    if n == 0 or items.size == 0:
        empty = [[0] * n for _ in range(n)]
        return {
            "annotators": order,
            "both": empty,
            "agree": empty,
            "matrix": [[None] * n for _ in range(n)],
            "with_others": {name: None for name in order},
        }
    uniq, row = np.unique(items, return_inverse=True)
    col = np.searchsorted(ids, ann)
    R = np.zeros((uniq.size, n), np.float64)
    Irr = np.zeros((uniq.size, n), np.float64)
    rel = lab == "relevant"
    R[row[rel], col[rel]] = 1.0
    Irr[row[~rel], col[~rel]] = 1.0
    V = R + Irr
    both = (V.T @ V).round().astype(np.int64)
    agree = (R.T @ R + Irr.T @ Irr).round().astype(np.int64)
    np.fill_diagonal(both, 0)
    np.fill_diagonal(agree, 0)
    matrix = [
        [(int(agree[a, b]) / int(both[a, b]) if both[a, b] else None) for b in range(n)] for a in range(n)
    ]
    tot_both, tot_agree = both.sum(axis=1), agree.sum(axis=1)
    with_others = {
        order[a]: (int(tot_agree[a]) / int(tot_both[a]) if tot_both[a] else None) for a in range(n)
    }
    return {
        "annotators": order,
        "both": both.tolist(),
        "agree": agree.tolist(),
        "matrix": matrix,
        "with_others": with_others,
    }
