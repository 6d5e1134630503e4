"""The joint walk (``plan --budget`` with several runs): one sample of queries shared by the runs
of a direction, so that ``estimate``'s difference between two runs is paired. By enumeration over
every joint sample of a toy collection, through the real rounds (:func:`continue_walk`) and the
real estimator (:func:`estimate_runs`): the mean of the paired estimates equals the true
difference exactly, the mean of the variance estimates equals the variance of the estimates, and
each run's own estimate stays unbiased."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_walk import _labels  # the toy labels: instance + the truth on the masked pairs

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.run import Run
from fireval.estimation.estimate import estimate_runs
from fireval.estimation.plan import Design, Part
from fireval.estimation.status import parse_estimable, query_status
from fireval.estimation.walk import build_walk, continue_walk

N_C, N_V = 14, 10


def _two_runs(seed: int, ties: bool, rate: float = 0.25):
    """A toy collection, a truth (``rate``: the share of relevant non-instance pairs), two runs
    (``r``, ``b``) and the labels of a pooled run's top 2."""
    rng = np.random.default_rng(seed)
    coll = Collection(
        "toy",
        tuple(f"v{i}" for i in range(N_V)),
        tuple(f"c{i}" for i in range(N_C)),
        tuple(f"caption {i}" for i in range(N_C)),
        np.arange(N_C) % N_V,
    )
    truth = rng.random((N_C, N_V)) < rate
    truth[np.arange(N_C), np.arange(N_C) % N_V] = True
    runs = {}
    for name, signal in (("r", 1.0), ("b", 0.5)):
        raw = rng.normal(size=(N_C, N_V)) + signal * truth
        runs[name] = Run(name, scores=np.round(raw * 2) if ties else raw)
    pooled = rng.normal(size=(N_C, N_V)) + truth
    known = np.zeros((N_C, N_V), bool)
    np.put_along_axis(known, np.argsort(-pooled, axis=1)[:, :2], True, axis=1)
    return coll, truth, runs, known


def test_several_runs_share_one_sample_and_strata_name_the_runs() -> None:
    coll, truth, runs, known = _two_runs(1, False)
    ms = parse_estimable(["C@1", "C@3"])
    labels = _labels(coll, truth, known)
    sts = [query_status(r, labels, Direction.T2V, ms, collection=coll) for r in runs.values()]
    design = build_walk(sts, ["a", "b"], coll, seed=3, budget=10_000, joint=True)
    pa, pb = design.parts
    assert pa.group == pb.group == "r+b"
    assert pa.strata_queries == pb.strata_queries and pa.sampled == pb.sampled
    assert all(lab.startswith("undecided for ") for lab in pa.strata_labels)
    back = Design.from_json(design.to_json(), "plan")
    assert [p.group for p in back.parts] == ["r+b", "r+b"]
    solo = build_walk(sts, ["a", "b"], coll, seed=3, budget=10_000)  # the default: a sample per run
    assert [p.group for p in solo.parts] == ["", ""]


