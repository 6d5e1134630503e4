"""Aggregation of human votes: majority labels, disagreements and agreement statistics.

Votes are ``relevant`` / ``irrelevant``; a ``skip`` is not a vote. For an item with ``n`` votes
of which ``r`` say relevant:

- the label is *relevant* if ``r > n/2``, *irrelevant* if ``n - r > n/2``, and the item is a
  **disagreement** otherwise (a tie; FIRE sends it to a third annotator). Items with no vote are
  *unlabelled*.
- **percent agreement** (FIRE App. C) over items with ``n >= 2``: the share of items whose votes
  are unanimous, overall and by ``n``; we also report the pairwise observed agreement
  ``sum_i [r_i(r_i-1) + (n_i-r_i)(n_i-r_i-1)] / sum_i n_i(n_i-1)``.
- **Krippendorff's α** (nominal) from the item × category count matrix, computed by the
  ``krippendorff`` package (Krippendorff 2011, "Computing Krippendorff's alpha-reliability").

Everything is vectorised with ``np.bincount`` over the vote arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

RELEVANT = 1
IRRELEVANT = 0
DISAGREEMENT = -1
UNLABELLED = -2


@dataclass(frozen=True)
class VoteCounts:
    """Per-item vote counts: ``n`` votes (skips excluded), ``r`` of them relevant."""

    n: npt.NDArray[np.int64]
    r: npt.NDArray[np.int64]

    @classmethod
    def from_votes(cls, item_index: npt.ArrayLike, labels: npt.ArrayLike, n_items: int) -> VoteCounts:
        """Count votes from parallel arrays: item index (0..n_items-1) and label string."""
        idx = np.asarray(item_index, dtype=np.int64)
        lab = np.asarray(labels, dtype=object)
        is_vote = (lab == "relevant") | (lab == "irrelevant")
        n = np.bincount(idx[is_vote], minlength=n_items).astype(np.int64)
        r = np.bincount(idx[lab == "relevant"], minlength=n_items).astype(np.int64)
        return cls(n=n, r=r)

    def decisions(self) -> npt.NDArray[np.int64]:
        """Majority decision per item: RELEVANT, IRRELEVANT, DISAGREEMENT or UNLABELLED."""
        out = np.full(self.n.shape, DISAGREEMENT, dtype=np.int64)
        out[2 * self.r > self.n] = RELEVANT
        out[2 * (self.n - self.r) > self.n] = IRRELEVANT
        out[self.n == 0] = UNLABELLED
        return out


def percent_agreement(counts: VoteCounts) -> dict[str, Any]:
    """Unanimity rate overall and by number of votes, plus pairwise observed agreement.

    Only items with at least two votes enter. Returns ``{"items": m, "unanimous": share,
    "pairwise": share, "by_votes": {n: {"items": m_n, "unanimous": share_n}}}``; shares are
    ``None`` when no item qualifies.
    """
    n, r = counts.n, counts.r
    multi = n >= 2
    unanimous = (r == n) | (r == 0)
    pairs = n * (n - 1)
    agree_pairs = r * (r - 1) + (n - r) * (n - r - 1)
    by: dict[int, dict[str, Any]] = {}
    for k in np.unique(n[multi]):
        m = n == k
        by[int(k)] = {"items": int(m.sum()), "unanimous": float(unanimous[m].mean())}
    total = int(multi.sum())
    return {
        "items": total,
        "unanimous": float(unanimous[multi].mean()) if total else None,
        "pairwise": float(agree_pairs[multi].sum() / pairs[multi].sum()) if total else None,
        "by_votes": by,
    }


def krippendorff_alpha(counts: VoteCounts) -> float | None:
    """Krippendorff's α (nominal) over items with at least two votes; ``None`` if undefined.

    ``α = 1 − D_o / D_e``: ``D_o`` the share of disagreeing ordered vote pairs within items
    (each item weighted by ``1/(n_i − 1)``), ``D_e`` the disagreement expected from the pooled
    label frequencies (Krippendorff 2011). Uses the ``krippendorff`` package's ``value_counts`` input (items × {irrelevant, relevant}).
    """
    import krippendorff

    multi = counts.n >= 2
    if not multi.any():
        return None
    vc = np.stack([counts.n[multi] - counts.r[multi], counts.r[multi]], axis=1)
    if (vc.sum(axis=0) > 0).sum() < 2:
        return None  # one category only: expected disagreement is zero, α undefined
    return float(krippendorff.alpha(value_counts=vc, level_of_measurement="nominal"))


def agreement_report(counts: VoteCounts) -> dict[str, Any]:
    """Percent agreement, α and the numbers of decided, disagreeing and unlabelled items."""
    dec = counts.decisions()
    rep = percent_agreement(counts)
    rep["alpha"] = krippendorff_alpha(counts)
    rep["relevant"] = int((dec == RELEVANT).sum())
    rep["irrelevant"] = int((dec == IRRELEVANT).sum())
    rep["disagreements"] = int((dec == DISAGREEMENT).sum())
    rep["unlabelled"] = int((dec == UNLABELLED).sum())
    return rep
