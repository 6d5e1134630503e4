"""Corrected scores with their uncertainty: per run, direction and measure, and paired differences.

For each (run, direction) the labels known now give per-query exact bounds
(:func:`fireval.estimation.status.value_bounds`). Then, in order:

* every query of the mean decided: the mean itself, a zero-width CI (method ``exact``); with
  complete labels this is the value ``fireval evaluate`` reports (tested);
* a sampled plan part for this run, direction and measure, or a walk for this run and direction
  (:func:`part_for`: the last plan given, in the order the plans were made; earlier plans only
  brought labels; an ``--exact`` round given after the sample turns the estimate into the bounds,
  since its labels reach only unsampled queries and ``x`` would depend on the sample):
  the stratified expansion estimator of
  :mod:`fireval.estimation.stratified` over the plan's strata and sample (method
  ``stratified-ht``). Queries outside every stratum enter with their exact value (or, if the
  labels no longer decide them, their bounds);
* otherwise: no estimate, the exact bounds as the interval (method ``bounds``).

A paired difference ``A - B`` (same direction and measure). When the two runs' walks share one
sample of queries (``plan --budget --paired``: :mod:`fireval.estimation.walk`), it is
the stratified estimator of the mean per-query difference ``(y_A - x_A) - (y_B - x_B)`` over the
shared strata and sample (method ``paired-stratified``: the runs' errors on the same queries
cancel); otherwise ``est_A - est_B`` with the sum of the two variances (method
``stratified-ht``: independent samples). Queries decided for both runs cancel exactly. Its bounds
are ``[lower_A - upper_B, upper_A - lower_B]`` (valid; not exact when the runs share unjudged pairs).

Units are those of ``fireval evaluate --json``: fractions in [0, 1]; MnR in ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.judgments import Judgments
from fireval.core.run import Run
from fireval.estimation.plan import Design, Part
from fireval.estimation.status import bounds_of, extreme_values, mean_bounds, value_bounds
from fireval.estimation.stratified import Z95, SecondPhase, stratified_estimate
from fireval.metrics.measures import Measure

F64 = npt.NDArray[np.float64]

UNITS = {"value": "fraction in [0, 1] (x100 for the percentages printed); MnR: rank (1 = best)"}


def value_text(x: object, measure: str) -> str:
    """A record's value as printed (:data:`UNITS`): percent with one decimal, MnR in ranks with
    two, ``-`` for none (None or NaN), never ``-0.0``."""
    if x is None:
        return "-"
    v = float(x)  # type: ignore[arg-type]
    if v != v:
        return "-"
    from fireval.core.units import fixed, percent

    return fixed(v, 2) if str(measure).startswith("MnR") else percent(v)


@dataclass
class _Est:
    estimate: float | None
    ci_low: float
    ci_high: float
    variance: float
    lower: float
    upper: float
    method: str
    est_low: float = float("nan")
    est_high: float = float("nan")


def _known(pop: npt.NDArray[np.bool_], x: F64, x_high: F64) -> npt.NDArray[np.bool_]:
    """Queries whose value the labels without the part's own sample decide (``x == x_high``)."""
    return np.asarray(np.abs(np.nan_to_num(np.where(pop, x_high, 0.0)) - x) <= 1e-12)


def _from_bounds(lower: float, upper: float) -> _Est:
    """What the labels alone give: the value (method ``exact``, a zero-width CI) where the bounds
    meet, else no estimate and the bounds as the interval (method ``bounds``)."""
    if abs(upper - lower) <= 1e-12:
        return _Est(lower, lower, lower, 0.0, lower, lower, "exact", lower, lower)
    return _Est(None, lower, upper, float("nan"), lower, upper, "bounds", lower, upper)


def _num(x: float | None) -> float | None:
    """A JSON-safe number: ``None`` for a missing or NaN value (no query in the mean)."""
    return None if x is None or x != x else float(x)


def _judged_count(judg: Judgments, part: Part) -> int:
    pairs = part.all_pairs
    if not pairs:
        return 0
    m = judg.matrix(part.direction, judged=True).tocsr()
    q = np.fromiter((p[0] for p in pairs), np.int64, len(pairs))
    d = np.fromiter((p[1] for p in pairs), np.int64, len(pairs))
    return int((np.asarray(m[q, d]).ravel() > 0).sum())


