"""Stratified expansion (Horvitz–Thompson) estimator of a mean over queries, its variance, its CI,
and the allocation of a sample across strata.

Design (one run, one direction, :mod:`fireval.estimation.plan`): the ``N`` queries of the mean
split into the *decided* ones (the known labels fix the query's value: ``lower == upper``) and
strata ``h`` of undecided ones (``N_h`` queries). In stratum ``h`` a simple random sample of
``n_h`` queries is drawn without replacement (inclusion probability ``pi = n_h / N_h``) and every
candidate pair of a sampled query is judged, which decides its value ``y_i``.

Estimator (Horvitz & Thompson 1952; stratified SRSWOR, Cochran 1977 §5.3)::

    T^   = sum_{decided} y_i + sum_h (N_h / n_h) sum_{i in s_h} y_i         (= sum y_i / pi_i)
    mean = T^ / N
    V^   = sum_h N_h^2 (1 - n_h / N_h) s_h^2 / n_h / N^2                       (s_h^2: sample variance)
    95% CI = mean -/+ 1.96 sqrt(V^)

``T^`` is unbiased for every labelling, and ``V^`` for ``Var(T^)/N^2`` when every sampled stratum
has ``n_h >= 2`` (checked by enumerating every sample, tests/estimation). Honest fallbacks:

* a stratum with ``n_h = 0`` contributes its exact bounds ``[sum lower, sum upper]`` (no guess);
* a stratum with ``n_h = 1 < N_h`` uses the largest variance any population inside its bounds
  can have, ``((max upper - min lower) / 2)^2`` (Popoviciu), in place of ``s_h^2``;
* a sampled query whose labels came back incomplete and do not decide it contributes its
  bounds: the estimate is then an interval ``[mean_lo, mean_hi]`` (the point is its middle) and
  the CI is ``[mean_lo - 1.96 sd, mean_hi + 1.96 sd]`` with the larger of the two variances;
* rare events (``adjust``, the default): a stratum whose sample is all 0s (or all 1s) would
  claim zero variance and the CI would miss every time the stratum holds a few relevant ones;
  ``s_h^2`` is raised to at least ``spread_h^2 p~ (1 - p~)`` with ``p~ = (k_h + 2) / (n_h + 4)`` for
  such a degenerate sample (two pseudo-successes and two pseudo-failures: Agresti & Coull 1998) and
  ``p~ = (k_h + 1) / (n_h + 2)`` otherwise (Laplace's rule of succession); ``k_h`` = the sample sum
  over the stratum's spread, ``spread_h`` = the largest residual range. The variance estimate is thus
  conservative (``adjust=False`` gives the unbiased one, checked by enumeration);
* the CI is clipped to the exact bounds of the mean (the true mean always lies inside them).

The CI (``interval="agresti-coull"``, the default): the values of C@K, RR and MnR per query are
bounded, mostly 0/1 given the bounds, and often rare (few undecided queries turn relevant), where a
normal interval ``mean -/+ 1.96 sd`` undercovers and a sample of all 0s claims zero width. The
sampled, incomplete strata's total ``T = sum_h N_h ybar_h`` is written as a share ``p = T / M`` of
its largest value ``M = sum_h N_h spread_h``, and the CI is Agresti & Coull's (1998) interval for
``p`` (``x = p n``: ``p~ = (x + z^2/2) / (n + z^2)``, ``p~ -/+ z sqrt(p~ (1 - p~) / (n + z^2))``) at
Kish's effective sample size ``n = n_eff = p (1 - p) / (V^ / M^2)`` (the ``n`` of a simple random
sample with the same variance); when ``V^ = 0`` (all 0s, or ``p`` at 0 or 1) ``n_eff`` is the sample
size of a simple random sample with the same sampling fraction, ``n / (1 - n / N)``. This is an
interval for proportions from complex samples at the design effect (Korn & Graubard 1998 use
Clopper–Pearson with the same effective size; Dean & Pagano 2015 compare the forms).
``interval="wilson"`` gives Wilson's (1927) score interval at the same size instead: it was the
default until docs/estimation.md measured it below 93% where few undecided queries turn relevant and
most of them are sampled (Agresti–Coull is a little wider there, and the same elsewhere).
Complete strata are exact; unsampled strata add their bounds. ``interval="normal"`` gives the
normal interval (with the ``adjust`` floor) of the first version.
The reported ``variance`` (used by paired differences) is the normal one.

Second phase (walk design, Hansen & Hurwitz 1946; Särndal et al. 1992 §9.3, Cochran 1977 §13.6):
of the ``n_h`` sampled queries of stratum ``h``, the ``u_h`` still undecided when the budget ran short
(``U_h``) were subsampled: a simple random sample ``S_h`` of ``m_h`` of them was walked to the end
(:class:`SecondPhase`). With ``z`` the (residual) values and ``D_h = s_h \\ U_h``::

    t^_h  = sum_{D_h} z_i + (u_h / m_h) sum_{S_h} z_i        (unbiased for sum_{s_h} z_i given s_h)
    T^_h  = (N_h / n_h) t^_h
    v_h   = u_h^2 (1/m_h - 1/u_h) s_{2h}^2                      (s_{2h}^2: variance over S_h)
    q^_h  = sum_{D_h} z_i^2 + (u_h / m_h) sum_{S_h} z_i^2
    s^_h^2 = (q^_h - (t^_h^2 - v_h) / n_h) / (n_h - 1)          (unbiased for s_h^2, given s_h)
    V^(T^_h) = N_h^2 (1/n_h - 1/N_h) s^_h^2 + (N_h / n_h)^2 v_h

``E[V^] = Var_1(T^) + E_1[(N_h/n_h)^2 Var_2(t^_h)] = Var(T^_h)`` (the two-phase variance), checked by
enumerating every (first-phase sample x subsample) in tests/estimation/test_walk.py. A stratum with
``m_h = u_h`` is a one-phase stratum; with no subsampled query among the estimator's members, ``U_h``
enters with its bounds.

Allocation (:func:`allocate`): minimise ``sum V_h`` under ``sum n_h c_h <= budget`` (``c_h``: the
largest number of candidate pairs of a query in the stratum, so the budget is never exceeded).
The marginal gain of the n-th query of stratum h per pair is ``A_h / (n (n-1))`` with
``A_h = N_h^2 S_h^2 / c_h``, decreasing in n, so the greedy (optimal for this separable convex
problem) is a threshold: ``n_h(lam) = floor((1 + sqrt(1 + 4 A_h / lam)) / 2)`` clipped to
``[2, N_h]`` (0 when ``A_h < 2 lam``), with ``lam`` found by bisection. No per-stratum loop.
When the budget allows, every stratum gets at least 2 queries first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: two-sided 95% normal quantile
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """A mean over queries: the point, its interval of non-decided sampled values, variance, CI."""

    estimate: float
    est_low: float
    est_high: float
    variance: float
    ci_low: float
    ci_high: float


def stratified_estimate(
    n_total: int,
    decided: tuple[float, float],
    strata_size: I64,
    sample_stratum: I64,
    y_low: F64,
    y_high: F64,
    unsampled_low: npt.ArrayLike,
    unsampled_high: npt.ArrayLike,
    popoviciu: F64,
    *,
    bounds: tuple[float, float] | None = None,
    z: float = Z95,
    adjust: bool = True,
    interval: str = "agresti-coull",
    second: SecondPhase | None = None,
) -> Estimate:
    """The stratified expansion estimate of a mean over ``n_total`` queries.

    ``decided`` = the sums of the lower and upper bounds over the queries outside every stratum
    (equal where the labels decide them); ``strata_size[h]`` = ``N_h``; ``sample_stratum[i]`` the stratum of sampled query ``i`` whose
    value lies in ``[y_low[i], y_high[i]]`` (equal when decided); ``unsampled_low/high[h]`` the
    sums of the bounds over stratum ``h`` (used only where ``n_h = 0``); ``popoviciu[h]`` the
    variance bound used where ``n_h = 1 < N_h``; ``bounds`` the exact bounds of the mean;
    ``second`` the second phase (the sampled queries given are then the first-phase ones outside
    ``U_h`` and the subsample).
    """
    big_n = np.asarray(strata_size, np.float64)
    h = np.asarray(sample_stratum, np.int64)
    k = big_n.size
    n_h = np.bincount(h, minlength=k).astype(np.float64)
    w = np.ones(h.size) if second is None else np.asarray(second.weight, np.float64)
    if second is not None:
        n_h = np.asarray(second.first_n, np.float64)
    sampled = n_h > 0
    safe_n = np.where(sampled, n_h, 1.0)
    fpc = np.where(sampled, 1.0 - n_h / np.where(big_n > 0, big_n, 1.0), 0.0)
    totals = []
    variances = []
    wilson = []
    spread = 2.0 * np.sqrt(np.asarray(popoviciu, np.float64))
    sub = np.zeros(k, bool) if second is None else second.subsampled()
    for y in (np.asarray(y_low, np.float64), np.asarray(y_high, np.float64)):
        s1 = np.bincount(h, weights=w * y, minlength=k)
        mean_h = s1 / safe_n
        v2 = np.zeros(k)
        ss: F64
        if second is None:
            dev = y - mean_h[h]
            ss = np.asarray(np.bincount(h, weights=dev * dev, minlength=k), np.float64)
        else:  # two-phase: s_h^2 and the second-phase term estimated (module docstring)
            v2 = second.variance_term(h, y, np.asarray(popoviciu, np.float64))
            q = np.bincount(h, weights=w * y * y, minlength=k)
            ss = q - (s1 * s1 - v2) / safe_n
        s2 = np.where(n_h >= 2, ss / np.maximum(n_h - 1.0, 1.0), np.asarray(popoviciu, np.float64))
        wilson.append(_wilson_total(big_n, n_h, fpc, safe_n, mean_h, s2, spread, z, v2, sub, interval))
        if adjust:  # rare events: a sample of all 0s (or all 1s) must not claim zero variance
            spread = 2.0 * np.sqrt(np.asarray(popoviciu, np.float64))
            k_h = np.clip(s1 / np.where(spread > 0, spread, 1.0), 0.0, n_h)
            # two pseudo-successes and failures where the sample is all 0s or all at the spread
            # (Agresti & Coull), one of each elsewhere (Laplace)
            degenerate = (k_h <= 1e-12) | (k_h >= n_h - 1e-12)
            p_t = np.where(degenerate, (k_h + 2.0) / (n_h + 4.0), (k_h + 1.0) / (n_h + 2.0))
            s2 = np.where(n_h >= 2, np.maximum(s2, spread * spread * p_t * (1.0 - p_t)), s2)
        var_h = np.where(sampled, big_n * big_n * fpc * s2 / safe_n + (big_n / safe_n) ** 2 * v2, 0.0)
        totals.append(np.where(sampled, big_n * mean_h, 0.0))
        variances.append(float(var_h.sum()))
    lo_t = decided[0] + float(totals[0].sum()) + float(np.asarray(unsampled_low)[~sampled].sum())
    hi_t = decided[1] + float(totals[1].sum()) + float(np.asarray(unsampled_high)[~sampled].sum())
    n = float(max(n_total, 1))
    est_lo, est_hi = lo_t / n, hi_t / n
    var = max(variances) / (n * n)
    sd = float(np.sqrt(max(var, 0.0)))
    ci_lo, ci_hi = est_lo - z * sd, est_hi + z * sd
    if interval in ("agresti-coull", "wilson"):
        ci_lo = est_lo + (wilson[0][0] - float(totals[0].sum())) / n
        ci_hi = est_hi + (wilson[1][1] - float(totals[1].sum())) / n
    ci_lo, ci_hi = min(ci_lo, est_lo), max(ci_hi, est_hi)  # no rounding may put the point outside
    if bounds is not None:
        ci_lo, ci_hi = max(ci_lo, bounds[0]), min(ci_hi, bounds[1])
        est_lo, est_hi = min(max(est_lo, bounds[0]), bounds[1]), min(max(est_hi, bounds[0]), bounds[1])
    return Estimate(
        estimate=(est_lo + est_hi) / 2.0,
        est_low=est_lo,
        est_high=est_hi,
        variance=var,
        ci_low=ci_lo,
        ci_high=ci_hi,
    )


@dataclass(frozen=True)
class SecondPhase:
    """A second phase inside the first-phase sample (module docstring): ``first_n[h]`` = ``n_h``,
    ``undecided[h]`` = ``u_h``, ``chosen[h]`` = ``m_h``; per sampled query given, ``in_second``
    (a member of the subsample) and ``weight`` (``u_h / m_h`` there, else 1)."""

    first_n: F64
    undecided: F64
    chosen: F64
    in_second: npt.NDArray[np.bool_]
    weight: F64

    def subsampled(self) -> npt.NDArray[np.bool_]:
        return np.asarray((self.chosen > 0) & (self.chosen < self.undecided), bool)

    def variance_term(self, h: I64, y: F64, popoviciu: F64) -> F64:
        """``v_h = u_h^2 (1 / m_h - 1 / u_h) s2_h^2`` (``s2_h^2``: the subsample's variance; Popoviciu's
        bound where ``m_h = 1``): unbiased for the second phase's variance of ``u_h ybar_2h``."""
        k = self.first_n.size
        hs, ys = h[self.in_second], y[self.in_second]
        m = self.chosen
        s1 = np.bincount(hs, weights=ys, minlength=k)
        dev = ys - (s1 / np.maximum(m, 1.0))[hs]
        ss = np.bincount(hs, weights=dev * dev, minlength=k)
        s2 = np.where(m >= 2, ss / np.maximum(m - 1.0, 1.0), popoviciu)
        u = self.undecided
        return np.where(
            self.subsampled(), u * u * (1.0 / np.maximum(m, 1.0) - 1.0 / np.maximum(u, 1.0)) * s2, 0.0
        )


