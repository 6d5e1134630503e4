"""Input checks: false-alarm rate on aligned runs, detection rate on misaligned ones, and speed.

Run ``.venv/bin/python benchmarks/bench_checks.py`` (``--quick``: fewer repetitions, no MSR-VTT
full). Everything is measured in this one run on ``../shared/data``; the tables are printed as
Markdown (they are the figures in ``docs/checks.md``).

* **False alarms** (a ``fail`` on an aligned run):
  - clip4clip (MSR-VTT 1k-A, DiDeMo), resampled: random subsets of ``n`` queries with their videos;
  - simulated aligned runs on every collection (:mod:`fireval.checks.simulate`:
    ``signal * text similarity + noise``, with a text representation unlike the check's), at three
    signal levels; their C@1 is printed so that "aligned" can be read as a model strength.
* **Detection** (a ``fail`` on a misaligned copy): clip4clip with its rows, its columns, or both
  (one permutation, diagonal kept, as GRAM/VAST) shuffled, wholly or in part, on subsets of ``n``
  queries; and simulated multi-caption runs with rows or columns shuffled.
* **Agreement**: clip4clip against permuted copies (must be flagged) and against simulated aligned
  runs (must not be).
* **Speed**: ``run_checks`` on one 1k x 1k run, on three, and on a 59,800 x 2,990 aligned run
  simulated from the official MSR-VTT test captions (memory-mapped ``.npy``), both directions;
  and the first ``run_checks`` of a fresh process on the 1k x 1k run (what ``fireval evaluate``
  pays once: the text model, the text's own top-K, importing numpy.random). ``--speed``: only this.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from fireval.checks import run_checks
from fireval.checks.simulate import permuted, text_consistent_scores, text_similarity
from fireval.core import Collection, Run

SHARED = Path(os.environ.get("FIREVAL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def one_per_video(name: str, csv: Path, key: str | None = None) -> Collection:
    df = pd.read_csv(csv)
    keys = df[key] if key else [f"{name}-{i}" for i in range(len(df))]
    return Collection.from_pairs(name, list(zip(keys, df.video_id, df.sentence)), video_ids=list(df.video_id))


def collections(quick: bool) -> dict[str, Collection]:
    out = {
        "MSR-VTT 1k-A": one_per_video("msrvtt", SHARED / "msrvtt" / "MSRVTT_JSFUSION_test.csv", "key"),
        "DiDeMo": one_per_video("didemo", SHARED / "didemo" / "descs_ret_test_didemo.csv"),
        "ActivityNet": one_per_video(
            "activitynet", SHARED / "activitynet" / "descs_ret_test_activitynet.csv"
        ),
    }
    js = json.loads((SHARED / "msvd" / "captions_msvd.json").read_text())
    test = [v.strip() for v in (SHARED / "msvd" / "test_list.txt").read_text().split() if v.strip()]
    out["MSVD"] = Collection.from_pairs(
        "msvd", [(f"{v}#{j}", v, c) for v in test for j, c in enumerate(js[v])], video_ids=test
    )
    vx = pd.read_csv(SHARED / "vatex" / "descs_ret_test_vatex.csv")
    out["VATEX"] = Collection.from_pairs(
        "vatex", [(f"vatex-{i}", v, s) for i, (v, s) in enumerate(zip(vx.video_id, vx.sentence))]
    )
    if not quick:
        out["MSR-VTT full"] = msrvtt_full()
    return out


def msrvtt_full() -> Collection:
    data = json.loads((SHARED / "msrvtt" / "official_test" / "test.json").read_text())
    pairs = [(sid, vid, cap) for vid, caps in data.items() for sid, cap in caps.items()]
    return Collection.from_pairs("msrvtt-full", pairs, video_ids=list(data))


def subset(
    coll: Collection, scores: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[Collection, np.ndarray]:
    """``n`` random queries of a one-caption-per-video collection with their videos."""
    idx = np.sort(rng.choice(coll.n_captions, size=n, replace=False))
    vids = coll.caption_video[idx]
    sub = Collection.from_pairs(
        coll.name,
        [(coll.caption_ids[i], coll.video_ids[v], coll.captions[i]) for i, v in zip(idx, vids)],
        video_ids=[coll.video_ids[v] for v in vids],
    )
    return sub, np.ascontiguousarray(np.asarray(scores)[np.ix_(idx, vids)])


def status(coll: Collection, scores: np.ndarray, check: str = "alignment") -> str:
    return run_checks(coll, {"r": Run("r", scores=scores)}, pairs=False).runs["r"][check].status.value


def c_at_1(coll: Collection, scores: np.ndarray) -> float:
    s = np.asarray(scores)
    own = s[np.arange(coll.n_captions), coll.caption_video]
    return float(((s > own[:, None]).sum(axis=1) == 0).mean())


def counts_cell(c: Counter, total: int) -> str:
    return f"{c['fail']}/{total} fail ({c['pass']} pass, {c['inconclusive']} inconclusive)"


def false_alarms_clip4clip(colls: dict[str, Collection], reps: int) -> None:
    print("\n### False alarms: clip4clip resampled (aligned, must not fail)\n")
    print("| collection | queries | alignment |\n|---|---:|---|")
    for name, ds in (("MSR-VTT 1k-A", "msrvtt"), ("DiDeMo", "didemo")):
        coll = colls[name]
        scores = np.load(SHARED / ds / "sims" / f"clip4clip_{ds}.npy")
        rng = np.random.default_rng(1)
        for n in (50, 100, 300):
            c = Counter(status(*subset(coll, scores, n, rng)) for _ in range(reps))
            print(f"| {name} | {n} | {counts_cell(c, reps)} |")
        print(f"| {name} | {coll.n_captions} (all) | {status(coll, scores)} |")


def false_alarms_simulated(colls: dict[str, Collection], reps: int) -> None:
    print("\n### False alarms: simulated aligned runs (signal x text similarity + 0.1 x noise)\n")
    print(
        "| collection | shape | signal | mean t2v C@1 | alignment (both directions) |\n|---|---|---:|---:|---|"
    )
    for name, coll in colls.items():
        if name == "MSR-VTT full":
            continue
        sim = text_similarity(coll, seed=3)
        for signal in (1.0, 0.3, 0.1):
            c: Counter = Counter()
            c1 = []
            for seed in range(reps):
                s = text_consistent_scores(coll, signal=signal, noise=0.1, seed=seed, similarity=sim)
                c1.append(c_at_1(coll, s))
                c[status(coll, s)] += 1
            print(
                f"| {name} | {coll.n_captions}x{coll.n_videos} | {signal} | {100 * np.mean(c1):.1f} | "
                f"{counts_cell(c, reps)} |"
            )


def detection_clip4clip(colls: dict[str, Collection], reps: int) -> None:
    print("\n### Detection: misaligned copies of clip4clip (must fail)\n")
    print("| collection | queries | shuffled | share shuffled | alignment |\n|---|---:|---|---:|---|")
    for name, ds in (("MSR-VTT 1k-A", "msrvtt"), ("DiDeMo", "didemo")):
        coll = colls[name]
        scores = np.load(SHARED / ds / "sims" / f"clip4clip_{ds}.npy")
        rng = np.random.default_rng(2)
        for n in (100, 300, coll.n_captions):
            for how in ("both", "rows", "cols"):
                for frac in (1.0, 0.5, 0.25):
                    c: Counter = Counter()
                    for r in range(reps):
                        sub, s = subset(coll, scores, n, rng) if n < coll.n_captions else (coll, scores)
                        c[status(sub, permuted(s, how, seed=1000 * r + n, fraction=frac))] += 1
                    print(f"| {name} | {n} | {how} | {frac:.0%} | {counts_cell(c, reps)} |")


def detection_simulated(colls: dict[str, Collection], reps: int) -> None:
    print("\n### Detection: simulated multi-caption runs (signal 0.3) with rows or columns shuffled\n")
    print("| collection | shuffled | alignment |\n|---|---|---|")
    for name in ("MSVD", "VATEX"):
        coll = colls[name]
        sim = text_similarity(coll, seed=3)
        for how in ("rows", "cols"):
            c: Counter = Counter()
            for seed in range(reps):
                s = text_consistent_scores(coll, signal=0.3, noise=0.1, seed=seed, similarity=sim)
                c[status(coll, permuted(s, how, seed=seed))] += 1
            print(f"| {name} | {how} | {counts_cell(c, reps)} |")


def agreement_rates(colls: dict[str, Collection], reps: int) -> None:
    print("\n### Agreement between runs\n")
    print("| collection | pair | agreement |\n|---|---|---|")
    for name, ds in (("MSR-VTT 1k-A", "msrvtt"), ("DiDeMo", "didemo")):
        coll = colls[name]
        c4c = np.load(SHARED / ds / "sims" / f"clip4clip_{ds}.npy")
        sim = text_similarity(coll, seed=3)
        cases = {
            "clip4clip vs clip4clip with rows+cols shuffled": ("perm", 0.0),
            "clip4clip vs simulated aligned run (signal 1.0)": ("sim", 1.0),
            "clip4clip vs simulated aligned run (signal 0.3)": ("sim", 0.3),
        }
        for label, (kind, signal) in cases.items():
            c: Counter = Counter()
            for seed in range(reps):
                other = (
                    permuted(c4c, "both", seed=seed)
                    if kind == "perm"
                    else text_consistent_scores(coll, signal=signal, noise=0.1, seed=seed, similarity=sim)
                )
                rep = run_checks(coll, {"a": Run("a", scores=c4c), "b": Run("b", scores=other)})
                c[rep.pairs[0].result.status.value] += 1
            print(f"| {name} | {label} | {counts_cell(c, reps)} |")
        runs = {
            r: Run(r, scores=np.load(SHARED / ds / "sims" / f"{r}_{ds}.npy", mmap_mode="r"))
            for r in ("GRAM", "VAST")
        }
        p = run_checks(coll, runs).pairs[0]
        print(f"| {name} | GRAM vs VAST (same order) | {p.result.status.value}: {p.result.message} |")


def best_of(fn, n: int = 3) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Best wall and CPU seconds of ``n`` calls."""
    walls, cpus = [], []
    for _ in range(n):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


