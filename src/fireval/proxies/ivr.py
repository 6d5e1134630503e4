"""Instance-based bounds from proxy relevance (Wray et al. 2021, §5.2).

Instance-based evaluation counts one item as *the* positive. When a proxy says several items
are (near-)equally relevant — relevance at or above a tight threshold — which of them is the
"instance" is arbitrary. Taking, per query, the **highest-ranked** such item as the instance
positive gives an upper bound on C@K (what TVR papers call R@K); the **lowest-ranked** gives a
lower bound. The geometric mean of C@{1,5,10} is bounded the same way.

Ranks with ties: the upper bound uses the optimistic rank ``1 + #{score > s}``, the lower
bound the pessimistic rank ``#{score >= s}``, so both stay bounds whatever the tie order.

The candidates of a query are its items with relevance >= threshold (threshold in (0, 1])
**and its instance positives** (``instance``): the item the benchmark calls the positive is
always one of the interchangeable ones, so every query has a candidate and the bounds cover
all queries (``n``), and the run's own C@K always lies between them. Without ``instance``
only the queries with an item at the threshold are bounded (``n`` says how many).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.core.run import Run


@dataclass(frozen=True)
class IVRBounds:
    """Per-direction bounds: ``upper[K]``/``lower[K]`` are mean C@K (fractions) over queries."""

    direction: str
    threshold: float
    ks: tuple[int, ...]
    upper: dict[int, float]
    lower: dict[int, float]
    best_rank: npt.NDArray[np.float64]
    worst_rank: npt.NDArray[np.float64]
    n: int = 0
    n_queries: int = 0

    @property
    def geo_upper(self) -> float:
        """Geometric mean of the upper-bound C@K over ``ks``."""
        return _geo_mean([self.upper[k] for k in self.ks])

    @property
    def geo_lower(self) -> float:
        """Geometric mean of the lower-bound C@K over ``ks``."""
        return _geo_mean([self.lower[k] for k in self.ks])


def _geo_mean(values: Sequence[float]) -> float:
    """``exp(mean(log v))`` (a zero makes it ~0)."""
    return float(np.exp(np.mean(np.log(np.maximum(values, 1e-300)))))


def extreme_ranks(
    scores: npt.NDArray[np.floating], positives: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per row: optimistic rank of the best-scored positive, pessimistic rank of the worst.

    ``scores`` and ``positives`` are (queries × docs); rows without a positive give NaN.
    """
    s = np.asarray(scores, dtype=np.float64)
    has = positives.any(1)
    best = np.where(positives, s, -np.inf).max(1)
    worst = np.where(positives, s, np.inf).min(1)
    up = 1.0 + (s > best[:, None]).sum(1)
    lo = (s >= worst[:, None]).sum(1).astype(np.float64)
    return np.where(has, up, np.nan), np.where(has, lo, np.nan)


def ivr_bounds(
    run: Run,
    relevance: npt.NDArray[np.floating],
    threshold: float = 1.0,
    directions: Sequence[str] = ("t2v", "v2t"),
    ks: Sequence[int] = (1, 5, 10),
    chunk: int = 2048,
    instance: npt.NDArray[np.bool_] | None = None,
) -> dict[str, IVRBounds]:
    """IVR upper/lower bounds on C@K for ``run`` given caption × video ``relevance``.

    ``relevance[i, v] >= threshold`` marks the items that could each be the instance positive
    (use a tight threshold, e.g. 1.0 or 0.9 of a proxy); ``instance`` (caption × video, True
    at the instance positives) adds them to every query's candidates.
    """
    rel = np.asarray(relevance)
    if not 0 < threshold <= 1:  # also NaN: relevance is in [0, 1], 0 would make every item one
        raise FirevalError(f"threshold must be in (0, 1], got {threshold}")
    if rel.shape != run.shape:
        raise FirevalError(f"proxy relevance covers {rel.shape} but run {run.name!r} is {run.shape}")
    inst = None if instance is None else np.asarray(instance, dtype=bool)
    if inst is not None and inst.shape != rel.shape:
        raise FirevalError(f"instance positives cover {inst.shape} but relevance is {rel.shape}")
    out: dict[str, IVRBounds] = {}
    for dname in directions:
        d = Direction.parse(dname)
        if not run.supports(d):
            continue
        r = rel if d is Direction.T2V else rel.T
        ri = None if inst is None else (inst if d is Direction.T2V else inst.T)
        nq = r.shape[0]
        best = np.empty(nq)
        worst = np.empty(nq)
        for s in range(0, nq, chunk):
            e = min(nq, s + chunk)
            cand = r[s:e] >= threshold
            if ri is not None:
                cand |= ri[s:e]
            b, w = extreme_ranks(run.block(d, s, e), cand)
            best[s:e], worst[s:e] = b, w
        ok = ~np.isnan(best)
        up = {k: float((best[ok] <= k).mean()) if ok.any() else float("nan") for k in ks}
        lo = {k: float((worst[ok] <= k).mean()) if ok.any() else float("nan") for k in ks}
        out[d.value] = IVRBounds(
            d.value, threshold, tuple(ks), up, lo, best, worst, n=int(ok.sum()), n_queries=nq
        )
    return out