def estimate_part(
    lo: F64,
    hi: F64,
    part: Part | None,
    population: npt.NDArray[np.bool_],
    aux: F64 | None = None,
    aux_high: F64 | None = None,
    *,
    adjust: bool = True,
    interval: str = "agresti-coull",
    clip: bool = True,
) -> _Est:
    """One measure of one (run, direction): see the module docstring.

    ``aux`` (``x``) is a lower bound of every query's value that does not depend on this part's
    own sample (the bounds under every label but the pairs only this part drew): the stratum
    total is ``sum_h x_i + N_h * mean of (y_i - x_i) over the sample`` (a difference estimator,
    unbiased for every fixed ``x``). ``None``: ``x = 0``. ``aux_high`` is the upper bound under the
    same labels: a stratum member with ``aux_high == aux`` is *known* without this part's sample
    (e.g. decided by another measure's or run's sample); it enters with its value, and the stratum
    shrinks to its other members ``U_h``, estimated from the sampled ones among them (given how many
    fall there, a simple random sample of ``U_h``: unbiased conditionally on at least one; with none,
    ``U_h`` enters with its bounds).
    """
    pop = population & ~np.isnan(lo)
    n = int(pop.sum())
    lo0, hi0 = np.where(pop, lo, 0.0), np.where(pop, hi, 0.0)
    lower, upper = float(lo0.sum() / max(n, 1)), float(hi0.sum() / max(n, 1))
    decided = bool(np.all(np.abs(hi0 - lo0) <= 1e-12))
    if decided:
        upper = lower
    if n == 0:
        return _Est(None, float("nan"), float("nan"), 0.0, float("nan"), float("nan"), "empty")
    if decided or part is None or part.mode == "exact":
        return _from_bounds(lower, upper)
    x = np.zeros(lo.size) if aux is None else np.where(pop, np.nan_to_num(aux), 0.0)
    stratum, sampled = part.strata_arrays(lo.size)
    k = len(part.strata_queries)
    member = (stratum >= 0) & pop
    if aux_high is not None:  # known without this part's own sample: out of the strata
        known = _known(pop, x, aux_high)
        member &= ~known
    outside = pop & ~member
    big_n = np.bincount(stratum[member], minlength=k).astype(np.int64)
    smp = member & sampled
    hs = stratum[member]
    n_h = np.bincount(stratum[smp], minlength=k)
    second: SecondPhase | None = None
    if part.second_round:  # the second phase: U_h's members weigh u_h / m_h by the subsample
        smp, second = _second_phase(part, smp, stratum, k)
    x_tot = np.bincount(hs, weights=x[member], minlength=k)
    un_lo = np.bincount(hs, weights=lo0[member], minlength=k)
    un_hi = np.bincount(hs, weights=hi0[member], minlength=k)
    # residuals y - x lie in [0, max (hi - x)] (x is a lower bound of y): Popoviciu's bound
    spread = np.zeros(k)
    np.maximum.at(spread, hs, np.maximum(hi0[member] - x[member], 0.0))
    popov = (spread / 2.0) ** 2
    base = float(x_tot[n_h > 0].sum())
    e = stratified_estimate(
        n,
        (float(lo0[outside].sum()) + base, float(hi0[outside].sum()) + base),
        big_n,
        stratum[smp],
        lo0[smp] - x[smp],
        hi0[smp] - x[smp],
        un_lo,
        un_hi,
        popov,
        bounds=(lower, upper) if clip else None,
        adjust=adjust,
        interval=interval,
        second=second,
    )
    return _Est(
        e.estimate, e.ci_low, e.ci_high, e.variance, lower, upper, "stratified-ht", e.est_low, e.est_high
    )


def _second_phase(
    part: Part, smp: npt.NDArray[np.bool_], stratum: npt.NDArray[np.int64], k: int
) -> tuple[npt.NDArray[np.bool_], SecondPhase]:
    """The first-phase sample given to the estimator with the second phase (Hansen & Hurwitz
    1946): per stratum, of the ``U_h`` (undecided sampled queries when the subsample was drawn) among
    the estimator's members, only the subsampled ``S_h`` stay, each weighing ``|U_h| / |S_h|``
    (given how many fall among the members, a simple random sample of them). Where none of ``S_h``
    is a member, ``U_h`` stays whole with weight 1 (its queries enter with their bounds)."""
    first_n = np.bincount(stratum[smp], minlength=k).astype(np.float64)
    u_h, m_h = np.zeros(k), np.zeros(k)
    in_u = np.zeros(smp.size, bool)
    in_s = np.zeros(smp.size, bool)
    for h, (uq, sq) in enumerate(zip(part.second_undecided, part.second_sampled, strict=True)):
        u_in = np.asarray(uq, np.int64)
        u_in = u_in[smp[u_in]]
        s_in = np.asarray(sq, np.int64)
        s_in = s_in[smp[s_in]]
        if u_in.size == 0 or s_in.size == 0:
            continue
        u_h[h], m_h[h] = u_in.size, s_in.size
        in_u[u_in] = True
        in_s[s_in] = True
    keep = smp & (~in_u | in_s)
    weight = np.where(in_s, u_h[np.maximum(stratum, 0)] / np.maximum(m_h[np.maximum(stratum, 0)], 1.0), 1.0)
    return keep, SecondPhase(first_n, u_h, m_h, in_s[keep], weight[keep])


