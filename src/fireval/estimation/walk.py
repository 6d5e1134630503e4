"""The budget design by default: one stratified sample of queries per (run, direction), walked in
rank order over rounds until each sampled query is decided or the budget is spent.

Round 1 (``fireval plan --budget N``), per (run, direction):

1. **Strata**: the queries that any requested measure leaves undecided and that have candidate
   pairs (the union over the measures, :meth:`fireval.estimation.status.QueryStatus.union`),
   stratified as the one-shot design does (:func:`fireval.estimation.plan.stratify`: rank of the
   first candidate x number of candidates).
2. **Allocation**: minimise ``sum_m Var(mean_m)`` over every requested measure (one joint sample
   serves them all: C@1 and C@5 are decided along C@10's walk) under
   ``sum_h n_h cbar_h <= N``, where ``cbar_h`` is the stratum's mean *expected walk cost*: a query
   with ``c`` candidates costs ``sum_{j<c} (1 - p)^j = (1 - (1 - p)^c) / p`` pairs if each candidate
   is relevant with probability ``p``; ``p`` is half the relevance rate of the judged pairs inside
   the run's top 10 (:attr:`~fireval.estimation.status.QueryStatus.top_rate`; halved because the
   unjudged pairs are those no pooled run ranked high). ``p`` only sizes the sample; the estimator
   never uses it. Variances as in the one-shot design (``S_h^2`` = the largest a query's value can
   have), with :func:`fireval.estimation.stratified.allocate`.
3. **Sample**: a simple random sample without replacement of ``n_h`` queries per stratum, seeded
   with (seed, run, direction, ``"walk"``), independently per (run, direction).
4. **Round r** (``fireval plan --plan ROUND_r-1.jsonl``, same runs and labels source): for every
   sampled query that some measure leaves undecided under the labels known now, its first unjudged
   candidate in rank order (the union over the measures). The same queries in every round; the
   walk is a deterministic follow-up of the sample, so each query's inclusion probability stays
   ``n_h / N_h`` and the stratified expansion estimator is unchanged.
5. **Second phase** (Hansen & Hurwitz 1946: subsampling the nonrespondents; Cochran 1977 §13.6,
   Särndal et al. 1992 ch. 9: two-phase sampling). Before round r >= 2, the still-undecided sampled
   queries' expected remaining walk cost is ``sum_i (1 - (1 - p)^c_i) / p`` (``c_i``: the query's
   candidates left; ``p`` = the smaller of the prior and the walk's own rate, relevant pairs per pair
   walked, :func:`walk_rate`). When it exceeds the budget left, a seeded simple random subsample
   of ``m_h = round(f u_h)`` (at least ``min(u_h, 2)``) of the ``u_h`` undecided sampled queries of each
   stratum is drawn, ``f = 0.9 * left / cost`` (:func:`second_phase_sizes`), once per part; only
   the subsample is walked on. The estimator weighs each subsampled query by ``u_h / m_h`` among the
   undecided remainder (:mod:`fireval.estimation.stratified`: unbiased whenever the subsample's
   walks finish, with the second-phase variance term). The design records ``f``
   (``second_phase_rate``), the round (``second_phase_round``) and, per stratum, the undecided
   queries, the subsample and its rate.
6. **Budget**: the rounds together plan at most N pairs. When a round's pairs would still pass it,
   a seeded random subset of them fills the rest; the walk then stops, and sampled (or subsampled)
   queries it left undecided enter the estimate with their bounds (an interval estimate: honest,
   wider; the plan verb says so).

7. **Paired** (``plan --paired``, ``build_walk(joint=True)``): the runs of a direction share one
   sample. Strata first by which runs leave a query undecided (:func:`stratify`'s ``pattern``), then
   as in step 1 on the union of the runs' candidates; the cost of a query is the sum of its runs'
   expected walk costs, each over its candidates that no earlier run of the sample has (a shared
   pair is judged once); one sample seeded with (seed, the runs joined by ``+``, direction,
   ``"walk"``); each run's part (``group``: the shared sample) walks its own candidates of the shared
   queries; the second phase draws one subsample per shared sample. The budget counts distinct pairs
   (a pair two runs' walks reach in one round is one judgment).

A round's plan carries the whole walk (``walked``: the pairs of the earlier rounds), so the last
round's plan is all ``fireval estimate --plan`` needs to tell the walk's own labels apart.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.estimation.plan import (
    Design,
    Part,
    _scale,
    collection_digest,
    part_seed,
    stratify,
)
from fireval.estimation.status import Candidates, QueryStatus
from fireval.estimation.stratified import Z95, allocate, predicted_variance, srswor

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

#: the walk's per-candidate relevance prior is ``top_rate * PRIOR_SHRINK``, clipped to this range
PRIOR_SHRINK = 0.5
PRIOR_RANGE = (0.01, 0.5)
#: round 1 allocates this share of the budget by expected cost; the rest absorbs longer walks
ALLOCATED = 0.95
#: the second phase plans this share of the budget left by expected cost
SECOND_MARGIN = 0.9


def walk_prior(st: QueryStatus) -> float:
    lo, hi = PRIOR_RANGE
    return float(min(max(st.top_rate * PRIOR_SHRINK, lo), hi))


def walk_rate(prior: float, hits: int, walked: int) -> float:
    """The per-pair rate that sizes the second phase: the smaller (the more pessimistic) of the
    prior and the walk's own rate, ``(hits + 1/2) / (walked + 1)`` with ``hits`` the relevant pairs
    among the ``walked`` ones (a walk stopped by a relevant pair, or by running out of candidates,
    is a censored geometric observation; hits per pair is its rate's maximum likelihood estimate,
    here with half a pseudo-hit)."""
    lo, hi = PRIOR_RANGE
    rate = prior if walked <= 0 else min(prior, (hits + 0.5) / (walked + 1.0))
    return float(min(max(rate, lo), hi))


def second_phase_sizes(u_h: npt.ArrayLike, cost_h: npt.ArrayLike, left: float) -> tuple[float, I64]:
    """The second phase's rate ``f = SECOND_MARGIN * left / sum_h cost_h`` (at most 1) and per stratum
    ``m_h = round(f u_h)``, at least ``min(u_h, 2)`` (two give a second-phase variance)."""
    u = np.asarray(u_h, np.int64)
    total = float(np.sum(cost_h))
    f = min(1.0, SECOND_MARGIN * max(float(left), 0.0) / total) if total > 0 else 1.0
    m = np.maximum(np.minimum(u, 2), np.floor(f * u + 0.5)).astype(np.int64)
    return f, np.minimum(m, u)


def expected_walk_cost(cand: Candidates, n_queries: int, p: float) -> F64:
    """Expected pairs judged per query by a rank-order walk stopping at the first relevant one."""
    c = cand.cost(n_queries).astype(np.float64)
    return np.asarray((1.0 - (1.0 - p) ** c) / p, np.float64)


def _hits(st: QueryStatus, pairs: list[tuple[int, int, int]]) -> int:
    """How many of ``pairs`` (query, doc) the labels call relevant."""
    if not pairs or st.grades is None:
        return 0
    arr = np.asarray([p[:2] for p in pairs], np.int64)
    return int((np.asarray(st.grades[arr[:, 0], arr[:, 1]]).ravel() > 0).sum())


def _any_undecided(st: QueryStatus) -> B:
    out = np.zeros(st.n_queries, bool)
    for u in st.undecided.values():
        out |= u
    return out


def _first_candidates(cand: Candidates, wanted: B) -> list[tuple[int, int, int]]:
    """The first candidate (rank order) of every query in ``wanted``."""
    first = np.ones(cand.q.size, bool)
    first[1:] = cand.q[1:] != cand.q[:-1]
    take = first & wanted[cand.q]
    return list(zip(cand.q[take].tolist(), cand.doc[take].tolist(), cand.g[take].tolist(), strict=True))


def distinct_pairs(parts: list[Part]) -> set[tuple[int, int]]:
    """The distinct (caption, video) pairs of the parts' rounds (a pair that two runs' walks, or
    both directions, reach in one round is one judgment)."""
    return {_caption_video(p, q, d) for p in parts for q, d, _ in p.pairs}


def _caption_video(part: Part, q: int, d: int) -> tuple[int, int]:
    return (q, d) if part.direction is Direction.T2V else (d, q)


def _cap(design: Design) -> None:
    """Keep at most ``budget - spent`` distinct pairs of this round (a seeded random subset when over)."""
    assert design.budget is not None
    left = max(int(design.budget) - design.spent, 0)
    keys = sorted(distinct_pairs(design.parts))
    if len(keys) <= left:
        return
    rnd = max((p.walk_round for p in design.parts), default=0)
    rng = np.random.default_rng([int(design.seed), rnd, 0x77616C6B])
    keep = {keys[i] for i in rng.permutation(len(keys))[:left].tolist()}
    for part in design.parts:
        part.pairs = [pr for pr in part.pairs if _caption_video(part, pr[0], pr[1]) in keep]


def _merged_candidates(statuses: list[QueryStatus]) -> Candidates:
    """The union of several runs' candidates (one direction): each (query, doc) once, with its
    smallest ``g``, sorted by (query, rank, doc)."""
    us = [st.union() for st in statuses]
    q = np.concatenate([u.q for u in us])
    d = np.concatenate([u.doc for u in us])
    g = np.concatenate([u.g for u in us])
    o = np.lexsort((g, d, q))
    q, d, g = q[o], d[o], g[o]
    keep = np.ones(q.size, bool)
    keep[1:] = (q[1:] != q[:-1]) | (d[1:] != d[:-1])
    q, d, g = q[keep], d[keep], g[keep]
    o = np.lexsort((d, g, q))
    return Candidates(q[o], d[o], g[o])


def _unit(
    members: list[QueryStatus], coll: Collection, measures: list[str]
) -> tuple[I64, list[str], F64, list[F64], F64]:
    """One sampling unit (a run alone, or the runs of a joint sample): the stratum of every query,
    the labels, the strata's mean expected walk cost (summed over the runs), and per run the
    strata's variance stand-ins per measure (``S_h^2``: the largest a query's value can have)."""
    n = members[0].n_queries
    if len(members) == 1:
        st = members[0]
        stratum, _c, labels = stratify(st.union(), _any_undecided(st), n)
    else:  # the joint sample: strata first by which runs leave a query undecided
        bits = np.zeros(n, np.int64)
        for i, st in enumerate(members):
            bits |= (_any_undecided(st) & (st.union().cost(n) > 0)).astype(np.int64) << i
        codes, pattern = np.unique(bits, return_inverse=True)
        names = [
            "undecided for " + "+".join(st.run for i, st in enumerate(members) if c >> i & 1) for c in codes
        ]
        stratum, _c, labels = stratify(
            _merged_candidates(members), bits > 0, n, pattern=pattern.astype(np.int64), pattern_names=names
        )
    k = len(labels)
    inside = stratum >= 0
    big_n = np.bincount(stratum[inside], minlength=k).astype(np.int64)
    ecost = np.zeros(n)
    s2s = []
    seen = np.zeros(0, np.int64)  # (query, doc) keys of the earlier runs' candidates
    width = max(int(st.union().doc.max(initial=-1)) for st in members) + 1
    for st in members:
        u = st.union()
        keys = u.q * width + u.doc
        new_ = ~np.isin(keys, seen)  # a candidate an earlier run shares is judged once
        seen = np.union1d(seen, keys)
        ecost += expected_walk_cost(Candidates(u.q[new_], u.doc[new_], u.g[new_]), n, walk_prior(st))
        n_docs = coll.n_videos if st.direction is Direction.T2V else coll.n_captions
        s2 = np.zeros((k, len(measures)))
        for j, m in enumerate(measures):
            half2 = (np.nan_to_num(st.upper[m] - st.lower[m]) / 2.0) ** 2 * _scale(m, n_docs)
            s2[:, j] = np.bincount(stratum[inside], weights=half2[inside], minlength=k) / np.maximum(big_n, 1)
        s2s.append(s2)
    cbar = np.bincount(stratum[inside], weights=ecost[inside], minlength=k) / np.maximum(big_n, 1)
    return stratum, labels, cbar, s2s, big_n.astype(np.float64)


def build_walk(
    statuses: list[QueryStatus],
    digests: list[str],
    coll: Collection,
    *,
    seed: int,
    budget: int,
    joint: bool = False,
) -> Design:
    """Round 1 of the walk design (module docstring). ``joint`` (``plan --paired``): the runs of a
    direction share one sample of queries (a paired design); else each (run, direction) draws its own."""
    measures = [str(m) for m in statuses[0].measures] if statuses else []
    design = Design("budget", seed, measures, coll.name, collection_digest(coll), budget, None, [])
    units: list[list[int]] = []  # indices into statuses, one list per sampling unit
    for i, st in enumerate(statuses):
        same = [u for u in units if joint and statuses[u[0]].direction is st.direction]
        if same:
            same[0].append(i)
        else:
            units.append([i])
    per = []
    sizes, weights, costs = [], [], []
    for unit in units:
        members = [statuses[i] for i in unit]
        stratum, labels, cbar, s2s, big_n = _unit(members, coll, measures)
        n_tot = float(max(int(members[0].population.sum()), 1))
        group = "+".join(st.run for st in members) if len(members) > 1 else ""
        parts = []
        for i, st in zip(unit, members, strict=True):
            part = Part(
                st.run,
                st.direction,
                None,
                "walk",
                digests[i],
                st.n_queries,
                np.flatnonzero(~st.population).tolist(),
                walk_round=1,
                group=group,
            )
            part.strata_labels = labels
            part.strata_cost = [int(np.ceil(c)) for c in cbar]
            design.parts.append(part)
            parts.append(part)
        per.append((members, parts, stratum, s2s, n_tot, group))
        sizes.append(big_n.astype(np.int64))
        costs.append(cbar)
        weights.append(big_n**2 * sum(s2.sum(axis=1) for s2 in s2s) / n_tot**2)
    if not design.parts:
        return design
    n_h = allocate(np.concatenate(sizes), np.concatenate(weights), np.concatenate(costs), ALLOCATED * budget)
    start = 0
    for (members, parts, stratum, s2s, nt, group), bn in zip(per, sizes, strict=True):
        nh = n_h[start : start + bn.size]
        start += bn.size
        st0 = members[0]
        rng = np.random.default_rng(part_seed(seed, group or st0.run, st0.direction, "walk"))
        inside = np.flatnonzero(stratum >= 0)
        chosen = srswor(rng, stratum[inside], nh)
        strata_queries = [inside[stratum[inside] == h].tolist() for h in range(nh.size)]
        sampled = [sorted(inside[chosen & (stratum[inside] == h)].tolist()) for h in range(nh.size)]
        wanted = np.zeros(st0.n_queries, bool)
        wanted[inside[chosen]] = True
        for st, part, s2 in zip(members, parts, s2s, strict=True):
            part.strata_queries = strata_queries
            part.sampled = sampled
            part.pairs = _first_candidates(st.union(), wanted)
            n_docs = coll.n_videos if st.direction is Direction.T2V else coll.n_captions
            ntv = np.full(bn.size, nt)
            pv = predicted_variance(bn, s2, nh, ntv).sum(axis=0) if bn.size else np.zeros(len(measures))
            for j, m in enumerate(measures):  # with the conservative S_h, every walk completed
                v = float(pv[j]) / _scale(m, n_docs)
                design.predicted_half_width[f"{part.key}/{m}"] = float(
                    Z95 * np.sqrt(v) * (1.0 if m.startswith("MnR") else 100.0)
                )
    _cap(design)
    return design


def continue_walk(
    previous: Design,
    statuses: list[QueryStatus],
    digests: list[str],
    coll: Collection,
    source: str,
    *,
    pass_unjudged: bool = False,
) -> Design:
    """The next round of ``previous`` (a walk design): the same sampled queries, each undecided one's
    next unjudged candidate; at most ``budget - spent`` pairs. ``pass_unjudged``: pairs planned by
    earlier rounds that are still unjudged (skipped, e.g. a video that does not play, or left
    unresolved) are walked past, never planned again; their queries may stay undecided (bounds)."""
    walks = [p for p in previous.parts if p.mode == "walk"]
    if not walks:
        raise FirevalError(
            f"{source}: not a walk plan (made with --one-shot, --target or --exact): nothing to continue"
        )
    if previous.collection_digest != collection_digest(coll):
        raise FirevalError(f"{source}: plan was made for another collection ({previous.collection!r})")
    by_key = {(st.run, st.direction): (st, dg) for st, dg in zip(statuses, digests, strict=True)}
    spent = previous.spent + len(distinct_pairs(previous.parts))
    design = Design(
        previous.mode,
        previous.seed,
        list(previous.measures),
        previous.collection,
        previous.collection_digest,
        previous.budget,
        None,
        [],
        dict(previous.predicted_half_width),
        spent=spent,
    )
    rows: list[tuple[Part, QueryStatus, B, Candidates]] = []
    for old in walks:
        got = by_key.get((old.run, old.direction))
        if got is None:
            raise FirevalError(
                f"{source}: the walk samples run {old.run!r} ({old.direction.value}); give that run"
            )
        st, dg = got
        if dg != old.run_digest:
            raise FirevalError(
                f"{source}: run {old.run!r} ({old.direction.value}) differs from the run the plan was made for"
            )
        wanted = np.zeros(st.n_queries, bool)
        for s in old.sampled:
            wanted[np.asarray(s, np.int64)] = True
        wanted &= _any_undecided(st)
        if old.second_round:  # the second phase left these out: never walked on
            wanted[np.asarray(old.second_dropped, np.int64)] = False
        part = Part(
            old.run,
            old.direction,
            None,
            "walk",
            old.run_digest,
            old.n_queries,
            list(old.excluded),
            strata_queries=old.strata_queries,
            strata_labels=old.strata_labels,
            strata_cost=old.strata_cost,
            sampled=old.sampled,
            walk_round=old.walk_round + 1,
            walked=old.walked + old.pairs,
            second_round=old.second_round,
            second_undecided=old.second_undecided,
            second_sampled=old.second_sampled,
            group=old.group,
        )
        u = st.union()
        if old.pairs:  # the last round must be judged first (else its pairs would be planned again)
            prev = np.asarray([(q, d) for q, d, _ in old.pairs], np.int64)
            width = int(max(u.doc.max(initial=0), prev[:, 1].max())) + 1
            open_ = np.isin(prev[:, 0] * width + prev[:, 1], u.q * width + u.doc)
            if open_.any() and not pass_unjudged:
                raise FirevalError(
                    f"{source}: {int(open_.sum())} of its {len(old.pairs)} pairs ({old.key}) are not judged "
                    "yet; load and judge them (give their labels with -l) before planning the next round "
                    "(pairs the annotators skipped: --pass-unjudged walks past them)"
                )
        if pass_unjudged and (old.walked or old.pairs):  # a pair is planned once: walk past the open ones
            done = np.asarray([(q, d) for q, d, _ in old.walked + old.pairs], np.int64)
            width = int(max(u.doc.max(initial=0), done[:, 1].max())) + 1
            keep = ~np.isin(u.q * width + u.doc, done[:, 0] * width + done[:, 1])
            u = Candidates(u.q[keep], u.doc[keep], u.g[keep])
        part.pairs = _first_candidates(u, wanted)
        design.parts.append(part)
        rows.append((part, st, wanted, u))
    if previous.second_phase_rate is not None:
        design.second_phase_rate = previous.second_phase_rate
    _second_phase(design, rows)
    _cap(design)
    return design


def _second_phase(design: Design, rows: list[tuple[Part, QueryStatus, B, Candidates]]) -> None:
    """Draw the second phase (module docstring, step 5) when the budget left cannot pay for the
    undecided sampled queries' expected remaining walks; at most once per part, and one subsample
    for the parts that share a sample (a query left out is left out for every run)."""
    assert design.budget is not None
    left = float(max(int(design.budget) - design.spent, 0))
    costs = []
    for part, st, wanted, u in rows:
        p = walk_rate(walk_prior(st), _hits(st, part.walked), len(part.walked))
        costs.append(np.where(wanted, expected_walk_cost(u, st.n_queries, p), 0.0))
    total = float(sum(c.sum() for c in costs))
    eligible = [i for i, (part, _, wanted, _) in enumerate(rows) if not part.second_round and wanted.any()]
    if total <= left or not eligible:
        return
    fixed = float(sum(costs[i].sum() for i in range(len(rows)) if i not in eligible))
    units: dict[tuple[str, Direction, str], list[int]] = {}
    for i in eligible:
        part = rows[i][0]
        units.setdefault((part.group or part.run, part.direction, part.group), []).append(i)
    strata, u_h, cost_h = [], [], []
    for members in units.values():
        part, st, _, _ = rows[members[0]]
        s_of = part.strata_arrays(st.n_queries)[0]
        k = len(part.strata_queries)
        inside = np.zeros(st.n_queries, bool)
        cost = np.zeros(st.n_queries)
        for i in members:
            inside |= rows[i][2] & (s_of >= 0)
            cost += costs[i]
        strata.append((s_of, inside))
        u_h.append(np.bincount(s_of[inside], minlength=k))
        cost_h.append(np.bincount(s_of[inside], weights=cost[inside], minlength=k))
    f, m_all = second_phase_sizes(np.concatenate(u_h), np.concatenate(cost_h), left - fixed)
    if f >= 1.0 or (m_all >= np.concatenate(u_h)).all():
        return
    design.second_phase_rate = f
    start = 0
    for (key, direction, group), idx, (s_of, inside), uh in zip(
        units.keys(), units.values(), strata, u_h, strict=True
    ):
        m_h = m_all[start : start + uh.size]
        start += uh.size
        qs = np.flatnonzero(inside)
        rng = np.random.default_rng(part_seed(design.seed, key, direction, "second-phase"))
        chosen = srswor(rng, s_of[qs], m_h)
        undecided = [qs[s_of[qs] == h].tolist() for h in range(uh.size)]
        sub = [qs[chosen & (s_of[qs] == h)].tolist() for h in range(uh.size)]
        mates = [  # every part of a shared sample gets its subsample (also one with nothing left to walk)
            j
            for j, (p, _, _, _) in enumerate(rows)
            if j in idx
            or (group != "" and p.group == group and p.direction is direction and not p.second_round)
        ]
        for i in mates:
            part, _st, wanted, u = rows[i]
            part.second_round = part.walk_round
            part.second_undecided = undecided
            part.second_sampled = sub
            keep = wanted.copy()
            keep[qs[~chosen]] = False
            part.pairs = _first_candidates(u, keep)
