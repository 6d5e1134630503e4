"""Cost of bpref, infAP, infNDCG and ``min_grade`` on MSR-VTT 1k-A (not a test).

``.venv/bin/python benchmarks/bench_incomplete.py [--data ../shared/data] [--repeat 5]``

For each real similarity matrix of 1k-A (``msrvtt/sims/*.npy``: CLIP4Clip, VAST, GRAM), both
directions, ``unjudged=lower``, best-of-N wall time of ``fireval.metrics.evaluate`` for:

* the default measure set (the anchor: ratios are to it, in the same run);
* the default set plus ``bpref,infAP,infNDCG@10``;
* ``bpref,infAP`` alone;
* the default set with ``min_grade=2`` (two kernel passes when graded and binary measures mix).

Labels: a FIRE-like pool, the top 10 of CLIP4Clip per caption (t2v) plus the ground truth,
judged with seeded random grades 0..3 (ground truth 3): about 10 judged docs per caption,
graded, with judged irrelevant ones, which is what these measures read. VAST has large tie groups
(many zero scores), which exercises the exact tie-aware infAP expansion.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from fireval import api
from fireval.core import Judgments, Run
from fireval.metrics import DEFAULT_MEASURES, evaluate, parse_measures


def pool_labels(sims: np.ndarray, seed: int = 0) -> Judgments:
    n_q, n_d = sims.shape
    rng = np.random.default_rng(seed)
    top = np.argpartition(-sims, 10, axis=1)[:, :10]
    rows = np.repeat(np.arange(n_q), 10)
    cols = top.reshape(-1)
    grades = rng.integers(0, 3, rows.size).astype(float)
    gt = np.arange(n_q)
    keep = cols != gt[rows]  # the ground truth is added once, with grade 3
    rows = np.r_[rows[keep], gt]
    cols = np.r_[cols[keep], gt]
    grades = np.r_[grades[keep], np.full(n_q, 3.0)]
    return Judgments.from_arrays((n_q, n_d), rows, cols, grades, "human")


def best_of(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    coll = api.load_collection("msrvtt-1ka")
    c4c = np.load(args.data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy")
    judg = pool_labels(c4c)
    print(f"labels: {len(judg)} judged pairs, {int((judg.grades > 0).sum())} relevant (grade > 0)")
    extra = parse_measures("bpref,infAP,infNDCG@10")
    cases = {
        "default": dict(measures=DEFAULT_MEASURES),
        "default + bpref,infAP,infNDCG@10": dict(measures=(*DEFAULT_MEASURES, *extra)),
        "bpref,infAP": dict(measures="bpref,infAP"),
        "default, min_grade=2": dict(measures=DEFAULT_MEASURES, min_grade=2),
    }
    print(f"best of {args.repeat}, both directions, unjudged=lower, tie-aware")
    print(f"{'run':<12} {'measures':<34} {'seconds':>8} {'ratio':>6}")
    for path in sorted((args.data / "msrvtt" / "sims").glob("*.npy")):
        run = Run(path.stem.replace("_msrvtt", ""), scores=np.load(path))
        assert run.shape == coll.shape
        base = None
        for label, kw in cases.items():
            secs = best_of(lambda kw=kw, run=run: evaluate(run, judg, collection=coll, **kw), args.repeat)
            base = secs if base is None else base
            print(f"{run.name:<12} {label:<34} {secs:8.3f} {secs / base:6.2f}")


if __name__ == "__main__":
    main()
