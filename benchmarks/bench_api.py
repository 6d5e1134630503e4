"""Speed of in-memory evaluation (not a test): ``.venv/bin/python benchmarks/bench_api.py [--repeat N]``.

One validation-epoch call, ``fireval.evaluate(sims, collection="msrvtt-1ka")`` on a random
1,000 x 1,000 float32 matrix (signal on the diagonal), is timed against floors measured in the
same run on the same matrix:

- ``cmp``: one comparison pass per direction, ``(S > diag).sum(axis=1)`` on S and on S.T, the
  cheapest way to get the rank of the diagonal (ties ignored);
- ``argsort``: one ``np.argsort(S, axis=1)``, what a per-epoch ``compute_metrics`` sorts;
- ``clip4clip``: CLIP4Clip's ``compute_metrics`` formula for both directions (``np.sort`` of the
  negated matrix, then ``np.where(sx - d == 0)``), re-typed from the formula quoted in
  :mod:`fireval.metrics.presets`.

fireval is timed for the default measures (C@1/5/10, MdR, MnR, RR, AP, nDCG@10, P@10,
Recall@10, judged@10, meanR, geoC; both directions, tie-aware, plus building the result table)
and for the TVR set (C@1/5/10, MdR, MnR), from a numpy array and, when torch is installed, from
a CPU tensor, and ``.to_dict(names="tvr")`` alone. Timings are best of N, interleaved so that
load from other processes hits all of them alike; compare the ratios, not the absolutes.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import fireval


def clip4clip_both(s: np.ndarray) -> tuple[float, float]:
    out = []
    for x in (s, s.T):
        sx = np.sort(-x, axis=1)
        d = np.diag(-x)[:, None]
        ind = np.where(sx - d == 0)[1]
        out.append(float(np.mean(ind < 1)))
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="timings per case (best is kept)")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    n = 1000
    s = (rng.standard_normal((n, n)) + 2.0 * np.eye(n)).astype(np.float32)
    st = s.T
    diag = np.diag(s)[:, None]
    cases: dict[str, Callable[[], Any]] = {
        "cmp (floor: (S > diag).sum, both directions)": lambda: (
            (s > diag).sum(axis=1),
            (st > diag).sum(axis=1),
        ),
        "argsort (floor: one np.argsort(S, axis=1))": lambda: np.argsort(s, axis=1),
        "clip4clip compute_metrics, both directions": lambda: clip4clip_both(s),
        "fireval.evaluate(ndarray), default measures": lambda: fireval.evaluate(s, collection="msrvtt-1ka"),
        "fireval.evaluate(ndarray), TVR set": lambda: fireval.evaluate(
            s, collection="msrvtt-1ka", measures="R@1,R@5,R@10,MdR,MnR"
        ),
    }
    try:
        import torch

        t = torch.from_numpy(s)
        cases["fireval.evaluate(torch CPU tensor), TVR set"] = lambda: fireval.evaluate(
            t, collection="msrvtt-1ka", measures="R@1,R@5,R@10,MdR,MnR"
        )
    except ImportError:
        print("torch not installed: tensor case skipped")
    ev = fireval.evaluate(s, collection="msrvtt-1ka")
    cases["Evaluation.to_dict(names='tvr') alone"] = lambda: ev.to_dict(names="tvr")
    for fn in cases.values():  # warm-up: imports, the bundled collection, caches
        fn()
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(args.repeat):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    cmp_t = best["cmp (floor: (S > diag).sum, both directions)"]
    arg_t = best["argsort (floor: one np.argsort(S, axis=1))"]
    print(
        f"1000 x 1000 float32, best of {args.repeat}, FIREVAL_THREADS={os.environ.get('FIREVAL_THREADS', 'default')}"
    )
    print(f"{'case':<50} {'ms':>8} {'/ cmp':>7} {'/ argsort':>9}")
    for name, sec in best.items():
        print(f"{name:<50} {1e3 * sec:8.2f} {sec / cmp_t:7.1f} {sec / arg_t:9.2f}")


if __name__ == "__main__":
    main()
