"""Validation of ``fireval plan`` / ``fireval estimate`` by simulation (not a test; docs/estimation.md).

``.venv/bin/python benchmarks/bench_estimate.py [--seeds 400] [--budgets 250,500,750,1000] [--quick] [--design walk|one-shot|both]``

Setting (MSR-VTT 1k-A, 1,000 captions x 1,000 videos, t2v, C@1/5/10 = R@1/5/10):

* *truth models* (which pairs are relevant; every instance pair is relevant):
  ``bow`` — BoW IoU between the query caption and the video's caption (fireval's proxies,
  ``caption_similarity(..., "bow")``) at the threshold that gives about 7 relevant videos per
  caption; ``rank`` — a generative model: a pair at rank ``r`` (0-based) of CLIP4Clip is relevant
  with probability ``0.6 (r + 1)^-0.9`` (about 7 per caption), independently;
* *pooled run*: CLIP4Clip (the real 1k-A similarity matrix); the known labels are the instance
  labels plus the truth on its top 10 (a FIRE-like pool);
* *held-back runs* (not pooled): ``strong`` = row-standardised CLIP4Clip + 1.0 x truth + N(0, 0.8)
  (a better model that retrieves other videos) and ``c4c+noise`` = CLIP4Clip + N(0, 0.5) in
  standardised units (a close variant of the pooled run).

For each setting the plan's design comes from the library (:func:`fireval.estimation.status.query_status`
and :func:`fireval.estimation.plan.build_design`: strata and the allocation of each budget); then
for every seed the stratified sample is redrawn (:func:`fireval.estimation.stratified.srswor`),
its pairs are "judged" with the truth, and the estimate and CI come from
:func:`fireval.estimation.estimate.estimate_part` with the bounds and the sample-independent bounds
``x`` (the labels without the part's own pairs) that ``fireval estimate`` would compute (C@K without ties is a function of the top-K slots,
so they are computed on the top-10 slots here, vectorised). ``--exact`` runs the real walk
(``build_design(mode="exact")`` round after round, labels updated with the truth) and compares its
judgments (distinct caption-text x video items, as the plan files hold them) with the sequential
minimum (per query: the unjudged docs above the first known relevant one inside the top 10, in
rank order, up to and including the first relevant one) and with pooling the run's top 10.

The default ``--design walk`` simulates ``fireval plan --budget`` (:mod:`fireval.estimation.walk`): the
joint sample from :func:`build_walk`, each sampled query's candidate slots walked in rank order up to
its first relevant one, round by round; when the expected remaining walks pass the budget left, the
second phase (a subsample of the undecided sampled queries, :func:`second_phase_sizes`, drawn as
:mod:`fireval.estimation.walk` draws it); the round that still passes the budget a random subset;
``--design one-shot`` the first design (``--one-shot``), ``both`` both. CIs: ``--interval auto`` (the
default, as ``fireval estimate``: Agresti-Coull's for the walk, the normal one with the rare-event floor
for one-shot), ``agresti-coull``, ``wilson`` or ``normal`` (with the floor unless ``--no-adjust``) for both.

Reported per setting and budget: bias (mean estimate - truth, points, with its Monte-Carlo standard
error), coverage of the 95% CIs, mean half-width, and the pairs actually planned.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from fireval import api
from fireval.core.direction import Direction
from fireval.core.judgments import Judgments, merge
from fireval.core.run import Run
from fireval.estimation.estimate import estimate_part
from fireval.estimation.plan import Part, build_design, part_seed
from fireval.estimation.status import parse_estimable, query_status
from fireval.estimation.stratified import srswor
from fireval.estimation.walk import PRIOR_RANGE, PRIOR_SHRINK, build_walk, second_phase_sizes, walk_rate

KS = (1, 5, 10)
DEPTH = 10
REPO = Path(__file__).resolve().parents[1]
SIMS = REPO.parent / "shared" / "data" / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"


def zrows(s: np.ndarray) -> np.ndarray:
    return (s - s.mean(1, keepdims=True)) / s.std(1, keepdims=True)


def topk(s: np.ndarray, k: int) -> np.ndarray:
    part = np.argpartition(-s, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(s, part, 1), axis=1)
    return np.take_along_axis(part, order, 1)


def truth_models(coll, c4c: np.ndarray, rng: np.random.Generator, bow: bool = True) -> dict[str, np.ndarray]:
    n = coll.n_captions
    inst = np.zeros((n, coll.n_videos), bool)
    inst[np.arange(n), coll.caption_video] = True
    ranks = np.argsort(np.argsort(-c4c, axis=1), axis=1)
    p = 0.6 * (ranks + 1.0) ** -0.9
    gen = (rng.random(c4c.shape) < p) | inst
    if not bow:
        return {"rank": gen}
    from fireval.proxies.relevance import caption_similarity

    # a video's caption: 1k-A has one test caption per video
    vid_cap = np.empty(coll.n_videos, np.int64)
    vid_cap[coll.caption_video] = np.arange(n)
    iou = caption_similarity(coll.captions, coll.captions, "bow")[:, vid_cap]
    tau = float(np.quantile(iou[~inst], 1 - 6.0 / coll.n_videos))  # ~6 more per caption
    return {"bow": (iou >= tau) | inst, "rank": gen}


def held_back(c4c: np.ndarray, truth: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    z = zrows(c4c)
    return {
        "strong": z + 1.0 * truth + rng.normal(0, 0.8, z.shape),
        "c4c+noise": z + rng.normal(0, 0.5, z.shape),
    }


def scenario(sims: Path = SIMS, bow: bool = True):
    """The simulations' fixed part: 1k-A, the truths, the pooled labels (CLIP4Clip's top 10) and
    the held-back runs, drawn in one seeded order (every benchmark of issue 22 sees the same ones).
    Returns ``(coll, pool, [(truth name, truth, {run name: scores}), ...])``."""
    coll = api.load_collection("msrvtt-1ka")
    c4c = np.load(sims).astype(np.float64)
    rng = np.random.default_rng(2026)
    truths = truth_models(coll, c4c, rng, bow=bow)
    pool = np.zeros(c4c.shape, bool)
    np.put_along_axis(pool, topk(c4c, DEPTH), True, 1)
    return coll, pool, [(name, truth, held_back(c4c, truth, rng)) for name, truth in truths.items()]


def judgments(coll, truth: np.ndarray, mask: np.ndarray) -> Judgments:
    r, c = np.nonzero(mask)
    human = Judgments.from_arrays(coll.shape, r, c, truth[r, c].astype(float), "human")
    return merge([coll.instance_judgments(), human])


def sequential_minimum(rel: np.ndarray, known: np.ndarray) -> int:
    """Per query (top-10 slots in rank order): the unjudged slots that can matter (above the first
    known relevant one j, and above the largest K <= j of C@1/5/10: C@K with K > j is decided),
    judged in order until the first relevant one (all of them when none is)."""
    first_known = np.where((rel & known).any(1), np.argmax(rel & known, axis=1), DEPTH)
    ks = np.asarray(KS)
    cap = np.where(first_known[:, None] >= ks[None, :], ks[None, :], 0).max(axis=1)
    open_ = (~known) & (np.arange(DEPTH)[None, :] < cap[:, None])
    hit = open_ & rel
    stop = np.where(hit.any(1), np.argmax(hit, axis=1), DEPTH - 1)
    return int((open_ & (np.arange(DEPTH)[None, :] <= stop[:, None])).sum())


def exact_walk(coll, run: Run, truth: np.ndarray, known_mask: np.ndarray, ms) -> tuple[int, int]:
    """Items (distinct caption text x video) the real --exact rounds plan, and the rounds."""
    from fireval.estimation.plan import plan_items

    mask = known_mask.copy()
    items = rounds = 0
    while True:
        judg = judgments(coll, truth, mask)
        st = query_status(run, judg, Direction.T2V, ms, collection=coll)
        design = build_design([st], ["-"], coll, mode="exact", seed=0)
        its = plan_items(design, coll)
        if not its:
            return items, rounds
        items += len(its)
        rounds += 1
        # a judged item labels its video for every caption with the item's (normalised) text
        qd = np.asarray([(q, d) for p in design.parts for q, d, _ in p.pairs], np.int64)
        groups = coll.text_groups
        same = groups[None, :] == groups[qd[:, 0], None]  # pair x caption
        rows, cols = np.nonzero(same)
        mask[cols, qd[rows, 1]] = True


def simulate(
    coll, name: str, scores: np.ndarray, truth: np.ndarray, known_mask: np.ndarray, args
) -> list[str]:
    ms = parse_estimable([f"C@{k}" for k in KS])
    run = Run(name, scores=scores)
    judg0 = judgments(coll, truth, known_mask)
    st = query_status(run, judg0, Direction.T2V, ms, collection=coll)
    top = topk(scores, DEPTH)
    rel = np.take_along_axis(truth, top, 1)
    known = np.take_along_axis(known_mask, top, 1) | (top == coll.caption_video[:, None])
    n = coll.n_captions
    pos = np.full(scores.shape, -1, np.int64)
    np.put_along_axis(pos, top, np.arange(DEPTH)[None, :].repeat(n, 0), 1)
    cand = {}
    for m in ms:
        c = st.candidates[str(m)]
        cm = np.zeros((n, DEPTH), bool)
        cm[c.q, pos[c.q, c.doc]] = True
        cand[str(m)] = cm
    y = {str(m): rel[:, : m.k].any(1) for m in ms}
    truth_mean = {k: float(v.mean()) for k, v in y.items()}
    lines = []
    orig_lo = {str(m): float(st.lower[str(m)].mean()) for m in ms}
    orig_hi = {str(m): float(st.upper[str(m)].mean()) for m in ms}
    unj = {str(m): float((~known[:, : m.k]).mean()) for m in ms}
    lines.append(
        f"| {args.setting} | bounds | "
        + "; ".join(
            f"R@{m.k}: {100 * orig_lo[str(m)]:.1f} / {100 * truth_mean[str(m)]:.1f} / {100 * orig_hi[str(m)]:.1f}"
            f" ({100 * unj[str(m)]:.0f}% unjudged)"
            for m in ms
        )
        + " |"
    )
    pop = np.ones(n, bool)
    if args.design in ("walk", "both"):
        lines.extend(simulate_walk(coll, name, st, ms, rel, known, pos, y, truth_mean, args))
    for budget in args.budgets if args.design in ("one-shot", "both") else []:
        design = build_design([st], ["-"], coll, mode="budget", seed=0, budget=budget)
        parts = {p.measure: p for p in design.parts}
        strata = {}
        for key, p in parts.items():
            s_of = p.strata_arrays(n)[0]
            strata[key] = (s_of, np.asarray([len(s) for s in p.sampled], np.int64))
        ests = {k: [] for k in y}
        covers = {k: [] for k in y}
        halfs = {k: [] for k in y}
        pairs_used = []
        for seed in range(args.seeds):
            sampled = {}
            for key, (s_of, n_h) in strata.items():
                rng = np.random.default_rng(part_seed(seed, name, Direction.T2V, key))
                members = np.flatnonzero(s_of >= 0)
                chosen = srswor(rng, s_of[members], n_h)
                smask = np.zeros(n, bool)
                smask[members[chosen]] = True
                sampled[key] = smask
            drawn = {key: sampled[key][:, None] & cand[key] for key in sampled}
            judged_now = known.copy()
            for dmask in drawn.values():
                judged_now |= dmask
            pairs_used.append(int((judged_now & ~known).sum()))
            for m in ms:
                key = str(m)
                k = m.k
                lo = (rel & judged_now)[:, :k].any(1).astype(float)
                hi = np.maximum(lo, (~judged_now[:, :k]).any(1)).astype(float)
                others = known.copy()
                for k2, dmask in drawn.items():
                    if k2 != key:
                        others |= dmask
                shared = drawn[key] & others  # pairs also drawn by another part (or known)
                aux_j = others | shared
                aux = (rel & aux_j)[:, :k].any(1).astype(float)
                aux_hi = np.maximum(aux, (~aux_j[:, :k]).any(1))
                p = parts[key]
                s_of, _ = strata[key]
                part = Part(
                    name, Direction.T2V, key, "budget", "-", n, [],
                    strata_queries=p.strata_queries, strata_labels=p.strata_labels, strata_cost=p.strata_cost,
                    sampled=[np.flatnonzero(sampled[key] & (s_of == h)).tolist() for h in range(len(p.strata_queries))],
                )  # fmt: skip
                e = estimate_part(
                    lo,
                    hi,
                    part,
                    pop,
                    aux,
                    aux_hi,
                    adjust=not args.no_adjust,
                    interval="normal" if args.interval == "auto" else args.interval,
                )
                _record(e, truth_mean[key], ests[key], covers[key], halfs[key])
        cells = _summary_cells(ms, ests, covers, halfs, truth_mean)
        lines.append(
            f"| {args.setting} | budget {budget} --one-shot (used {np.mean(pairs_used):.0f}) | "
            + "; ".join(cells)
            + " |"
        )
    if not args.no_exact:
        items, rounds = exact_walk(coll, run, truth, known_mask, ms)
        seq = sequential_minimum(rel, known)
        pool_cost = int((~known).sum())
        lines.append(
            f"| {args.setting} | --exact | {items} judgments in {rounds} rounds; sequential minimum {seq} "
            f"({items / max(seq, 1):.2f}x); pooling its top 10: {pool_cost} ({items / max(pool_cost, 1):.2f}x) |"
        )
    return lines


def _record(e, truth: float, ests: list, covers: list, halfs: list) -> None:
    """One simulated estimate: its value, whether its CI covers the truth, its half-width."""
    ests.append(e.estimate)
    covers.append(e.ci_low - 1e-12 <= truth <= e.ci_high + 1e-12)
    halfs.append((e.ci_high - e.ci_low) / 2)


def _summary_cells(ms, ests, covers, halfs, truth_mean) -> list[str]:
    """Per measure: bias (± its standard error), CI coverage and mean half-width, in points."""
    cells = []
    for m in ms:
        key = str(m)
        ea = np.asarray(ests[key])
        bias = 100 * (ea.mean() - truth_mean[key])
        se = 100 * ea.std(ddof=1) / np.sqrt(ea.size)
        cells.append(
            f"R@{m.k}: bias {bias:+.2f} (±{se:.2f}), cover {100 * np.mean(covers[key]):.1f}%, "
            f"half {100 * np.mean(halfs[key]):.2f}"
        )
    return cells


def simulate_walk(coll, name, st, ms, rel, known, pos, y, truth_mean, args) -> list[str]:
    """The default budget design (:mod:`fireval.estimation.walk`): one joint sample of queries, walked
    in rank order over their candidate slots until the first relevant one, in rounds capped by the
    budget (the last round a random subset)."""
    n = coll.n_captions
    u = st.union()
    cu = np.zeros((n, DEPTH), bool)
    cu[u.q, pos[u.q, u.doc]] = True
    idx = np.cumsum(cu, axis=1) - 1  # candidate index of each candidate slot
    n_c = cu.sum(1)
    hit = cu & rel
    first = np.where(hit.any(1), np.where(hit, idx, DEPTH).min(1), n_c - 1)
    w = np.where(n_c > 0, first + 1, 0)  # a walk's cost per query
    x = {str(m): (rel & known)[:, : m.k].any(1).astype(float) for m in ms}  # labels without the walk
    x_hi = {str(m): np.maximum(x[str(m)], (~known[:, : m.k]).any(1)) for m in ms}
    pop = np.ones(n, bool)
    lines = []
    for budget in args.budgets:
        design = build_walk([st], ["-"], coll, seed=0, budget=budget)
        p = design.parts[0]
        s_of = p.strata_arrays(n)[0]
        n_h = np.asarray([len(s) for s in p.sampled], np.int64)
        members = np.flatnonzero(s_of >= 0)
        ests, covers, halfs = ({str(m): [] for m in ms} for _ in range(3))
        used, cut, n_samp, n_out, n_second = [], [], [], [], []
        k_h = len(p.strata_queries)
        for seed in range(args.seeds):
            rng = np.random.default_rng(part_seed(seed, name, Direction.T2V, "walk"))
            chosen = srswor(rng, s_of[members], n_h)
            smp = np.zeros(n, bool)
            smp[members[chosen]] = True
            ws = np.where(smp, w, 0)
            steps = np.zeros(n, np.int64)
            dropped = np.zeros(n, bool)
            spent, second_round = 0, 0
            second_u: list[list[int]] = []
            second_s: list[list[int]] = []
            for r in range(1, DEPTH + 1):  # the rounds, as continue_walk plans them
                todo = smp & ~dropped & (steps < ws)
                if not todo.any():
                    break
                if r >= 2 and not second_round:  # the second phase (walk._second_phase)
                    judged_now = known | (cu & (idx < steps[:, None]))
                    top_rate = ((rel & judged_now).sum() + 1.0) / (judged_now.sum() + 2.0)
                    prior = float(min(max(top_rate * PRIOR_SHRINK, PRIOR_RANGE[0]), PRIOR_RANGE[1]))
                    hits = int((smp[:, None] & rel & cu & (idx < steps[:, None])).sum())
                    rate = walk_rate(prior, hits, spent)
                    cost = np.where(todo, (1.0 - (1.0 - rate) ** (n_c - steps)) / rate, 0.0)
                    left = budget - spent
                    if cost.sum() > left:
                        u_h = np.bincount(s_of[todo], minlength=k_h)
                        f, m_h = second_phase_sizes(u_h, np.bincount(s_of[todo], cost[todo], k_h), left)
                        if f < 1.0 and not (m_h >= u_h).all():
                            qs = np.flatnonzero(todo)
                            rng2 = np.random.default_rng(part_seed(seed, name, Direction.T2V, "second-phase"))
                            ch = srswor(rng2, s_of[qs], m_h)
                            dropped[qs[~ch]] = True
                            second_round = r
                            second_u = [qs[s_of[qs] == h].tolist() for h in range(k_h)]
                            second_s = [qs[ch & (s_of[qs] == h)].tolist() for h in range(k_h)]
                            todo &= ~dropped
                left = budget - spent
                if int(todo.sum()) > left:  # the round that passes the budget: a random subset fills it
                    steps[rng.permutation(np.flatnonzero(todo))[:left]] += 1
                    spent = budget
                    break
                steps[todo] += 1
                spent += int(todo.sum())
            judged_now = known | (cu & (idx < steps[:, None]))
            used.append(spent)
            cut.append(int((smp & ~dropped & (steps < ws)).sum()))
            n_samp.append(int(smp.sum()))
            n_out.append(int(dropped.sum()))
            n_second.append(bool(second_round))
            part = Part(
                name, Direction.T2V, None, "walk", "-", n, [],
                strata_queries=p.strata_queries, strata_labels=p.strata_labels, strata_cost=p.strata_cost,
                sampled=[np.flatnonzero(smp & (s_of == h)).tolist() for h in range(len(p.strata_queries))],
                second_round=second_round, second_undecided=second_u, second_sampled=second_s,
            )  # fmt: skip
            for m in ms:
                key, k = str(m), m.k
                lo = (rel & judged_now)[:, :k].any(1).astype(float)
                hi = np.maximum(lo, (~judged_now[:, :k]).any(1)).astype(float)
                e = estimate_part(
                    lo,
                    hi,
                    part,
                    pop,
                    x[key],
                    x_hi[key],
                    adjust=not args.no_adjust,
                    interval="agresti-coull" if args.interval == "auto" else args.interval,
                )
                _record(e, truth_mean[key], ests[key], covers[key], halfs[key])
        cells = _summary_cells(ms, ests, covers, halfs, truth_mean)
        lines.append(
            f"| {args.setting} | budget {budget} (used {np.mean(used):.0f}; {np.mean(n_samp):.0f} queries, "
            f"second phase in {100 * np.mean(n_second):.0f}% of seeds, {np.mean(n_out):.1f} left out; "
            f"{np.mean(cut):.1f} cut) | " + "; ".join(cells) + " |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=400)
    ap.add_argument("--budgets", default="250,500,750,1000")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="20 seeds, one budget, the rank truth and the strong run (a smoke test)",
    )
    ap.add_argument("--no-exact", action="store_true")
    ap.add_argument(
        "--interval",
        choices=("auto", "agresti-coull", "wilson", "normal"),
        default="auto",
        help="CI: as fireval estimate (auto: Agresti-Coull for the walk, normal with the floor for one-shot)",
    )
    ap.add_argument(
        "--design",
        choices=("walk", "one-shot", "both"),
        default="walk",
        help="budget design: the default walk, the --one-shot one, or both",
    )
    ap.add_argument(
        "--no-adjust", action="store_true", help="the unbiased variance, without the rare-event floor"
    )
    ap.add_argument(
        "--sims",
        type=Path,
        default=SIMS,
    )
    args = ap.parse_args(argv)
    args.budgets = [int(b) for b in args.budgets.split(",")]
    if args.quick:
        args.seeds, args.budgets = 20, [500]
    t0 = time.perf_counter()
    coll, pool, settings = scenario(args.sims, bow=not args.quick)
    print(f"# bench_estimate: {args.seeds} seeds per setting, budgets {args.budgets}")
    print("| setting | plan | result |")
    print("|---|---|---|")
    for tname, truth, runs in settings:
        for rname, scores in runs.items():
            if args.quick and (tname, rname) != ("rank", "strong"):
                continue
            args.setting = f"{tname} / {rname}"
            for line in simulate(coll, rname, scores, truth, pool, args):
                print(line, flush=True)
    print("# relevant per caption: " + ", ".join(f"{k} {v.sum(1).mean():.1f}" for k, v, _ in settings))
    print(f"# {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