def wilson_bounds(p: float, n_eff: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's (1927) score interval for a proportion ``p`` observed on ``n_eff`` trials."""
    if n_eff <= 0:
        return 0.0, 1.0
    z2n = z * z / n_eff
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * np.sqrt(max(p * (1.0 - p), 0.0) / n_eff + z2n / (4.0 * n_eff)) / (1.0 + z2n)
    return float(max(centre - half, 0.0)), float(min(centre + half, 1.0))


def agresti_coull_bounds(p: float, n_eff: float, z: float = Z95) -> tuple[float, float]:
    """Agresti & Coull's (1998) interval for a proportion ``p`` observed on ``n_eff`` trials: the
    Wald interval around ``p~ = (p n + z^2/2) / (n + z^2)`` with ``n + z^2`` trials."""
    if n_eff <= 0:
        return 0.0, 1.0
    n_t = n_eff + z * z
    p_t = (p * n_eff + z * z / 2.0) / n_t
    half = z * np.sqrt(max(p_t * (1.0 - p_t), 0.0) / n_t)
    return float(max(p_t - half, 0.0)), float(min(p_t + half, 1.0))


def _wilson_total(
    big_n: F64,
    n_h: F64,
    fpc: F64,
    safe_n: F64,
    mean_h: F64,
    s2: F64,
    spread: F64,
    z: float,
    v2: F64 | None = None,
    sub: npt.NDArray[np.bool_] | None = None,
    method: str = "agresti-coull",
) -> tuple[float, float]:
    """The 95% interval of the sampled strata's total ``sum_h N_h ybar_h`` (module docstring:
    Agresti-Coull's or Wilson's interval on the share of the strata's largest total, at Kish's
    effective sample size)."""
    v2 = np.zeros(big_n.size) if v2 is None else v2
    sub = np.zeros(big_n.size, bool) if sub is None else sub
    part = (n_h > 0) & ((n_h < big_n) | sub) & (spread > 0)  # complete strata are exact
    exact = float(np.where((n_h > 0) & ~part, big_n * mean_h, 0.0).sum())
    mass = float((big_n * spread)[part].sum())
    if mass <= 0:
        return exact, exact
    total = float((big_n * mean_h)[part].sum())
    var = float((big_n * big_n * fpc * s2 / safe_n + (big_n / safe_n) ** 2 * v2)[part].sum())
    p = min(max(total / mass, 0.0), 1.0)
    n = float(n_h[part].sum())
    f = n / float(big_n[part].sum())
    n_srs = n / max(1.0 - f, 1e-12)  # a simple random sample's effective size (with its FPC)
    n_eff = p * (1.0 - p) * mass * mass / var if var > 0 and 0.0 < p < 1.0 else n_srs
    lo, hi = (agresti_coull_bounds if method == "agresti-coull" else wilson_bounds)(p, n_eff, z)
    return exact + mass * lo, exact + mass * hi


def predicted_variance(strata_size: npt.ArrayLike, s2: F64, n_h: npt.ArrayLike, n_total: F64) -> F64:
    """``sum_h N_h^2 (1/n_h - 1/N_h) S_h^2 / N^2`` per column of ``s2`` (strata x measures),
    with ``n_total`` the ``N`` of each stratum's design; unsampled strata count their whole
    ``N_h^2 S_h^2 * 4`` (a wide stand-in: their bounds enter the CI instead)."""
    big_n = np.asarray(strata_size, np.float64)[:, None]
    n = np.asarray(n_h, np.float64)[:, None]
    nt = np.asarray(n_total, np.float64)[:, None]
    per = np.where(n > 0, big_n * big_n * (1.0 / np.maximum(n, 1.0) - 1.0 / big_n), 4.0 * big_n * big_n)
    return np.asarray(per * s2 / (nt * nt), np.float64)


def allocation_at(lam: float, a: F64, strata_size: I64) -> I64:
    """``n_h(lam)`` of the threshold greedy (module docstring)."""
    big_n = np.asarray(strata_size, np.int64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        root = np.floor((1.0 + np.sqrt(1.0 + 4.0 * np.asarray(a, np.float64) / lam)) / 2.0)
    n = np.where(np.isfinite(root), root, big_n.astype(np.float64))
    n = np.where((n < 2) | (np.asarray(a) <= 0), 0.0, n)  # at least 2 (a variance), or none
    n = np.minimum(n, big_n.astype(np.float64))  # a one-query stratum is taken whole
    return n.astype(np.int64)


def allocate(strata_size: I64, weight: F64, cost: I64, budget: float, *, iterations: int = 80) -> I64:
    """Sample sizes ``n_h`` minimising ``sum_h weight_h / n_h`` (``weight_h = N_h^2 S_h^2`` summed
    over the estimates it enters, each over its ``N^2``) with ``sum n_h cost_h <= budget``."""
    c = np.maximum(np.asarray(cost, np.float64), 1.0)
    w = np.asarray(weight, np.float64)
    # a positive weight stays positive per unit cost (a subnormal one would underflow to 0)
    a = np.where(w > 0, np.maximum(w / c, np.finfo(np.float64).tiny), 0.0)
    if a.size == 0 or budget <= 0:
        return np.zeros(a.size, np.int64)
    big_n = np.asarray(strata_size, np.int64)
    full = np.where(a > 0, big_n, 0)
    if float((full * c).sum()) <= budget:
        return full.astype(np.int64)
    # every stratum gets at least 2 (a variance, and no stratum left to its bounds) when the budget
    # allows; otherwise the threshold rule alone (strata left without a sample enter with bounds)
    floor = np.where(a > 0, np.minimum(big_n, 2), 0)
    if float((floor * c).sum()) > budget:
        floor = np.zeros_like(floor)
    lo, hi = -60.0, 60.0  # log2 of lam
    pos = a[a > 0]
    if pos.size:
        mid = float(np.log2(pos.max()))
        lo, hi = mid - 80.0, mid + 2.0
    for _ in range(iterations):
        m = (lo + hi) / 2.0
        if float((np.maximum(allocation_at(2.0**m, a, big_n), floor) * c).sum()) <= budget:
            hi = m
        else:
            lo = m
    return np.maximum(allocation_at(2.0**hi, a, big_n), floor).astype(np.int64)


def srswor(rng: np.random.Generator, stratum_of: I64, n_h: I64) -> npt.NDArray[np.bool_]:
    """A stratified simple random sample without replacement: ``n_h[h]`` units of each stratum,
    chosen by the smallest random keys (one vectorised sort, no per-stratum loop)."""
    s = np.asarray(stratum_of, np.int64)
    keys = rng.random(s.size)
    order = np.lexsort((keys, s))
    sorted_s = s[order]
    start = np.searchsorted(sorted_s, sorted_s, side="left")
    pos = np.arange(s.size) - start
    chosen = np.zeros(s.size, bool)
    chosen[order] = pos < np.asarray(n_h, np.int64)[sorted_s]
    return chosen
