"""Saturation: how much headroom a measure has left once label noise and unjudged pairs count.

FIRE (§5) concludes that MSR-VTT is nearing saturation for Recall@10. A score near 100 says
little by itself: the labels are noisy (annotators disagree) and unjudged pairs leave the score
between two bounds. Per run and measure (percentage measures, per-query values in [0, 1]):

* **bounds** ``[L, U]``: the mean score with every unjudged pair irrelevant (``L``, what the
  tables print) and relevant (``U``), over the same queries (``fireval evaluate --unjudged
  lower,upper``).
* **label noise** ``eps``: the probability that one judged label is wrong, from the annotators'
  pairwise agreement ``P_o`` (:func:`fireval.judging.agreement.percent_agreement`). Two
  independent annotators who each err with probability ``eps`` agree with probability
  ``(1 - eps)^2 + eps^2``, so ``eps = (1 - sqrt(2 P_o - 1)) / 2`` (:func:`label_error_rate`;
  ``P_o <= 0.5`` is no better than chance and refused).
* **ceiling** ``c = 1 - eps``: the score a perfect ranking (every truly relevant document first)
  is expected to get under such labels, when each query's value hangs on one decisive label
  (C@K with one relevant document in the top K: the query counts as a miss when that label
  is wrong). The observed score cannot be told from the ceiling closer than that.
* **headroom** ``[max(0, c - U), max(0, c - L)]``: what is left to gain, at the optimistic and
  pessimistic end of the unjudged bounds. ``within_noise`` when even the pessimistic headroom
  is no larger than ``eps``: the run sits within the label noise of the ceiling, so further
  gains cannot be told from label errors (saturated). With no agreement given, ``eps = 0``
  (the ceiling is 100) and the row says so.

Assumptions, stated with the table: label errors are independent across labels and
annotators, with one rate for relevant and irrelevant votes; the aggregated label errs as often
as one vote (a majority of several votes errs less: the ceiling is then conservative, i.e. low);
the decisive-label model is exact for C@K with one relevant document in the top K and a
first-order approximation for other measures; sampling error (the CI of the score) is
separate and shown beside it in the report.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from fireval.core.errors import FirevalError

ASSUMPTIONS = (
    "label errors independent with one rate eps = (1 - sqrt(2 P_o - 1)) / 2 from the pairwise agreement P_o; "
    "ceiling 1 - eps assumes each query's value hangs on one decisive label (exact for C@K with one "
    "relevant document in the top K); the aggregated label errs as often as one vote (conservative); "
    "headroom between the unjudged-relevant (optimistic) and unjudged-irrelevant (pessimistic) bounds"
)


def label_error_rate(pairwise_agreement: float) -> float:
    """``eps`` with ``(1 - eps)^2 + eps^2 = P_o`` and ``eps <= 1/2`` (module docstring)."""
    p = float(pairwise_agreement)
    if not 0.5 < p <= 1.0:
        raise FirevalError(
            f"pairwise agreement must be in (0.5, 1] to estimate a label error rate, got {p:g} "
            "(at or below 0.5 the annotators agree no more than chance)"
        )
    return (1.0 - float(np.sqrt(2.0 * p - 1.0))) / 2.0


def _mean(v: npt.ArrayLike) -> float:
    a = np.asarray(v, dtype=np.float64)
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else float("nan")


def saturation_table(
    lower: Mapping[str, Mapping[str, npt.ArrayLike]],
    upper: Mapping[str, Mapping[str, npt.ArrayLike]],
    *,
    pairwise_agreement: float | None = None,
) -> list[dict[str, object]]:
    """Rows per run and measure: ``lower, upper, eps, ceiling, headroom_min, headroom_max, within_noise``.

    ``lower``/``upper`` map ``run -> measure -> per-query values`` (fractions in [0, 1]) with
    unjudged pairs irrelevant / relevant, over the same queries (NaN = left out of both).
    ``pairwise_agreement`` is ``P_o``; ``None`` gives ``eps = 0`` and ``agreement = None``.
    """
    eps = 0.0 if pairwise_agreement is None else label_error_rate(pairwise_agreement)
    ceiling = 1.0 - eps
    rows: list[dict[str, object]] = []
    for run, by_m in lower.items():
        for m, lv in by_m.items():
            lo = np.asarray(lv, dtype=np.float64)
            hi = np.asarray(upper[run][m], dtype=np.float64)
            if lo.shape != hi.shape:
                raise FirevalError(f"{run} {m}: bounds over different queries ({lo.size} vs {hi.size})")
            ok = ~(np.isnan(lo) | np.isnan(hi))
            low, high = _mean(lo[ok]), _mean(hi[ok])
            h_min = max(0.0, ceiling - high)
            h_max = max(0.0, ceiling - low)
            rows.append(
                {
                    "run": run,
                    "measure": m,
                    "n": int(ok.sum()),
                    "lower": low,
                    "upper": high,
                    "agreement": pairwise_agreement,
                    "eps": eps,
                    "ceiling": ceiling,
                    "headroom_min": h_min,
                    "headroom_max": h_max,
                    "within_noise": bool(h_max <= eps) if pairwise_agreement is not None else False,
                }
            )
    return rows
