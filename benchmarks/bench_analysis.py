"""Speed of the trust analysis (not a test): ``.venv/bin/python benchmarks/bench_analysis.py``.

Measures, on synthetic per-query values and on the real MSR-VTT 1k-A runs when
``../shared/data`` is present:
- a 10,000-resample percentile bootstrap CI for n = 1,000 and n = 59,800 queries (MSR-VTT full),
  for binary values (C@K: multinomial-count path) and continuous values (index path);
- a paired bootstrap and a randomisation test with 10,000 resamples (both paths);
- RBO_ext / overlap over 59,800 queries at K = 10;
- the whole ``analyse`` + report rendering for CLIP4Clip, GRAM and VAST.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from fireval.analysis.bootstrap import percentile_ci
from fireval.analysis.overlap import overlap_at_k, rbo_ext
from fireval.analysis.significance import paired_bootstrap_p, randomisation_p


def timed(label: str, fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    print(f"{label:<58s} {best:8.3f} s")
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    for n in (1_000, 59_800):
        a = (rng.random(n) < 0.45).astype(float)
        b = (rng.random(n) < 0.43).astype(float)
        timed(
            f"bootstrap CI, 10,000 resamples, n={n}",
            lambda a=a: percentile_ci(a, n_resamples=10_000),
            1 if n > 5000 else 3,
        )
        timed(
            f"paired bootstrap p, 10,000 resamples, n={n}",
            lambda a=a, b=b: paired_bootstrap_p(a, b, 10_000),
            1 if n > 5000 else 3,
        )
        timed(
            f"randomisation p, 10,000 resamples, n={n}",
            lambda a=a, b=b: randomisation_p(a, b, 10_000),
            1 if n > 5000 else 3,
        )
        c, e = rng.random(n), rng.random(n)  # continuous values (nDCG): the per-query index path
        timed(f"  continuous: bootstrap CI, n={n}", lambda c=c: percentile_ci(c, n_resamples=10_000), 1)
        timed(
            f"  continuous: paired bootstrap p, n={n}", lambda c=c, e=e: paired_bootstrap_p(c, e, 10_000), 1
        )
        timed(f"  continuous: randomisation p, n={n}", lambda c=c, e=e: randomisation_p(c, e, 10_000), 1)
    q, k = 59_800, 10
    ta = np.array([rng.choice(2990, k, replace=False) for _ in range(q)])
    tb = np.where(rng.random((q, k)) < 0.5, ta, rng.integers(0, 2990, (q, k)))
    timed(f"RBO_ext + overlap@{k}, {q} queries", lambda: (rbo_ext(ta, tb), overlap_at_k(ta, tb)))
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "msrvtt"
    if shared.is_dir():
        from fireval.analysis.trust import analyse
        from fireval.formats import read_msrvtt_jsfusion, read_scores
        from fireval.report.build import render

        coll = read_msrvtt_jsfusion(shared / "MSRVTT_JSFUSION_test.csv")
        runs = {
            n: read_scores(shared / "sims" / f"{f}_msrvtt.npy", coll, name=n)
            for n, f in (("CLIP4Clip", "clip4clip"), ("GRAM", "GRAM"), ("VAST", "VAST"))
        }
        holder: dict[str, object] = {}

        def run() -> None:
            holder["a"] = analyse(
                coll,
                runs,
                {"original": coll.instance_judgments()},
                measures=["C@1", "C@5", "C@10", "nDCG@10"],
            )

        timed("analyse: 3 runs x 4 measures, MSR-VTT 1k-A, 10,000 resamples", run, 1)
        timed("render HTML + Markdown + LaTeX (8 figures)", lambda: render(holder["a"]), 1)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