def _keys(part: Part, n_videos: int) -> npt.NDArray[np.int64]:
    """The part's pairs (every walk round's) as caption * n_videos + video."""
    pairs = part.all_pairs
    if not pairs:
        return np.zeros(0, np.int64)
    arr = np.asarray([p[:2] for p in pairs], np.int64)
    cap, vid = (arr[:, 0], arr[:, 1]) if part.direction is Direction.T2V else (arr[:, 1], arr[:, 0])
    return cap * n_videos + vid


def _same_text(coll: Collection, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``keys`` (caption * n_videos + video) with the same video's pair of every caption that shares
    the caption's normalised text: one judging item labels them all (a plan's pair reaches them)."""
    if keys.size == 0:
        return keys
    n_v = coll.n_videos
    gid = coll.text_groups
    sizes = np.bincount(gid)
    caps, vids = keys // n_v, keys % n_v
    multi = sizes[gid[caps]] > 1
    if not multi.any():
        return keys
    order = np.argsort(gid, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    g = gid[caps[multi]]
    reps = sizes[g]
    offset = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    extra = order[np.repeat(starts[g], reps) + offset] * n_v + np.repeat(vids[multi], reps)
    return np.unique(np.concatenate([keys, extra]))


def _aux_bounds(
    run: Run, judg: Judgments, coll: Collection, m: Measure, part: Part, designs: Sequence[Design | None]
) -> tuple[F64, F64] | None:
    """Per query, the bounds under every label except the pairs only ``part`` drew (so they do
    not depend on ``part``'s own sample; other parts' samples are drawn independently).
    ``None`` when ``part`` drew no pair of its own that is labelled (then the bounds themselves)."""
    n_v = coll.n_videos
    same_walk = part.mode == "walk"

    def shares_sample(p: Part) -> bool:  # an earlier round of this walk, or a run of its joint sample
        return (
            same_walk
            and p.mode == "walk"
            and p.direction is part.direction
            and (p.run == part.run or (part.group != "" and p.group == part.group))
        )

    group = [p for d in designs if d is not None for p in d.parts if p is not part and shares_sample(p)]
    mine = _same_text(coll, np.concatenate([_keys(part, n_v), *(_keys(p, n_v) for p in group)]))
    others = [
        _same_text(coll, _keys(p, n_v))
        for d in designs
        if d is not None
        for p in d.parts
        if p is not part and not shares_sample(p)
    ]
    own = np.setdiff1d(mine, np.concatenate(others)) if others else np.unique(mine)
    keys = np.asarray(judg.rows, np.int64) * n_v + np.asarray(judg.cols, np.int64)
    drop = np.isin(keys, own)
    if not drop.any():
        return None
    lo, hi = value_bounds(run, judg.select(~drop), part.direction, (m,), coll)
    return lo[str(m)], hi[str(m)]


def interval_for(part: Part | None) -> str:
    """The CI of a part's estimate: Agresti-Coull's at the effective sample size for a walk; the
    normal interval with the rare-event floor for the one-shot and target designs (as first
    measured: Wilson's undercovers their small per-measure samples in 6 cells of docs/estimation.md)."""
    return "normal" if part is not None and part.mode in ("budget", "target") else "agresti-coull"


def part_for(designs: Sequence[Design | None], run: str, direction: Direction, measure: str) -> Part | None:
    """The part an estimate of (run, direction, measure) uses: the one of the *last* plan given
    among its measure's sample, a walk and an exact round. Exact rounds planned after a sample add
    labels to the unsampled queries only, so the sample's auxiliary ``x`` would no longer be
    fixed: the estimate falls back to the bounds until the labels decide the mean."""
    best: Part | None = None
    for d in designs:
        for p in d.parts if d is not None else []:
            if (p.run, p.direction) == (run, direction) and p.measure in (measure, None):
                best = p
    return best


def estimate_runs(
    runs: Mapping[str, Run],
    judg: Judgments,
    coll: Collection,
    measures: tuple[Measure, ...],
    directions: Sequence[Direction],
    designs: Sequence[Design | None] = (),
    *,
    clip: bool = True,
    adjust: bool = True,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Records per (run, direction, measure), and paired differences between consecutive runs
    (every pair of runs, in the order given). ``clip=False`` leaves estimates and CIs unclipped to
    the exact bounds (the exactly unbiased estimator; tests); ``adjust=False`` leaves out the
    rare-event floor of the variance (the unbiased variance estimator; tests)."""
    records: list[dict[str, Any]] = []
    ests: dict[tuple[str, str, str], _Est] = {}
    ctxs: dict[tuple[str, str, str], _Ctx] = {}
    for name, run in runs.items():
        for d in directions:
            if not run.supports(d):
                continue
            worst, best = extreme_values(run, judg, d, measures, coll)
            lo, hi = bounds_of(worst, best)
            # queries without a known relevant doc enter evaluate's mean only in the labellings that
            # give them one: without a sample, report evaluate's exact bounds of the mean
            req = judg.has_relevant(d)
            agg = None if req.all() else mean_bounds(measures, worst, best, req)
            for m in measures:
                key = str(m)
                part = part_for(designs, name, d, key)
                pop = np.ones(run.n_queries(d), bool)
                if part is not None:
                    pop[np.asarray(part.excluded, np.int64)] = False
                judged = _judged_count(judg, part) if part is not None else 0
                aux = None
                if part is not None and part.mode != "exact":
                    aux = _aux_bounds(run, judg, coll, m, part, designs)
                x_lo, x_hi = aux if aux is not None else (lo[key], hi[key])
                if part is None and agg is not None:  # no sample: evaluate's exact bounds of the mean
                    e = _from_bounds(*agg[key])
                else:
                    e = estimate_part(
                        lo[key],
                        hi[key],
                        part,
                        pop,
                        x_lo,
                        x_hi,
                        clip=clip,
                        adjust=adjust,
                        interval=interval_for(part),
                    )
                ests[(name, d.value, key)] = e
                ctxs[(name, d.value, key)] = _Ctx(lo[key], hi[key], x_lo, x_hi, part, pop)
                und = int((np.abs(np.nan_to_num(hi[key] - lo[key])) > 1e-12)[pop].sum())
                records.append(
                    {
                        "run": name,
                        "direction": d.value,
                        "measure": key,
                        "estimate": _num(e.estimate),
                        "ci_low": _num(e.ci_low),
                        "ci_high": _num(e.ci_high),
                        "lower": _num(e.lower),
                        "upper": _num(e.upper),
                        "n": int((pop & ~np.isnan(lo[key])).sum()),
                        "undecided": und,
                        "method": e.method,
                        "sampled": len(part.all_pairs) if part is not None else 0,
                        "judged": judged,
                        "sampled_queries": sum(len(s) for s in part.sampled) if part is not None else 0,
                        "plan_mode": part.mode if part is not None else None,
                    }
                )
    diffs: list[dict[str, Any]] = []
    names = list(runs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for d in directions:
                for m in measures:
                    ea, eb = ests.get((a, d.value, str(m))), ests.get((b, d.value, str(m)))
                    if ea is None or eb is None or ea.method == "empty" or eb.method == "empty":
                        continue
                    joint = paired_joint(
                        ctxs[(a, d.value, str(m))], ctxs[(b, d.value, str(m))], ea, eb, clip=clip
                    )
                    diff = paired_difference(a, b, d.value, str(m), ea, eb)
                    if joint is not None:
                        diff.update(joint)
                    diffs.append(diff)
    return records, diffs


@dataclass
class _Ctx:
    """What a paired estimate needs of one (run, direction, measure): per-query bounds, the
    auxiliary ``x``, the part and the population of the mean."""

    lo: F64
    hi: F64
    x: F64
    x_high: F64
    part: Part | None
    pop: npt.NDArray[np.bool_]


def paired_joint(ca: _Ctx, cb: _Ctx, ea: _Est, eb: _Est, *, clip: bool = True) -> dict[str, Any] | None:
    """``A - B`` from one shared sample (module docstring; ``None`` when the runs' walks do not
    share one): the stratified estimator of the mean of ``e = (y_A - x_A) - (y_B - x_B)`` over the
    shared strata, plus the mean of ``x_A - x_B``; its variance from the ``e`` of the sampled
    queries (with the second phase's weights), and the normal 95% interval clipped to the
    difference's bounds. A member known for both runs without the sample (``x`` decides it) leaves
    its stratum, as in :func:`estimate_part`; known for one run, its ``y - x`` there is 0."""
    pa, pb = ca.part, cb.part
    if (
        pa is None
        or pb is None
        or pa.mode != "walk"
        or pb.mode != "walk"
        or pa.group == ""
        or pa.group != pb.group
        or pa.direction is not pb.direction
    ):
        return None
    pop = ca.pop & ~np.isnan(ca.lo)
    if not np.array_equal(pop, cb.pop & ~np.isnan(cb.lo)) or not pop.any():
        return None
    if ea.method == "exact" and eb.method == "exact":
        return None  # est_A - est_B is exact
    n = int(pop.sum())
    la, ha = np.where(pop, ca.lo, 0.0), np.where(pop, ca.hi, 0.0)
    lb, hb = np.where(pop, cb.lo, 0.0), np.where(pop, cb.hi, 0.0)
    xa = np.where(pop, np.nan_to_num(ca.x), 0.0)
    xb = np.where(pop, np.nan_to_num(cb.x), 0.0)
    e_lo, e_hi = (la - xa) - (hb - xb), (ha - xa) - (lb - xb)
    stratum, sampled = pa.strata_arrays(pop.size)
    k = len(pa.strata_queries)
    known_a, known_b = _known(pop, xa, ca.x_high), _known(pop, xb, cb.x_high)
    member = (stratum >= 0) & pop & ~(known_a & known_b)
    outside = pop & ~member
    hs = stratum[member]
    big_n = np.bincount(hs, minlength=k).astype(np.int64)
    smp = member & sampled
    n_h = np.bincount(stratum[smp], minlength=k)
    second: SecondPhase | None = None
    if pa.second_round:
        smp, second = _second_phase(pa, smp, stratum, k)
    lo_r, hi_r = np.full(k, np.inf), np.full(k, -np.inf)
    np.minimum.at(lo_r, hs, e_lo[member])
    np.maximum.at(hi_r, hs, e_hi[member])
    popov = np.where(big_n > 0, ((hi_r - lo_r) / 2.0) ** 2, 0.0)
    x_tot = np.bincount(hs, weights=(xa - xb)[member], minlength=k)
    base = float(x_tot[n_h > 0].sum())
    lower, upper = ea.lower - eb.upper, ea.upper - eb.lower
    e = stratified_estimate(
        n,
        (float((la - hb)[outside].sum()) + base, float((ha - lb)[outside].sum()) + base),
        big_n,
        stratum[smp],
        e_lo[smp],
        e_hi[smp],
        np.bincount(hs, weights=(la - hb)[member], minlength=k),
        np.bincount(hs, weights=(ha - lb)[member], minlength=k),
        popov,
        bounds=(lower, upper) if clip else None,
        adjust=False,
        interval="normal",
        second=second,
    )
    return {
        "estimate": e.estimate,
        "ci_low": e.ci_low,
        "ci_high": e.ci_high,
        "variance": e.variance,
        "method": "paired-stratified",
    }


def paired_difference(a: str, b: str, direction: str, measure: str, ea: _Est, eb: _Est) -> dict[str, Any]:
    """``A - B`` with its CI (independent designs: the variances add)."""
    lower, upper = ea.lower - eb.upper, ea.upper - eb.lower
    if ea.estimate is None or eb.estimate is None:
        est, lo, hi, method = None, lower, upper, "bounds"
    else:
        est = ea.estimate - eb.estimate
        sd = float(np.sqrt(max(ea.variance, 0.0) + max(eb.variance, 0.0)))
        # undecided sampled queries make each point an interval: it widens each side
        lo_pt, hi_pt = ea.est_low - eb.est_high, ea.est_high - eb.est_low
        lo, hi = max(lo_pt - Z95 * sd, lower), min(hi_pt + Z95 * sd, upper)
        method = "exact" if ea.method == eb.method == "exact" else "stratified-ht"
    return {
        "run_a": a,
        "run_b": b,
        "direction": direction,
        "measure": measure,
        "estimate": est,
        "ci_low": lo,
        "ci_high": hi,
        "lower": lower,
        "upper": upper,
        "variance": (max(ea.variance, 0.0) + max(eb.variance, 0.0)) if est is not None else None,
        "method": method,
    }
