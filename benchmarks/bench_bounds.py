"""Speed of the exact unjudged bounds (not a test): ``.venv/bin/python benchmarks/bench_bounds.py``.

MSR-VTT 1k-A CLIP4Clip (``../shared/data``), both directions, the default measures plus
R-Prec and nDCG: ``evaluate`` with ``unjudged=lower``, ``upper``, ``condensed``, ``worst`` and
``best`` one at a time, with the instance labels (999 unjudged docs per query) and with a
denser label set (instance + a random 20% of the other pairs judged). Prints the best of 3
wall and CPU times and each mode's ratio to ``lower``/``upper`` in the same run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from fireval.core import Judgments, Run
from fireval.metrics import DEFAULT_MEASURES, evaluate

DATA = Path(os.environ.get("FIREVAL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
MEASURES = [*map(str, DEFAULT_MEASURES), "R-Prec", "nDCG"]


def timed(fn, repeat: int = 3) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    wall = cpu = float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu


def main() -> None:
    s = np.load(DATA / "msrvtt" / "sims" / "clip4clip_msrvtt.npy")
    n = s.shape[0]
    run = Run("clip4clip", scores=s)
    rng = np.random.default_rng(0)
    r, c = np.nonzero(rng.random((n, n)) < 0.2)
    keep = r != c
    idx = np.arange(n)
    dense = Judgments.from_arrays(
        (n, n),
        np.r_[idx, r[keep]],
        np.r_[idx, c[keep]],
        np.r_[np.ones(n), (rng.random(keep.sum()) < 0.05).astype(float)],
        "proxy",
    )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for label, judg in (("instance", Judgments.instance(idx, n)), ("instance + 20% judged", dense)):
        times = {}
        for mode in ("lower", "upper", "condensed", "worst", "best"):
            times[mode] = timed(
                lambda mode=mode, judg=judg: evaluate(run, judg, measures=MEASURES, unjudged=mode)
            )
            print(f"{label:<22s} {mode:<10s} wall {times[mode][0]:7.3f} s  cpu {times[mode][1]:7.3f} s")
        for mode, base in (("worst", "lower"), ("best", "upper")):
            print(f"{label:<22s} {mode}/{base} cpu ratio {times[mode][1] / times[base][1]:.1f}")


if __name__ == "__main__":
    main()