#: a child process: load MSR-VTT 1k-A and clip4clip, time the first run_checks (wall, CPU seconds)
_COLD = """
import json, sys, time
from pathlib import Path
from fireval import api
shared = Path(sys.argv[1])
coll = api.load_collection(shared / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
runs = api.load_runs([shared / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"], coll)
from fireval.checks import run_checks
w, c = time.perf_counter(), time.process_time()
run_checks(coll, runs, pairs=False)
print(json.dumps([time.perf_counter() - w, time.process_time() - c]))
"""


def cold_run_checks(n: int = 5) -> tuple[float, float]:
    """Best wall and CPU seconds of the first ``run_checks`` in ``n`` fresh processes (as the CLI)."""
    walls, cpus = [], []
    for _ in range(n):
        out = subprocess.run(
            [sys.executable, "-c", _COLD, str(SHARED)], capture_output=True, text=True, check=True
        ).stdout
        w, c = json.loads(out.strip().splitlines()[-1])
        walls.append(w)
        cpus.append(c)
    return min(walls), min(cpus)


def speed(colls: dict[str, Collection], quick: bool) -> None:
    from fireval.metrics import evaluate

    print("\n### Speed (best of 3; wall / CPU seconds; the anchor is a full `evaluate` of the same run)\n")
    print("| case | run_checks | anchor | ratio |\n|---|---:|---:|---:|")
    coll = colls["MSR-VTT 1k-A"]
    runs = {
        r: Run(r, scores=np.load(SHARED / "msrvtt" / "sims" / f"{r}_msrvtt.npy", mmap_mode="r"))
        for r in ("clip4clip", "GRAM", "VAST")
    }
    judg = coll.instance_judgments()
    one = best_of(lambda: run_checks(coll, {"clip4clip": runs["clip4clip"]}))
    ev1 = best_of(lambda: evaluate(runs["clip4clip"], judg, collection=coll))
    print(
        f"| 1000x1000 clip4clip, both directions | {one[0]:.3f} / {one[1]:.3f} | {ev1[0]:.3f} / {ev1[1]:.3f} | {one[0] / ev1[0]:.2f} |"
    )
    three = best_of(lambda: run_checks(coll, runs))
    print(f"| 1000x1000, 3 runs + 3 pairs | {three[0]:.3f} / {three[1]:.3f} | | |")
    cold = cold_run_checks()
    print(
        f"| 1000x1000 clip4clip, both directions, first call in a fresh process (what `fireval "
        f"evaluate` pays: text model, the text's own top-K, numpy.random) | {cold[0]:.3f} / {cold[1]:.3f} | | |"
    )
    if quick:
        return
    full = colls["MSR-VTT full"]
    scores = text_consistent_scores(full, signal=1.0, noise=0.1, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "aligned_full.npy"
        np.save(path, scores)
        del scores
        run = Run("sim", scores=np.load(path, mmap_mode="r"))
        res: dict = {}
        big = best_of(lambda: res.update(r=run_checks(full, {"sim": run})))
        evf = best_of(lambda: evaluate(run, full.instance_judgments(), collection=full), n=1)
        verdict = res["r"].runs["sim"]["alignment"].status.value
        print(
            f"| 59,800x2,990 simulated aligned (memory-mapped), both directions; alignment: {verdict} | "
            f"{big[0]:.2f} / {big[1]:.2f} | {evf[0]:.2f} / {evf[1]:.2f} | {big[0] / evf[0]:.2f} |"
        )
        shuffled = np.load(path, mmap_mode="r")
        perm_run = Run("perm", scores=permuted(shuffled, "cols", seed=1))
        print(
            f"| 59,800x2,990 with columns shuffled: alignment {run_checks(full, {'p': perm_run}, pairs=False).runs['p']['alignment'].status.value} | | | |"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"\npeak RSS of this process: {rss:.2f} GiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, no MSR-VTT full")
    ap.add_argument("--speed", action="store_true", help="only the speed table")
    args = ap.parse_args()
    reps = 5 if args.quick else 20
    t0 = time.time()
    print(
        f"# bench_checks ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f})"
    )
    colls = collections(args.quick)
    if args.speed:
        speed(colls, args.quick)
        return
    false_alarms_clip4clip(colls, reps)
    false_alarms_simulated(colls, max(3, reps // 4))
    detection_clip4clip(colls, max(3, reps // 2))
    detection_simulated(colls, max(3, reps // 4))
    agreement_rates(colls, max(3, reps // 4))
    speed(colls, args.quick)
    print(f"\ntotal {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
