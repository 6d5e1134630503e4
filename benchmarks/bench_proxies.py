"""Speed of the proxy kernels against the per-pair reference approach (Wray et al.'s scripts).

Run::

    .venv/bin/python benchmarks/bench_proxies.py [--data ../shared/data] [--jobs 2] [--quick]

1. Text pipeline on the 59,800 MSR-VTT full-test captions (tokens, UPOS, lemmas, Lesk synsets).
2. BoW / PoS / SYN over all 59,800 × 59,800 caption pairs, chunked (bounded memory): each block
   of IoUs is reduced at once to caption × video **max over the video's 20 captions**, so what
   is kept is the 59,800 × 2,990 float32 relevance matrix, never the 59,800² pair matrix.
   Reference: Python ``set`` IoU per pair (Wray's ``create_iou``), timed on a random sample
   of pairs and **extrapolated** to 59,800² (the reference's own max-reduction is not counted).
3. METEOR on MSR-VTT 1k-A: 1,000 JSFusion queries × the 20,000 captions of their videos
   (20 M pairs). Reference: NLTK ``single_meteor_score`` per pair on 10,000 random pairs of that
   grid (best of two passes, warm caches), **extrapolated** to 20 M pairs; the same 10,000
   pairs give the max |difference|.

Wall-clock and CPU (process) times are printed; the machine may be shared, so CPU time is the
steadier figure. Ratios are reference time / our time measured in the same run.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(t: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - t[0], time.process_time() - t[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="10,000 captions / 200 queries only")
    ap.add_argument("--skip-sets", action="store_true")
    ap.add_argument("--skip-meteor", action="store_true")
    args = ap.parse_args()

    from nltk.translate.meteor_score import single_meteor_score

    from fireval.proxies.meteor import MeteorScorer
    from fireval.proxies.relevance import caption_sets, set_relevance
    from fireval.proxies.text import TextPipeline, tokenize
    from fireval.proxies.wordnet import load_wordnet

    wn = load_wordnet()
    official = json.loads((args.data / "msrvtt" / "official_test" / "test.json").read_text())
    caps: list[str] = []
    cv: list[int] = []
    for i, (_, cs) in enumerate(official.items()):
        for c in cs.values():
            caps.append(c)
            cv.append(i)
    doc_video = np.asarray(cv)
    n_videos = len(official)
    if args.quick:
        caps, doc_video = caps[:10000], doc_video[:10000]
        n_videos = int(doc_video.max()) + 1
    n = len(caps)
    print(f"MSR-VTT full test: {n} captions, {n_videos} videos; jobs={args.jobs}")

    if not args.skip_sets:
        pl = TextPipeline(wordnet=wn)
        t = _clock()
        pl.analyse_all(caps)
        syn_sets = caption_sets(caps, "syn", pl)  # Lesk runs here
        w, c = _since(t)
        print(f"text pipeline (tokens, UPOS, lemmas, Lesk) for {n} captions: {w:.1f} s wall, {c:.1f} s CPU")
        rng = np.random.default_rng(0)
        for proxy in ("bow", "pos", "syn"):
            parts = syn_sets if proxy == "syn" else caption_sets(caps, proxy, pl)
            t = _clock()
            rel = set_relevance(parts, parts, doc_video, n_videos, "max", n_jobs=args.jobs)
            w, c = _since(t)
            # reference: per-pair Python set IoU (mean over parts), timed on a sample
            sets = [[set(p[i]) for p in parts] for i in range(n)]
            k = 200_000
            ii, jj = rng.integers(0, n, k), rng.integers(0, n, k)
            t0 = time.perf_counter()
            for a, b in zip(ii.tolist(), jj.tolist()):
                tot = 0.0
                for sa, sb in zip(sets[a], sets[b]):
                    u = len(sa | sb)
                    tot += len(sa & sb) / (u if u else 0.0001)
                _ = tot / len(parts)
            per_pair = (time.perf_counter() - t0) / k
            ref_total = per_pair * n * n
            print(
                f"{proxy.upper():>4}: {n}x{n} pairs -> kept {rel.shape[0]}x{rel.shape[1]} video-max float32 "
                f"in {w:.1f} s wall ({c:.1f} s CPU); per-pair Python reference {per_pair * 1e6:.2f} us/pair "
                f"(sample {k}) -> extrapolated {ref_total:.0f} s; ratio {ref_total / w:.0f}x (wall)"
            )
            del rel

    if not args.skip_meteor:
        with open(args.data / "msrvtt" / "MSRVTT_JSFUSION_test.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        if args.quick:
            rows = rows[:200]
        vids = [r["video_id"] for r in rows]
        hyp = [tokenize(r["sentence"]) for r in rows]
        refs, rv = [], []
        for i, v in enumerate(vids):
            for c in official[v].values():
                refs.append(tokenize(c))
                rv.append(i)
        n_pairs = len(hyp) * len(refs)
        scorer = MeteorScorer(wn)
        t = _clock()
        mat = scorer.matrix(hyp, refs, n_jobs=args.jobs)
        w, c = _since(t)
        rv_a = np.asarray(rv)
        starts = np.flatnonzero(np.r_[True, rv_a[1:] != rv_a[:-1]])
        vid_max = np.maximum.reduceat(mat, starts, axis=1)
        rng2 = random.Random(0)
        sample = [(rng2.randrange(len(hyp)), rng2.randrange(len(refs))) for _ in range(10_000)]
        # two passes: the first warms NLTK's WordNet caches; the faster pass is extrapolated
        per_pair = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            ref_vals = np.array([single_meteor_score(refs[j], hyp[i], wordnet=wn) for i, j in sample])
            per_pair = min(per_pair, (time.perf_counter() - t0) / len(sample))
        ours = np.array([mat[i, j] for i, j in sample])
        diff = float(np.abs(ours - ref_vals).max())
        ref_total = per_pair * n_pairs
        print(
            f"METEOR 1k-A: {len(hyp)} queries x {len(refs)} captions = {n_pairs} pairs in {w:.1f} s wall "
            f"({c:.1f} s CPU, incl. stemming + WordNet synonym table); NLTK per pair {per_pair * 1e6:.0f} us "
            f"(10,000-pair sample) -> extrapolated {ref_total:.0f} s; ratio {ref_total / w:.0f}x (wall); "
            f"max |ours - NLTK| on the 10,000 pairs = {diff:.2e}; video-max matrix {vid_max.shape}"
        )


if __name__ == "__main__":
    main()
