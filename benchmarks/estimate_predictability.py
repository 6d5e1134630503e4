"""How much of the undecided queries' R@5/R@10 could a model of relevance explain? (docs/estimation.md)

``.venv/bin/python benchmarks/estimate_predictability.py``

The settings of :mod:`bench_estimate` (same truths, runs, pool and seeds). Per setting, a logistic
model of relevance is fitted on the judged non-instance pairs (the pool) from what a plan could know
without judging: the run's row-standardised score, log(1 + its rank), and the logits of the query's
and the video's relevant share among their judged pairs (leave-one-out on the fitted pairs). Each
undecided query's predicted R@K is ``1 - prod (1 - p)`` over its candidate slots in the top K. Printed:
the variance of the undecided queries' true R@K, its pooled within-stratum variance (the walk's strata),
and the within-stratum variance of the residuals of a linear fit on the prediction (what a
model-assisted estimator or prediction strata could leave at best), with the share it removes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_estimate as B  # noqa: E402

from fireval.core.direction import Direction  # noqa: E402
from fireval.core.run import Run  # noqa: E402
from fireval.estimation.status import parse_estimable, query_status  # noqa: E402
from fireval.estimation.walk import build_walk  # noqa: E402


def logit_fit(x: np.ndarray, y: np.ndarray, iterations: int = 25, l2: float = 1e-3) -> np.ndarray:
    """Newton's method for an L2-penalised logistic regression."""
    w = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        h = x.T @ (x * (p * (1 - p))[:, None]) + l2 * np.eye(x.shape[1])
        w += np.linalg.solve(h, x.T @ (y - p) - l2 * w)
    return w


def features(ctx: tuple, ii: np.ndarray, jj: np.ndarray, loo: bool) -> np.ndarray:
    """Per pair: 1, the run's row-standardised score, log(1 + rank), and the logits of the query's
    and the video's relevant share among their judged pairs (without the pair itself when ``loo``)."""
    r_, j_, qr, qj, dr, dj, z, ranks = ctx
    a = r_[ii, jj] if loo else 0.0
    b = j_[ii, jj] if loo else 0.0
    fq = (qr[ii] - a + 0.5) / (qj[ii] - b + 1)
    fd = (dr[jj] - a + 0.5) / (dj[jj] - b + 1)
    return np.c_[
        np.ones(ii.size), z[ii, jj], np.log1p(ranks[ii, jj]), np.log(fq / (1 - fq)), np.log(fd / (1 - fd))
    ]


def within(v: np.ndarray, h: np.ndarray) -> float:
    """Pooled within-stratum (population) variance of ``v``."""
    return float(sum((h == k).sum() * v[h == k].var() for k in np.unique(h)) / h.size)


def main() -> int:
    coll, pool, settings = B.scenario()
    ms = parse_estimable(["C@1", "C@5", "C@10"])
    n = coll.n_captions
    inst = np.zeros(pool.shape, bool)
    inst[np.arange(n), coll.caption_video] = True
    print("| setting | measure | undecided | variance | within strata | residual | removed |")
    print("|---|---|---|---|---|---|---|")
    for tname, truth, runs in settings:
        for rname, scores in runs.items():
            st = query_status(
                Run(rname, scores=scores), B.judgments(coll, truth, pool), Direction.T2V, ms, collection=coll
            )
            known = pool | inst
            top = B.topk(scores, B.DEPTH)
            rel, kn = np.take_along_axis(truth, top, 1), np.take_along_axis(known, top, 1)
            z = B.zrows(scores)
            r_, j_ = (truth & known).astype(float), known.astype(float)
            qr, qj, dr, dj = r_.sum(1), j_.sum(1), r_.sum(0), j_.sum(0)
            ranks = np.argsort(np.argsort(-scores, 1), 1)

            ctx = (r_, j_, qr, qj, dr, dj, z, ranks)
            ii, jj = np.nonzero(known & ~inst)
            w = logit_fit(features(ctx, ii, jj, True), truth[ii, jj].astype(float))
            first = np.where((rel & kn).any(1), np.argmax(rel & kn, 1), B.DEPTH)
            cand = ~kn & (np.arange(B.DEPTH)[None] < first[:, None])
            pp = np.zeros(cand.shape)
            qi, si = np.nonzero(cand)
            pp[qi, si] = 1 / (1 + np.exp(-features(ctx, qi, top[qi, si], False) @ w))
            part = build_walk([st], ["-"], coll, seed=0, budget=500).parts[0]
            s_of = part.strata_arrays(n)[0]
            for k in (5, 10):
                und = cand[:, :k].any(1) & ~(rel & kn)[:, :k].any(1) & (s_of >= 0)
                y = rel[:, :k].any(1)[und].astype(float)
                yh = 1 - np.prod(1 - pp[:, :k], 1)[und]
                res = y - np.polyval(np.polyfit(yh, y, 1), yh)
                wv, rv = within(y, s_of[und]), within(res, s_of[und])
                print(
                    f"| {tname} / {rname} | R@{k} | {und.sum()} | {y.var():.3f} | {wv:.3f} | {rv:.3f} | "
                    f"{100 * (1 - rv / wv):.0f}% |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
