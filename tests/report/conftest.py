from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from fireval.core import Collection, Direction, Judgments, Run, merge


def simple_values(
    run: Run, judgments: Judgments, direction: Direction, measures: Sequence[str]
) -> dict[str, np.ndarray]:
    """Plain per-query loop: C@K and nDCG@K (binary gains) for untied scores; NaN without positives."""
    d = Direction.parse(direction)
    scores = np.asarray(run.block(d, 0, run.n_queries(d)))
    rel = judgments.matrix(d).toarray() > 0
    out: dict[str, np.ndarray] = {}
    for m in measures:
        name, k = m.split("@")
        k = int(k)
        vals = []
        for q in range(scores.shape[0]):
            pos = np.flatnonzero(rel[q])
            if pos.size == 0:
                vals.append(np.nan)
                continue
            order = sorted(range(scores.shape[1]), key=lambda j: -scores[q, j])
            top = order[:k]
            if name == "C":
                vals.append(float(any(rel[q, j] for j in top)))
            else:
                dcg = sum(1 / np.log2(i + 2) for i, j in enumerate(top) if rel[q, j])
                ideal = sum(1 / np.log2(i + 2) for i in range(min(k, pos.size)))
                vals.append(dcg / ideal)
        out[m] = np.array(vals)
    return out


@pytest.fixture(scope="session")
def toy() -> tuple[Collection, dict[str, Run], dict[str, Judgments]]:
    rng = np.random.default_rng(0)
    n_vid, per = 30, 2
    words = [
        "a",
        "man",
        "woman",
        "dog",
        "plays",
        "guitar",
        "runs",
        "on",
        "the",
        "beach",
        "in",
        "kitchen",
        "cooks",
        "food",
        "car",
        "drives",
        "red",
    ]
    pairs = []
    for v in range(n_vid):
        for c in range(per):
            text = " ".join(rng.choice(words, rng.integers(3, 15)))
            pairs.append(
                (f"c{v}_{c}", f"video{v}", text if (v, c) != (0, 0) else "<script>alert(1)</script> a man")
            )
    coll = Collection.from_pairs("toy", pairs)
    base = rng.normal(size=(coll.n_captions, n_vid))
    base[np.arange(coll.n_captions), coll.caption_video] += 2.0
    runs = {
        "alpha": Run("alpha", scores=base + rng.normal(scale=0.6, size=base.shape)),
        "beta": Run("beta", scores=base + rng.normal(scale=1.0, size=base.shape)),
        "gamma": Run("gamma", scores=rng.normal(size=base.shape)),
    }
    inst = coll.instance_judgments()
    r = rng.integers(0, coll.n_captions, 200)
    c = rng.integers(0, n_vid, 200)
    keep = c != coll.caption_video[r]
    key = np.unique(r[keep] * n_vid + c[keep])
    human = Judgments.from_arrays(
        coll.shape, key // n_vid, key % n_vid, (rng.random(key.size) < 0.3).astype(float), "human"
    )
    sets = {"original": inst, "augmented": merge([inst, human])}
    return coll, runs, sets
