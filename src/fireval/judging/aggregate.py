"""Aggregation of human votes: majority labels, adjudication and disagreements.

Votes are ``relevant`` / ``irrelevant``; a ``skip`` is not a vote. For an item with ``n``
independent votes of which ``r`` say relevant:

- the label is *relevant* if ``r > n/2``, *irrelevant* if ``n - r > n/2``, and the item is a
  **disagreement** otherwise (a tie; FIRE sends it to a third annotator). Items with no vote are
  *unlabelled*.
- An **adjudication** (an admin's decision: :meth:`fireval.judging.store.Store.adjudicate` on a
  tie, or the resolution of a flag) is a label stored with ``kind = 'adjudication'`` (schema
  revision 0006; before it, the kind was inferred from the admin role and the tie). It decides an
  item whose votes tie or that has no vote, but is *not* an independent vote: it is kept apart in
  :attr:`VoteCounts.adj` and never enters ``n``, ``r``, percent agreement or Krippendorff's α
  (otherwise one click would add a third "annotator" who agrees with one side by construction).
  Where the votes have a majority, the majority stands; the export's provenance lists such an
  adjudication with ``decided: false`` (:mod:`fireval.judging.provenance`).
- Agreement statistics (percent agreement, Krippendorff's α with a bootstrap CI, agreement by
  number of labels) are computed in :mod:`fireval.judging.alpha` from ``n`` and ``r``.

Everything is vectorised with ``np.bincount`` over the vote arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.judging import alpha as _ag

RELEVANT = 1
IRRELEVANT = 0
DISAGREEMENT = -1
UNLABELLED = -2
NO_ADJUDICATION = -1


@dataclass(frozen=True)
class VoteCounts:
    """Per-item vote counts: ``n`` independent votes (skips and adjudications excluded), ``r`` of
    them relevant, and ``adj`` the adjudicated label (RELEVANT / IRRELEVANT, or -1 for none)."""

    n: npt.NDArray[np.int64]
    r: npt.NDArray[np.int64]
    adj: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))

    def __post_init__(self) -> None:
        if self.adj.size != self.n.size:  # no adjudication given
            object.__setattr__(self, "adj", np.full(self.n.shape, NO_ADJUDICATION, np.int64))

    @classmethod
    def from_votes(
        cls,
        item_index: npt.ArrayLike,
        labels: npt.ArrayLike,
        n_items: int,
        adjudication: npt.ArrayLike | None = None,
    ) -> VoteCounts:
        """Count votes from parallel arrays: item index (0..n_items-1) and label string.

        ``adjudication`` (bool per vote) marks adjudications: they leave the counts, and the
        last one of an item (in array order) is its ``adj``.
        """
        idx = np.asarray(item_index, dtype=np.int64)
        lab = np.asarray(labels, dtype=object)
        is_adj = np.zeros(idx.size, bool) if adjudication is None else np.asarray(adjudication, bool)
        rel, irr = lab == "relevant", lab == "irrelevant"
        is_vote = (rel | irr) & ~is_adj
        n = np.bincount(idx[is_vote], minlength=n_items).astype(np.int64)
        r = np.bincount(idx[rel & ~is_adj], minlength=n_items).astype(np.int64)
        adj = np.full(n_items, NO_ADJUDICATION, np.int64)
        a = np.flatnonzero(is_adj & (rel | irr))
        adj[idx[a]] = np.where(rel[a], RELEVANT, IRRELEVANT)  # later assignments win
        return cls(n=n, r=r, adj=adj)

    def decisions(self) -> npt.NDArray[np.int64]:
        """Per item: the majority of the votes; a tie goes to the adjudication when there is one.

        RELEVANT, IRRELEVANT, DISAGREEMENT or UNLABELLED.
        """
        out = np.full(self.n.shape, DISAGREEMENT, dtype=np.int64)
        out[2 * self.r > self.n] = RELEVANT
        out[2 * (self.n - self.r) > self.n] = IRRELEVANT
        out[self.n == 0] = UNLABELLED
        tie = (out == DISAGREEMENT) | (out == UNLABELLED)
        decided = tie & (self.adj != NO_ADJUDICATION)
        out[decided] = self.adj[decided]
        return out

    def adjudicated(self) -> npt.NDArray[np.bool_]:
        """Items whose label comes from an adjudication (a tie, or no vote, that an admin decided)."""
        n, r = self.n, self.r
        tie = (2 * r == n) & (self.adj != NO_ADJUDICATION)
        return tie


def percent_agreement(counts: VoteCounts) -> dict[str, Any]:
    """Unanimity rate overall and by number of votes, plus pairwise observed agreement.

    See :func:`fireval.judging.alpha.percent_agreement` (adjudications are not votes).
    """
    return _ag.percent_agreement(counts.n, counts.r)


def krippendorff_alpha(counts: VoteCounts) -> float | None:
    """Krippendorff's α (nominal) over items with at least two votes; ``None`` if undefined.

    See :func:`fireval.judging.alpha.alpha_nominal` (adjudications are not votes).
    """
    return _ag.alpha_nominal(counts.n, counts.r)


def agreement_report(counts: VoteCounts, **bootstrap: Any) -> dict[str, Any]:
    """Percent agreement, α with its bootstrap CI, warnings, and the numbers of decided,
    disagreeing, adjudicated and unlabelled items (``bootstrap``: ``n_resamples``, ``seed``,
    ``level`` of :func:`fireval.judging.alpha.alpha_interval`)."""
    dec = counts.decisions()
    rep = percent_agreement(counts)
    rep["alpha"] = krippendorff_alpha(counts)
    lo, hi = _ag.alpha_interval(counts.n, counts.r, **bootstrap)
    rep["alpha_low"], rep["alpha_high"] = lo, hi
    rep["warnings"] = _ag.sample_warnings(rep["items"], lo, hi)
    rep["relevant"] = int((dec == RELEVANT).sum())
    rep["irrelevant"] = int((dec == IRRELEVANT).sum())
    rep["disagreements"] = int((dec == DISAGREEMENT).sum())
    rep["unlabelled"] = int((dec == UNLABELLED).sum())
    rep["adjudicated"] = int(counts.adjudicated().sum())
    return rep
