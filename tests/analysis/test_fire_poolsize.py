"""Pool bias against the number of pooled models (FIRE §4.2), against a brute-force oracle."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from fireval.analysis.poolbias import (
    OTHER_POOL,
    Provenance,
    leave_one_out,
    pool_bias_by_size,
    pool_subsets,
    restrict_to_pool,
)
from fireval.core.judgments import Judgments, merge

RUNS = ["A", "B", "C", "D"]


def _world(seed: int) -> tuple[Judgments, dict[tuple[int, int], set[str]], list[tuple[int, int, str]]]:
    rng = np.random.default_rng(seed)
    nq, nv = 6, 8
    pairs = sorted(
        {(int(q), int(v)) for q, v in zip(rng.integers(0, nq, 30), rng.integers(0, nv, 30)) if q != v}
    )
    human = Judgments.from_arrays(
        (nq, nv), [p[0] for p in pairs], [p[1] for p in pairs], [1] * len(pairs), "human"
    )
    j = merge([Judgments.instance(list(range(nq)), nv), human])
    prov: dict[tuple[int, int], set[str]] = {}
    for p in pairs:
        who = {r for r in [*RUNS, OTHER_POOL] if rng.random() < 0.35}
        if who:
            prov[p] = who
    labels = [(q, q, "instance") for q in range(nq)] + [(q, v, "human") for q, v in pairs]
    return j, prov, labels


def oracle_kept(
    labels: list[tuple[int, int, str]], prov: dict[tuple[int, int], set[str]], pool: set[str]
) -> set:
    """A pooled (human) label survives when no run proposed it, or a pool member / an outside model did."""
    out = set()
    for q, v, src in labels:
        who = prov.get((q, v))
        if src != "human" or not who or who & (pool | {OTHER_POOL}):
            out.add((q, v))
    return out


def scorer_count(_run: str, j: Judgments) -> dict[str, float]:
    return {"labels": float(len(j))}


@pytest.mark.parametrize("seed", range(5))
def test_by_size_matches_brute_force(seed: int) -> None:
    j, prov_map, labels = _world(seed)
    prov = Provenance.from_mapping(j.shape, prov_map, runs=[*RUNS, OTHER_POOL])
    for k in range(len(RUNS) + 1):
        for sub in combinations(RUNS, k):
            got = restrict_to_pool(j, prov, sub)
            assert set(zip(got.rows.tolist(), got.cols.tolist())) == oracle_kept(labels, prov_map, set(sub))
    # the largest pool without the run is leave-one-out
    for r in RUNS:
        loo = leave_one_out(j, prov, r)
        rest = restrict_to_pool(j, prov, [x for x in RUNS if x != r])
        assert len(loo) == len(rest)
    rows = pool_bias_by_size(RUNS, j, prov, scorer_count, max_subsets=100)
    full = len(labels)
    for row in rows:
        others = [x for x in RUNS if x != row["run"]]
        drops = [
            full - len(oracle_kept(labels, prov_map, set(s))) for s in combinations(others, row["pool_size"])
        ]
        assert row["exhaustive"] and row["subsets"] == len(drops)
        assert row["mean_drop"] == pytest.approx(np.mean(drops))
        assert (row["min_drop"], row["max_drop"]) == (min(drops), max(drops))


def test_seeded_sample_of_subsets() -> None:
    others = [f"r{i}" for i in range(12)]
    every = pool_subsets(others, 2, max_subsets=100)
    assert len(every) == 66 and len(set(every)) == 66
    sample = pool_subsets(others, 6, max_subsets=20, seed=3)
    assert len(sample) == len(set(sample)) == 20 and all(len(s) == 6 for s in sample)
    assert sample == pool_subsets(others, 6, max_subsets=20, seed=3)
    assert sample != pool_subsets(others, 6, max_subsets=20, seed=4)
    j, prov_map, _ = _world(0)
    prov = Provenance.from_mapping(j.shape, prov_map, runs=[*RUNS, OTHER_POOL])
    rows = pool_bias_by_size(RUNS, j, prov, scorer_count, max_subsets=2, seed=1)
    mid = [r for r in rows if r["pool_size"] == 2]
    assert all(r["subsets"] == 2 and not r["exhaustive"] for r in mid)
