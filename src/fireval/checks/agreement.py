"""Agreement between runs: do two runs on the same collection share more than chance beyond the positives?

Two real models on the same, correctly ordered collection agree far beyond chance on which
documents follow the instance positive (GRAM and VAST: 45–50% of their top 10). A run in another
row/column order agrees with a correctly ordered one only at chance (clip4clip–GRAM: 0.9%), and
then every per-query comparison, pooled overlap, RBO or fusion of the two is meaningless.

Statistic (per query, vectorised): ``o_i = |A_i ∩ B_i|``, the overlap of the two top-``K`` lists
with the instance positives left out (:mod:`fireval.checks.scan`). Chance is given twice:

* ``chance_uniform = K / (D - P)``: the hypergeometric mean share for two random ``K``-subsets
  of the ``D - P`` non-positive documents;
* the permutation null ``e_i = sum over d in A_i of n_B(d) / Q``, with ``n_B(d)`` the number of
  queries whose top-``K`` in ``B`` holds ``d``: the expected overlap of ``A_i`` with ``B``'s list
  of a random query. It keeps both runs' hub documents, so shared hubness is not agreement.

``ratio = mean(o) / mean(e)``, tested against ``MIN_RATIO`` = 1.25 with one-sided normal bounds
at ``1 - alpha`` (``alpha = 0.001``) from the per-query values ``o_i - 1.25 e_i``: ``fail``
(agreement at chance) when the upper bound is below 1.25, ``pass`` when the lower bound is above
it, else ``inconclusive`` (also with fewer than 30 queries). Lists are ``K = 50`` deep (the
alignment check looks at the top 10): two real models that both follow the text can still share
few of their top 10, and deeper lists give enough overlap counts for a tight test at 1,000
queries.
"""

from __future__ import annotations

import numpy as np

from fireval.checks.base import CheckResult, Status
from fireval.checks.definitions import AGREEMENT
from fireval.checks.scan import Scan

CHECK = AGREEMENT

ALPHA = 1e-3
#: agreement confidently below this multiple of chance is "at chance"
MIN_RATIO = 1.25
#: depth of the lists compared (deeper lists give more overlap counts, hence a tighter test)
DEPTH = 50
MIN_QUERIES = 30
_CHUNK = 1 << 14


def agreement(a: Scan, b: Scan, *, k: int = DEPTH) -> CheckResult:
    """The agreement check of two runs scanned in the same direction, on their top ``k``."""
    if a.top.shape[0] != b.top.shape[0] or a.n_docs != b.n_docs:
        raise ValueError("agreement needs two scans of the same collection and direction")
    k = min(k, a.k, b.k)
    # rows one of the runs does not rank at all (one tie over every document) are left out: their
    # top-K is a random draw, which says nothing about either run's order
    rows = np.flatnonzero(a.ranks_any() & b.ranks_any())
    ta = np.where(a.valid[rows, :k], a.top[rows, :k], -1)
    tb = np.where(b.valid[rows, :k], b.top[rows, :k], -2)
    n_q = ta.shape[0]
    overlap = np.zeros(n_q)
    for lo in range(0, n_q, _CHUNK):  # Q x K x K comparisons, chunked
        overlap[lo : lo + _CHUNK] = (ta[lo : lo + _CHUNK, :, None] == tb[lo : lo + _CHUNK, None, :]).sum(
            axis=(1, 2)
        )
    freq_b = np.bincount(tb[tb >= 0], minlength=a.n_docs) / max(n_q, 1)
    expected = np.where(ta >= 0, freq_b[np.maximum(ta, 0)], 0.0).sum(axis=1)
    top10 = (ta[:, :10, None] == tb[:, None, :10]).sum(axis=(1, 2))
    figures: dict[str, float | int | str] = {
        "direction": a.direction.value,
        "k": k,
        "queries": n_q,
        "overlap": _mean(overlap) / k,
        "overlap_top10": _mean(top10) / min(k, 10),
        "chance_uniform": float(k / max(a.n_docs - a.mean_positives, 1.0)),
        "chance_null": _mean(expected) / k,
    }
    if n_q < MIN_QUERIES or not _mean(expected) > 0:
        why = f"{n_q} queries" if n_q == a.top.shape[0] else f"the {n_q} queries both runs rank"
        return CheckResult(CHECK.name, Status.INCONCLUSIVE, f"cannot be told from {why}", figures)
    # the bounds of ratio = mean(o) / mean(e) at MIN_RATIO: the sign of mean(o - MIN_RATIO * e)
    diff = overlap - MIN_RATIO * expected
    se = float(diff.std(ddof=1) / np.sqrt(n_q)) or 1e-12
    from statistics import NormalDist  # the standard normal without scipy.special (slow to import)

    zc = float(NormalDist().inv_cdf(1.0 - ALPHA))
    ratio = float(overlap.mean() / expected.mean())
    figures["ratio"] = ratio
    figures["z"] = float(diff.mean() / se)
    where = f"{a.direction.value} top-{k} overlap beyond the instance positives"
    pct = (
        f"{100 * figures['overlap']:.1f}% vs {100 * figures['chance_null']:.1f}% by chance "
        f"(top 10: {100 * figures['overlap_top10']:.1f}%)"
    )
    if diff.mean() - zc * se > 0:
        return CheckResult(CHECK.name, Status.PASS, f"{where}: {pct}", figures)
    if diff.mean() + zc * se < 0:
        return CheckResult(
            CHECK.name,
            Status.FAIL,
            f"{where} is at chance ({pct}): the two runs are probably not in the same row/column order",
            figures,
        )
    return CheckResult(CHECK.name, Status.INCONCLUSIVE, f"{where}: {pct}, too close to tell", figures)


def _mean(x: np.ndarray) -> float:
    """The mean of ``x`` (NaN, without numpy's warning, when empty)."""
    return float(x.mean()) if x.size else float("nan")
