"""Shared builders for the torch tests: small collections, labels and every measure."""

from __future__ import annotations

import numpy as np

from fireval.core import Collection, Judgments
from fireval.metrics.definitions import MEASURE_INFO, Cutoff


def all_measures(*, estimators: bool | None = None) -> list[str]:
    """Every measure fireval defines (new measures join by themselves), with and without cutoffs.

    ``estimators=False``: without bpref/infAP/infNDCG (undefined under unjudged worst/best);
    ``True``: only those."""
    from fireval.metrics.incomplete import INCOMPLETE

    out = []
    for i in MEASURE_INFO:
        if estimators is not None and (i.name in INCOMPLETE) != estimators:
            continue
        if i.cutoff is Cutoff.REQUIRED:
            out += [f"{i.name}@1", f"{i.name}@3"]
        elif i.cutoff is Cutoff.OPTIONAL:
            out += [i.name, f"{i.name}@3"]
        else:
            out.append(i.name)
        if i.at_r:
            out.append(f"{i.name}@R")
    return list(dict.fromkeys(out))


def collection(n_videos: int, per_video: int) -> Collection:
    """``n_videos`` videos with ``per_video`` captions each (caption i describes video i // per_video)."""
    n_c = n_videos * per_video
    return Collection(
        name="toy",
        video_ids=tuple(f"v{i}" for i in range(n_videos)),
        caption_ids=tuple(f"c{i}" for i in range(n_c)),
        captions=tuple(f"caption {i}" for i in range(n_c)),
        caption_video=np.arange(n_c, dtype=np.int64) // per_video,
    )


def labels(rng: np.random.Generator, n_c: int, n_v: int, per_video: int, extra: int) -> Judgments:
    """Instance labels plus ``extra`` random graded (0..3) pairs: several judged docs per query."""
    rows = np.arange(n_c)
    cols = rows // per_video
    grades = np.ones(n_c)
    er, ec = rng.integers(0, n_c, extra), rng.integers(0, n_v, extra)
    keep = ec != er // per_video
    pairs = dict(zip(zip(rows.tolist(), cols.tolist(), strict=True), grades.tolist(), strict=True))
    for r, c, g in zip(er[keep], ec[keep], rng.integers(0, 4, int(keep.sum())), strict=True):
        pairs[(int(r), int(c))] = float(g)
    r, c = zip(*pairs, strict=True)
    return Judgments.from_arrays((n_c, n_v), list(r), list(c), list(pairs.values()), "human")
