"""Candidate pairs and decided queries against a brute-force oracle written from the definitions.

The oracle (tie-aware, as fireval's metrics: the expectation over every ordering of each tie
group) enumerates the orderings of a small query's docs and every labelling of its unjudged docs.
An unjudged doc must be a candidate exactly when its label can change the measure for some
labelling of the other unjudged docs; a query is decided exactly when no labelling changes it.
Also: with complete labels, ``estimate`` equals ``evaluate`` with a zero-width CI.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fireval import api
from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.judgments import Judgments
from fireval.core.run import Run
from fireval.estimation.estimate import estimate_runs
from fireval.estimation.status import parse_estimable, query_status


def _orderings(scores: np.ndarray):
    groups = [list(np.flatnonzero(scores == v)) for v in sorted(set(scores.tolist()), reverse=True)]
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [d for p in perms for d in p]


def _oracle(scores: np.ndarray, rel: np.ndarray, measure: str) -> float:
    name, _, k = measure.partition("@")
    vals = []
    for order in _orderings(scores):
        order = [d for d in order if np.isfinite(scores[d])]
        r = [bool(rel[d]) for d in order]
        if name == "C":
            vals.append(float(any(r[: int(k)])))
        elif name == "P":
            vals.append(sum(r[: int(k)]) / int(k))
        elif name == "RR":
            vals.append(next((1.0 / (i + 1) for i, x in enumerate(r) if x), 0.0))
    return float(np.mean(vals))


def _brute(scores, known_rel, judged, measure):
    """(pivotal unjudged docs, decided) by enumerating every labelling of the unjudged docs."""
    unj = [d for d in range(scores.size) if not judged[d]]
    values = {}
    for bits in itertools.product([0, 1], repeat=len(unj)):
        rel = known_rel.copy()
        for d, b in zip(unj, bits, strict=True):
            rel[d] = bool(b)
        if not rel.any():
            continue
        values[bits] = _oracle(scores, rel, measure)
    pivotal = set()
    for i, d in enumerate(unj):
        for bits, v in values.items():
            if bits[i] == 0:
                other = bits[:i] + (1,) + bits[i + 1 :]
                if other in values and abs(values[other] - v) > 1e-12:
                    pivotal.add(d)
    vs = list(values.values())
    return pivotal, max(vs) - min(vs) < 1e-12


def _one_query(scores: np.ndarray, labels: dict[int, int]):
    n_docs = scores.size
    coll = Collection("toy", tuple(f"v{i}" for i in range(n_docs)), ("c0",), ("a caption",), np.array([0]))
    run = Run("r", scores=scores[None, :].astype(np.float64))
    judg = Judgments.from_arrays((1, n_docs), [0] * len(labels), list(labels), list(labels.values()), "human")
    return coll, run, judg


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.1, 0.2, 0.3, -np.inf]), min_size=6, max_size=6),
    st.lists(st.sampled_from([None, 0, 1]), min_size=6, max_size=6),
    st.sampled_from(["C@1", "C@2", "C@3", "P@2", "RR"]),
)
def test_candidates_are_exactly_the_pivotal_pairs(scores, labs, measure) -> None:
    s = np.asarray(scores)
    labels = {d: g for d, g in enumerate(labs) if g is not None}
    if not any(labels.values()):
        labels[0] = 1  # the population: queries with a known relevant doc
    coll, run, judg = _one_query(s, labels)
    ms = parse_estimable([measure])
    status = query_status(run, judg, Direction.T2V, ms, collection=coll)
    judged = np.array([d in labels for d in range(s.size)])
    known = np.array([labels.get(d, 0) == 1 for d in range(s.size)])
    pivotal, decided = _brute(s, known, judged, measure)
    key = str(ms[0])
    assert bool(status.undecided[key][0]) == (not decided)
    got = set(status.candidates[key].doc.tolist())
    # a doc scored -inf (not retrieved) never counts
    assert got == {d for d in pivotal if np.isfinite(s[d])}


def test_complete_labels_estimate_equals_evaluate_with_ties() -> None:
    rng = np.random.default_rng(5)
    n_c, n_v = 9, 7
    coll = Collection(
        "toy",
        tuple(f"v{i}" for i in range(n_v)),
        tuple(f"c{i}" for i in range(n_c)),
        tuple(f"caption {i}" for i in range(n_c)),
        np.arange(n_c) % n_v,
    )
    scores = rng.integers(0, 4, size=(n_c, n_v)).astype(np.float64)  # many ties
    truth = rng.random((n_c, n_v)) < 0.3
    truth[np.arange(n_c), np.arange(n_c) % n_v] = True
    r, c = np.nonzero(np.ones_like(truth))
    judg = Judgments.from_arrays((n_c, n_v), r, c, truth[r, c].astype(float), "human")
    run = Run("r", scores=scores)
    ms = parse_estimable(["C@1", "C@3", "P@2", "RR", "MnR"])
    recs, _ = estimate_runs({"r": run}, judg, coll, ms, [Direction.T2V, Direction.V2T])
    ev = api.evaluate(run, coll, judg, measures=[str(m) for m in ms])
    want = {(x["direction"], x["measure"]): x["value"] for x in ev.records}
    for rec in recs:
        assert rec["method"] == "exact"
        assert rec["ci_low"] == rec["ci_high"] == rec["estimate"]
        assert rec["estimate"] == pytest.approx(want[(rec["direction"], rec["measure"])], abs=1e-12)
