"""Agreement statistics of binary relevance votes from per-item counts ``n`` and ``r``.

Input is per item the number of independent votes ``n`` and how many say relevant ``r``
(``irrelevant`` = ``n - r``); only items with ``n >= 2`` can show agreement. Pure numpy
functions of the counts, with no source of votes: :mod:`fireval.judging.aggregate` (store side)
and :mod:`fireval.judging.agreement` (FIRE JSON and store readers, re-exporting these names)
both build on this module, which imports neither.

- **Percent agreement**: the share of items whose votes are unanimous (``r == 0`` or ``r == n``),
  overall and by number of labels ``n`` (FIRE Fig. 7), and the pairwise observed agreement
  ``sum_i [r_i(r_i-1) + (n_i-r_i)(n_i-r_i-1)] / sum_i n_i(n_i-1)``.
- **Krippendorff's α**, nominal (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"):
  ``α = 1 - D_o / D_e``. With two categories the coincidence matrix has one off-diagonal
  cell ``o_01 = sum_i r_i (n_i - r_i) / (n_i - 1)``; with ``N = sum n_i`` pairable values and
  ``R = sum r_i`` of them relevant, ``D_o = 2 o_01 / N`` and ``D_e = 2 R (N - R) / (N (N - 1))``,
  so ``α = 1 - (N - 1) o_01 / (R (N - R))``. Undefined (``None``) when fewer than two items are
  pairable or only one category occurs.
- **Bootstrap CI of α** over items (percentile interval, seeded): resampling ``m`` items with
  replacement only changes how often each *type* ``(n_i, r_i)`` occurs, so a resample is one
  multinomial draw of ``m`` over the types' shares, and α follows from type-weighted sums.
  That is exact (the same distribution as drawing items) and costs O(resamples × types).
- **Small samples**: fewer than :data:`MIN_ITEMS` pairable items or a CI wider than
  :data:`MAX_CI_WIDTH` give a warning, and α is then printed with two decimals, always with
  its CI (:func:`format_alpha`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

MIN_ITEMS = 30
"""Fewer pairable items than this: α is reported with a small-sample warning."""
MAX_CI_WIDTH = 0.2
"""A bootstrap CI of α wider than this also gives the warning."""
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0

I64 = npt.NDArray[np.int64]


def _arrays(n: npt.ArrayLike, r: npt.ArrayLike) -> tuple[I64, I64]:
    na, ra = np.asarray(n, np.int64).ravel(), np.asarray(r, np.int64).ravel()
    if na.shape != ra.shape or np.any(ra < 0) or np.any(ra > na):
        raise ValueError("n and r must have one entry per item with 0 <= r <= n")
    return na, ra


def percent_agreement(n: npt.ArrayLike, r: npt.ArrayLike) -> dict[str, Any]:
    """``{"items": m, "unanimous": share, "pairwise": share, "by_votes": {n: {"items", "unanimous"}}}``
    over the items with at least two votes (shares ``None`` when there is none)."""
    na, ra = _arrays(n, r)
    multi = na >= 2
    unanimous = (ra == na) | (ra == 0)
    pairs = na * (na - 1)
    agree_pairs = ra * (ra - 1) + (na - ra) * (na - ra - 1)
    by: dict[int, dict[str, Any]] = {}
    for k in np.unique(na[multi]):
        m = na == k
        by[int(k)] = {"items": int(m.sum()), "unanimous": float(unanimous[m].mean())}
    total = int(multi.sum())
    return {
        "items": total,
        "unanimous": float(unanimous[multi].mean()) if total else None,
        "pairwise": float(agree_pairs[multi].sum() / pairs[multi].sum()) if total else None,
        "by_votes": by,
    }


def by_labels(n: npt.ArrayLike, r: npt.ArrayLike) -> list[dict[str, Any]]:
    """Agreement by number of labels (FIRE Fig. 7): per ``n``, items, unanimous share, pairwise
    agreement and α of the items with exactly ``n`` labels (``n = 1``: items only)."""
    na, ra = _arrays(n, r)
    rows = []
    for k in np.unique(na[na >= 1]).tolist():
        m = na == k
        row: dict[str, Any] = {"labels": int(k), "items": int(m.sum())}
        if k >= 2:
            pa = percent_agreement(na[m], ra[m])
            row.update(unanimous=pa["unanimous"], pairwise=pa["pairwise"], alpha=alpha_nominal(na[m], ra[m]))
        else:
            row.update(unanimous=None, pairwise=None, alpha=None)
        rows.append(row)
    return rows


def _alpha_from_sums(
    big_n: npt.NDArray[np.float64], big_r: npt.NDArray[np.float64], o01: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    de = big_r * (big_n - big_r)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(de > 0, 1.0 - (big_n - 1.0) * o01 / np.where(de > 0, de, 1.0), np.nan)


def _item_terms(na: I64, ra: I64) -> tuple[I64, I64, npt.NDArray[np.float64]]:
    multi = na >= 2
    n2, r2 = na[multi], ra[multi]
    return n2, r2, r2 * (n2 - r2) / (n2 - 1.0)


def alpha_nominal(n: npt.ArrayLike, r: npt.ArrayLike) -> float | None:
    """Krippendorff's α (nominal, two categories) of the items with ``n >= 2`` (module docstring)."""
    na, ra = _arrays(n, r)
    n2, r2, o = _item_terms(na, ra)
    if n2.size < 1:
        return None
    a = _alpha_from_sums(np.array([n2.sum()], float), np.array([r2.sum()], float), np.array([o.sum()]))[0]
    return None if np.isnan(a) else float(a)