# toys (found by search) with a stratum of each pattern (r, b, both) and one larger than 2
@pytest.mark.parametrize(("seed", "ties", "measure"), [(1, False, "C@3"), (1, True, "C@3"), (6, True, "RR")])
def test_paired_difference_is_unbiased_with_an_unbiased_variance_over_every_joint_sample(
    seed: int, ties: bool, measure: str
) -> None:
    """One measure: every stratum member is undecided for the runs its pattern names, so no
    stratum shrinks (the estimators are then unbiased for every sample, not only given one
    sampled member per shrunk stratum)."""
    coll, truth, runs, known = _two_runs(seed, ties)
    ms = parse_estimable([measure])
    labels0 = _labels(coll, truth, known)
    sts0 = [query_status(r, labels0, Direction.T2V, ms, collection=coll) for r in runs.values()]
    first = build_walk(sts0, ["a", "b"], coll, seed=0, budget=10_000, joint=True)
    strata = first.parts[0].strata_queries
    assert len(strata) >= 3 and any(len(qs) > 2 for qs in strata)
    sizes = [min(2, len(qs)) for qs in strata]
    combos = list(
        itertools.product(*(itertools.combinations(qs, k) for qs, k in zip(strata, sizes, strict=True)))
    )
    assert len(combos) >= 6
    full = _labels(coll, truth, np.ones_like(known))
    true = {}
    for name, run in runs.items():
        st = query_status(run, full, Direction.T2V, ms, collection=coll)
        true[name] = {str(m): float(st.lower[str(m)].mean()) for m in ms}
    diffs: dict[str, list[tuple[float, float]]] = {str(m): [] for m in ms}
    own: dict[str, list[float]] = {str(m): [] for m in ms}
    for sample in combos:
        parts = [
            Part(
                p.run,
                Direction.T2V,
                None,
                "walk",
                p.run_digest,
                N_C,
                [],
                strata_queries=p.strata_queries,
                strata_labels=p.strata_labels,
                strata_cost=p.strata_cost,
                sampled=[sorted(s) for s in sample],
                group=p.group,
            )  # fmt: skip
            for p in first.parts
        ]
        design = Design(
            "budget", 0, [str(m) for m in ms], "toy", first.collection_digest, 10_000, None, parts
        )
        mask, designs = known.copy(), []
        for _ in range(4 * N_V):
            lab = _labels(coll, truth, mask)
            sts = [query_status(r, lab, Direction.T2V, ms, collection=coll) for r in runs.values()]
            design = continue_walk(design, sts, ["a", "b"], coll, "plan")
            if not any(p.pairs for p in design.parts):
                break
            designs.append(Design.from_json(design.to_json(), "plan"))
            for p in design.parts:
                for q, d, _ in p.pairs:
                    mask[q, d] = True
        else:
            raise AssertionError("the walk did not end")
        labels = _labels(coll, truth, mask)
        recs, dif = estimate_runs(runs, labels, coll, ms, [Direction.T2V], designs, clip=False)
        for rec in recs:
            if rec["run"] == "r":
                own[rec["measure"]].append(rec["estimate"])
        for d in dif:
            assert d["method"] in ("paired-stratified", "exact")
            diffs[d["measure"]].append((d["estimate"], d["variance"]))
    for key, vals in diffs.items():
        est = np.array([v[0] for v in vals])
        var_hat = np.array([v[1] for v in vals])
        assert est.mean() == pytest.approx(true["r"][key] - true["b"][key], abs=1e-12), key
        assert var_hat.mean() == pytest.approx(est.var(), rel=1e-9, abs=1e-14), key
        assert np.mean(own[key]) == pytest.approx(true["r"][key], abs=1e-12), key


def test_the_second_phase_of_a_shared_sample_is_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget too small for the walks (an optimistic prior sizes a large first phase): one
    subsample serves every run of the shared sample, and the rounds never plan more distinct pairs
    than the budget."""
    from fireval.estimation import walk

    monkeypatch.setattr(walk, "PRIOR_SHRINK", 4.0)
    seen_second = False
    for seed in (7, 8, 9):  # 8 (budget 10) draws a second phase (found by search)
        coll, truth, runs, known = _two_runs(seed, False, rate=0.05)
        ms = parse_estimable(["C@1", "C@5"])
        mask = known.copy()
        lab = _labels(coll, truth, mask)
        sts = [query_status(r, lab, Direction.T2V, ms, collection=coll) for r in runs.values()]
        design = build_walk(sts, ["a", "b"], coll, seed=seed, budget=10, joint=True)
        total = 0
        while any(p.pairs for p in design.parts):
            keys = {(q, d) for p in design.parts for q, d, _ in p.pairs}
            total += len(keys)
            for q, d in keys:
                mask[q, d] = True
            lab = _labels(coll, truth, mask)
            sts = [query_status(r, lab, Direction.T2V, ms, collection=coll) for r in runs.values()]
            design = continue_walk(Design.from_json(design.to_json(), "p"), sts, ["a", "b"], coll, "p")
            pa, pb = design.parts
            assert (pa.second_round, pa.second_undecided, pa.second_sampled) == (
                pb.second_round,
                pb.second_undecided,
                pb.second_sampled,
            )
            seen_second |= pa.second_round > 0
        assert total <= 10 and design.spent == total
    assert seen_second
