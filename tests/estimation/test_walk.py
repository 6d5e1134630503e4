"""The walk design (``plan --budget``, :mod:`fireval.estimation.walk`) by enumeration: for every
sample of a small population, the real rounds (:func:`continue_walk`, labels from a truth) and the
real estimate (:func:`estimate_runs`, with its sample-free auxiliary ``x``): the mean of the
estimates over all samples equals the true mean exactly, for every measure, and each CI holds its
estimate inside the exact bounds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.judgments import Judgments, merge
from fireval.core.run import Run
from fireval.estimation.estimate import estimate_runs
from fireval.estimation.plan import Design, Part
from fireval.estimation.status import parse_estimable, query_status
from fireval.estimation.stratified import agresti_coull_bounds, wilson_bounds
from fireval.estimation.walk import build_walk, continue_walk, expected_walk_cost

N_C, N_V = 9, 8
#: a toy and a budget (found by search) where the second phase subsamples (m_h < u_h) in most
#: first-phase samples of 4 and every subsample's walks finish within the budget
SECOND_SEED, SECOND_BUDGET = 111, 8


def _setup(seed: int, ties: bool):
    rng = np.random.default_rng(seed)
    coll = Collection(
        "toy",
        tuple(f"v{i}" for i in range(N_V)),
        tuple(f"c{i}" for i in range(N_C)),
        tuple(f"caption {i}" for i in range(N_C)),
        np.arange(N_C) % N_V,
    )
    truth = rng.random((N_C, N_V)) < 0.3
    truth[np.arange(N_C), np.arange(N_C) % N_V] = True
    raw = rng.normal(size=(N_C, N_V)) + truth
    scores = np.round(raw * 2) if ties else raw
    pooled = rng.normal(size=(N_C, N_V)) + truth  # a pooled run: its top 2 are judged
    known = np.zeros((N_C, N_V), bool)
    np.put_along_axis(known, np.argsort(-pooled, axis=1)[:, :2], True, axis=1)
    return coll, truth, Run("r", scores=scores), known


def _labels(coll: Collection, truth: np.ndarray, mask: np.ndarray) -> Judgments:
    r, c = np.nonzero(mask)
    human = Judgments.from_arrays(coll.shape, r, c, truth[r, c].astype(float), "human")
    return merge([coll.instance_judgments(), human])


@pytest.mark.parametrize(("seed", "ties"), [(1, False), (2, True)])
def test_walk_estimate_is_unbiased_over_every_sample(seed: int, ties: bool) -> None:
    coll, truth, run, known = _setup(seed, ties)
    ms = parse_estimable(["C@1", "C@3", "RR", "P@2"])
    st0 = query_status(run, _labels(coll, truth, known), Direction.T2V, ms, collection=coll)
    first = build_walk([st0], ["d"], coll, seed=0, budget=10_000)
    strata = first.parts[0].strata_queries
    assert strata and sum(map(len, strata)) >= 4
    # every sample of 2 per stratum (of those with more than 2 queries; the others whole)
    sizes = [min(2, len(qs)) for qs in strata]
    combos = list(
        itertools.product(*(itertools.combinations(qs, k) for qs, k in zip(strata, sizes, strict=True)))
    )
    assert len(combos) >= 6
    true_mean = {}
    full = _labels(coll, truth, np.ones_like(known))
    lo_t = query_status(run, full, Direction.T2V, ms, collection=coll)
    for m in ms:
        true_mean[str(m)] = float(lo_t.lower[str(m)].mean())
    got: dict[str, list[float]] = {str(m): [] for m in ms}
    for sample in combos:
        part0 = first.parts[0]
        start = Part(
            "r", Direction.T2V, None, "walk", "d", N_C, [],
            strata_queries=part0.strata_queries, strata_labels=part0.strata_labels,
            strata_cost=part0.strata_cost, sampled=[sorted(s) for s in sample],
        )  # fmt: skip
        design = Design(
            "budget", 0, [str(m) for m in ms], "toy", first.collection_digest, 10_000, None, [start]
        )
        mask, designs = known.copy(), []
        for _ in range(2 * N_V):
            st = query_status(run, _labels(coll, truth, mask), Direction.T2V, ms, collection=coll)
            design = continue_walk(design, [st], ["d"], coll, "plan")
            if not design.parts[0].pairs:
                break
            designs.append(Design.from_json(design.to_json(), "plan"))  # through the file format
            for q, d, _ in design.parts[0].pairs:
                assert not mask[q, d]  # never a judged pair
                mask[q, d] = True
        else:
            raise AssertionError("the walk did not end")
        labels = _labels(coll, truth, mask)
        raw, _ = estimate_runs({"r": run}, labels, coll, ms, [Direction.T2V], designs, clip=False)
        for rec in raw:
            got[rec["measure"]].append(rec["estimate"])
        recs, _ = estimate_runs({"r": run}, labels, coll, ms, [Direction.T2V], designs)
        for rec in recs:
            assert rec["method"] in ("stratified-ht", "exact")
            assert (
                rec["lower"] - 1e-12
                <= rec["ci_low"]
                <= rec["estimate"]
                <= rec["ci_high"]
                <= rec["upper"] + 1e-12
            )
    for key, ests in got.items():
        assert np.mean(ests) == pytest.approx(true_mean[key], abs=1e-12), key


def test_budget_caps_every_round_and_walk_rounds_round_trip() -> None:
    coll, truth, run, known = _setup(3, False)
    ms = parse_estimable(["C@1", "C@5"])
    mask = known.copy()
    st = query_status(run, _labels(coll, truth, mask), Direction.T2V, ms, collection=coll)
    design = build_walk([st], ["d"], coll, seed=4, budget=5)
    total, rounds = 0, 0
    while design.parts[0].pairs:
        total += len(design.parts[0].pairs)
        rounds += 1
        back = Design.from_json(design.to_json(), "p")
        assert back.parts[0].walk_round == rounds and back.parts[0].all_pairs == design.parts[0].all_pairs
        for q, d, _ in design.parts[0].pairs:
            mask[q, d] = True
        st = query_status(run, _labels(coll, truth, mask), Direction.T2V, ms, collection=coll)
        design = continue_walk(back, [st], ["d"], coll, "p")
    assert 0 < total <= 5 and design.spent == total


def test_expected_walk_cost_and_wilson() -> None:
    from fireval.estimation.status import Candidates

    cand = Candidates(np.array([0, 0, 0, 2]), np.array([1, 2, 3, 0]), np.array([0, 1, 2, 0]))
    c = expected_walk_cost(cand, 3, 0.5)
    assert c.tolist() == pytest.approx([1 + 0.5 + 0.25, 0.0, 1.0])
    lo, hi = wilson_bounds(0.0, 20.0)
    assert lo == 0.0 and hi == pytest.approx(1.959963984540054**2 / (20 + 1.959963984540054**2))
    lo, hi = wilson_bounds(0.3, 50.0)  # Wilson (1927), by hand: centre and half-width
    z2 = 1.959963984540054**2
    centre = (0.3 + z2 / 100) / (1 + z2 / 50)
    half = 1.959963984540054 * np.sqrt(0.3 * 0.7 / 50 + z2 / 10_000) / (1 + z2 / 50)
    assert (lo, hi) == pytest.approx((centre - half, centre + half))
    # Agresti & Coull (1998), by hand: add z^2/2 successes and z^2/2 failures, then Wald
    p_t = (0.3 * 50 + z2 / 2) / (50 + z2)
    half = 1.959963984540054 * np.sqrt(p_t * (1 - p_t) / (50 + z2))
    assert agresti_coull_bounds(0.3, 50.0) == pytest.approx((p_t - half, p_t + half))
    lo, hi = agresti_coull_bounds(0.0, 90.0)  # all 0s: a positive upper end, wider than Wilson's
    assert lo == 0.0 and hi > wilson_bounds(0.0, 90.0)[1]


def _two_phase_leaves(coll, truth, run, known, ms, strata, first_n, budget, monkeypatch):
    """Every (first-phase sample x second-phase subsample) of the walk, with its probability: the
    real rounds (:func:`continue_walk`, which draws the second phase through ``walk.srswor``, here
    replaced by each subsample in turn) and the real estimator without clipping or floor."""
    from fireval.estimation import walk
    from fireval.estimation.estimate import _aux_bounds, estimate_part, part_for
    from fireval.estimation.status import value_bounds

    first_samples = list(
        itertools.product(*(itertools.combinations(qs, k) for qs, k in zip(strata, first_n, strict=True)))
    )
    leaves = []

    def walk_leaf(sample, pick):
        asked = []

        def chooser(_rng, stratum_of, n_h):
            asked.append((np.asarray(stratum_of), np.asarray(n_h)))
            chosen = np.zeros(len(stratum_of), bool)
            chosen[list(pick)] = True
            return chosen

        monkeypatch.setattr(walk, "srswor", chooser)
        start = Part(
            "r", Direction.T2V, None, "walk", "d", N_C, [],
            strata_queries=[list(s) for s in strata], strata_labels=[str(h) for h in range(len(strata))],
            strata_cost=[1] * len(strata), sampled=[sorted(s) for s in sample], walk_round=1,
        )  # fmt: skip
        design = Design("budget", 0, [str(m) for m in ms], "toy", "", budget, None, [start])
        design.collection_digest = walk.collection_digest(coll)
        mask, designs = known.copy(), []
        for q, d, _ in walk._first_candidates(
            query_status(run, _labels(coll, truth, mask), Direction.T2V, ms, collection=coll).union(),
            np.isin(np.arange(N_C), [q for s in sample for q in s]),
        ):
            start.pairs.append((q, d, 0))
            mask[q, d] = True
        designs.append(Design.from_json(design.to_json(), "plan"))
        for _ in range(2 * N_V):
            st = query_status(run, _labels(coll, truth, mask), Direction.T2V, ms, collection=coll)
            design = continue_walk(design, [st], ["d"], coll, "plan")
            if not design.parts[0].pairs:
                break
            designs.append(Design.from_json(design.to_json(), "plan"))
            for q, d, _ in design.parts[0].pairs:
                mask[q, d] = True
        labels = _labels(coll, truth, mask)
        st = query_status(run, labels, Direction.T2V, ms, collection=coll)
        part = design.parts[0]
        walked_on = np.zeros(N_C, bool)
        walked_on[[q for s in part.sampled for q in s]] = True
        walked_on[part.second_dropped] = False
        finished = not (walk._any_undecided(st) & walked_on).any()
        lo, hi = value_bounds(run, labels, Direction.T2V, ms, coll)
        out = {}
        for m in ms:
            key = str(m)
            p = part_for(designs, "r", Direction.T2V, key)
            aux = _aux_bounds(run, labels, coll, m, p, designs)
            x_lo, x_hi = aux if aux is not None else (lo[key], hi[key])
            e = estimate_part(
                lo[key],
                hi[key],
                p,
                np.ones(N_C, bool),
                x_lo,
                x_hi,
                adjust=False,
                clip=False,
                interval="normal",
            )
            out[key] = (e.estimate, e.variance)
        recs, _ = estimate_runs({"r": run}, labels, coll, ms, [Direction.T2V], designs, clip=False)
        assert [r["estimate"] for r in recs] == pytest.approx([out[str(m)][0] for m in ms])
        return asked, part, finished, out

    for sample in first_samples:
        asked, part, finished, out = walk_leaf(sample, ())
        if not asked:
            leaves.append((1.0 / len(first_samples), part, finished, out))
            continue
        stratum_of, m_h = asked[0]
        picks = list(
            itertools.product(
                *(
                    itertools.combinations(np.flatnonzero(stratum_of == h).tolist(), int(m))
                    for h, m in enumerate(m_h)
                )
            )
        )
        for pick in picks:
            _, part, finished, out = walk_leaf(sample, [i for c in pick for i in c])
            leaves.append((1.0 / len(first_samples) / len(picks), part, finished, out))
    return leaves


def test_second_phase_is_unbiased_and_its_variance_too_over_every_two_phase_sample(monkeypatch) -> None:
    """A budget too small for the walks: the second phase subsamples the undecided sampled queries.
    Over every first-phase sample and every subsample, E[estimate] = the truth and E[V^] = the
    enumerated variance, exactly (Hansen & Hurwitz 1946; Särndal et al. 1992 §9.3)."""
    coll, truth, run, known = _setup(SECOND_SEED, False)
    ms = parse_estimable(["RR"])
    st0 = query_status(run, _labels(coll, truth, known), Direction.T2V, ms, collection=coll)
    strata = [np.flatnonzero(st0.union().cost(N_C) > 0).tolist()]
    leaves = _two_phase_leaves(coll, truth, run, known, ms, strata, [4], SECOND_BUDGET, monkeypatch)
    assert all(finished for _, _, finished, _ in leaves)  # every subsample's walks finished
    sub = [part for _, part, _, _ in leaves if part.second_round]
    assert len(sub) >= len(leaves) // 2  # the budget forces the second phase in most samples
    assert any(len(u) > len(s) for part in sub for u, s in zip(part.second_undecided, part.second_sampled))
    assert sum(p for p, *_ in leaves) == pytest.approx(1.0)
    full = _labels(coll, truth, np.ones_like(known))
    true_mean = float(query_status(run, full, Direction.T2V, ms, collection=coll).lower["RR"].mean())
    est = np.array([out["RR"][0] for *_, out in leaves])
    var_hat = np.array([out["RR"][1] for *_, out in leaves])
    prob = np.array([p for p, *_ in leaves])
    mean = float(prob @ est)
    assert mean == pytest.approx(true_mean, abs=1e-12)
    assert float(prob @ var_hat) == pytest.approx(float(prob @ (est - mean) ** 2), rel=1e-9, abs=1e-14)