def alpha_interval(
    n: npt.ArrayLike,
    r: npt.ArrayLike,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of α over the items with ``n >= 2`` (resampled with replacement).

    Resamples where α is undefined (one category only) are left out; ``(None, None)`` when
    fewer than two items are pairable or α is undefined.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    na, ra = _arrays(n, r)
    n2, r2, o = _item_terms(na, ra)
    if n2.size < 2 or alpha_nominal(na, ra) is None:
        return None, None
    types, inverse, counts = np.unique(np.stack([n2, r2]), axis=1, return_inverse=True, return_counts=True)
    o_t = np.bincount(inverse.ravel(), weights=o, minlength=types.shape[1]) / counts
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n2.size, counts / n2.size, size=int(n_resamples)).astype(np.float64)
    a = _alpha_from_sums(w @ types[0].astype(float), w @ types[1].astype(float), w @ o_t)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return None, None
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(a, [tail, 100 - tail])
    return float(lo), float(hi)


def sample_warnings(items: int, low: float | None, high: float | None) -> list[str]:
    """Warnings for an α that rests on few items or has a wide CI."""
    out = []
    if items < MIN_ITEMS:
        out.append(
            f"only {items} items have two or more labels (fewer than {MIN_ITEMS}): agreement and α "
            "are rough; read α with its CI"
        )
    if low is not None and high is not None and high - low > MAX_CI_WIDTH:
        out.append(f"the CI of α is wide ({low:.2f} to {high:.2f}): label more items twice to pin it down")
    return out


def format_alpha(stats: dict[str, Any]) -> str:
    """α with its CI, e.g. ``0.412 (95% CI 0.351 to 0.468)``; two decimals when the sample is small."""
    a, lo, hi = stats.get("alpha"), stats.get("alpha_low"), stats.get("alpha_high")
    if a is None:
        return "undefined (fewer than 2 items with 2+ labels, or one category only)"
    from fireval.core.units import fixed  # never "-0.00"

    if lo is None or hi is None:
        return f"{fixed(a, 2)} (no CI: too few items)"
    small = bool(stats.get("warnings"))
    d = 2 if small else 3
    pct = int(round(100 * stats.get("level", 0.95)))
    return f"{fixed(a, d)} ({pct}% CI {fixed(lo, d)} to {fixed(hi, d)})"
