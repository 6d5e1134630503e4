"""Paired differences from one shared walk sample vs independent samples, by simulation (docs/estimation.md).

``.venv/bin/python benchmarks/bench_paired.py [--seeds 400] [--budgets 500,1000] [--quick]``

The settings of :mod:`bench_estimate` (MSR-VTT 1k-A, t2v, the ``bow`` and ``rank`` truths, CLIP4Clip's
top 10 judged), with the two held-back runs ``strong`` and ``c4c+noise`` planned *together* by
``fireval plan --budget N`` (:func:`fireval.estimation.walk.build_walk`): ``joint`` (``--paired``: one
sample of queries shared by the runs, stratified first by which runs leave a query undecided) and
``independent`` (the default: one sample per run, one allocation over both). Per seed the
library's sample is redrawn with the library's seeds; the walks are simulated round by round on a
shared label matrix (a pair both walks reach in one round is one judgment; a pair judged for one
run counts for the other), with the second phase drawn as :mod:`fireval.estimation.walk` draws it
(one subsample per shared sample) and the round that passes the budget a random subset of its
distinct pairs. Estimates: :func:`fireval.estimation.estimate.estimate_part` per run (Agresti-Coull), and
the difference ``strong - c4c+noise`` by :func:`fireval.estimation.estimate.paired_joint` (joint) or
:func:`fireval.estimation.estimate.paired_difference` (independent: the variances add); ``x`` = the
bounds under the pooled labels only. Printed per setting, design and budget: pairs used, and per
measure the bias of the difference (points, with its Monte-Carlo standard error), the coverage of its
95% CI and its mean half-width, then the same for each run's own estimate (coverage / half-width).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_estimate as B  # noqa: E402

from fireval.core.direction import Direction  # noqa: E402
from fireval.core.run import Run  # noqa: E402
from fireval.estimation.estimate import _Ctx, estimate_part, paired_difference, paired_joint  # noqa: E402
from fireval.estimation.plan import Part, part_seed  # noqa: E402
from fireval.estimation.status import parse_estimable, query_status  # noqa: E402
from fireval.estimation.stratified import srswor  # noqa: E402
from fireval.estimation.walk import build_walk, second_phase_sizes, walk_prior, walk_rate  # noqa: E402

T2V = Direction.T2V


def one_seed(seed, design, names, tops, rels, known0, priors, budget, n_docs):
    """One simulated walk of every part; returns the judged matrix and the parts as estimated."""
    n = known0.shape[0]
    parts = design.parts
    units: dict[str, list[int]] = {}
    for i, p in enumerate(parts):
        units.setdefault(p.group or p.run, []).append(i)
    s_ofs = [p.strata_arrays(n)[0] for p in parts]
    smp = [np.zeros(n, bool) for _ in parts]
    for key, idx in units.items():
        p0 = parts[idx[0]]
        rng = np.random.default_rng(part_seed(seed, key, T2V, "walk"))
        inside = np.flatnonzero(s_ofs[idx[0]] >= 0)
        chosen = srswor(rng, s_ofs[idx[0]][inside], np.asarray([len(s) for s in p0.sampled], np.int64))
        for i in idx:
            smp[i][inside[chosen]] = True
    judged = known0.copy()
    dropped = [np.zeros(n, bool) for _ in parts]
    walked = [0] * len(parts)
    hits = [0] * len(parts)
    spent, second = 0, {}
    slots = np.arange(B.DEPTH)[None, :]
    cap_rng = np.random.default_rng([seed, 0x63617020])
    for r in range(1, 4 * B.DEPTH):
        cands, todos = [], []
        for i in range(len(parts)):
            jm = np.take_along_axis(judged, tops[i], 1)
            found = jm & rels[i]
            first_rel = np.where(found.any(1), np.argmax(found, 1), B.DEPTH)
            open_ = ~jm & (slots < first_rel[:, None])
            und_k = [(first_rel >= k) & open_[:, :k].any(1) for k in B.KS]
            kmax = np.max([np.where(u, k, 0) for u, k in zip(und_k, B.KS, strict=True)], axis=0)
            cand = open_ & (slots < kmax[:, None])
            cands.append(cand)
            todos.append(smp[i] & ~dropped[i] & cand.any(1))
        if not any(t.any() for t in todos):
            break
        if r >= 2 and not second:
            costs = []
            for i in range(len(parts)):
                rate = walk_rate(priors[i], hits[i], walked[i])
                c_left = cands[i].sum(1)
                costs.append(np.where(todos[i], (1.0 - (1.0 - rate) ** c_left) / rate, 0.0))
            left = budget - spent
            if sum(c.sum() for c in costs) > left:
                u_all, c_all, ins = [], [], []
                for _key, idx in units.items():
                    s_of = s_ofs[idx[0]]
                    k = len(parts[idx[0]].strata_queries)
                    inside = np.zeros(n, bool)
                    cost = np.zeros(n)
                    for i in idx:
                        inside |= todos[i] & (s_of >= 0)
                        cost += costs[i]
                    ins.append(inside)
                    u_all.append(np.bincount(s_of[inside], minlength=k))
                    c_all.append(np.bincount(s_of[inside], weights=cost[inside], minlength=k))
                f, m_all = second_phase_sizes(np.concatenate(u_all), np.concatenate(c_all), left)
                if f < 1.0 and not (m_all >= np.concatenate(u_all)).all():
                    start = 0
                    for (key, idx), inside, uh in zip(units.items(), ins, u_all, strict=True):
                        m_h = m_all[start : start + uh.size]
                        start += uh.size
                        s_of = s_ofs[idx[0]]
                        qs = np.flatnonzero(inside)
                        rng2 = np.random.default_rng(part_seed(seed, key, T2V, "second-phase"))
                        ch = srswor(rng2, s_of[qs], m_h)
                        und = [qs[s_of[qs] == h].tolist() for h in range(uh.size)]
                        sub = [qs[ch & (s_of[qs] == h)].tolist() for h in range(uh.size)]
                        for i in idx:
                            dropped[i][qs[~ch]] = True
                            todos[i] &= ~dropped[i]
                            second[i] = (r, und, sub)
        pairs = []
        for i in range(len(parts)):
            q = np.flatnonzero(todos[i])
            d = tops[i][q, np.argmax(cands[i][q], 1)]
            walked[i] += q.size
            hits[i] += int(rels[i][q, np.argmax(cands[i][q], 1)].sum())
            pairs.append(q * n_docs + d)
        keys = np.unique(np.concatenate(pairs))
        left = budget - spent
        if keys.size > left:
            keys = cap_rng.permutation(keys)[:left]
            judged.ravel()[keys] = True
            spent = budget
            break
        judged.ravel()[keys] = True
        spent += keys.size
    out = []
    for i, p in enumerate(parts):
        s_of = s_ofs[i]
        r2, und, sub = second.get(i, (0, [], []))
        out.append(
            Part(
                p.run,
                T2V,
                None,
                "walk",
                "-",
                n,
                [],
                strata_queries=p.strata_queries,
                strata_labels=p.strata_labels,
                strata_cost=p.strata_cost,
                sampled=[np.flatnonzero(smp[i] & (s_of == h)).tolist() for h in range(len(p.strata_queries))],
                second_round=r2,
                second_undecided=und,
                second_sampled=sub,
                group=p.group,
            )  # fmt: skip
        )
    return judged, out, spent


def setting(coll, tname, truth, runs, pool, args) -> list[str]:
    ms = parse_estimable([f"C@{k}" for k in B.KS])
    names = list(runs)
    n, n_docs = coll.n_captions, coll.n_videos
    inst = np.zeros(truth.shape, bool)
    inst[np.arange(n), coll.caption_video] = True
    known0 = pool | inst
    judg0 = B.judgments(coll, truth, pool)
    sts = [query_status(Run(k, scores=v), judg0, T2V, ms, collection=coll) for k, v in runs.items()]
    tops = [B.topk(v, B.DEPTH) for v in runs.values()]
    rels = [np.take_along_axis(truth, t, 1) for t in tops]
    priors = [walk_prior(st) for st in sts]
    truth_mean = [{k: float(rel[:, :k].any(1).mean()) for k in B.KS} for rel in rels]
    pop = np.ones(n, bool)
    lines = []
    for budget in args.budgets:
        for joint in (True, False):
            design = build_walk(sts, names, coll, seed=0, budget=budget, joint=joint)
            stats = {k: {"d": [], "dc": [], "dh": [], "own": [[] for _ in names]} for k in B.KS}
            used = []
            for seed in range(args.seeds):
                judged, parts, spent = one_seed(
                    seed, design, names, tops, rels, known0, priors, budget, n_docs
                )
                used.append(spent)
                for k in B.KS:
                    ests, ctxs = [], []
                    for i, part in enumerate(parts):
                        jm = np.take_along_axis(judged, tops[i], 1)[:, :k]
                        j0 = np.take_along_axis(known0, tops[i], 1)[:, :k]
                        lo = (rels[i][:, :k] & jm).any(1).astype(float)
                        hi = np.maximum(lo, (~jm).any(1)).astype(float)
                        x = (rels[i][:, :k] & j0).any(1).astype(float)
                        x_hi = np.maximum(x, (~j0).any(1)).astype(float)
                        e = estimate_part(lo, hi, part, pop, x, x_hi, interval="agresti-coull")
                        ests.append(e)
                        ctxs.append(_Ctx(lo, hi, x, x_hi, part, pop))
                        t = truth_mean[i][k]
                        stats[k]["own"][i].append(
                            (e.ci_low - 1e-12 <= t <= e.ci_high + 1e-12, (e.ci_high - e.ci_low) / 2)
                        )
                    d = paired_joint(ctxs[0], ctxs[1], ests[0], ests[1]) if joint else None
                    if d is None:
                        d = paired_difference(names[0], names[1], "t2v", f"C@{k}", ests[0], ests[1])
                    truth_d = truth_mean[0][k] - truth_mean[1][k]
                    stats[k]["d"].append(d["estimate"] - truth_d)
                    stats[k]["dc"].append(d["ci_low"] - 1e-12 <= truth_d <= d["ci_high"] + 1e-12)
                    stats[k]["dh"].append((d["ci_high"] - d["ci_low"]) / 2)
            cells = []
            for k in B.KS:
                s = stats[k]
                bias = 100 * np.mean(s["d"])
                se = 100 * np.std(s["d"], ddof=1) / np.sqrt(len(s["d"]))
                own = "; ".join(
                    f"{nm} {100 * np.mean([c for c, _ in o]):.1f}% / {100 * np.mean([h for _, h in o]):.2f}"
                    for nm, o in zip(names, s["own"], strict=True)
                )
                cells.append(
                    f"R@{k}: bias {bias:+.2f} (±{se:.2f}), cover {100 * np.mean(s['dc']):.1f}%, "
                    f"half {100 * np.mean(s['dh']):.2f} [own: {own}]"
                )
            label = "joint" if joint else "independent"
            lines.append(
                f"| {tname} | {label} {budget} (used {np.mean(used):.0f}) | " + "; ".join(cells) + " |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=400)
    ap.add_argument("--budgets", default="500,1000")
    ap.add_argument("--quick", action="store_true", help="20 seeds, budget 500, the rank truth")
    ap.add_argument(
        "--sims",
        type=Path,
        default=B.SIMS,
    )
    args = ap.parse_args(argv)
    args.budgets = [int(b) for b in args.budgets.split(",")]
    if args.quick:
        args.seeds, args.budgets = 20, [500]
    t0 = time.perf_counter()
    coll, pool, settings = B.scenario(args.sims, bow=not args.quick)
    print(
        f"# bench_paired: {args.seeds} seeds per setting, budgets {args.budgets}; difference = strong - c4c+noise"
    )
    print("| truth | design, budget | difference (and each run's own coverage / half-width) |")
    print("|---|---|---|")
    for tname, truth, runs in settings:  # the same draws as bench_estimate
        for line in setting(coll, tname, truth, runs, pool, args):
            print(line, flush=True)
    print(f"# {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
